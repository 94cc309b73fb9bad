"""Inline OpenCL math (``nnarray/backends/opencl/inline_math.py``) against numpy.

Each function runs on every OpenCL device (forced inline, so GPUs test the code too) over
every 2^12-th float32 bit pattern (1M values spread over the whole range, 2048 in each
binade of each sign, subnormals, inf and nan), 2^18 random patterns and the special values
and edges below. The reference is numpy in float64 (``scipy.special`` for erf, erfc)
rounded to float32; the error is counted in ULP (distance between the float32 bit
patterns, ordered), nan must match nan and a zero result must have the reference's sign.
Two-operand functions take the sample against shuffled, nearby and random patterns (a
third of it each), and every pair of edges. The bounds, stated
in ``BOUNDS``, are the documented accuracy (docs/backends.md): 0 for the exact ones
(``sqrt`` and the roundings).

Cost: one program per device holds every kernel of the sweeps (``_SweepProgram``: one
front-end compile, each kernel's machine code when first launched), each function runs in
one launch over its whole sample, the sample and a function's reference are computed once
for every device, and the ULP distance is measured only where the bits differ (numpy's
float64 references cost the most: the sample is sized for them). The op tests
(``F.exp``...) run on the first device that inlines (the default one on pocl, whose
programs the other op tests build too), and build each (op, dtype, device) program once.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from conftest import needs
from helpers import cl_build

import nnarray as nna
import nnarray.functions as F
from nnarray.backends import opencl
from nnarray.ops.fused import Builder, fused_elementwise

#: Largest error in float32 ULP against the float64 reference rounded to float32.
BOUNDS = {"exp": 1, "log": 1, "tanh": 1, "sigmoid": 2, "sin": 1, "cos": 1, "erf": 1,
          "erfc": 1, "pow": 1, "tan": 1, "hypot": 1, "atan2": 1, "atan": 1, "asin": 1,
          "acos": 1, "sinh": 1, "cosh": 1, "asinh": 1, "acosh": 1, "atanh": 1, "log1p": 1,
          "expm1": 1, "log2": 1, "log10": 1, "sqrt": 0, "ceil": 0, "floor": 0, "trunc": 0,
          "rint": 0}
#: Two-operand functions (the others take one).
BINARY = ("pow", "hypot", "atan2")
#: numpy's names where they differ from OpenCL's.
NUMPY = {"atan2": "arctan2", "atan": "arctan", "asin": "arcsin", "acos": "arccos",
         "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh"}
F32 = np.dtype(np.float32)
EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754942e-38, 1.1754944e-38,
         -1.1754944e-38, 3.4028235e38, -3.4028235e38, 1.0, -1.0, 0.5, 2.0,
         88.72283, 88.72284, 89.0, -87.33654, -87.33655, -103.97207, -103.97208, -104.0,
         0.625, -0.625, 9.0, 9.01, 2.0 ** -12, 2.0 ** -13, 3.9, 4.0, 0.9999999, 1.0000001,
         np.pi, np.pi / 2, np.pi / 4, 10.0, 10.05, 10.06, -10.0, 0.99999, -0.99999, 1e8,
         1.6e38, 3.0, -3.0, 0.25, 1.5, 127.0, -149.0, -150.0]


@pytest.fixture(autouse=True)
def _opencl():
    needs("opencl")


@functools.cache
def _sample() -> np.ndarray:
    """Every 2^12-th float32 bit pattern, 2^18 random ones and the edges (read-only: one
    array for every test)."""
    bits = np.arange(0, 1 << 32, 1 << 12, dtype=np.uint64).astype(np.uint32)
    rand = np.random.default_rng(0).integers(0, 1 << 32, 1 << 18, dtype=np.uint64)
    edges = np.array(EDGES, np.float32).view(np.uint32)
    x = np.concatenate([bits, rand.astype(np.uint32), edges]).view(np.float32)
    x.flags.writeable = False
    return x


def _ordered(a: np.ndarray) -> np.ndarray:
    i = a.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def _ulp(got: np.ndarray, ref64: np.ndarray) -> np.ndarray:
    """Per element: ULP distance; huge where nan-ness or a zero's sign differs (measured
    only where the bits differ from the reference's: equal bits are 0 ULP)."""
    with np.errstate(over="ignore", invalid="ignore"):
        ref = ref64.astype(np.float32)
    d = np.zeros(got.shape, np.int64)
    k = np.flatnonzero(got.view(np.uint32) != ref.view(np.uint32))
    d[k] = _ulp_apart(got[k], ref[k])
    return d


