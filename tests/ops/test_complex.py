"""complex64/complex128: dtypes, creation, storage on every backend, parts and their
gradients (numpy as the reference; torch's convention for gradients)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import device_params

import nnarray as nna
import nnarray.functions as F
from nnarray.errors import DTypeError
from nnarray.grad import Variable, gradcheck

_RNG = np.random.default_rng(0)
_Z = (_RNG.standard_normal((3, 5)) + 1j * _RNG.standard_normal((3, 5)))


def test_dtypes_and_promotion():
    assert nna.isdtype(nna.complex64, "complex floating")
    assert nna.isdtype(nna.complex128, "numeric") and not nna.isdtype(nna.complex64,
                                                                      "real floating")
    assert nna.result_type(nna.float64, nna.complex64) == nna.complex128
    assert nna.result_type(nna.float32, 1j) == nna.complex64
    assert nna.finfo(nna.complex64).eps == np.finfo(np.float32).eps
    assert nna.finfo(nna.complex128).dtype == nna.float64
    assert nna.__array_namespace_info__().default_dtypes()["complex floating"] == nna.complex64
    assert set(nna.__array_namespace_info__().dtypes(kind="complex floating")) == {
        "complex64", "complex128"}


def test_creation_and_storage(backend):
    a = nna.asarray([1 + 2j, 3j])
    assert a.dtype == nna.complex64 and a.device.backend == backend
    np.testing.assert_array_equal(np.asarray(a), [1 + 2j, 3j])
    assert nna.asarray(complex(1, -1)).dtype == nna.complex64
    np.testing.assert_array_equal(np.asarray(nna.full((2,), 1 - 1j)), [1 - 1j] * 2)
    np.testing.assert_array_equal(np.asarray(nna.ones(2, dtype=nna.complex128)), [1, 1])
    x = nna.asarray(_Z)
    assert x.dtype == nna.complex128
    np.testing.assert_array_equal(np.asarray(x[1:, ::2]), _Z[1:, ::2])
    np.testing.assert_array_equal(np.asarray(x[nna.asarray([2, 0])]), _Z[[2, 0]])
    y = nna.zeros((3,), dtype=nna.complex64)
    y[1] = 2 - 5j
    np.testing.assert_array_equal(np.asarray(y), [0, 2 - 5j, 0])
    c = nna.asarray([True, False, True])
    np.testing.assert_array_equal(np.asarray(nna.where(c, x[0, :3], x[1, :3])),
                                  np.where([True, False, True], _Z[0, :3], _Z[1, :3]))
    # numpy imports host capsules only: device='cpu' asks a GPU array for one
    np.testing.assert_array_equal(np.from_dlpack(x, device="cpu"), _Z)


def test_casts(backend):
    r = nna.asarray(np.array([1.5, -2.0], np.float32))
    np.testing.assert_array_equal(np.asarray(nna.astype(r, nna.complex64)), [1.5, -2])
    x = nna.asarray(_Z)
    np.testing.assert_array_equal(np.asarray(nna.astype(x, nna.complex64)),
                                  _Z.astype(np.complex64))
    np.testing.assert_array_equal(np.asarray(nna.astype(x, nna.bool)), _Z != 0)
    with pytest.raises(DTypeError):
        nna.full((2,), 1j, dtype=nna.float32)


@pytest.mark.parametrize("name", ["real", "imag", "conj", "abs", "angle"])
def test_parts(backend, name):
    x = nna.asarray(_Z)
    got = np.asarray(getattr(nna, name)(x))
    want = getattr(np, name)(_Z)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-14)
    r = np.array([-1.5, 0.0, 2.0])
    np.testing.assert_allclose(np.asarray(getattr(nna, name)(nna.asarray(r))),
                               getattr(np, name)(r).astype(np.float64))


def test_parts_refuse_real_op_inputs():
    with pytest.raises(DTypeError, match="real: argument 'x'"):
        F.real(nna.asarray([1.0]))


@pytest.mark.parametrize("name", ["real", "imag", "conj", "complex_abs", "angle"])
def test_part_gradients(backend, name):
    a = Variable((3, 5), need_grad=True, dtype=np.complex128)
    a.d = _Z
    assert gradcheck(getattr(F, name), [a], eps=1e-6, atol=1e-6, rtol=1e-5)


def test_cast_gradients(backend):
    a = Variable((2, 3), need_grad=True, dtype=np.float64)
    a.d = _RNG.standard_normal((2, 3))
    assert gradcheck(lambda v: F.mul(F.real(F.cast(v, np.complex128)), 3.0), [a], eps=1e-6,
                     atol=1e-6, rtol=1e-5)
    b = Variable((2, 3), need_grad=True, dtype=np.complex128)
    b.d = _Z[:2, :3]
    assert gradcheck(lambda v: F.make_complex(F.imag(v), F.real(v)), [b], eps=1e-6,
                     atol=1e-6, rtol=1e-5)


_Y = _RNG.standard_normal((3, 5)) + 1j * _RNG.standard_normal((3, 5))
_BINARY = ["add", "subtract", "multiply", "divide", "pow", "equal", "not_equal"]
_UNARY = ["abs", "negative", "positive", "square", "sign", "exp", "expm1", "log", "log1p", "log2",
          "log10", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "isfinite", "isinf",
          "isnan", "round", "logical_not", "asin", "acos", "atan", "asinh", "acosh", "atanh"]
_NP = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
       "acosh": "arccosh", "atanh": "arctanh"}


#: Rows whose complex kernels differ between complex64 and complex128 only in the part
#: type (float2/double2, a renderer's template): a compiling backend runs each in one
#: dtype, alternately (each a cold compile). The others run in both: their functions have
#: code for each precision (and test_complex_special builds the same programs).
ONE_DTYPE_ON_DEVICE = ("add", "subtract", "multiply", "equal", "not_equal", "negative",
                       "positive", "isfinite", "isinf", "isnan", "round", "logical_not")


def _elementwise_params() -> list:
    """``(backend, name, dtype)``: every pair on numpy; on a compiling backend the
    ``ONE_DTYPE_ON_DEVICE`` rows in dtype ``i % 2`` only."""
    def on_device(case: tuple) -> bool:
        name, dtype = case
        return name not in ONE_DTYPE_ON_DEVICE or \
            ONE_DTYPE_ON_DEVICE.index(name) % 2 == (dtype == np.complex128)

    return device_params([(name, d) for name in _BINARY + _UNARY
                          for d in (np.complex64, np.complex128)],
                         on_device, lambda c: f"{c[0]}-{np.dtype(c[1]).name}")


def test_every_row_runs_on_a_compiling_backend_and_both_dtypes_do():
    got = {(v[1], v[2]) for v in (p.values for p in _elementwise_params()) if v[0] != "numpy"}
    assert {n for n, _ in got} == set(_BINARY + _UNARY)
    assert {d for n, d in got if n in ONE_DTYPE_ON_DEVICE} == {np.complex64, np.complex128}


@pytest.mark.parametrize(("backend", "name", "dtype"), _elementwise_params(),
                         indirect=["backend"])
def test_elementwise(backend, name, dtype):
    x, y = _Z.astype(dtype), _Y.astype(dtype)
    f = getattr(nna, name)
    want = getattr(np, name)(x, y) if name in _BINARY else (
        x / np.abs(x) if name == "sign" else getattr(np, _NP.get(name, name))(x))
    got = f(nna.asarray(x), nna.asarray(y)) if name in _BINARY else f(nna.asarray(x))
    assert got.dtype == want.dtype
    tol = 1e-5 if dtype == np.complex64 else 1e-13
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)


#: Arguments where a careless formula cancels: tanh near its poles (x ~ 0, y ~ pi/2),
#: asinh/asin near 0, sqrt of subnormal and huge parts, sign of subnormal ones (complex64);
#: or overflows: cosh and sinh of a part in (88.7, 89.4), finite in float32 though e^|x| is not,
#: and exp, sin, cos... whose result is finite though cosh or e^x of a part is not;
#: asinh, asin and acos past |z| = 7e12, where |z|^3 is not (in float32), or 6e102 (float64);
#: acosh past half the largest float, where z + sqrt(z + 1) sqrt(z - 1) is not.
_HARD = {
    "tanh": [0.003359507 - 1.5731691j, -0.0009938359 + 1.5699778j, 1.5707964j, 1e-30 + 1e-30j],
    "asinh": [-0.000321233 + 0.00039864302j, 0.0010652739 - 0.0003730138j, 1e-20 + 1e-21j,
              5.5e12 + 5.5e12j, -3e16 + 2e5j, 1e5 - 2e5j],
    "asin": [0.0010036945 + 0.00045998266j, -0.000321233 + 0.00039864302j, 1 + 7e12j,
             -9e15 - 1j],
    "acos": [1 + 7e12j, 3e14 - 2e14j],
    "acosh": [2.4447141e38 - 3.4e13j, -4e-27 - 1.9992087e38j, -3e38 + 1e38j, 2 + 1e-8j,
              -3.0308244e38 + 2.258545e38j],
    "sqrt": [1.4e-45, 1e-40 + 1e-40j, -1.4e-45j, 3e38 + 3e38j, -3e38 + 1j, 2.5e-38 + 1e-45j],
    "sign": [1e-40j, 1e-40 + 1e-40j, -2e-39 + 0j],
    "cosh": [89.2 - 0.5j, -88.9 + 3j, 0.3 + 1j, 89.69898 + 2.401466j],
    "sinh": [89.3 + 0.2j, -89.0 - 2j, 0.3 + 1j, -89.51757 + 26.193184j],
    "sin": [1 + 89.1j, -2 - 88.8j, 1158.6057 + 89.603905j],
    "cos": [0.5 + 89.2j, 3 - 88.9j, -1.0893378 - 89.533455j],
    "exp": [88.768166 + 0.36560676j, 88.96076 - 275.62836j],
}


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", sorted(_HARD))
def test_elementwise_relative_accuracy(backend, name, dtype):
    """Each element within a few ULP of numpy's complex128 value, relative to its size."""
    x = np.array(_HARD[name], dtype)
    got = np.asarray(getattr(nna, name)(nna.asarray(x))).astype(np.complex128)
    want = getattr(np, _NP.get(name, name))(x.astype(np.complex128))
    err = np.abs(got - want) / np.abs(want)
    assert err.max() < (2e-6 if dtype == np.complex64 else 1e-13), (x, got, want)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_sigmoid_of_complex(backend, dtype):
    """``F.sigmoid`` of complex input is ``1 / (1 + e^-z)`` on every backend (the numpy
    backend's kernel crashed on it with numpy's UFuncTypeError; OpenCL refused it)."""
    import nnarray.functions as F
    x = np.concatenate([_Z.ravel(), [0j, -30 + 1j, 30 - 2j]]).astype(dtype)
    got = F.sigmoid(nna.asarray(x)).numpy()
    assert got.dtype == dtype
    tol = 1e-5 if dtype == np.complex64 else 1e-13
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-x.astype(np.complex128))), rtol=tol,
                               atol=1e-30)


