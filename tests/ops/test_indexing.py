"""Array API 2023.12 advanced indexing (boolean masks, integer arrays) on every backend,
against numpy: getitem, setitem, gradients (scatter-add), errors."""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad
from nnarray.errors import DTypeError
from nnarray.grad import Variable

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4)

GET_KEYS = [
    A > 5,                                   # full-shape mask
    A[:, :, 0] > 3,                          # leading-dims mask
    A[:, 0, 0] > 3,                          # 1-D mask
    A > 100,                                 # all false: empty result
    np.zeros((0,), bool),                    # an empty mask axis selects nothing
    True, False,                             # 0-D masks
    (1, A[0, :, 0] > 1),                     # int then mask
    (slice(None), A[0, :, 0] > 3),           # slice then mask
    (np.array([1, 0, -1]),),                 # negative indices
    [1, 1, 0],                               # a list, duplicates
    (0, [1, 2]),                             # int + array: advanced block in place
    ([0, 1], slice(None), [3, 2]),           # separated arrays: block first
    (slice(None), [[0], [2]], [1, -3]),      # broadcast index arrays
    (slice(None), slice(1, None), [2, -1]),  # mixed with slices
    (Ellipsis, [0, -1]),
    (np.zeros((0,), np.int64),),             # empty integer index
]


def _key(k, on_device: bool):
    """``k`` with its numpy arrays as NdArrays (``on_device``) or kept as given."""
    if not on_device:
        return k

    def conv(i):
        return nna.asarray(i) if isinstance(i, np.ndarray) else i
    return tuple(conv(i) for i in k) if isinstance(k, tuple) else conv(k)


@pytest.mark.parametrize("on_device", [True, False])
@pytest.mark.parametrize("k", GET_KEYS, ids=range(len(GET_KEYS)))
def test_getitem(backend: str, k, on_device: bool) -> None:
    x = nna.asarray(A)
    r = x[_key(k, on_device)]
    e = A[k]
    assert r.shape == e.shape and r.dtype == e.dtype
    np.testing.assert_array_equal(np.asarray(r.data), e)


def test_getitem_mask_reads_one_count(backend: str) -> None:
    x = nna.asarray(A)
    m = nna.asarray(A > 5)
    x.get_data("r"), m.get_data("r")
    nna.reset_transfer_stats()
    r = x[m]
    n = nna.transfer_stats()["count"]
    assert n == (1 if backend != "numpy" else 0)  # the true count, read to the host
    np.testing.assert_array_equal(np.asarray(r.data), A[A > 5])


SET_CASES = [
    ((np.array([1, 0, -1]),), 7.0),
    ((0, [1, 2]), np.float32([1, 2, 3, 4])),
    (A > 5, -1.0),
    (A[:, :, 0] > 3, np.float32([9, 8, 7, 6])),
    (True, 3.0), (False, 3.0),
    ((slice(None), [[0], [2]], [1, 3]), np.float32([[1], [2]])),
    (A > 5, A[A > 5] * 2),
    (A > 100, 5.0),
    ([1, 1], np.float32(4.0)),  # duplicates, all writes equal
]


@pytest.mark.parametrize("k,v", SET_CASES, ids=range(len(SET_CASES)))
def test_setitem(backend: str, k, v) -> None:
    e = A.copy()
    e[k] = v
    x = nna.asarray(A.copy())
    x[_key(k, True)] = nna.asarray(v) if isinstance(v, np.ndarray) else v
    np.testing.assert_array_equal(np.asarray(x.data), e)


def test_setitem_duplicates_any_wins(backend: str) -> None:
    """A repeated index keeps one of its values (numpy/CuPy: the last; OpenCL: any)."""
    x = nna.asarray(np.zeros(3, np.float32))
    x[nna.asarray(np.array([0, 0, 2]))] = nna.asarray(np.float32([1, 2, 3]))
    r = np.asarray(x.data)
    assert r[0] in (1, 2) and r[1] == 0 and r[2] == 3
    if backend == "numpy":
        assert r[0] == 2


@pytest.mark.parametrize("k", [
    ([0, 2],), (0, [4]), (np.array([-3]),), ([0], [0], [0], [0])])
def test_out_of_range_and_bad_keys_raise_before_writing(backend: str, k) -> None:
    x = nna.asarray(A.copy())
    with pytest.raises(IndexError, match=r"shape \(2, 3, 4\)|too many"):
        x[_key(k, True)]
    with pytest.raises(IndexError):
        x[_key(k, True)] = 1.0
    np.testing.assert_array_equal(np.asarray(x.data), A)


def test_mask_shape_mismatch_and_value_errors(backend: str) -> None:
    x = nna.asarray(A.copy())
    with pytest.raises(IndexError, match="boolean index of shape"):
        x[nna.asarray(A[0] > 1)]
    with pytest.raises(IndexError, match="do not broadcast"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="integer or bool"):
        x[np.array([0.5])]
    with pytest.raises(nna.errors.ShapeError):
        x[A > 5] = nna.asarray(np.ones(3, np.float32))
    np.testing.assert_array_equal(np.asarray(x.data), A)


@pytest.mark.parametrize("k", [A[:, :, 0] > 3, (slice(None), [2, 2, 0]),
                               ([1, 0, 1], slice(None), [3, 3, 0])], ids=range(3))