def _ulp_apart(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """``_ulp`` of float32 values against a float32 reference."""
    d = np.abs(_ordered(got) - _ordered(ref))
    nan_g, nan_r = np.isnan(got), np.isnan(ref)
    d[nan_g & nan_r] = 0
    d[nan_g != nan_r] = 1 << 40
    d[(ref == 0) & ~nan_g & (np.signbit(ref) != np.signbit(got))] = 1 << 40
    return d


@functools.lru_cache(maxsize=1)
def _sweep_reference(name: str) -> np.ndarray:
    """``_reference`` of ``name`` over its sweep's operands, kept for the next device (the
    tests of one function run one after the other)."""
    return _reference(name, *_operands(name))


def _operands(name: str) -> tuple[np.ndarray, ...]:
    """The sweep's operands of ``name``."""
    return _pair_sample(name) if name in BINARY else (_sample(),)


def _reference(name: str, *xs: np.ndarray) -> np.ndarray:
    from scipy.special import erf, erfc
    with np.errstate(all="ignore"):
        x = [v.astype(np.float64) for v in xs]
        if name == "sigmoid":
            return 1.0 / (1.0 + np.exp(-x[0]))
        if name in ("erf", "erfc"):
            return (erf if name == "erf" else erfc)(x[0])
        return getattr(np, NUMPY.get(name, name))(*x)


def _run(dev, expr: str, *xs: np.ndarray) -> np.ndarray:
    """``expr`` of ``v0, v1...`` as an elementwise kernel (through the hook) on ``dev``,
    computed in the operands' dtype."""
    from nnarray.backends.opencl.cltypes import cltype
    from nnarray.backends.opencl.elementwise import plan
    arrays = tuple(dev.from_host(x) for x in xs)
    t = xs[0].dtype
    p = plan(dev, "test", expr, arrays, [cltype(t)] * len(xs), xs[0].shape, t)
    return dev.to_host(p.run(dev, arrays))


def _check(name: str, got: np.ndarray, *xs: np.ndarray, ref: np.ndarray | None = None) -> None:
    """``got`` (``name`` of ``xs``) within its bound of ``ref``, by default the
    reference."""
    d = _ulp(got, _reference(name, *xs) if ref is None else ref)
    k = int(np.argmax(d))
    where = ", ".join(repr(float(x[k])) for x in xs)
    assert d[k] <= BOUNDS[name], (f"{name}({where}) = {got[k]!r}, reference "
                                  f"{_reference(name, *(x[k:k + 1] for x in xs))[0]!r}: "
                                  f"{d[k]} ULP > {BOUNDS[name]}")


def _devices() -> list[int]:
    return list(range(opencl.device_count())) or [0]


def _inlining_device() -> int:
    """The first device that takes the inline math (on pocl the default one, whose op
    programs the other tests build too); the last device where none does (a test of the
    ops' hook skips there)."""
    from nnarray.backends.opencl.inline_math import use_inline
    return next((d for d in _devices() if use_inline(opencl.get_device(d).cl_device)),
                max(_devices()))


def _pair_sample(name: str) -> tuple[np.ndarray, np.ndarray]:
    """``x`` the sample; ``y`` small powers for ``pow``, the sample's patterns shuffled and
    values near ``x`` (hypot's and atan2's ratio near 1) otherwise, and random patterns,
    each against every third ``x`` in turn; then every pair of edges."""
    return _pairs(name == "pow")


@functools.lru_cache(maxsize=1)
def _pairs(powers: bool) -> tuple[np.ndarray, np.ndarray]:
    x = _sample()
    rng = np.random.default_rng(1)
    e = np.array(EDGES, np.float32)
    bits = rng.integers(0, 1 << 32, x.size, dtype=np.uint64).astype(np.uint32).view(np.float32)
    if powers:
        ys = [rng.normal(0, 4, x.size), rng.integers(-40, 40, x.size), bits]
    else:
        with np.errstate(all="ignore"):
            near = x * rng.uniform(-2, 2, x.size).astype(np.float32)
        ys = [rng.permutation(x), near, bits]
    xs = np.concatenate([x, np.repeat(e, e.size)])
    ys = np.concatenate([np.stack([y.astype(np.float32) for y in ys], 1)
                         [np.arange(x.size), np.arange(x.size) % 3], np.tile(e, e.size)])
    xs.flags.writeable = ys.flags.writeable = False
    return xs, ys


#: A sweep's kernel: ``body`` on ``v0, v1`` of type ``T``, outputs ``o0`` (and ``o1``).
_KERNEL = """__kernel void {name}(__global T* o0, __global T* o1, __global const T* a0,
                         __global const T* a1, const uint n) {{
  const size_t i = get_global_id(0);
  if (i >= n) return;
  const T v0 = a0[i], v1 = a1[i];
  {body}
}}
"""


def _sweep_kernels(dev) -> dict[str, str]:
    """The sweeps' kernels on ``dev`` by name: each function of ``BOUNDS`` in float32
    (``f_exp``...), ``sincos`` (``k_sincos``) and, with fp64, ``sincos_fast`` and float64
    ``hypot`` (``d_hypot``)."""
    def kernel(name: str, t: str, body: str) -> str:
        return _KERNEL.format(name=name, body=body).replace("T", t)
    out = {f"f_{n}": kernel(f"f_{n}", "float", f"o0[i] = {n}(v0{', v1' if n in BINARY else ''});")
           for n in BOUNDS}
    for n in ("sincos", "sincos_fast")[:1 + dev.fp64]:
        out[f"k_{n}"] = kernel(f"k_{n}", "float", f"float c; o0[i] = {n}(v0, &c); o1[i] = c;")
    if dev.fp64:
        out["d_hypot"] = kernel("d_hypot", "double", "o0[i] = hypot(v0, v1);")
    return out


def _sweep_source(dev, kernels: list[str]) -> str:
    """The program of ``kernels`` with the inline math (``NNARRAY_OPENCL_MATH=inline``)."""
    from nnarray.backends.opencl.inline_math import inline
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NNARRAY_OPENCL_MATH", "inline")
        pragma = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if dev.fp64 else ""
        return inline(pragma + "".join(kernels), dev)


class _SweepProgram:
    """Every sweep kernel of a device in one program, built on first use (one front-end
    compile for all; pocl compiles a kernel's machine code when it first runs). Where it
    does not build, a test builds its kernel alone, which fails by name."""

    def __init__(self) -> None:
        self._built: dict[int, Any] = {}

    def run(self, device: int, kernel: str, *xs: np.ndarray,
            outputs: int = 1) -> tuple[np.ndarray, ...]:
        """Kernel ``kernel`` on ``device`` over ``xs`` (one launch): its first ``outputs``
        outputs (``o1`` is ``o0`` where it is not asked for)."""
        import pyopencl as cl

        from nnarray.backends.opencl.programs import launch
        dev = opencl.get_device(device)
        kernels = _sweep_kernels(dev)
        if device not in self._built:
            try:
                self._built[device] = cl_build(dev, _sweep_source(dev, list(kernels.values())))
            except Exception:  # noqa: BLE001 - each kernel's test builds it alone
                self._built[device] = None
        prg = self._built[device]
        if prg is None:
            try:
                prg = cl_build(dev, _sweep_source(dev, [kernels[kernel]]))
            except Exception as e:  # pyopencl's build failure carries the compiler's log
                pytest.fail(f"{kernel} does not build on opencl:{device}:\n{e}", pytrace=False)
        x = [np.ascontiguousarray(v) for v in xs]
        rw, ro = cl.mem_flags.READ_WRITE, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        ins = [cl.Buffer(dev.context, ro, hostbuf=v) for v in x]
        outs = [cl.Buffer(dev.context, rw, x[0].nbytes) for _ in range(outputs)]
        launch(dev.queue, cl.Kernel(prg, kernel), x[0].size,
               (outs[0], outs[-1], ins[0], ins[-1], np.uint32(x[0].size)))
        got = tuple(np.empty_like(x[0]) for _ in outs)
        for g, buf in zip(got, outs):
            cl.enqueue_copy(dev.queue, g, buf)
        return got


@pytest.fixture(scope="module")
def sweep() -> _SweepProgram:
    return _SweepProgram()


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("name", list(BOUNDS))
def test_inline_within_ulp_bound(name, device, sweep):
    """Each function within its bound over the sample (binary ones over pairs, every pair
    of edges included), in one launch; the double-internal ones need fp64."""
    dev = opencl.get_device(device)
    from nnarray.backends.opencl.inline_math import _FUNCS
    if not dev.fp64 and _FUNCS[name][3]:
        pytest.skip(f"opencl:{device} has no fp64: {name} keeps the builtin")
    xs = _operands(name)
    _check(name, sweep.run(device, f"f_{name}", *xs)[0], *xs, ref=_sweep_reference(name))


def _hard_trig() -> np.ndarray:
    """Arguments that stress the reduction of ``sin``/``cos``: the floats next to multiples
    of pi/2 (the result's leading bits cancel) at every scale, and Muller's closest float to
    a multiple of pi/2 (16367173 * 2^72)."""
    k = np.unique(np.concatenate([np.arange(1, 4096), np.geomspace(4096, 1e38, 20000)]))
    near = (k * (np.pi / 2)).astype(np.float32)
    steps = [np.nextafter(near, np.float32(np.inf)), np.nextafter(near, np.float32(0))]
    worst = np.float32(16367173 * 2.0 ** 72)
    x = np.concatenate([near, *steps, [worst, np.nextafter(worst, np.float32(0))]])
    return np.concatenate([x, -x]).astype(np.float32)


@pytest.mark.parametrize("device", _devices())
def test_sin_cos_hard_arguments_and_sincos(device, sweep):
    """Near multiples of pi/2 at every scale ``sin`` and ``cos`` keep 1 ULP; ``sincos``
    (one reduction for both, used by complex ``exp``) returns exactly what they return."""
    x = np.concatenate([_hard_trig(), _sample()[::4]])
    sin, cos = sweep.run(device, "f_sin", x)[0], sweep.run(device, "f_cos", x)[0]
    _check("sin", sin, x)
    _check("cos", cos, x)
    s, c = sweep.run(device, "k_sincos", x, outputs=2)
    np.testing.assert_array_equal(s, sin)
    np.testing.assert_array_equal(c, cos)


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sin", "cos", "erf", "erfc", "pow",
                                  "tan", "hypot", "atan2", "asin", "acos", "atan", "sinh",
                                  "cosh", "asinh", "acosh", "atanh", "log1p", "expm1", "log2",
                                  "log10", "sqrt", "floor"])
