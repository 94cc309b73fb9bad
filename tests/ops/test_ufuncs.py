"""The elementwise declarations (``nnarray/ops/ufuncs.py``): every row reaches every
backend and builds there, and the rows added through them (``erf``, ``erfc``, ``gelu``,
``gelu_tanh``, ``logit``)
match ``scipy.special`` in value and derivative on every backend, special values
included.
Each row's values against numpy are in ``test_functions_elementwise.py``, its numerical
gradient in ``test_grad_functions.py`` and its ONNX export in ``test_onnx.py``."""

from __future__ import annotations

import contextlib
import importlib
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import needs
from helpers import cl_build, fused_rows, row_program

import nnarray as nna
import nnarray.functions as F
from nnarray import grad
from nnarray.backends.cuda import vector
from nnarray.ops import elementwise
from nnarray.ops.ufuncs import BY_NAME, ROWS

special = pytest.importorskip("scipy.special")

#: A row's C operands and type, which a backend must have replaced.
_UNRENDERED = re.compile(r"\b[xyT]\b")


def test_every_row_has_a_kernel(backend):
    missing = [r.name for r in ROWS if backend not in nna.registry.kernels(r.name)]
    assert not missing, f"{backend} has no kernel for {missing}"


def test_every_row_is_an_op_a_function_and_a_namespace_name():
    import nnarray.xp as xp
    for r in ROWS:
        assert elementwise.ops[r.name].name == r.name
        assert r.name == "gelu" or getattr(F, r.name).op is elementwise.ops[r.name]
        for api in r.api_names:
            assert getattr(xp, api) is elementwise.functions[r.name], api


def test_every_row_has_numpy_and_cupy_functions():
    """numpy (and CuPy, which has the same names) functions of every row not written out
    by the backend itself (``relu``, ``sigmoid``: ``_xp/kernels.py``)."""
    from nnarray.backends._xp.elementwise import functions
    binary, unary = functions(np)
    assert set(binary) | set(unary) | {"relu", "sigmoid"} == set(BY_NAME)
    for r in ROWS:
        if isinstance(r.xp, str) and "." not in r.xp:
            assert callable(getattr(np, r.xp)), r.name


#: The operand dtypes a row's kernels are built for (those the row takes).
_DTYPES = tuple(map(np.dtype, (np.bool_, np.int8, np.uint8, np.int32, np.uint64, np.float16,
                               np.float32, np.float64, np.complex64, np.complex128)))


def _takes(row, d: np.dtype) -> np.dtype | None:
    """The result dtype of ``row`` on operands of ``d``, or ``None`` where it refuses them
    (or has no complex C expression)."""
    if (d.kind == "c" and row.cc is None) or (row.rule in ("no_bool", "pow") and d == np.bool_) \
            or (row.rule == "integral" and d.kind in "fc") or (row.rule == "int" and
                                                                d.kind not in "iu"):
        return None
    try:
        if row.arity == 2:
            return elementwise.binary_dtype(row.name, d)
        return elementwise.unary_dtype(row.name, d)
    except nna.errors.DTypeError:
        return None


def _opencl_kernel(row, d: np.dtype, res: np.dtype, name: str) -> tuple[str, str]:
    """(kernel ``name`` of ``row`` on contiguous operands of ``d``, its helpers), as the
    backend's kernels render it (``backends/opencl/elementwise.py``): in the result type,
    a predicate or a complex function in the operands' type."""
    from nnarray.backends.opencl.cltypes import cltype, convert
    from nnarray.backends.opencl.elementwise import expression, source
    keep = row.rule == "pred" or d.kind == "c" or res == np.bool_
    ct = cltype(d if keep else res)
    expr, helpers = expression(row.name, ct)
    assert expr and not _UNRENDERED.search(expr), (row.name, d, expr)
    rt = cltype(res) if row.arity == 2 or (ct.is_complex and row.rule != "pred") else \
        cltype(np.dtype(np.bool_)) if ct.is_complex else ct
    operands = [(True, cltype(d), ct)] * row.arity
    src = source(convert(expr, rt, cltype(res)), operands, cltype(res), 0, "int")
    return src.replace("__kernel void map(", f"__kernel void {name}("), helpers


