"""Bad input that used to give a silent value or a raw numpy/pyopencl error (issue 15):
each raises an nnarray error naming the op, on every backend, before anything changes."""

from __future__ import annotations

import json
import os
import re

import forked
import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import InvalidValueError

pytestmark = pytest.mark.usefixtures("no_fallback")  # a backend runs its own kernels


def S(*parts: str) -> str:
    return ".*".join(re.escape(p) for p in parts)


def A(a, dtype=None) -> nna.NdArray:
    return nna.NdArray.from_numpy_array(np.asarray(a, dtype))


# -- integer ** negative integer ------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_int_pow_negative_exponent_raises(backend, dtype):
    """numpy raised its own ValueError, OpenCL returned [0, 0]: backends must agree."""
    a = A([2, 3], dtype)
    np.testing.assert_array_equal(np.asarray(a ** 2), [4, 9])  # a scalar form, cached
    for call in (lambda: a ** -1, lambda: F.pow(a, -2), lambda: F.pow(a, np.int64(-1)),
                 lambda: F.pow(a, A([1, -1], dtype)), lambda: 2 ** A([1, -1], dtype)):
        with pytest.raises(InvalidValueError, match=S("pow", "negative integer powers")):
            call()
    # floats, or a non-negative exponent array, stay allowed
    np.testing.assert_array_equal(np.asarray(F.pow(a, A([0, 2], dtype))), [1, 9])
    np.testing.assert_allclose(np.asarray(a ** -1.0), [0.5, 1 / 3])
    np.testing.assert_allclose(np.asarray(A([2.0, 4.0]) ** -1), [0.5, 0.25])


# -- labels out of range ----------------------------------------------------------------------
@pytest.mark.parametrize("bad", [-1, 3, 5])
def test_cross_entropy_labels_out_of_range_raise(backend, bad):
    """numpy picked the last class for -1; OpenCL gave NaN for -1 and 5 (of 3)."""
    x = A(np.arange(6).reshape(2, 3) / 4, np.float32)
    for t in (A([0, bad], np.int64), A([[0], [bad]], np.int32)):  # (N,) and nnabla's (N, 1)
        with pytest.raises(InvalidValueError, match=S("softmax_cross_entropy", f"label {bad}",
                                                      "3 classes")):
            F.softmax_cross_entropy(x, t)
    from nnarray import grad
    with grad.auto_forward():
        xv = grad.Variable.from_numpy_array(np.asarray(x), need_grad=True)
        tv = grad.Variable.from_numpy_array(np.array([bad, 1]))
        with pytest.raises(InvalidValueError, match=S("softmax_cross_entropy", f"label {bad}")):
            F.softmax_cross_entropy(xv, tv)
    ok = F.softmax_cross_entropy(x, A([2, 0]))  # valid labels still work, after the error
    ls = np.asarray(x) - np.log(np.exp(np.asarray(x)).sum(1, keepdims=True))
    np.testing.assert_allclose(np.asarray(ok), -ls[[0, 1], [2, 0]], rtol=1e-6)


def test_cross_entropy_device_labels_report_at_sync(backend):
    """Labels that live only on the device (no current host copy) are checked by the
    kernel and reported at the next synchronization, never as a silent value."""
    x = A(np.zeros((2, 3)), np.float32)
    t = A([0, 1], np.int64) * 5 - 1  # [-1, 4], computed on the backend's device
    if backend == "numpy":
        assert t.head == "numpy:0"
    else:
        assert t.devices == [t.head] and t.head.startswith(backend)
    with pytest.raises(InvalidValueError, match=S("softmax_cross_entropy", "label", "3")):
        loss = F.softmax_cross_entropy(x, t)
        float(F.sum(loss))
    nna.device_synchronize()  # the report was consumed: nothing left to raise
    assert float(F.sum(F.softmax_cross_entropy(x, A([0, 2])))) == pytest.approx(2 * np.log(3))


# -- memory: a bounded cache, empty_cache, release and retry, a clear error -----------------
def _device():
    c = nna.get_current_context()
    return nna.backends.get_device(c.backend, c.device_id)


def test_out_of_memory_names_op_shape_and_bytes(backend):
    """pyopencl's LogicError INVALID_BUFFER_SIZE / numpy's MemoryError about a uint8 buffer
    before; 4e14 bytes exceed any address space, overcommitted or not."""
    big = nna.zeros((10**7, 10**7))
    with pytest.raises(nna.OutOfMemoryError, match=S("add", "(10000000, 10000000)", "float32",
                                                     "400000000000000 bytes")):
        big + 1
    with pytest.raises(MemoryError, match=S("exp", "(10000000, 10000000)")):
        F.exp(big)
    assert big.devices == [] and float(F.sum(A([1.0, 2.0]))) == 3.0  # still usable


