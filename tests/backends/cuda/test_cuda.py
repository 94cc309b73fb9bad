"""The CUDA backend. CPU-side tests (availability reasons, context errors, import
cost) run everywhere; device tests skip with the backend's reason where no GPU is usable
(never a fake device). NVRTC compiling every kernel source: test_cuda_nvrtc.py."""

from __future__ import annotations

import subprocess
import sys
import types

import numpy as np
import pytest
from conftest import check_no_fallback, needs

import nnarray as nna
import nnarray.functions as F
from nnarray.backends.cuda import probe

REASON = nna.backends.why_unavailable("cuda")


@pytest.fixture
def _gpu(request):
    """A device test: skips with the reason (fails where NNARRAY_REQUIRE_BACKENDS names
    cuda), and fails if an op fell back to another backend."""
    needs("cuda")
    yield
    check_no_fallback(request.node)


gpu = pytest.mark.usefixtures("_gpu")


def _gpus() -> int:
    return nna.backends.module("cuda").device_count()


two_gpus = pytest.mark.skipif(REASON is not None or _gpus() < 2, reason="needs 2 GPUs")


@pytest.fixture
def reprobe():
    """Re-run the probe inside the test; restore the real cached reason afterwards."""
    probe.reset()
    yield probe
    probe.reset()
    probe.why_unavailable()


# -- availability, without a GPU -----------------------------------------------------
def test_registered_and_lazy_import():
    assert "cuda" in nna.backends.registered()
    code = ("import sys, nnarray as nna; nna.backends.registered(); "
            "import nnarray.functions; assert 'cupy' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_reason_when_cupy_missing(reprobe, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` fail
    assert reprobe.why_unavailable() == "cupy not installed"


def test_reason_when_cupy_import_breaks(reprobe, monkeypatch):
    def broken(name, *a, **k):
        raise ImportError("libcudart.so.12: cannot open shared object file")
    monkeypatch.setattr(probe.importlib, "import_module", broken)
    r = reprobe.why_unavailable()
    assert r.startswith("cupy failed to import: ImportError: libcudart.so.12")


def test_reason_is_cached_and_never_raises(reprobe, monkeypatch):
    calls = []

    def weird(name, *a, **k):
        calls.append(name)
        raise RuntimeError("boom")
    monkeypatch.setattr(probe.importlib, "import_module", weird)
    first = reprobe.why_unavailable()
    assert first == "cupy failed to import: RuntimeError: boom"
    assert reprobe.why_unavailable() is first and calls == ["cupy"]


class _RuntimeError(RuntimeError):
    pass


def _runtime(count=None, error=None, driver=0, runtime=12090):
    def get_count():
        if error:
            raise _RuntimeError(error)
        return count
    return types.SimpleNamespace(getDeviceCount=get_count, driverGetVersion=lambda: driver,
                                 runtimeGetVersion=lambda: runtime)


def test_diagnose_messages():
    d = probe.diagnose
    insufficient = "cudaErrorInsufficientDriver: CUDA driver version is insufficient"
    assert d(_runtime(count=2)) is None
    assert d(_runtime(count=0)) == "no CUDA device: the driver reports 0 devices"
    r = d(_runtime(error="cudaErrorNoDevice: no CUDA-capable device is detected"))
    assert r.startswith("no CUDA device: ") and "cudaErrorNoDevice" in r
    r = d(_runtime(error=insufficient, driver=0))
    assert r.startswith("no CUDA device: no NVIDIA driver found")
    r = d(_runtime(error=insufficient, driver=11040), "13.0.0")
    assert r.startswith("CUDA driver too old for this CuPy: the driver supports CUDA 11.4, "
                        "CuPy 13.0.0 needs CUDA 12.9")


@pytest.mark.skipif(REASON is None, reason="a GPU is usable here")
def test_unavailable_context_errors():
    before = nna.get_current_context()
    for spec in ("cuda", "cuda:1", nna.Context("cuda", 0)):
        with pytest.raises(nna.BackendUnavailableError, match="cuda") as e:
            with nna.context_scope(spec):
                pass
        assert REASON in str(e.value)
        assert nna.get_current_context() == before
    with pytest.raises(nna.BackendUnavailableError):
        nna.set_default_context("cuda")
    assert nna.get_current_context() == before
    assert "cuda" not in dict(nna.backends.available())
    assert nna.backends.module("cuda").device_count() == 0


# -- on a GPU ----------------------------------------------------------------------
@gpu
def test_devices_and_describe():
    n = _gpus()
    assert n >= 1
    descs = dict(nna.backends.available())["cuda"]
    assert len(descs) == n and descs[0].startswith("cuda:0 (")
    nna.device_synchronize("cuda")


@gpu
def test_transfers_are_counted_and_lazy_fill_is_free():
    import cupy
    a = nna.NdArray.from_numpy_array(np.arange(6, dtype=np.float32).reshape(2, 3))
    x = a.get_data("r", "cuda")
    assert isinstance(x, cupy.ndarray) and x.flags.c_contiguous
    st = nna.transfer_stats()
    assert st["by_route"][("numpy:0", "cuda:0")] == (1, 24)
    with nna.context_scope("cuda"):
        b = a * 2
        z = nna.zeros((1000,))
        z += 1
    assert b.head == "cuda:0" and z.head == "cuda:0"
    assert nna.transfer_stats()["count"] == 1  # fill materialized on the device
    np.testing.assert_array_equal(b.numpy(), a.numpy() * 2)
    assert nna.transfer_stats()["by_route"][("cuda:0", "numpy:0")][0] == 1


@gpu
def test_large_host_copies_are_pinned_and_correct():
    import cupy
    with nna.context_scope("cuda"):
        a = F.rand((1024, 1024), seed=3)
    h = a.numpy()
    dev = nna.backends.get_device("cuda", 0)
    buf = dev.to_host(a.get_data("r", "cuda"))
    attrs = cupy.cuda.runtime.pointerGetAttributes(buf.ctypes.data)
    assert attrs.type == cupy.cuda.runtime.memoryTypeHost
    np.testing.assert_array_equal(buf, h)


@gpu
def test_strict_transfers_on_cuda():
    a = nna.array([1.0, 2.0])
    with nna.context_scope("cuda"), nna.strict_transfers():
        with pytest.raises(nna.TransferError):
            F.exp(a)
        x = a.get_data("r")  # explicit is fine
        assert x.shape == (2,)


def _windows(x, k, s, p, fill=0.0):
    """(N, C, kh, kw, OH, OW) sliding windows of x (NCHW) padded with ``fill``."""
    (kh, kw), (sh, sw), (ph, pw) = k, s, p
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)),
                constant_values=fill)
    oh, ow = (xp.shape[2] - kh) // sh + 1, (xp.shape[3] - kw) // sw + 1
    win = np.empty(x.shape[:2] + (kh, kw, oh, ow))
    for i in range(kh):
        for j in range(kw):
            win[:, :, i, j] = xp[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]
    return win


