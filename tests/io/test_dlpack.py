"""DLPack exchange with numpy (CPU); the CUDA side is in test_cuda.py."""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna

DTYPES = [np.float16, np.float32, np.float64, np.int32, np.int64, np.bool_]


def host(a: nna.NdArray) -> np.ndarray:
    return a.get_data("r", "numpy")


@pytest.mark.parametrize("dtype", DTYPES)
def test_roundtrip_every_dtype(dtype):
    src = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    a = nna.from_dlpack(src)
    assert a.shape == (3, 4) and a.dtype == np.dtype(dtype)
    back = np.from_dlpack(a)
    assert back.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(back, src)


def test_import_contiguous_is_zero_copy():
    src = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = nna.from_dlpack(src)
    assert np.shares_memory(host(a), src)
    src[0, 0] = 7  # shared both ways
    assert a.numpy()[0, 0] == 7
    assert a.head == "numpy:0" and a.devices == ["numpy:0"]


@pytest.mark.parametrize("view", [lambda x: x[:, ::2], lambda x: x.T, lambda x: x[::-1]])
def test_import_strided_copies(view):
    src = np.arange(12, dtype=np.float64).reshape(3, 4)
    a = nna.from_dlpack(view(src))
    assert not np.shares_memory(host(a), src)
    assert host(a).flags.c_contiguous
    np.testing.assert_array_equal(a.numpy(), view(src))


def test_import_readonly_copies():
    src = np.arange(4, dtype=np.int64)
    src.flags.writeable = False
    a = nna.from_dlpack(src)
    assert not np.shares_memory(host(a), src)
    a += 1
    np.testing.assert_array_equal(a.numpy(), [1, 2, 3, 4])


def test_import_complex():
    z = np.arange(3, dtype=np.complex64) + 2j
    np.testing.assert_array_equal(np.asarray(nna.from_dlpack(z)), z)


def test_import_unsupported_dtype():
    torch = pytest.importorskip("torch")  # bfloat16 is imported: test_bfloat16_io.py
    with pytest.raises(nna.DTypeError, match="from_dlpack"):
        nna.from_dlpack(torch.zeros(3, dtype=torch.float8_e5m2))


def test_import_needs_protocol():
    with pytest.raises(TypeError, match="__dlpack__"):
        nna.from_dlpack([1, 2, 3])


def test_export_shares_and_takes_write_access():
    a = nna.NdArray.from_numpy_array(np.zeros((2, 2), np.float32))
    v0 = a.version
    b = np.from_dlpack(a)
    assert b.flags.writeable and np.shares_memory(b, host(a))
    assert a.version > v0  # a read-write access: the consumer may write
    b[1, 1] = 5
    assert a.numpy()[1, 1] == 5
    assert a.__dlpack_device__() == (1, 0)


def test_export_copy_true_is_private():
    a = nna.NdArray.from_numpy_array(np.ones(3, np.float32))
    b = np.from_dlpack(a, copy=True)
    b[0] = 9
    np.testing.assert_array_equal(a.numpy(), [1, 1, 1])


def test_export_lazy_fill_materializes_on_host():
    a = nna.full((2, 3), 2.5)
    np.testing.assert_array_equal(np.from_dlpack(a), np.full((2, 3), 2.5, np.float32))
    z = nna.zeros((0, 4), np.int32)
    assert np.from_dlpack(z).shape == (0, 4)


def test_export_zero_dim_and_results_of_ops():
    x = nna.array([1.0, 2.0, 3.0])
    s = (x * 2).sum()
    assert np.from_dlpack(s).shape == ()
    assert float(np.from_dlpack(s)) == 12.0


def test_export_to_requested_cpu_device():
    a = nna.array([1, 2])
    cap = a.__dlpack__(dl_device=(1, 0))
    assert cap is not None
    with pytest.raises(BufferError, match="device type"):
        a.__dlpack__(dl_device=(7, 0))


def test_nnarray_to_nnarray_shares():
    a = nna.array([1.0, 2.0])
    b = nna.from_dlpack(a)
    assert np.shares_memory(host(a), host(b))


def test_export_of_opencl_data_hands_over_a_host_copy():
    """pyopencl buffers have no DLPack form: ``__dlpack_device__`` still names OpenCL (the
    array's device), and the export hands over a host copy (one explicit, counted
    transfer) without moving the producer; ``copy=False`` cannot be honoured."""
    from conftest import needs
    needs("opencl")
    with nna.context_scope("opencl"):
        a = nna.array(np.arange(6, dtype=np.float32)) * 2.0  # current on OpenCL only
    assert a.devices == ["opencl:0"]
    assert a.__dlpack_device__() == (4, 0)  # kDLOpenCL
    nna.reset_transfer_stats()
    with nna.strict_transfers():
        got = np.from_dlpack(a)
    assert nna.transfer_stats()["count"] == 1
    np.testing.assert_array_equal(got, np.arange(6, dtype=np.float32) * 2)
    assert a.head == "opencl:0" and a.__dlpack_device__() == (4, 0)
    got[0] = 100  # the consumer's copy is its own
    assert a.numpy()[0] == 0 and (a * 1).device.key == "opencl:0"
    with pytest.raises(BufferError, match="copy=False"):
        a.__dlpack__(copy=False)
