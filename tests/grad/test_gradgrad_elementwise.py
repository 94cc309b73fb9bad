"""Double backward of the elementwise rows (and ``where``, ``clip``, ``cast``): every
row's ``gradgradcheck`` in float64 on every backend, and its second derivative against
torch's (``tests/double_backward.py``)."""

from __future__ import annotations

import numpy as np
from double_backward import family_tests

import nnarray as nna
import nnarray.functions as F

_UNARY = ("sin", "cos", "tan", "tanh", "sigmoid", "exp", "expm1", "neg", "square", "erf",
          "erfc", "sinh", "cosh", "atan", "asinh", "positive", "log", "log1p", "log2",
          "log10", "sqrt", "asin", "acos", "atanh", "acosh", "abs", "relu", "logit")
_DOMAIN = {**dict.fromkeys(("log", "log1p", "log2", "log10", "sqrt"), "pos"),
           **dict.fromkeys(("asin", "acos", "atanh", "tan"), "unit"), "acosh": "gt1",
           "logit": "prob",
           "abs": "away", "relu": "away"}

#: name -> (function of Variables, [(shape, domain)]), small float64 inputs.
CASES: dict = {
    **{n: (getattr(F, n), [((2, 3), _DOMAIN.get(n, "any"))]) for n in _UNARY},
    "gelu": (F.gelu, [((2, 3), "any")]),
    "gelu_tanh": (F.gelu_tanh, [((2, 3), "any")]),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), [((2, 3), "away")]),
    "clip": (lambda x: F.clip(x, -0.5, 0.5) * x, [((2, 3), "away")]),
    "clip_xp": (lambda x: nna.clip(x, -0.5, 0.5) * x, [((2, 3), "away")]),
    "round_floor": (lambda x: F.round(x) * x + F.floor(x) * x + F.ceil(x) + F.trunc(x) * x,
                    [((2, 3), "any")]),
    **{n: (getattr(F, n), [((2, 3), "any"), ((2, 3), "any")]) for n in (
        "add", "sub", "mul", "logaddexp", "atan2", "hypot")},
    "div": (F.div, [((2, 3), "any"), ((2, 3), "pos")]),
    "reciprocal": (nna.reciprocal, [((2, 3), "pos")]),
    "pow": (F.pow, [((2, 3), "pos"), ((2, 3), "any")]),
    "pow_scalar": (lambda x: F.pow(x, 3.0), [((2, 3), "any")]),
    "rpow": (lambda x: F.pow(2.0, x), [((2, 3), "any")]),
    "mul_self": (lambda x: x * x, [((2, 3), "any")]),
    "broadcast_mul": (F.mul, [((2, 3), "any"), ((3,), "any")]),
    "maximum": (F.maximum, [((2, 3), "away"), ((2, 3), "any")]),
    "minimum": (F.minimum, [((2, 3), "away"), ((2, 3), "any")]),
    "remainder": (lambda a: F.remainder(a, 0.7) * a, [((2, 3), "pos")]),
    "copysign": (lambda a, b: F.copysign(a, b) * a, [((2, 3), "any"), ((2, 3), "away")]),
    "where": (lambda a, b: F.where(F.greater(a, 0.0), a * b, F.sin(b)),
              [((2, 3), "away"), ((2, 3), "any")]),
    "cast": (lambda x: F.real(F.cast(x, np.complex128) ** 2) * x, [((2, 3), "any")]),
    # complex operands
    "complex_rows": (lambda z: F.tanh(z) * F.exp(z) / F.sqrt(z) + F.log(z) ** 2,
                     [((2, 3), "cplx")]),
    "abs_complex": (F.abs, [((2, 3), "cplx")]),
    "sigmoid_complex": (F.sigmoid, [((2, 3), "cplx")]),
}

#: Rows known wrong (reported; ``ops/ufuncs.py`` and ``ops/elementwise.py`` belong to the
#: elementwise restructuring).
XFAIL: dict = {}

#: name -> ``(torch, *tensors) -> tensor``: torch's counterpart of each case.
TORCH: dict = {
    **{n: (lambda t, x, n=n: getattr(t, n)(x)) for n in _UNARY},
    "gelu": lambda t, x: t.nn.functional.gelu(x),
    "gelu_tanh": lambda t, x: t.nn.functional.gelu(x, approximate="tanh"),
    "leaky_relu": lambda t, x: t.nn.functional.leaky_relu(x, 0.2),
    "clip": lambda t, x: t.clamp(x, -0.5, 0.5) * x,
    "clip_xp": lambda t, x: t.clamp(x, -0.5, 0.5) * x,
    "round_floor": lambda t, x: t.round(x) * x + t.floor(x) * x + t.ceil(x) + t.trunc(x) * x,
    **{n: (lambda t, a, b, n=n: getattr(t, n)(a, b)) for n in (
        "add", "sub", "mul", "logaddexp", "atan2", "hypot", "div", "pow", "maximum",
        "minimum")},
    "reciprocal": lambda t, x: t.reciprocal(x),
    "pow_scalar": lambda t, x: t.pow(x, 3.0),
    "rpow": lambda t, x: t.pow(2.0, x),
    "mul_self": lambda t, x: x * x,
    "broadcast_mul": lambda t, a, b: a * b,
    "remainder": lambda t, a: t.remainder(a, 0.7) * a,
    "copysign": lambda t, a, b: t.copysign(a, b) * a,
    "where": lambda t, a, b: t.where(a > 0, a * b, t.sin(b)),
    "cast": lambda t, x: t.real(x.to(t.complex128) ** 2) * x,
    "complex_rows": lambda t, z: t.tanh(z) * t.exp(z) / t.sqrt(z) + t.log(z) ** 2,
    "abs_complex": lambda t, z: t.abs(z),
    "sigmoid_complex": lambda t, z: t.sigmoid(z),
}


test_gradgradcheck, test_second_derivatives_match_torch = family_tests(CASES, TORCH, XFAIL)