def test_pool_cache_is_bounded_and_empty_cache_releases_it(backend, monkeypatch):
    """160 arrays of distinct sizes, each freed, left 7.3 GB in the OpenCL pool."""
    dev = _device()
    if backend == "numpy":
        monkeypatch.setattr(dev.pool, "max_cached", 8 << 20)
        held = lambda: dev.pool.held_bytes  # noqa: E731
    elif hasattr(dev, "max_cached"):
        monkeypatch.setattr(dev, "max_cached", 8 << 20)
        held = lambda: dev.held_bytes  # noqa: E731
    else:
        pytest.skip(f"{backend}'s pool is bounded by its library")
    nna.empty_cache()
    for i in range(40):  # distinct sizes of 1-3 MiB, each freed at once
        n = (1 << 18) + i * 13_000
        a = F.mul(A(np.ones(n, np.float32)), 2.0)
        assert float(F.sum(a)) == 2.0 * n
        del a
        # the bound, plus what was freed since the last allocation checked it
        assert held() <= (8 << 20) + 3 * 4 * n, (i, held())
    nna.device_synchronize()
    keep = F.mul(A(np.ones(1 << 19, np.float32)), 2.0)  # in use: survives empty_cache
    nna.empty_cache(nna.get_current_context())
    assert held() == 0
    assert float(F.sum(keep)) == 2.0 * (1 << 19)
    nna.empty_cache()


def test_failed_allocation_releases_caches_and_retries_once(backend, monkeypatch):
    dev = _device()
    if backend == "numpy":
        import nnarray.backends.numpy.pool as hp
        real = np.empty
        fails = [1]

        def flaky(shape, dtype=float, *a, **k):
            if np.dtype(dtype) == np.uint8 and fails[0]:
                fails[0] -= 1
                raise MemoryError("simulated")
            return real(shape, dtype, *a, **k)
        monkeypatch.setattr(hp.np, "empty", flaky)
    elif backend == "opencl":
        import pyopencl as cl
        real = dev._alloc
        calls = []

        def flaky(n):
            calls.append(n)
            if len(calls) == 1:
                raise cl.MemoryError("simulated")
            return real(n)
        monkeypatch.setattr(dev, "_alloc", flaky)
    elif backend == "cuda":  # CuPy's OutOfMemoryError was never converted (issue 30)
        import cupy
        real = dev._cp
        calls = []

        class Flaky:  # cupy, whose first full() fails as an exhausted pool does
            def __getattr__(self, name):
                return getattr(real, name)

            def full(self, *a, **k):
                calls.append(1)
                if len(calls) == 1:
                    raise cupy.cuda.memory.OutOfMemoryError(1 << 21, 0)
                return real.full(*a, **k)
        monkeypatch.setattr(dev, "_cp", Flaky())
    else:
        pytest.skip(f"{backend}: allocation failures are its library's")
    released = []
    for d in list(nna.backends._devices.values()):
        monkeypatch.setattr(d, "empty_cache", lambda d=d: released.append(d.key))
    x = nna.full((1 << 19,), 3.0)  # 2 MiB: the host pool's and OpenCL's big path
    assert float(F.sum(x * 1.0)) == 3.0 * (1 << 19)
    assert released  # every device gave its cache back before the retry