def test_inverse_functions_of_huge_complex128(backend):
    """complex128 asinh and acos where |z|^3 overflows float64 (|z| > 5.6e102), acosh where
    2|z| does."""
    z = np.array([2e103 + 1e103j, -1e150 + 3j, 1 - 1e200j, 1.5e308 + 1j, -1e308 - 1e308j])
    for name in ("asinh", "acos", "acosh"):
        got = np.asarray(getattr(nna, name)(nna.asarray(z)))
        np.testing.assert_allclose(got, getattr(np, _NP.get(name, name))(z), rtol=1e-13,
                                   err_msg=name)


def test_exponentials_near_the_largest_double(backend):
    """complex128 exp, sinh, cosh, sin, cos, expm1 finite where e^x of a part overflows but the
    result does not."""
    z = np.array([709.5 + 0.4j, 709.9 - 2.5j, -710.1 + 1j])
    # numpy's own complex expm1 overflows there (the numpy backend is numpy)
    for name in ("exp", "sinh", "cosh") + (("expm1",) if backend != "numpy" else ()):
        x = z[:2] if "exp" in name else z
        got = np.asarray(getattr(nna, name)(nna.asarray(x)))
        want = np.exp(x) - 1 if name == "expm1" else getattr(np, name)(x)
        np.testing.assert_allclose(got, want, rtol=1e-13, err_msg=name)
    for name in ("sin", "cos"):
        got = np.asarray(getattr(nna, name)(nna.asarray(1j * z)))
        np.testing.assert_allclose(got, getattr(np, name)(1j * z), rtol=1e-13, err_msg=name)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_log_real_part_near_the_unit_circle(backend, dtype):
    """log|z| near |z| = 1 to a few ULP of itself, not of |log z| (numpy's complex64 keeps
    it; rounding x^2 + y^2 first left 1e-7 / (|z| - 1) of it)."""
    rng = np.random.default_rng(3)
    th = rng.uniform(-np.pi, np.pi, 4096)
    r = 1 + rng.choice([-1, 1], 4096) * 10.0 ** rng.uniform(-6, -1, 4096)
    z = (r * np.exp(1j * th)).astype(dtype)
    want = np.log(z.astype(np.complex128)).real
    got = np.asarray(nna.log(nna.asarray(z))).real.astype(np.float64)
    tol = 1e-6 if dtype == np.complex64 else 1e-13
    assert (np.abs(got - want) / np.abs(want)).max() < tol