def _im2col_ref(x, k, s, p):
    w = _windows(x, k, (s, s), (p, p))
    n, c, kh, kw, oh, ow = w.shape
    return w.reshape(n, c * kh * kw, oh * ow)


def _col2im_ref(cols, size, k, s, p):
    c, h, w = size
    (kh, kw) = k
    n = cols.shape[0]
    oh, ow = (h + 2 * p - kh) // s + 1, (w + 2 * p - kw) // s + 1
    img = np.zeros((n, c, h + 2 * p, w + 2 * p))
    c6 = cols.reshape(n, c, kh, kw, oh, ow)
    for i in range(kh):
        for j in range(kw):
            img[:, :, i:i + s * (oh - 1) + 1:s, j:j + s * (ow - 1) + 1:s] += c6[:, :, i, j]
    return img[:, :, p:p + h, p:p + w]


def _log_softmax_ref(x, axis):
    z = x - x.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def _fused_references(x, t, W):
    """numpy references (float64, independent of every nnarray backend) in the order of
    ``_fused_ops``."""
    x64 = x.astype(np.float64)
    out = [1 / (1 + np.exp(-x64)), np.maximum(x64, 0), x64 * 0.5, 2 + x64, x64 > 1.5,
           np.where(x64 > 0, x64, 0), np.clip(x64, -1, 2), _im2col_ref(x, (3, 2), 1, 1),
           _windows(x, (2, 2), (2, 2), (0, 0)).max(axis=(2, 3)), x64.sum(axis=(1, 3)),
           x64.argmax(2)]
    if x.dtype.kind == "f":
        ls = _log_softmax_ref(x64, -1)
        conv = np.tensordot(_windows(x, (3, 3), (2, 2), (1, 1)), W.astype(np.float64),
                            axes=((1, 2, 3), (1, 2, 3))).transpose(0, 3, 1, 2)
        out += [np.exp(ls), _log_softmax_ref(x64, 1),
                -np.take_along_axis(ls, t[..., None], -1)[..., 0], conv,
                _col2im_ref(_im2col_ref(x, (3, 3), 2, 1), (3, 6, 5), (3, 3), 2, 1),
                _windows(x, (2, 2), (2, 2), (0, 0)).mean(axis=(2, 3))]
    return out