def test_ops_take_inline_math_on_cpu_devices(name):
    """The functions themselves route through the hook: same bounds where inline."""
    from nnarray.backends.opencl.inline_math import use_inline
    dev = _inlining_device()
    if not use_inline(opencl.get_device(dev).cl_device):
        pytest.skip(f"opencl:{dev} keeps the builtins (not a CPU device)")
    x = _sample().copy()
    with nna.context_scope(f"opencl:{dev}"):
        a = nna.NdArray.from_numpy_array(x)
        if name in BINARY:
            y = np.random.default_rng(2).normal(0, 3, x.size).astype(np.float32)
            got = getattr(F, name)(a, nna.NdArray.from_numpy_array(y)).numpy()
            _check(name, got, x, y)
        else:
            _check(name, getattr(F, name)(a).numpy(), x)


def test_float64_and_float16_keep_working():
    """float64 keeps the builtins (an overload in the same source, one renderer for every
    function); float16 computes in float, so it takes the float32 code. The functions take
    float64 and float16 in turn (a program per function and dtype), so each dtype runs
    four of them and each function one dtype."""
    x = np.linspace(-8, 8, 10001)
    names = ("exp", "tanh", "sin", "cos", "sinh", "atan", "sqrt", "floor")
    with nna.context_scope(f"opencl:{_inlining_device()}"):
        for k, (dt, tol) in enumerate(((np.float64, 1e-14), (np.float16, 2e-3))):
            a = nna.NdArray.from_numpy_array(x.astype(dt))
            for name in names[k::2]:
                got = getattr(F, name)(a).numpy()
                assert got.dtype == dt
                with np.errstate(invalid="ignore"):  # sqrt of x < 0: nan on both sides
                    ref = getattr(np, NUMPY.get(name, name))(x.astype(dt).astype(np.float64))
                np.testing.assert_allclose(got.astype(np.float64), ref, rtol=tol,
                                           atol=tol if dt == np.float16 else 0)