def _opencl_kernels(row, dev) -> list[tuple[str, str, str]]:
    """(kernel name, helpers, source) of ``row``'s kernel for every dtype it takes, and of
    its complex64 fast path (``Hints.complex_fast``); the names carry the row's."""
    from nnarray.backends.opencl import complex_fast
    from nnarray.backends.opencl.cltypes import cltype
    from nnarray.backends.opencl.elementwise import expression
    out = []
    for d in _DTYPES:
        res = _takes(row, d)
        if res is None or (not dev.fp64 and {d.name, res.name} & {"float64", "complex128"}):
            continue
        name = f"map_{row.name}_{d.name}"
        out.append((name, *reversed(_opencl_kernel(row, d, res, name))))
        if d == np.complex64 and row.name in complex_fast.FAST and dev.fp64:
            expr, helpers = expression(row.name, cltype(d))
            fast = complex_fast.source(row.name, expr, cltype(d), cltype(res), helpers,
                                       False)
            name = f"map_fast_{row.name}"
            out.append((name, "", fast.replace("__kernel void map(", f"__kernel void {name}(")))
    return out


def _opencl_program(kernels: list[tuple[str, str, str]], dev) -> str:
    """One program holding ``kernels`` (each helper once; they guard their definitions)."""
    from nnarray.backends.opencl.inline_math import inline
    parts, seen = [], set()
    for _, helpers, src in kernels:
        parts.append(("" if helpers in seen else helpers) + src)
        seen.add(helpers)
    return inline("".join(parts), dev)


@pytest.fixture(scope="module")
def opencl_rows() -> tuple[Any, BaseException | None]:
    """Every row's kernels, for every dtype, built as one program (one compile on a cold
    cache, where a program per row cost a compile each): (the program, or ``None`` and
    why it did not build). A row that does not render is left out (its test says why)."""
    needs("opencl")
    dev = nna.backends.get_device("opencl", 0)
    kernels = []
    for row in ROWS:
        with contextlib.suppress(Exception):
            kernels += _opencl_kernels(row, dev)
    try:
        return cl_build(dev, _opencl_program(kernels, dev)), None
    except Exception as e:
        return None, e


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_opencl_builds_every_row_for_every_dtype_it_takes(row, opencl_rows):
    """Each row's kernels, for every operand dtype it takes, build on OpenCL, so a row whose
    C the device cannot compile (a math function OpenCL lacks) fails here, by name: its
    kernels are taken from the program of every row's, or, where that program does not
    build, built alone (one program per row, its failure the compiler's log)."""
    import pyopencl as cl
    dev = nna.backends.get_device("opencl", 0)
    kernels = _opencl_kernels(row, dev)
    assert kernels, f"{row.name} takes no dtype"
    batch, _ = opencl_rows
    if batch is None:
        try:
            batch = cl_build(dev, _opencl_program(kernels, dev))
        except Exception as e:  # pyopencl's build failure carries the compiler's log
            pytest.fail(f"{row.name}: its OpenCL kernels do not build:\n{e}", pytrace=False)
    for name, _, _ in kernels:
        assert cl.Kernel(batch, name).function_name == name