def _fused_ops(ctx, x, t, W):
    with nna.context_scope(ctx):
        xa, ta, wa = nna.array(x), nna.array(t), nna.array(W)
        out = [F.sigmoid(xa), F.relu(xa), xa * 0.5, 2 + xa, xa > 1.5,
               F.where(xa > 0, xa, 0), F.clip(xa, -1, 2), F.im2col(xa, (3, 2), 1, 1),
               F.max_pooling(xa, 2), F.sum(xa, axis=(1, 3)), F.argmax(xa, 2)]
        if np.dtype(x.dtype).kind == "f":
            out += [F.softmax(xa), F.log_softmax(xa, axis=1),
                    F.softmax_cross_entropy(xa, ta), F.conv2d(xa, wa, pad=1, stride=2),
                    F.col2im(F.im2col(xa, (3, 3), 2, 1), (3, 6, 5), (3, 3), 2, 1),
                    F.average_pooling(xa, 2)]
        return [o.numpy() for o in out]


@pytest.mark.parametrize("ctx", ["numpy", "cuda"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
def test_fused_kernels_match_numpy(ctx, dtype, no_fallback):
    """CUDA's fused kernels against numpy references (run on the numpy backend too, so
    the references are checked on machines without a GPU)."""
    if ctx == "cuda":
        needs("cuda")
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((4, 3, 6, 5)) * 3).astype(dtype)
    t = rng.integers(0, 5, (4, 3, 6))
    W = rng.standard_normal((2, 3, 3, 3)).astype(dtype)
    tol = {"rtol": 2e-2, "atol": 2e-2} if dtype == np.float16 else {"rtol": 1e-5, "atol": 1e-5}
    got_all = _fused_ops(ctx, x, t, W)
    dtypes = [a.dtype for a in _fused_ops("numpy", x, t, W)]  # the ops' specified dtypes
    want_all = _fused_references(x, t, W)
    assert len(got_all) == len(want_all)
    for i, (got, want, dt) in enumerate(zip(got_all, want_all, dtypes)):
        assert got.dtype == dt and got.shape == want.shape, i
        if dt.kind == "f" and dt != want.dtype:  # the reference rounded as the op rounds
            want = want.astype(dt)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), **tol,
                                   err_msg=f"output {i}")


@gpu
def test_random_is_seeded_and_dropout_matches_rand():
    with nna.context_scope("cuda"):
        a, b, c = (F.rand((500, 40), seed=s).numpy() for s in (1, 1, 2))
        n = F.randn((100000,), mu=1, sigma=2, seed=5, dtype=np.float64).numpy()
        x = nna.array(np.ones((64, 64), np.float32))
        y = F.dropout(x, 0.25, seed=9).numpy()
        keep = F.rand((64, 64), seed=9).numpy() >= 0.25
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c) and 0 <= a.min() and a.max() < 1
    assert abs(n.mean() - 1) < 0.05 and abs(n.std() - 2) < 0.05
    np.testing.assert_array_equal(y, keep / np.float32(0.75))


@gpu
def test_dlpack_with_cupy():
    import cupy
    with nna.context_scope("cuda"):
        a = nna.array(np.arange(6, dtype=np.float32).reshape(2, 3)) * 1
    assert a.__dlpack_device__() == (2, 0)
    c = cupy.from_dlpack(a)
    assert c.data.ptr == a.get_data("r", "cuda").data.ptr  # shared
    c[0, 0] = 10
    assert a.numpy()[0, 0] == 10
    src = cupy.arange(12, dtype=cupy.float64).reshape(3, 4)
    b = nna.from_dlpack(src)
    assert b.head == "cuda:0" and b.get_data("r", "cuda").data.ptr == src.data.ptr
    s = nna.from_dlpack(src[:, ::2])
    assert s.get_data("r", "cuda").flags.c_contiguous
    np.testing.assert_array_equal(s.numpy(), cupy.asnumpy(src[:, ::2]))
    # numpy takes only host capsules: it asks for one with device='cpu' (dl_device)
    np.testing.assert_array_equal(np.from_dlpack(nna.from_dlpack(src), device="cpu"),
                                  cupy.asnumpy(src))


@two_gpus
def test_second_gpu_scoping_and_peer_copy():
    import cupy
    with cupy.cuda.Device(0):  # CuPy's current device must not matter
        with nna.context_scope("cuda:1"):
            a = F.rand((256, 256), seed=1) + 1
            r = F.softmax(a)
    assert a.get_data("r", "cuda:1").data.device_id == 1
    assert r.head == "cuda:1"
    nna.reset_transfer_stats()
    x = a.get_data("r", "cuda:0")
    assert x.data.device_id == 0
    assert nna.transfer_stats()["by_route"] == {("cuda:1", "cuda:0"): (1, a.nbytes)}
    np.testing.assert_array_equal(cupy.asnumpy(x), a.numpy())
    assert a.__dlpack_device__()[0] == 2
