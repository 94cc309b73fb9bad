"""The CUDA backend's kernels against the op specs (issue 30): one test per defect.

Without a GPU: the device scope is checked on every path ``Kernel`` offers (the
mechanism, on the host's kernel table, and by inspection of the CUDA table on two GPUs);
the CUDA kernel table's dtype logic is called on numpy arrays; the raw kernel sources'
edge cases are compiled by NVRTC and run on the host through a one-thread grid shim
(``cuda_host``). With a GPU: one test per row, skipped with the reason where there is
none (two-GPU rows unless two). Run them all with ``python -m pytest tests -k cuda``.
"""

from __future__ import annotations

import contextlib
import ctypes
import math

import cuda_host
import numpy as np
import pytest
from test_cuda import _gpu, gpu, two_gpus  # noqa: F401  (_gpu: the fixture gpu uses)

import nnarray as nna
import nnarray.functions as F
from nnarray import InvalidValueError, registry
from nnarray.backends.cuda import elementwise as ce
from nnarray.backends.cuda import random as rnd
from nnarray.backends.cuda import raw, scope, softmax
from nnarray.kernel import Kernel
from nnarray.ops.elementwise import unary_dtype

I64 = ctypes.c_longlong


def A(a, dtype=None) -> nna.NdArray:
    return nna.NdArray.from_numpy_array(np.asarray(a, dtype))


# -- row 1: every fast path runs inside the device scope -----------------------------------
class _Recorder:
    """A context manager factory counting entries (stands in for cupy.cuda.Device(i) in
    the mechanism test; the real scope is inspected on two GPUs below)."""

    def __init__(self) -> None:
        self.entered = 0

    @contextlib.contextmanager
    def __call__(self):
        self.entered += 1
        yield


def _reachable(k: Kernel, in_metas, attrs, out_meta) -> list:
    """Every callable the dispatch layer may call for ``k``: the kernel, its ``small``
    ufunc, ``move``, and what ``callee`` gives for these metas."""
    fn = k.fn
    found = [fn, k.callee(in_metas, attrs, out_meta)[0]]
    if getattr(fn, "small", None):
        found.append(fn.small[0])
    if getattr(fn, "move", None):
        found.append(fn.move)
    return found


def test_scope_wraps_every_fast_path(monkeypatch):
    """functools.wraps copied fn.small (the raw ufunc) onto the scoped wrapper, so every
    one-input op on cuda:1 ran on GPU 0. Bound through Device.bind, every path that
    Kernel.fast, Kernel.callee and generated code take enters the scope."""
    nna.backends.ensure_loaded("numpy")
    host = nna.backends.host_device()
    rec = _Recorder()
    monkeypatch.setattr(host, "bind", lambda fn: scope.scoped(fn, rec), raising=False)
    f32 = np.dtype(np.float32)
    m = ((64, 100), f32)
    cases = {"exp": ([m], {}), "add": ([m, m], {}), "relu": ([m], {}),
             "matmul": ([((8, 8), f32), ((8, 8), f32)], {}),
             "sum": ([m], {"axis": (0,), "keepdims": False}),
             "reshape": ([m], {"shape": (100, 64)})}
    for op, (metas, attrs) in cases.items():
        k = Kernel(op, registry.backend_kernels("numpy")[op], host)
        for f in _reachable(k, metas, attrs, m):
            assert scope.is_scoped(f), (op, f)
    # behaviour, not only marks: the fast path and a specialisation each enter once
    x = A(np.ones((64, 100), np.float32))
    k = Kernel("exp", registry.backend_kernels("numpy")["exp"], host)
    before = rec.entered
    np.testing.assert_allclose(k.fast(x, None, m).numpy(), np.e, rtol=1e-6)
    assert rec.entered == before + 1
    relu = Kernel("relu", registry.backend_kernels("numpy")["relu"], host)
    spec = relu.callee([m], {}, m)[0]
    assert spec is not relu.fn  # numpy's relu specialisation, scoped
    before = rec.entered
    spec(x.get_data("r", "numpy"))
    assert rec.entered == before + 1