def test_rewrite_and_device_choice(monkeypatch):
    """Only whole calls of the listed names are rewritten; the choice follows the device
    type and ``NNARRAY_OPENCL_MATH``; ``sigmoid`` (no builtin) is defined everywhere."""
    from nnarray.backends.opencl import inline_math
    dev = opencl.get_device(max(_devices()))
    src = "x = exp(v0) + native_exp(v0) + my_exp(v0) + exp2(v0) + half_sqrt(v0) + sinh(v0);"
    monkeypatch.setenv("NNARRAY_OPENCL_MATH", "inline")
    out = inline_math.inline(src, dev)
    assert out.endswith("x = nna_exp(v0) + native_exp(v0) + my_exp(v0) + exp2(v0) + "
                        "half_sqrt(v0) + nna_sinh(v0);")
    monkeypatch.setenv("NNARRAY_OPENCL_MATH", "builtin")
    assert inline_math.inline(src, dev) == src
    assert not inline_math.use_inline(dev.cl_device)
    x = np.linspace(-100, 100, 2001)
    for mode in ("builtin", "inline"):  # sigmoid, float and double, on either path
        monkeypatch.setenv("NNARRAY_OPENCL_MATH", mode)
        for dt, tol in ((np.float32, 1e-5), (np.float64, 1e-13)):
            got = _run(dev, "sigmoid(v0) + exp(v0 * (v0 < 0))", x.astype(dt))
            assert got.dtype == dt
            np.testing.assert_allclose(got, 1 / (1 + np.exp(-x)) + np.exp(x * (x < 0)),
                                       rtol=tol, atol=1e-38)
    monkeypatch.delenv("NNARRAY_OPENCL_MATH")
    import pyopencl as cl
    assert inline_math.use_inline(dev.cl_device) == bool(dev.cl_device.type
                                                         & cl.device_type.CPU)