def _nvrtc() -> Any:
    """``tests/backends/cuda/test_cuda_nvrtc.py``: CuPy's code generation and NVRTC, which
    need no GPU."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "backends" / "cuda"))
    try:
        return importlib.import_module("test_cuda_nvrtc")
    finally:
        sys.path.pop(0)


_C_ROWS = [r for r in ROWS if r.c is not None]  # the others: CuPy's functions on CUDA


@pytest.fixture(scope="module")
def nvrtc_env() -> tuple[Any, Any]:
    """(``test_cuda_nvrtc``, its ``_Env``): CuPy's generator and NVRTC, which need no GPU;
    a missing piece fails, never skips (as ``test_cuda_nvrtc``)."""
    t = _nvrtc()
    try:
        import cupy
        from cuda.bindings import nvrtc
        from cupy._core import core
        _, major, minor = nvrtc.nvrtcVersion()
    except Exception as e:
        pytest.fail(f"NVRTC or CuPy missing ({type(e).__name__}: {e}); install the test "
                    "extra: pip install -e '.[test]'")
    return t, t._Env(nvrtc, f"{major}.{minor}", cupy, core)


def _nvrtc_rows(t: Any, env: Any, rows: list, integral: bool) -> tuple[bool, str]:
    """(compiled, log) of ``rows`` in the fused kernel that runs them on CUDA, each row
    on the operands a program of it alone gives it, for the newest architecture the NVRTC
    test targets."""
    from nnarray.backends.cuda import fused
    dts = ("int32", "int64", "int32") if integral else ("float32", "float64", "float32")
    e = fused.elementwise(row_program(rows, integral, alone=True), dts)
    code = t._elementwise_code(env.cupy, e, dts[0], "3-d strided 64-bit", dts)
    ok, log = t._nvrtc(env, code, env.options(e.options, t.ARCHS[-1]))
    return ok, t._BENIGN.sub("", log).strip()


@pytest.fixture(scope="module")
def nvrtc_rows(nvrtc_env) -> dict[bool, bool]:
    """Integral or not: whether every row that fuses there compiled in one kernel, with no
    log (one NVRTC compile each, where a kernel per row cost one each)."""
    out = {}
    for integral in (False, True):
        ok, log = _nvrtc_rows(*nvrtc_env, fused_rows(integral), integral)
        out[integral] = ok and not log
    return out


@pytest.mark.parametrize("row", _C_ROWS, ids=[r.name for r in _C_ROWS])
def test_nvrtc_builds_every_row(row, nvrtc_env, nvrtc_rows):
    """Each row's C expression compiles as CUDA C under NVRTC (for the newest architecture
    the NVRTC test targets), inside the fused kernel that runs it on CUDA, on float and on
    integer operands where it takes them; a row whose C NVRTC rejects fails by name (the
    rows compile together, and where that kernel fails, each row alone)."""
    integrals = [integral for integral in (False, True) if row in fused_rows(integral)]
    assert integrals, f"{row.name} fuses on no operands"
    for integral in integrals:
        if not nvrtc_rows[integral]:
            ok, log = _nvrtc_rows(*nvrtc_env, [row], integral)
            assert ok and not log, (f"{row.name} on {'integers' if integral else 'floats'}:"
                                    f" NVRTC {nvrtc_env[1].version}:\n{log}")


def test_cuda_vector_kernels_render_their_rows():
    assert set(vector.BINARY) | set(vector.UNARY) <= set(BY_NAME)
    for op in (*vector.BINARY, *vector.UNARY):
        e = vector.expression(op)
        assert f"nna_f_{op}" in vector.SOURCE.code and e in vector.SOURCE.code, op
        assert not re.search(r"(?<!nna_)\b(exp|log|tanh|erf|sqrt|fabs|isnan)\(", e), e


def test_what_backward_retains_is_read_from_the_derivatives():
    """A row's ``keep`` comes from the names its derivatives use: a formula (``exp``:
    ``g * y``) or a function's code (``gelu``'s); a derivative naming both the input and
    the output retains both."""
    from nnarray.ops.ufuncs import row
    want = {"exp": "y", "log": "x", "add": "", "neg": "", "mul": "ab", "pow": "aby",
            "hypot": "aby", "gelu": "x", "gelu_tanh": "x", "floor": "", "logit": "x"}
    assert {n: BY_NAME[n].keep for n in want} == want
    both = row("probe", 1, "float", grad="g * (x + y)")
    assert both.keep == "xy" and both.grad[0](2.0, 3.0, 1.0) == 5.0
    assert row("probe2", 2, "arith", grad=("g", "g * y")).keep == "y"


def test_mul_of_one_value_has_one_gradient(backend):
    """``x * x`` backpropagates its row's ``diag`` (``g * (a * 2.0)``) as one gradient."""
    x = np.array([1.5, -2.0, 0.25])
    v = grad.Variable.from_numpy_array(x, need_grad=True)
    y = F.mul(v, v)
    y.forward()
    y.backward(np.ones(3))
    np.testing.assert_array_equal(v.g, 2 * x)
    assert BY_NAME["mul"].diag is not None and \
        all(r.diag is None for r in ROWS if r.name != "mul")


# -- the rows added through the declarations --------------------------------------------
def _gelu(x):
    return x * special.ndtr(x)


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def _gelu_grad(x):
    return special.ndtr(x) + x * np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)