_INSPECT = r"""
import contextlib, json
from nnarray import registry
from nnarray.backends.cuda import kernels, scope  # registers the CUDA table (no GPU needed)
bad, small = [], 0
for op, fn in registry.backend_kernels("cuda").items():
    try:
        k = scope.scoped(fn, contextlib.nullcontext)
    except TypeError as e:
        bad.append([op, str(e)]); continue
    paths = [k] + ([k.small[0]] if getattr(k, "small", None) else [])
    paths += [k.move] if getattr(k, "move", None) else []
    small += bool(getattr(k, "small", None))
    bad += [[op, repr(p)] for p in paths if not scope.is_scoped(p)]
    if getattr(k, "specialize", None) and k.specialize.__name__ != "specialize":
        bad.append([op, "specialize"])
print(json.dumps({"n": len(registry.backend_kernels("cuda")), "small": small, "bad": bad}))
"""


def test_every_cuda_kernel_table_entry_scopes_its_fast_paths():
    """Row 1 by inspection of the real CUDA table (CuPy imports without a GPU; run in a
    subprocess so its registrations stay out of this process): every kernel, its small
    ufunc, move and specialisation come out of ``scope.scoped`` scoped, none refused."""
    import json
    import subprocess
    import sys
    try:
        import cupy  # noqa: F401
    except Exception as e:
        pytest.skip(f"cupy does not import here: {type(e).__name__}: {e}")
    r = subprocess.run([sys.executable, "-c", _INSPECT], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["n"] > 100 and got["small"] > 20  # the table, with its ufunc fast paths
    assert got["bad"] == []


def test_scope_refuses_an_unknown_fast_path():
    def k(x):
        return x
    k.shortcut = lambda x: x  # a new path the dispatch layer might call: must be scoped
    with pytest.raises(TypeError, match="shortcut"):
        scope.scoped(k, _Recorder())


# -- rows 3, 4, 5, 14: the CUDA kernel table's dtype logic, called on numpy arrays ---------
SUPPORTED = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
             np.uint64, np.float16, np.float32, np.float64]


@pytest.mark.parametrize("name", ce.INTEGER_IDENTITY)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.float16,
                                   np.float32], ids=lambda d: np.dtype(d).name)
def test_cuda_rounding_of_integers_keeps_their_dtype(name, dtype):
    """CuPy 13's floor/ceil/trunc have only float loops: floor(int8) gave float16."""
    kind = np.dtype(dtype).kind
    x = np.array([-2.5, 0.5, 7.25] if kind == "f" else [-3, 0, 7] if kind == "i" else
                 [0, 3, 255], dtype)
    k = ce.integer_identity(getattr(np, name), np)
    got = k(x)
    want = getattr(np, name)(x)
    assert got.dtype == want.dtype == F.__dict__[name](A(x)).dtype
    np.testing.assert_array_equal(got, want)
    out = np.empty_like(want)
    assert k(x, out=out) is out
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("name", ce.COMPARISONS)
@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.uint32, np.int64,
                                   np.uint64], ids=lambda d: np.dtype(d).name)
def test_cuda_comparison_with_out_of_range_int(name, dtype):
    """`uint8 == 300` and `int8 > 200` raised OverflowError (casting the int); numpy 2
    compares exactly."""
    info = np.iinfo(dtype)
    x = np.array([info.min, 0, info.max], dtype)
    k = ce._compare(name, getattr(np, name), np)
    for v in (info.max + 1, info.min - 1, 300, -1, 5, 2**70, -(2**70)):
        for first in (False, True):
            a, b = (v, x) if first else (x, v)
            try:
                want = getattr(np, name)(a, b)
            except OverflowError:  # numpy 2 too refuses ints no integer dtype holds
                continue
            np.testing.assert_array_equal(k(a, b), want, err_msg=f"{a} {name} {b}")


def test_cuda_pow_refuses_negative_integer_exponents():
    k = ce._pow(np.power)
    a = np.array([2, 3], np.int32)
    for b in (-1, np.int64(-2), np.array([1, -1], np.int32)):
        with pytest.raises(InvalidValueError, match="pow.*negative integer powers"):
            k(a, b)
    np.testing.assert_array_equal(k(a, np.array([0, 2], np.int32)), [1, 9])


