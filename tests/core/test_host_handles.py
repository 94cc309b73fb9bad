"""Host handles never lose writes (API.md §7, docs/api.md *Host handles*): a writable
numpy array from ``.data``, ``Variable.d``, ``np.asarray`` or DLPack of a host array that is
still alive is treated as possibly written, so each device read re-syncs from the host
(counted); after a write on another device the handle is read-only (refused, not lost)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad

HANDLES = {
    ".data": lambda a: a.data,
    "Variable.d": None,  # built in the test: the Variable shares ``a``
    "np.asarray": np.asarray,
    "np.from_dlpack": np.from_dlpack,
}


def _handle(kind, a):
    if kind == "Variable.d":
        v = grad.Variable(a.shape)
        v.data = a
        return v.d
    return HANDLES[kind](a)


@pytest.mark.parametrize("kind", list(HANDLES))
def test_writes_through_a_kept_handle_reach_the_device(backend, kind):
    a = nna.asarray(np.zeros(3, np.float32), device="numpy")
    h = _handle(kind, a)
    assert h.flags.writeable
    device = backend != "numpy"
    for k, want in ((1, [8, 16, 24]), (2, [16, 32, 48])):
        h[...] = np.array([1, 2, 3], np.float32) * k  # again after the device read a
        nna.reset_transfer_stats()
        y = a * 8  # on the backend's device (the fixture's scope)
        np.testing.assert_array_equal(y.numpy(), want)
        assert nna.transfer_stats()["count"] == (2 if device else 0)  # a up, y down
    v = h[1:]  # a view of the handle keeps it tracked
    del h
    gc.collect()
    v[0] = 5
    np.testing.assert_array_equal((a * 1).numpy(), [2, 5, 6])
    del v
    gc.collect()
    nna.reset_transfer_stats()
    F.sum(a), F.sum(a)  # no handle: the device copy is kept again
    assert nna.transfer_stats()["count"] == (1 if device else 0)


def test_variable_d_and_g_keep_the_device(backend):
    """``Variable.d``/``.g`` are reads that hand out a handle: the data keeps its
    device, and writes through the handle reach it."""
    v = grad.Variable.from_ndarray(nna.asarray(np.zeros(3, np.float32)), need_grad=True)
    v.grad.copy_from(nna.asarray(np.ones(3, np.float32)))
    h, g = v.d, v.g
    assert v.data.head == v.grad.head == f"{backend}:0"
    h[...] = [1, 2, 3]
    g[0] = 5
    np.testing.assert_array_equal((v.data * 2).numpy(), [2, 4, 6])
    np.testing.assert_array_equal((v.grad * 1).numpy(), [5, 1, 1])
    assert v.data.head == v.grad.head == f"{backend}:0"


def test_a_device_write_refuses_later_writes_through_the_handle(backend):
    a = nna.asarray(np.zeros(3, np.float32), device="numpy")
    h = a.data
    a += 1  # in place where the scope is
    if backend == "numpy":  # the same buffer: the handle sees it and keeps writing
        h[0] = 7
        np.testing.assert_array_equal(a.numpy(), [7, 1, 1])
        return
    assert a.head == f"{backend}:0"
    with pytest.raises(ValueError, match="read-only"):
        h[0] = 7
    np.testing.assert_array_equal(a.numpy(), [1, 1, 1])


def test_a_fill_refuses_later_writes_through_the_handle(backend):
    a = nna.asarray(np.zeros(3, np.float32), device="numpy")
    h = a.data
    a.fill(2.0)
    with pytest.raises(ValueError, match="read-only"):
        h[0] = 7
    np.testing.assert_array_equal((a * 1).numpy(), [2, 2, 2])


def test_np_asarray_of_a_device_array_is_read_only_and_keeps_its_device(backend):
    if backend == "numpy":
        pytest.skip("on the host np.asarray is a writable handle")
    a = nna.asarray(np.ones(3, np.float32))
    r = np.asarray(a)
    assert not r.flags.writeable and a.head == f"{backend}:0"


def test_scipy_sosfilt_takes_ndarrays():
    """A Cython function that takes writable memoryviews (``sosfilt``'s ``sos`` and
    ``zi``) gets host arrays through ``np.asarray``."""
    signal = pytest.importorskip("scipy.signal")
    rng = np.random.default_rng(0)
    xn = rng.random(64)
    sos = signal.butter(4, 0.2, output="sos")
    zi = signal.sosfilt_zi(sos)
    want, wz = signal.sosfilt(sos, xn, zi=zi)
    got, gz = signal.sosfilt(nna.asarray(sos), nna.asarray(xn), zi=nna.asarray(zi))
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(gz, wz)


HOST_ARRAYS = {
    "zeros": lambda: nna.zeros((4, 6), device="numpy"),
    "full": lambda: nna.full((4, 6), 3.0, device="numpy"),
    "fill": lambda: _filled(),
    "empty": lambda: nna.empty((4, 6), device="numpy"),
    "view of zeros": lambda: nna.zeros((8, 6), device="numpy")[2:6],
    "strided view": lambda: nna.zeros((4, 12), device="numpy")[:, ::2],
}


def _filled():
    a = nna.asarray(np.ones((4, 6), np.float32), device="numpy")
    a.fill(2.0)
    return a


@pytest.mark.parametrize("kind", list(HOST_ARRAYS))
def test_np_asarray_of_every_host_array_is_a_writable_handle(backend, kind):
    """Lazy fills, never-written arrays and views on the host hand out writable handles
    as ``asarray`` results do (SciPy's ``ndimage.correlate(a, k, output=xp.zeros(...))``
    writes through ``np.asarray(output)``; issue 43 item 1). The write reaches every
    device read."""
    a = HOST_ARRAYS[kind]()
    h = np.asarray(a)
    assert h.flags.writeable and a.head == "numpy:0"
    want = np.arange(24, dtype=np.float32).reshape(4, 6)
    h[...] = want
    np.testing.assert_array_equal(a.numpy(), want)
    np.testing.assert_array_equal(a.to_device(f"{backend}:0").numpy(), want)
    np.testing.assert_array_equal((a * 2).numpy(), want * 2)


def test_scipy_ndimage_writes_into_a_zeros_output():
    ndimage = pytest.importorskip("scipy.ndimage")
    a = np.arange(20, dtype=np.float32).reshape(4, 5)
    k = np.ones((3, 3), np.float32)
    out = nna.zeros((4, 5), device="numpy")
    ndimage.correlate(nna.asarray(a, device="numpy"), nna.asarray(k, device="numpy"),
                      output=out)
    np.testing.assert_allclose(out.numpy(), ndimage.correlate(a, k))


def test_threads_writing_through_handles_of_views_of_one_lazy_fill_lose_nothing():
    """Each thread takes ``np.asarray`` of its own row of one ``zeros`` array at once
    (SciPy ndimage's TestThreading): every write lands in the one root copy (issue 43
    item 5; lost 100 of 200 trials before)."""
    import threading
    for _ in range(100):
        out = nna.zeros((4, 500), device="numpy")
        start = threading.Barrier(4)

        def write(i, out=out, start=start):
            start.wait()
            np.asarray(out[i])[...] = i + 1

        threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        np.testing.assert_array_equal(out.numpy(), np.repeat(np.arange(1, 5.0), 500)
                                      .reshape(4, 500))