def test_branch_cuts_and_special_values(backend):
    """Signed zeros pick the side of a branch cut; infinities and NaNs as the standard says."""
    z = np.array([3 + 0j, complex(3, -0.0), -3 + 0j, 2j, complex(-0.0, 2), 0.5 + 0j])
    for name in ("asin", "acos", "asinh", "acosh", "atanh", "sqrt", "log"):
        got = np.asarray(getattr(nna, name)(nna.asarray(z)))
        np.testing.assert_allclose(got, getattr(np, _NP.get(name, name))(z), rtol=1e-13,
                                   atol=1e-15, err_msg=name)
    inf, nan = np.inf, np.nan
    cases = {"exp": [(complex(-inf, inf), 0j)], "tanh": [(complex(inf, 2), 1 + 0j)],
             "sinh": [(complex(inf, 0), complex(inf, 0))],
             "cosh": [(complex(nan, 0), complex(nan, 0))]}
    for name, pairs in cases.items():
        got = np.asarray(getattr(nna, name)(nna.asarray(np.array([p[0] for p in pairs]))))
        np.testing.assert_array_equal(got, [p[1] for p in pairs], err_msg=name)


def test_mixed_and_scalars(backend):
    x = nna.asarray(_Z)
    np.testing.assert_allclose(np.asarray(x * 2j + 1), _Z * 2j + 1)
    r = np.arange(5.0)
    np.testing.assert_allclose(np.asarray(x / nna.asarray(r + 1)), _Z / (r + 1))