# -- rows 6, 7: the softmax kernels' edge cases, run on the host ----------------------------
ROWS = [[-np.inf, 0.0, 1.0], [0.0, -np.inf, 1.0], [-np.inf, -np.inf, 2.0],
        [3.0, -np.inf, -np.inf], [-np.inf, -np.inf, -np.inf], [np.inf, 0.0, 1.0],
        [0.0, np.inf, 1.0], [np.nan, 0.0, 1.0], [1.0, 2.0, 3.0], [1e30, -1e30, 0.0]]


def _ref_log_softmax(x):
    with np.errstate(invalid="ignore", divide="ignore"):
        z = x - x.max(axis=1, keepdims=True)
        return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def _ref_softmax(x):
    with np.errstate(invalid="ignore", divide="ignore"):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("dtype", list(raw.CTYPES), ids=lambda d: d.name)
def test_softmax_kernel_rows_with_infinities_on_host(dtype):
    """The online softmax started with EXP(m - m), NaN for a row beginning with -inf:
    [-inf, 0, 1] gave [nan, nan, nan]. Now each row matches numpy's composition (an all
    -inf or any +inf/NaN row is NaN there too)."""
    code = softmax._SRC.variants[dtype]
    cuda_host.nvrtc_check(code)
    lib = cuda_host.load(code)
    x = np.array(ROWS, dtype)
    rows, k = x.shape
    for mode, ref in ((0, _ref_softmax), (1, _ref_log_softmax)):
        y = np.full_like(x, 7.0)
        lib.nna_softmax(cuda_host.ptr(x), cuda_host.ptr(y), I64(rows), I64(k), I64(1),
                        ctypes.c_int(mode))
        want = ref(x.astype(np.float64)).astype(dtype)
        np.testing.assert_allclose(y, want, rtol=1e-6, atol=0, err_msg=f"mode {mode}")
    # along a non-last axis (inner > 1): the transposed rows give the transposed result
    xt = np.ascontiguousarray(x.T)
    y = np.empty_like(xt)
    lib.nna_softmax(cuda_host.ptr(xt), cuda_host.ptr(y), I64(rows), I64(k), I64(rows),
                    ctypes.c_int(1))
    np.testing.assert_allclose(y.T, _ref_log_softmax(x.astype(np.float64)), rtol=1e-6)


@pytest.mark.parametrize("dtype", list(raw.CTYPES), ids=lambda d: d.name)
def test_cross_entropy_kernel_on_host(dtype):
    """Label -1 picked the last class (`c += K`); now any label out of [0, K) gives NaN
    in the kernel (and the device check below raises it)."""
    lib = cuda_host.load(softmax._SRC.variants[dtype])
    x = np.array(ROWS[:4] + [[0.5, 1.0, -2.0]] * 3, dtype)
    t = np.array([2, 0, 2, 1, -1, 3, 1], np.int64)
    y = np.empty(len(t), dtype)
    lib.nna_softmax_xent(cuda_host.ptr(x), cuda_host.ptr(t), cuda_host.ptr(y), I64(len(t)),
                         I64(3), I64(1))
    ls = _ref_log_softmax(x.astype(np.float64))
    ok = (t >= 0) & (t < 3)
    np.testing.assert_allclose(y[ok], -ls[np.arange(len(t))[ok], t[ok]], rtol=1e-6)
    assert np.isnan(y[~ok]).all()


def test_range_check_kernel_on_host():
    from nnarray.backends.cuda.device import CHECK_RANGE
    cuda_host.nvrtc_check(CHECK_RANGE.code)
    lib = cuda_host.load(CHECK_RANGE.code)
    err = np.zeros(4, np.int64)
    t = np.array([0, 2, 1], np.int64)
    lib.nna_check_range(cuda_host.ptr(t), I64(3), I64(0), I64(3), I64(5), cuda_host.ptr(err))
    assert err.tolist() == [0, 0, 0, 0]
    t = np.array([0, 7, 1], np.int64)
    lib.nna_check_range(cuda_host.ptr(t), I64(3), I64(-3), I64(3), I64(5), cuda_host.ptr(err))
    assert err.tolist() == [1, 7, 3, 5]