#: The bit operations' cases: name -> (numpy's, binary).
BIT_OPS = {"abs": (np.abs, False), "isnan": (np.isnan, False), "isinf": (np.isinf, False),
           "isfinite": (np.isfinite, False), "signbit": (np.signbit, False),
           "relu": (lambda v: np.where(v > 0, v, 0).astype(v.dtype), False),
           "sign": (np.sign, False), "copysign": (np.copysign, True),
           "maximum": (np.maximum, True), "minimum": (np.minimum, True)}


def _same_bits(name: str, got: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
    """``got`` (``name`` of ``x`` and, binary, ``y``) equals numpy's bit for bit."""
    ref, binary = BIT_OPS[name]
    with np.errstate(invalid="ignore"):
        want = ref(x, y) if binary else ref(x)
    if name == "relu":  # nan stays nan (numpy's maximum(x, 0))
        want = np.where(np.isnan(x), x, want)
    assert got.dtype == want.dtype, name
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    if got.dtype.kind == "f":
        same &= (np.signbit(got) == np.signbit(want)) | np.isnan(want)
    assert same.all(), f"{name}: {x[~same][:3]} -> {got[~same][:3]}, numpy {want[~same][:3]}"


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bit_operations_exact(dtype, device):
    """``fabs``, ``copysign``, ``isnan``, ``isinf``, ``isfinite``, ``signbit`` (and so
    ``abs``, ``relu``, ``maximum``, ``sign``...) are exact bit operations inline: equal to
    numpy bit for bit, signed zeros and nan included, in float32 and float64. Every op in
    one fused program per dtype and device (both paths call the same rewrite); each op
    also alone (a program per op, dtype and device) on the first device, in float32 and
    float64 in turn."""
    with np.errstate(invalid="ignore"):
        x = _sample()[::2].astype(dtype)
    y = np.random.default_rng(3).permutation(x)
    with nna.context_scope(f"opencl:{device}"):
        a, b = nna.NdArray.from_numpy_array(x), nna.NdArray.from_numpy_array(y)
        bl = Builder(2)
        prog = bl.program([bl.call(n, 0, 1) if binary else bl.call(n, 0)
                           for n, (_, binary) in BIT_OPS.items()])
        for name, got in zip(BIT_OPS, fused_elementwise(a, b, program=prog)):
            _same_bits(name, got.numpy(), x, y)
        if device != _devices()[0]:
            return
        i = [np.float32, np.float64].index(dtype)
        for name, (_, binary) in list(BIT_OPS.items())[i::2]:
            got = getattr(F, name)(a, b) if binary else getattr(F, name)(a)
            _same_bits(name, got.numpy(), x, y)


@pytest.mark.parametrize("device", _devices())
def test_hypot_float64_within_1_ulp(device, sweep):
    """float64 ``hypot`` (complex128 ``abs`` takes it) is inline too, scaled the same way:
    within 1 float64 ULP of numpy's in long double, random bit patterns, normal values and
    every pair of edges (inf beats nan, subnormals, the largest doubles)."""
    if not opencl.get_device(device).fp64:
        pytest.skip(f"opencl:{device} has no fp64")
    rng = np.random.default_rng(4)
    e = np.array(EDGES + [1e-310, 1e300, 1.7e308, 2.2250738585072014e-308, 5e-324])
    x, y = ([rng.integers(0, 1 << 64, 1 << 18, dtype=np.uint64).view(np.float64),
             rng.normal(0, 10, 1 << 16), f(e, e.size)] for f in (np.repeat, np.tile))
    x, y = np.concatenate(x), np.concatenate(y)
    got = sweep.run(device, "d_hypot", x, y)[0]
    with np.errstate(all="ignore"):
        ref = np.hypot(x.astype(np.longdouble), y.astype(np.longdouble)).astype(np.float64)

    def ordered(a):  # hypot >= 0: the bit patterns are ordered
        return a.view(np.int64) & 0x7FFFFFFFFFFFFFFF
    d = np.abs(ordered(got) - ordered(ref))
    d[np.isnan(got) & np.isnan(ref)] = 0
    d[(np.isnan(got) != np.isnan(ref)) | (np.signbit(got) & ~np.isnan(got))] = 1 << 40
    k = int(np.argmax(d))
    assert d[k] <= 1, f"hypot({x[k]!r}, {y[k]!r}) = {got[k]!r}, reference {ref[k]!r}"


@pytest.mark.parametrize("device", _devices())
def test_sincos_fast_within_its_bound(device, sweep):
    """``sincos_fast`` (complex64 functions' fast path, ``complex_fast``): within 2 ULP for
    |x| <= ``FAST_TRIG_BOUND``, near multiples of pi/2 too."""
    from nnarray.backends.opencl import inline_math
    if not opencl.get_device(device).fp64:
        pytest.skip(f"opencl:{device} has no fp64: no fast path")
    x = np.concatenate([_hard_trig(), _sample()])
    x = x[np.abs(x) <= inline_math.FAST_TRIG_BOUND]
    for name, got in zip(("sin", "cos"), sweep.run(device, "k_sincos_fast", x, outputs=2)):
        d = _ulp(got, _reference(name, x))
        k = int(np.argmax(d))
        assert d[k] <= 2, f"fast {name}({x[k]!r}) = {got[k]!r}: {d[k]} ULP"