@pytest.mark.parametrize("name", ["sum", "prod", "mean"])
def test_reductions(backend, name):
    for axis in (None, 0, 1):
        got = getattr(nna, name)(nna.asarray(_Z), axis=axis)
        np.testing.assert_allclose(np.asarray(got), getattr(np, name)(_Z, axis=axis),
                                   rtol=1e-13)


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
def test_cumulative(backend, name):
    ref = np.cumsum if name == "cumulative_sum" else np.cumprod
    for axis in (0, 1):  # a complex product, not one of the parts
        got = getattr(nna, name)(nna.asarray(_Z), axis=axis)
        np.testing.assert_allclose(np.asarray(got), ref(_Z, axis=axis), rtol=1e-13)


def test_products(backend):
    a, b = nna.asarray(_Z), nna.asarray(_Y.T)
    np.testing.assert_allclose(np.asarray(a @ b), _Z @ _Y.T, rtol=1e-13)
    np.testing.assert_allclose(np.asarray(nna.vecdot(a, nna.asarray(_Y))),
                               np.sum(np.conj(_Z) * _Y, axis=-1), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(nna.tensordot(a, b, axes=1)), _Z @ _Y.T, rtol=1e-13)
    c64 = nna.astype(a, nna.complex64) @ nna.astype(b, nna.complex64)
    assert c64.dtype == nna.complex64
    np.testing.assert_allclose(np.asarray(c64), _Z @ _Y.T, rtol=1e-5)


@pytest.mark.parametrize("name", ["mul", "div", "exp", "log", "sin", "tanh", "sqrt", "abs",
                                  "matmul"])
def test_elementwise_gradients(backend, name):
    a = Variable((3, 5), need_grad=True, dtype=np.complex128)
    a.d = _Z
    b = Variable((3, 5), need_grad=True, dtype=np.complex128)
    b.d = _Y
    if name in ("mul", "div"):
        fn, ins = getattr(F, name), [a, b]
    elif name == "matmul":
        fn, ins = (lambda u, v: F.matmul(u, F.transpose(v, (1, 0)))), [a, b]
    else:
        fn, ins = getattr(F, name), [a]
    assert gradcheck(fn, ins, eps=1e-6, atol=1e-6, rtol=1e-5)


def test_gradients_match_torch(backend):
    torch = pytest.importorskip("torch")
    a = Variable((3, 5), need_grad=True, dtype=np.complex128)
    a.d = _Z
    ta = torch.tensor(_Z, requires_grad=True)
    tb = torch.tensor(_Y)
    t = (torch.exp(ta) * tb + ta @ tb.T.conj() @ ta).abs().sum()
    t.backward()
    from nnarray.grad import modes
    with modes.auto_forward():
        b = nna.asarray(_Y)
        y = F.add(F.mul(F.exp(a), b), F.matmul(F.matmul(a, F.conj(F.transpose(b, (1, 0)))),
                                                a))
        F.sum(F.complex_abs(y)).backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.resolve_conj().numpy(), rtol=1e-10)