# -- randn: Box-Muller against the normal distribution and the numpy backend ----------------
def _normal_ks(z: np.ndarray) -> float:
    """Kolmogorov-Smirnov distance of ``z`` from the standard normal."""
    z = np.sort(z)
    cdf = 0.5 * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))
    n = len(z)
    return float(max((np.arange(1, n + 1) / n - cdf).max(), (cdf - np.arange(n) / n).max()))


def _check_normal(n: np.ndarray, mu: float, sigma: float) -> None:
    """Mean, std and shape of ``n`` against N(mu, sigma): 5 standard errors, and a KS
    distance below 1.63/sqrt(size) (the 1% critical value)."""
    size = n.size
    n = n.astype(np.float64)
    assert abs(n.mean() - mu) < 5 * sigma / math.sqrt(size), n.mean()
    assert abs(n.std() - sigma) < 5 * sigma / math.sqrt(2 * size), n.std()
    assert _normal_ks(((n - mu) / sigma)[:200_000]) < 1.63 / math.sqrt(min(size, 200_000))


@pytest.mark.parametrize("dtype", list(raw.CTYPES), ids=lambda d: d.name)
def test_randn_kernel_statistics_on_host(dtype):
    """The CPU emulation gave mean 1.0035, std 2.0015 for mu=1, sigma=2 (within noise
    at its size?): checked here on 2^20 draws, as the numpy backend's are."""
    lib = cuda_host.load(rnd._SRC.variants[dtype])
    y = np.empty(1 << 20, dtype)
    t = cuda_host.scalar(dtype)
    k0, k1 = (ctypes.c_uint(int(k)) for k in rnd.keys(5))
    lib.nna_randn(cuda_host.ptr(y), I64(y.size), k0, k1, t(2.0), t(1.0))
    assert np.isfinite(y).all()
    _check_normal(y, 1.0, 2.0)
    _check_normal(F.randn((1 << 20,), mu=1, sigma=2, seed=5, dtype=dtype).numpy(), 1.0, 2.0)


# -- on a GPU -------------------------------------------------------------------------------
def _on(ctx: str, a) -> nna.NdArray:
    with nna.context_scope(ctx):
        return A(a) * 1  # written on ctx's device


@two_gpus
def test_unary_and_binary_ops_run_on_cuda1():
    """Row 1: exp, tanh, relu... (the small fast path) ran on GPU 0 for cuda:1 data."""
    import cupy
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    with cupy.cuda.Device(0):
        a = _on("cuda:1", x)
        with nna.context_scope("cuda:1"):
            outs = {"exp": F.exp(a), "tanh": F.tanh(a), "relu": F.relu(a),
                    "sigmoid": F.sigmoid(a), "add": a + a, "neg": -a, "sum": F.sum(a)}
    for name, r in outs.items():
        assert r.head == "cuda:1", name
        assert r.get_data("r", "cuda:1").data.device_id == 1, name
    np.testing.assert_allclose(outs["exp"].numpy(), np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(outs["relu"].numpy(), np.maximum(x, 0))


@two_gpus
def test_every_cuda_kernel_path_is_scoped_on_cuda1():
    """Row 1 by inspection: every kernel, small ufunc, move and specialisation the
    dispatch layer can reach on cuda:1 is the scoped wrapper."""
    nna.backends.ensure_loaded("cuda")
    dev = nna.backends.get_device("cuda", 1)
    for op, fn in registry.backend_kernels("cuda").items():
        k = Kernel(op, fn, dev)
        assert scope.is_scoped(k.fn), op
        for attr in ("move",):
            if getattr(k.fn, attr, None) is not None:
                assert scope.is_scoped(getattr(k.fn, attr)), (op, attr)
        if getattr(k.fn, "small", None):
            assert scope.is_scoped(k.fn.small[0]), op


@two_gpus
def test_nccl_mean_scales_on_its_device():
    """Row 2: `x *= 1/size` ran outside the device scope (GPU 0's stream)."""
    import cupy
    from cupy.cuda import nccl

    from nnarray.distributed.nccl import NcclTransport
    if not getattr(nccl, "available", False):
        pytest.skip("CuPy was built without NCCL here")

    class _Host:
        rank, size = 0, 1

        def bcast_obj(self, obj, root):
            return obj
    t = NcclTransport(_Host(), 1)
    t.size = 2  # a one-rank communicator sums to x; the mean divides by 2
    with cupy.cuda.Device(1):
        x = cupy.arange(8, dtype=cupy.float32)
    with cupy.cuda.Device(0):
        t.allreduce(x, "mean")
    np.testing.assert_allclose(cupy.asnumpy(x), np.arange(8) / 2)


@gpu
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.bool_],
                         ids=lambda d: np.dtype(d).name)