# A child that fills its address space under RLIMIT_AS with arrays of n float32 each, for
# each n in turn, then checks that it can still compute (a kernel it had not used yet
# included). The limit is argv[2] bytes above what the child maps: ROOM for arrays plus what
# the backend keeps free (OpenCL's HEADROOM for pocl's compiler). Filling the room is what
# costs (page faults), so it is small.
ROOM = 512 << 20
_ADDRESS_SPACE = r"""
import json, resource, sys
import numpy as np, nnarray as nna, nnarray.functions as F
ctx, above, sizes = sys.argv[1], int(sys.argv[2]), [int(n) for n in sys.argv[3:]]
unused = {sizes[0]: F.sin, sizes[-1]: F.cos}  # each size's first use of a kernel
out = {}
with nna.context_scope(ctx):
    float(F.sum(nna.zeros((4,)) + 1))  # the device and its first kernels, before the limit
    with open("/proc/self/statm") as f:
        lim = int(f.read().split()[0]) * resource.getpagesize() + above
    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    for n in sizes:
        keep, err = [], None
        try:
            for _ in range(100000):
                keep.append(nna.zeros((n,)) + 1)
        except nna.OutOfMemoryError as e:
            err = str(e)
        held = sum(a.nbytes for a in keep)
        ok = all(float(a[n - 1]) == 1.0 for a in keep[-3:])
        del keep
        nna.empty_cache()  # the next size starts from the same room
        x = np.linspace(0, 1, 1000, dtype=np.float32)
        got = float(F.sum(unused[n](nna.NdArray.from_numpy_array(x)) * 3))
        want = float(np.sum(getattr(np, unused[n].__name__)(x) * 3))
        out[n] = {"err": err, "held": held, "ok": ok, "got": got, "want": want}
print(json.dumps(out))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc and RLIMIT_AS")
def test_out_of_memory_under_an_address_space_limit(backend):
    """pocl allocates lazily: a buffer past RLIMIT_AS crashed the process (SIGSEGV) at its
    first launch. Now the allocation raises, as numpy's does, and the process goes on.
    One child per backend fills its room with 32 MiB arrays (pocl's huge-page blocks, a few
    per recheck of the limit), then again with 1 MiB ones (the smallest pool block)."""
    if backend == "cuda":
        pytest.skip("cuda: device memory is not under the process's address-space limit")
    reserve = 0
    if backend == "opencl":
        from nnarray.backends.opencl.queues import HEADROOM as reserve
    sizes = [1 << 23, 1 << 18]
    r = forked.run(_ADDRESS_SPACE, backend, str(reserve + ROOM), *map(str, sizes),
                   env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    assert r.returncode == 0, r.stderr[-3000:]
    for n, out in zip(sizes, json.loads(r.stdout).values()):
        what = f"{backend}, arrays of {4 * n >> 20} MiB: {out}"
        assert re.search(S("add", f"({n},)", "float32", "bytes"), out["err"] or ""), what
        assert out["ok"] and out["held"] > ROOM * 3 // 4, what  # most of the room was usable
        assert out["got"] == pytest.approx(out["want"], rel=1e-5), what


# -- fill values an integer dtype cannot hold; random parameters ------------------------------
@pytest.mark.parametrize("value, why", [(float("nan"), "not finite"), (float("inf"), "not finite"),
                                        (-float("inf"), "not finite"),
                                        (2**40, "out of range"), (-2**31 - 1, "out of range"),
                                        (np.int64(2**40), "out of range"), (1e20, "out of range")])
def test_int_fill_rejects_values_the_dtype_cannot_hold(backend, value, why):
    """numpy's ValueError/OverflowError before (or a silent wrap for numpy integers)."""
    a = A([1, 2], np.int32)
    v = a.version
    with pytest.raises(InvalidValueError, match=S("NdArray.fill", repr(value), why, "int32",
                                                  "(2,)")):
        a.fill(value)
    with pytest.raises(InvalidValueError, match=S("int32")):
        a.data = value
    with pytest.raises(InvalidValueError, match=S("fill", "int32")):
        nna.full((2,), value, np.int32)
    assert a.version == v
    np.testing.assert_array_equal(np.asarray(F.add(a, 0)), [1, 2])
    a.fill(-2**31)  # the extremes are fine
    np.testing.assert_array_equal(np.asarray(F.add(a, 0)), [-2**31, -2**31])


@pytest.mark.parametrize("call, match", [
    (lambda: F.randn((2,), sigma=-1), S("randn", "'sigma'", ">= 0", "-1.0")),
    (lambda: F.rand((2,), low=2.0, high=1.0), S("rand", "'low' (2.0)", "'high' (1.0)")),
    (lambda: F.randn((2,), mu=float("nan")), S("randn", "'mu'", "finite")),
    (lambda: F.rand((2,), high=float("inf")), S("rand", "'high'", "finite")),
], ids=["sigma", "low-high", "mu-nan", "high-inf"])
def test_random_parameters_are_checked(backend, call, match):
    with pytest.raises(InvalidValueError, match=match):
        call()
    np.testing.assert_array_equal(np.asarray(F.randn((3,), sigma=0.0, mu=2.0)), [2.0] * 3)
    assert float(F.max(F.rand((5,), low=1.0, high=1.0))) == 1.0