def test_gradient_scatter_adds(backend: str, k) -> None:
    a = np.random.default_rng(0).standard_normal(A.shape)
    x = Variable.from_numpy_array(a, need_grad=True)
    kk = _key(k, True)
    assert grad.gradcheck(lambda v: F.tanh(v[kk]), [x], eps=1e-5)
    s = F.sum(x[kk])  # a static graph: the key's offsets are data, computed once
    s.forward()
    s.backward()
    e = np.zeros_like(a)
    np.add.at(e, k, 1.0)
    np.testing.assert_allclose(np.asarray(x.grad.data), e)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_gradient_repeats_accumulate_in_every_float_dtype(backend: str, dtype) -> None:
    x = Variable.from_numpy_array(np.arange(5, dtype=dtype), need_grad=True)
    idx = nna.asarray(np.array([3, 3, 3, -1, 0]))
    s = F.sum(x[idx])
    s.forward()
    s.backward()
    assert x.grad.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(np.asarray(x.grad.data), np.array([1, 0, 0, 3, 1], dtype))


DEVICE_KEYS = {  # name: (key, bytes of host index arrays the key uploads)
    "slice": ((slice(1, None), slice(None, None, 2)), 0),
    "int": ((1, 2), 0),
    "list": ([1, 0], 16),
    "numpy int array": (np.array([1, -1]), 16),
    "numpy bool mask": (A[:, 0, 0] > 3, 2),
    "NdArray int array": ("device", 0),
    "mixed": ((slice(None), [0, 2], 1), 16),
}


@pytest.mark.parametrize("name", list(DEVICE_KEYS))
def test_indexing_keeps_the_array_s_device(backend: str, name: str) -> None:
    """Every key type gives a result on the indexed array's device; index arrays given on
    the host move there in counted transfers and the indexed data never leaves it."""
    key, upload = DEVICE_KEYS[name]
    x = nna.NdArray.from_numpy_array(A).to_device(backend)
    if isinstance(key, str):
        key = nna.NdArray.from_numpy_array(np.array([1, 0])).to_device(backend)
    e = A[key.numpy() if isinstance(key, nna.NdArray) else key]
    nna.reset_transfer_stats()
    with nna.strict_transfers():  # counted, explicit moves only
        r = x[key]
        r = r.copy()  # (a basic key's result is a view: keep what it read)
        x[key] = 0.0
    assert r.device == x.device
    routes = nna.transfer_stats()["by_route"]
    dev = str(x.device)
    if backend == "numpy":
        assert not routes
    else:
        up = routes.get(("numpy:0", dev), (0, 0))[1]
        down = routes.get((dev, "numpy:0"), (0, 0))
        assert up >= 2 * upload  # the key, for the getitem and the setitem
        assert down[1] <= 8 * down[0]  # only bounds flags and mask counts come back
    np.testing.assert_array_equal(r.numpy(), e)
    want = A.copy()
    want[key.numpy() if isinstance(key, nna.NdArray) else key] = 0.0
    np.testing.assert_array_equal(x.numpy(), want)


def test_graph_value_indexing_runs_on_its_data_s_device(backend: str) -> None:
    """A Variable indexed with host keys: the gather runs where its data is."""
    x = Variable.from_ndarray(nna.NdArray.from_numpy_array(A).to_device(backend))
    with grad.auto_forward():
        y = x[[1, 0], np.array([0, 2])]
    assert y.data.device == x.data.device
    np.testing.assert_array_equal(y.data.numpy(), A[[1, 0], [0, 2]])


def test_gather_trusts_the_offsets_indexing_made(backend) -> None:
    # x[i] reads back one flag (the bounds check); gather and its gradient check indices
    # they were not given by indexing, but these they know to be in range
    i = nna.asarray(np.array([1, 5, 7]))
    x = nna.asarray(np.arange(16, dtype=np.float32))
    v = Variable.from_numpy_array(np.arange(16, dtype=np.float32), need_grad=True)
    for _ in range(2):  # the first round uploads the arrays
        nna.reset_transfer_stats()
        y = x[i]
        with grad.auto_forward():
            loss = v[i].sum()
        loss.backward()
    assert nna.transfer_stats()["count"] <= 2
    np.testing.assert_array_equal(y.numpy(), [1.0, 5.0, 7.0])
    np.testing.assert_array_equal(v.grad.numpy()[[1, 5, 7]], [2.0, 2.0, 2.0])  # 2 rounds


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_setitem_complex_from_numpy_arrays_and_lists(backend: str, dtype) -> None:
    """A complex array takes numpy arrays and (nested) lists, complex or real, as docs/api.md
    says (they raised ``TypeError``: issue 40 item 9); a real array refuses complex ones."""
    z = (np.arange(12).reshape(3, 4) * (1 - 0.5j)).astype(dtype)
    cases = [((slice(None), 1), np.array([1 + 2j, -3j, 4.5], np.complex128)),
             ((0,), [1 + 1j, 2, 3j, -4]),
             ((slice(1, 3), slice(0, 2)), [[1j, 2j], [3, 4]]),
             ((Ellipsis,), np.float32([9, 8, 7, 6])),
             ((np.array([2, 0]),), np.array([[1j] * 4, [2 - 1j] * 4], np.complex64))]
    for k, v in cases:
        e = z.copy()
        e[k] = v
        x = nna.asarray(z.copy())
        x[_key(k, True)] = v
        assert x.dtype == dtype
        np.testing.assert_array_equal(x.numpy(), e)
    r = nna.asarray(np.zeros(3, np.float32))
    with pytest.raises(DTypeError, match="complex128"):
        r[:] = np.array([1j, 2, 3])
    with pytest.raises(DTypeError):
        r[:] = [1j, 2, 3]
    np.testing.assert_array_equal(r.numpy(), np.zeros(3))