def test_sigmoid_of_integers_on_cuda(dtype):
    """Row 3."""
    x = np.array([0, 1, 5], dtype)
    with nna.context_scope("cuda"):
        y = F.sigmoid(A(x))
    want = 1 / (1 + np.exp(-x.astype(np.float64)))
    assert y.dtype == unary_dtype("sigmoid", np.dtype(dtype))
    np.testing.assert_allclose(y.numpy().astype(np.float64), want, rtol=2e-3)


@gpu
def test_int_pow_negative_exponent_on_cuda():
    """Row 4 (also tests/core/test_faults.py::test_int_pow_negative_exponent_raises[cuda])."""
    with nna.context_scope("cuda"):
        a = A([2, 3], np.int32) * 1
        with pytest.raises(InvalidValueError, match="pow"):
            F.pow(a, A([1, -1], np.int32) * 1)
        with pytest.raises(InvalidValueError, match="pow"):
            a ** -1


@gpu
def test_comparisons_with_out_of_range_ints_on_cuda():
    """Row 5: uint8 == 300 raised OverflowError."""
    x = np.array([0, 7, 255], np.uint8)
    with nna.context_scope("cuda"):
        a = A(x) * 1
        got = {"eq": a == 300, "lt": a < 300, "gt": a > -1, "ne": a != -5, "le": 300 <= a}
    want = {"eq": x == 300, "lt": x < 300, "gt": x > -1, "ne": x != -5, "le": 300 <= x}
    for k, r in got.items():
        np.testing.assert_array_equal(r.numpy(), want[k], err_msg=k)


@gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16],
                         ids=lambda d: np.dtype(d).name)
def test_softmax_family_with_masked_rows_on_cuda(dtype):
    """Row 6: rows beginning with -inf gave all-NaN (fused kernel; float16 takes the
    composition)."""
    with np.errstate(over="ignore"):  # 1e30 is inf in float16
        x = np.array(ROWS, dtype)
    t = np.array([2, 2, 2, 0, 1, 1, 1, 1, 0, 2])
    with nna.context_scope("cuda"):
        xs = A(x) * 1
        sm, ls = F.softmax(xs, axis=1).numpy(), F.log_softmax(xs, axis=1).numpy()
        ce_ = F.softmax_cross_entropy(xs, A(t)).numpy()
    ref = _ref_log_softmax(x.astype(np.float64))
    rtol = 1e-2 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(ls.astype(np.float64), ref, rtol=rtol)
    np.testing.assert_allclose(sm.astype(np.float64), _ref_softmax(x.astype(np.float64)),
                               rtol=rtol, atol=1e-3 if dtype == np.float16 else 0)
    np.testing.assert_allclose(ce_.astype(np.float64), -ref[np.arange(len(t)), t], rtol=rtol)


@gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("bad", [-1, 3, 9])
def test_device_labels_out_of_range_raise_on_cuda(dtype, bad):
    """Row 7: labels only on the GPU were never checked (-1 picked the last class);
    fused (float32) and composed (float16) paths both report at the next sync."""
    x = A(np.zeros((2, 3)), dtype)
    with nna.context_scope("cuda"):
        t = A([0, 1], np.int64) * 1 + A([0, bad - 1], np.int64)  # [0, bad] on the GPU
        assert t.devices == ["cuda:0"]
        with pytest.raises(InvalidValueError, match=f"softmax_cross_entropy.*label {bad}"):
            float(F.sum(F.softmax_cross_entropy(x, t)))
        nna.device_synchronize()  # consumed
        ok = F.softmax_cross_entropy(x, A([0, 2]) * 1)
        np.testing.assert_allclose(ok.numpy().astype(np.float64), np.log(3), rtol=1e-3)


@gpu
def test_out_of_memory_inside_a_cupy_kernel_is_named():
    """Row 8: CuPy's OutOfMemoryError from inside a kernel (its own output) is released,
    retried and raised as nnarray's, naming the op (tests/core/test_faults.py checks an
    allocation through the device)."""
    import cupy
    pool = cupy.get_default_memory_pool()
    with nna.context_scope("cuda"):
        x = A(np.ones((64, 1 << 20), np.float32)) * 1  # 256 MiB
        nna.device_synchronize()
        nna.empty_cache()  # else the input's freed transfer buffer would serve exp's output
        limit = pool.get_limit()
        pool.set_limit(size=pool.used_bytes() + (128 << 20))
        try:
            with pytest.raises(nna.OutOfMemoryError, match="exp.*cuda:0.*268435456 bytes"):
                F.exp(x)
        finally:
            pool.set_limit(size=limit)
        np.testing.assert_allclose(F.exp(x).numpy()[0, :3], np.e, rtol=1e-6)


@two_gpus
def test_memory_stats_of_cuda1():
    """Row 9: the pool was read outside the scope (cuda:1 reported GPU 0)."""
    with nna.context_scope("cuda:1"):
        nna.empty_cache()
        before = nna.memory_stats("cuda:1")["in_use"]
        keep = A(np.ones(1 << 26, np.uint8)) * 1  # 64 MiB on cuda:1
        after = nna.memory_stats("cuda:1")["in_use"]
    assert after - before >= 1 << 26
    assert keep.head == "cuda:1"


@gpu
def test_copy_from_pinned_buffer_is_ordered_before_host_writes():
    """Row 10: the host-to-device copy from a pinned buffer was asynchronous while the
    buffer stayed the current host copy; writing it right after changed the GPU's data."""
    import cupy
    dev = nna.backends.get_device("cuda", 0)
    buf = dev.host_buffer((1 << 24,), np.dtype(np.float32))  # 64 MiB: pinned
    assert dev.is_pinned(buf) and dev.is_pinned(buf.reshape(4, -1))
    buf[:] = 1
    with cupy.cuda.Device(0):
        big = cupy.ones((4096, 4096), cupy.float32)
        for _ in range(20):  # tens of ms of queued work ahead of the copy
            big = big @ big * 1e-4
    x = dev.from_host(buf)
    buf[:] = 2  # at once: a copy still queued would read these
    assert float(x.max()) == 1.0


@gpu
def test_take_out_of_range_on_cuda():
    """Row 11: cupy.take wrapped indices (`F.take(x, [5])` on length 3 gave x[2])."""
    with nna.context_scope("cuda"):
        x = A([1.0, 2.0, 3.0]) * 1
        with pytest.raises(IndexError, match="take.*index 5"):
            F.take(x, A([5]))  # host indices
        with pytest.raises(IndexError, match="take.*index -4"):
            F.take(x, A([1]) * 1 - 5)  # indices only on the GPU
        np.testing.assert_array_equal(F.take(x, A([-1, 0]) * 1).numpy(), [3.0, 1.0])


@two_gpus
def test_dlpack_copy_of_cuda1_data_stays_on_cuda1():
    """Row 12: copy=True ran x.copy() on GPU 0 while __dlpack_device__ said GPU 1."""
    import cupy

    from nnarray import dlpack
    a = _on("cuda:1", np.arange(6, dtype=np.float32))

    class Copy:  # asks nnarray for a private copy (copy=True)
        def __dlpack__(self, stream=None, max_version=None, **kw):
            return dlpack.export(a, stream=stream, max_version=max_version, copy=True)

        def __dlpack_device__(self):
            return a.__dlpack_device__()
    with cupy.cuda.Device(0):
        c = cupy.from_dlpack(Copy())
    assert c.data.device_id == 1
    assert c.data.ptr != a.get_data("r", "cuda:1").data.ptr
    np.testing.assert_array_equal(cupy.asnumpy(c), np.arange(6))


