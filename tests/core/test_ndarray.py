"""NdArray: construction, lazy fills, access modes, copies, conversions."""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna


def test_constructor_allocates_nothing():
    a = nna.NdArray((1000, 1000))
    assert a.shape == (1000, 1000) and a.dtype == np.float32
    assert a.size == 10**6 and a.ndim == 2 and a.nbytes == 4 * 10**6
    assert a.devices == [] and a.head is None
    assert a.current_devices == [] and a.sole_copy() is None


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.int64,
                                   np.bool_])
def test_from_numpy_array_keeps_dtype_and_copies(dtype):
    src = (np.arange(6) % 3).astype(dtype).reshape(2, 3)
    a = nna.NdArray.from_numpy_array(src)
    assert a.dtype == dtype and a.shape == (2, 3)
    src[0, 0] = 1
    assert a.data[0, 0] == 0
    assert a.head == "numpy:0" and a.devices == ["numpy:0"]


def test_unsupported_dtype_names_it():
    with pytest.raises(nna.DTypeError, match=r"datetime64\[s\] is not supported"):
        nna.NdArray.from_numpy_array(np.zeros(3, "M8[s]"))
    with pytest.raises(nna.DTypeError, match="datetime64"):
        nna.NdArray((2,), "M8[s]")


def test_negative_shape_is_a_shape_error():
    with pytest.raises(nna.ShapeError, match="negative"):
        nna.NdArray((2, -1))


def test_fill_is_exact_for_int64_and_lazy():
    big = 2**53 + 1
    a = nna.full((3,), big, dtype=np.int64)
    assert a.devices == [] and a.current_devices == []
    assert a.data.tolist() == [big] * 3
    z = nna.zeros((2, 2), np.int32)
    assert z.devices == []
    assert z.data.sum() == 0 and z.data.dtype == np.int32
    assert nna.ones(3).data.tolist() == [1.0, 1.0, 1.0]


def test_full_infers_dtype_from_value():
    assert nna.full(2, 3).dtype == np.int64
    assert nna.full(2, 3.0).dtype == np.float32
    assert nna.full(2, True).dtype == np.bool_


def test_array_conversions():
    assert nna.array([1.0, 2.0]).dtype == np.float32
    assert nna.array([1, 2]).dtype == np.int64
    assert nna.array(np.ones(2, np.float64)).dtype == np.float64
    assert nna.array([1, 2], dtype=np.float64).dtype == np.float64
    a = nna.array([1.0, 2.0])
    b = nna.array(a)
    b.data[0] = 5
    assert a.data[0] == 1.0


def test_read_mode_returns_read_only_numpy_and_keeps_version():
    a = nna.array([1.0, 2.0])
    v = a.version
    r = a.get_data("r", "numpy")
    assert not r.flags.writeable
    with pytest.raises(ValueError):
        r[0] = 3
    assert a.version == v
    a.get_data("rw", "numpy")[0] = 3
    assert a.version == v + 1 and a.data[0] == 3


def test_bad_mode_is_rejected_before_state_changes():
    a = nna.array([1.0])
    v = a.version
    with pytest.raises(ValueError, match="mode must be"):
        a.get_data("x")
    assert a.version == v


def test_data_setter_from_array_and_scalar():
    a = nna.NdArray((2, 2))
    a.data = np.arange(4).reshape(2, 2)
    assert a.data.tolist() == [[0, 1], [2, 3]]
    a.data = 7
    assert a.devices == []  # a scalar write is a lazy fill
    assert a.data.tolist() == [[7, 7], [7, 7]]
    with pytest.raises(nna.ShapeError, match=r"\(3,\) does not match"):
        a.data = np.zeros(3)


def test_copy_from_astype_copy(backend):
    a = nna.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    b = nna.NdArray((2, 3), np.int32)
    b.copy_from(a)
    assert b.dtype == np.int32 and b.data.tolist() == [[0, 1, 2], [3, 4, 5]]
    c = a.astype(np.float64)
    assert c.dtype == np.float64
    d = a.copy()
    d.data[0, 0] = 9
    assert a.data[0, 0] == 0
    with pytest.raises(nna.ShapeError, match="copy_from"):
        b.copy_from(nna.NdArray((3, 2)))


def test_scalar_conversions_and_repr():
    a = nna.array([[2.5]])
    assert float(a) == 2.5 and a.item() == 2.5 and int(a) == 2 and bool(a)
    assert "NdArray(" in repr(a) and "float32" in repr(a)
    assert len(nna.zeros((4, 2))) == 4
    with pytest.raises(ValueError, match="size-1"):
        nna.zeros(3).item()
    np.testing.assert_array_equal(np.asarray(nna.array([1, 2])), [1, 2])


def test_numpy_left_operand_defers_to_ndarray():
    r = np.ones(2, np.float32) + nna.array([1.0, 2.0])
    assert isinstance(r, nna.NdArray)
    assert r.data.tolist() == [2.0, 3.0]


def test_asarray_never_lets_copies_disagree(backend):
    """``np.asarray`` of a host array is a writable handle (as numpy shares a CPU
    tensor's): a write through it is seen by the next device read (counted). Of an array
    on another device it is a read-only view of the host cache (a read never moves the
    array): writing through it would change the cache behind the device copy's back."""
    import nnarray.functions as F
    a = nna.array(np.arange(6, dtype=np.float32))  # on the host
    F.sum(a)  # a copy on the backend's device too (the host's own on numpy)
    view = np.asarray(a)
    assert view.flags.writeable and a.head == "numpy:0"
    view[0] = 99
    assert float(F.sum(a)) == 114.0
    with nna.context_scope("numpy"):
        assert float(F.sum(a)) == 114.0
    del view
    d = a * 1  # on the backend's device
    ro = np.asarray(d)
    assert d.head == f"{backend}:0"
    assert ro.flags.writeable == (backend == "numpy")
    if backend != "numpy":
        with pytest.raises(ValueError, match="read-only"):
            ro[0] = 1
    c = np.array(d)  # an explicit copy is the user's to write
    c[0] = -1
    assert np.asarray(d)[0] == 99
