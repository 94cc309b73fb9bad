"""The elementwise declarations (``nnarray/ops/ufuncs.py``): every row reaches every
backend, and the rows added through them (``erf``, ``erfc``, ``gelu``, ``gelu_tanh``)
match ``scipy.special`` in value and derivative on every backend, special values
included.
Each row's values against numpy are in ``test_functions_elementwise.py``, its numerical
gradient in ``test_grad_functions.py`` and its ONNX export in ``test_onnx.py``."""

from __future__ import annotations

import re

import numpy as np
import pytest

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


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_opencl_renders_every_row_for_every_dtype_it_takes(row):
    pytest.importorskip("pyopencl")
    from nnarray.backends.opencl.cltypes import cltype
    from nnarray.backends.opencl.elementwise import expression
    for d in map(np.dtype, (np.bool_, np.int8, np.uint8, np.int32, np.uint64, np.float16,
                            np.float32, np.float64)):
        try:
            if row.arity == 2:
                res = elementwise.binary_dtype(row.name, d)
                ct = d if res == np.bool_ else res
            else:
                res = elementwise.unary_dtype(row.name, d)
                ct = d if row.rule == "pred" else res
        except nna.errors.DTypeError:
            continue
        if (row.rule in ("no_bool", "pow") and d == np.bool_) or \
                (row.rule == "integral" and d.kind == "f") or \
                (row.rule == "int" and d.kind not in "iu"):
            continue  # the op refuses these operands
        expr, _ = expression(row.name, cltype(ct))
        assert expr and not _UNRENDERED.search(expr), (row.name, d, expr)


def test_cuda_vector_kernels_render_their_rows():
    assert set(vector.BINARY) | set(vector.UNARY) <= set(BY_NAME)
    for op in (*vector.BINARY, *vector.UNARY):
        e = vector.expression(op)
        assert f"nna_f_{op}" in vector.SOURCE.code and e in vector.SOURCE.code, op
        assert not re.search(r"(?<!nna_)\b(exp|log|tanh|erf|sqrt|fabs|isnan)\(", e), e


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
    y = fn(v)
    y.forward()
    y.backward(g)
    np.testing.assert_allclose(v.g, g * deriv(x), rtol=1e-12, atol=1e-14)


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