@two_gpus
@pytest.mark.parametrize("dtype", [np.float16, np.int32], ids=lambda d: np.dtype(d).name)
def test_col2im_index_cache_per_gpu(dtype):
    """Row 13: the cached gather indices of the composed col2im (float16, integers) were
    GPU 0's arrays, reused on GPU 1."""
    from nnarray.ops.conv import col2im
    cols = np.arange(2 * 4 * 9, dtype=dtype).reshape(2, 4, 9)
    outs = []
    for ctx in ("cuda:0", "cuda:1"):
        with nna.context_scope(ctx):
            c = A(cols) * 1
            r = col2im(c, size=(1, 6, 6), kernel=(2, 2), stride=(2, 2), pad=(0, 0),
                       dilation=(1, 1))
        assert r.get_data("r", ctx).data.device_id == int(ctx[-1])
        outs.append(r.numpy())
    with nna.context_scope("numpy"):
        want = col2im(A(cols), size=(1, 6, 6), kernel=(2, 2), stride=(2, 2), pad=(0, 0),
                      dilation=(1, 1)).numpy()
    for o in outs:
        np.testing.assert_array_equal(o, want)


@gpu
@pytest.mark.parametrize("name", ce.INTEGER_IDENTITY)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int64],
                         ids=lambda d: np.dtype(d).name)
def test_rounding_of_integers_on_cuda(name, dtype):
    """Row 14: floor(int8) gave float16 on CuPy 13."""
    x = np.array([-3, 0, 7] if np.dtype(dtype).kind == "i" else [0, 3, 7], dtype)
    with nna.context_scope("cuda"):
        y = getattr(F, name)(A(x) * 1)
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y.numpy(), x)


@gpu
def test_singular_linalg_raises_on_cuda():
    """Row 16: CuPy returned NaN/inf for singular or non-positive-definite input."""
    s = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
    with nna.context_scope("cuda"):
        a = A(s) * 1
        with pytest.raises(np.linalg.LinAlgError):
            nna.linalg.inv(a).numpy()
        with pytest.raises(np.linalg.LinAlgError):
            nna.linalg.solve(a, A([[1.0], [1.0]], np.float32) * 1).numpy()
        with pytest.raises(np.linalg.LinAlgError):
            nna.linalg.cholesky(A([[1.0, 2.0], [2.0, 1.0]], np.float32) * 1).numpy()
        good = nna.linalg.inv(A([[2.0, 0.0], [0.0, 4.0]], np.float32) * 1).numpy()
    np.testing.assert_allclose(good, [[0.5, 0.0], [0.0, 0.25]])


@gpu
def test_asarray_of_a_cupy_array_wraps_it_on_its_device():
    """`nna.asarray(cupy_array)` reached np.asarray: CuPy's implicit-conversion error."""
    import cupy
    c = cupy.arange(6, dtype=cupy.float32).reshape(2, 3)
    a = nna.asarray(c)
    assert a.head == "cuda:0" and a.get_data("r", "cuda").data.ptr == c.data.ptr  # shared
    b = nna.asarray(c, copy=True)
    assert b.get_data("r", "cuda").data.ptr != c.data.ptr
    d = nna.asarray(c, dtype=np.float64)
    assert d.dtype == np.float64
    np.testing.assert_array_equal(d.numpy(), np.arange(6).reshape(2, 3))


@gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_randn_statistics_on_cuda(dtype):
    """The Box-Muller kernel on the device, as tested on the host above."""
    with nna.context_scope("cuda"):
        n = F.randn((1 << 20,), mu=1, sigma=2, seed=5, dtype=dtype).numpy()
    _check_normal(n, 1.0, 2.0)