def _gelu_tanh_grad(x):
    c = np.sqrt(2 / np.pi)
    t = np.tanh(c * (x + 0.044715 * x ** 3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x)


ADDED = {  # name: (F function, reference, derivative)
    "erf": (F.erf, special.erf, lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x)),
    "erfc": (F.erfc, special.erfc, lambda x: -2 / np.sqrt(np.pi) * np.exp(-x * x)),
    "gelu": (F.gelu, _gelu, _gelu_grad),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), _gelu_tanh, _gelu_tanh_grad),
    "logit": (F.logit, special.logit, lambda x: 1 / (x * (1 - x))),
}
#: Over float32's range: tiny, moderate and huge magnitudes of both signs, and the
#: special values (signed zeros, infinities, NaN).
EDGES = np.array([0.0, -0.0, 1e-30, -1e-30, 1e-7, 0.5, -0.5, 1.0, -1.0, 2.5, -2.5, 3.9, -3.9,
                  5.0, -5.0, 9.0, -9.0, 30.0, -30.0, 1e20, -1e20, 3e38, -3e38,
                  np.inf, -np.inf, np.nan])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(ADDED))
def test_added_rows_match_scipy(backend, name, dtype):
    fn, ref, _ = ADDED[name]
    x = np.concatenate([EDGES, np.linspace(-6, 6, 997)]).astype(dtype)
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64))
    with np.errstate(all="ignore"):  # -inf * 0: nan, as the formula (and torch) gives
        got = fn(nna.array(x)).numpy()
    assert got.dtype == dtype
    # absolute near zero crossings, relative elsewhere (pocl's erf: a few float32 ulp)
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(got, want.astype(dtype), rtol=16 * eps, atol=16 * eps,
                               err_msg=f"{name} {np.dtype(dtype).name}")


@pytest.mark.parametrize("name", list(ADDED))
def test_added_rows_derivatives_match_scipy(backend, name):
    fn, _, deriv = ADDED[name]
    x = np.linspace(-5, 5, 41)
    g = np.random.default_rng(0).standard_normal(x.shape)
    v = grad.Variable.from_numpy_array(x, need_grad=True)
    with np.errstate(all="ignore"):  # logit: outside [0, 1] nan, at its ends infinite
        y = fn(v)
        y.forward()
        y.backward(g)
        want = g * deriv(x)
    np.testing.assert_allclose(v.g, want, rtol=1e-12, atol=1e-14)


def test_logit_at_its_ends_and_outside(backend):
    """``logit``: -inf at 0, inf at 1, nan outside [0, 1] and for nan, as
    ``scipy.special.logit``; integers compute in float64, float16 stays float16."""
    x = np.array([0.0, 1.0, -0.0, 0.5, -1e-30, 1.5, -np.inf, np.inf, np.nan], np.float32)
    with np.errstate(all="ignore"):
        got = F.logit(nna.array(x)).numpy()
        want = special.logit(x.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    assert np.isneginf(got[0]) and np.isposinf(got[1]) and got[3] == 0
    with np.errstate(all="ignore"):
        ints = F.logit(nna.array(np.array([0, 1, 2], np.int32)))
        half = F.logit(nna.array(np.array([0.25], np.float16)))
    assert ints.dtype == np.float64 and half.dtype == np.float16
    np.testing.assert_allclose(half.numpy(), [np.log(1 / 3)], rtol=1e-3)


def test_gelu_forms_are_rows():
    """``F.gelu(x, approximate)`` records the row of its form."""
    x = grad.Variable.from_numpy_array(np.ones(3, np.float32))
    assert F.gelu(x).parent.name == "gelu"
    assert F.gelu(x, approximate="tanh").parent.name == "gelu_tanh"
    with pytest.raises(ValueError, match="approximate"):
        F.gelu(x, approximate="erf")


def test_numpy_and_scipy_ufuncs_of_the_rows_run_the_rows(backend):
    """numpy's protocol maps each row's ufunc (``np.arctan2``, ``scipy.special.erf``) to
    the row's function: the result is an NdArray where the row's own op puts it."""
    x = np.linspace(0.1, 0.9, 4).astype(np.float32)
    a = nna.NdArray.from_numpy_array(x)
    where = F.sin(a).device
    for uf, want in ((np.arctan2, np.arctan2(x, x)), (special.erf, special.erf(x)),
                     (special.erfc, special.erfc(x))):
        got = uf(a, a) if uf.nin == 2 else uf(a)
        assert isinstance(got, nna.NdArray) and got.device == where
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