# -- strict_transfers(implicit_reads=True) ----------------------------------------------------
def test_strict_transfers_can_flag_implicit_reads(backend):
    """float(), bool(), repr() and np.asarray() of a device array passed silently inside
    strict_transfers(): a hidden ``if loss < x:`` sync went unnoticed."""
    x = A([1.0, 2.0, 3.0])
    loss = F.sum(F.mul(x, 2.0))  # on the backend's device
    on_device = loss.head != "numpy:0"
    reads = {"float()": lambda: float(loss), "int()": lambda: int(loss),
             "bool()": lambda: bool(loss < 100.0), "repr()": lambda: repr(loss),
             "np.asarray()": lambda: np.asarray(loss)}
    with nna.strict_transfers():  # the default mode keeps allowing them
        assert float(F.sum(F.mul(x, 2.0))) == 12.0
    nna.reset_transfer_stats()
    with nna.strict_transfers(implicit_reads=True):
        for what, read in reads.items():
            if on_device:
                with pytest.raises(nna.TransferError, match=S(what, "(", backend,
                                                              "implicit_reads=True")):
                    read()
            else:
                read()  # the host copy is current: nothing to transfer, nothing to flag
        assert nna.transfer_stats()["count"] == 0
        assert loss.item() == 12.0  # explicit reads stay allowed
        assert float(loss) == 12.0  # ... and once on the host, implicit ones are free
    with nna.strict_transfers(implicit_reads=True), nna.strict_transfers(enabled=False):
        assert float(F.sum(x)) == 6.0  # an inner block turns the check off


# -- take: an index out of range is an IndexError on every backend (issue 30) -----------------
def test_take_index_out_of_range_raises(backend):
    """cupy.take wrapped it (x[2] for index 5 of 3), OpenCL wrote 0; numpy raised its own
    error. Host indices are checked for free, indices only on the device by a reduction."""
    x = A([1.0, 2.0, 3.0], np.float32)
    for bad in (3, 5, -4):
        with pytest.raises(IndexError, match=S("take", f"index {bad}", "axis 0", "size 3")):
            F.take(x, A([0, bad]))
        on_device = A([0, 0]) * 1 + A([0, bad])  # computed where the backend runs
        with pytest.raises(IndexError, match=S("take", f"index {bad}")):
            F.take(x, on_device)
    m = A(np.arange(6.0).reshape(2, 3), np.float32)
    with pytest.raises(IndexError, match=S("take", "index 2", "axis 0", "size 2")):
        F.take(m, A([2]), axis=0)
    np.testing.assert_array_equal(np.asarray(F.take(m, A([-1, 0]) * 1, axis=1)),
                                  [[2.0, 0.0], [5.0, 3.0]])


# -- linalg: singular or non-positive-definite input raises, as numpy's does (issue 30) ------
@pytest.mark.allow_fallback("OpenCL runs dense decompositions through the host's kernels")
def test_singular_inv_solve_cholesky_raise(backend):
    """CuPy returned NaN/inf unless asked to check."""
    s = A([[1.0, 2.0], [2.0, 4.0]], np.float32) * 1
    with pytest.raises(np.linalg.LinAlgError):
        np.asarray(nna.linalg.inv(s))
    with pytest.raises(np.linalg.LinAlgError):
        np.asarray(nna.linalg.solve(s, A([[1.0], [1.0]], np.float32)))
    with pytest.raises(np.linalg.LinAlgError):
        np.asarray(nna.linalg.cholesky(A([[1.0, 2.0], [2.0, 1.0]], np.float32) * 1))
    np.testing.assert_allclose(np.asarray(nna.linalg.inv(A([[2.0, 0.0], [0.0, 4.0]],
                                                           np.float32))),
                               [[0.5, 0.0], [0.0, 0.25]])


# -- an array library's own MemoryError inside a kernel (CuPy's; issue 30) --------------------
def test_kernel_memory_error_releases_retries_and_names_the_op(monkeypatch):
    from nnarray import memory
    from nnarray.kernel import Kernel
    released = []
    monkeypatch.setattr(memory, "release_all", lambda: released.append(1))
    host = nna.backends.host_device()
    x = A(np.ones((4, 5), np.float32))
    meta = ((4, 5), np.dtype(np.float32))
    calls = []

    def once(a):  # fails the first time, as a pool that only needed its cache back
        calls.append(1)
        if len(calls) == 1:
            raise MemoryError("library: out of memory allocating 80 bytes")
        return a * 2
    k = Kernel("exp", once, host)
    np.testing.assert_array_equal(k.run((x,), {}, (meta,)).numpy(), 2.0)
    assert released == [1] and len(calls) == 2
    calls.clear()
    np.testing.assert_array_equal(k.fast(x, None, meta).numpy(), 2.0)  # the fast path too
    assert released == [1, 1]

    def never(a):
        raise MemoryError("library: out of memory allocating 80 bytes")
    k = Kernel("exp", never, host)
    for run in (lambda: k.run((x,), {}, (meta,)), lambda: k.fast(x, None, meta)):
        with pytest.raises(nna.OutOfMemoryError, match=S("exp: out of memory on numpy:0",
                                                         "(4, 5) float32", "80 bytes",
                                                         "library")):
            run()
