"""The elementwise tables of the numpy-compatible backends: op name -> the array
module's function (numpy and CuPy share the names). One row per function of the
tables in ``nnarray/ops/elementwise.py``; ``relu`` and ``sigmoid`` are written out in
``kernels.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...dtypes import promote
from ...ops.elementwise import BINARY as _RULES
from ...ops.elementwise import binary_dtype

BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide",
    "pow": "power", "maximum": "maximum", "minimum": "minimum", "equal": "equal",
    "not_equal": "not_equal", "less": "less", "less_equal": "less_equal",
    "greater": "greater", "greater_equal": "greater_equal",
    "atan2": "arctan2", "hypot": "hypot", "logaddexp": "logaddexp", "copysign": "copysign",
    "remainder": "remainder", "floor_divide": "floor_divide", "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
    "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift",
    "logical_and": "logical_and", "logical_or": "logical_or", "logical_xor": "logical_xor",
    "nextafter": "nextafter",
}

UNARY = {
    "neg": "negative", "abs": "absolute", "sign": "sign", "exp": "exp", "expm1": "expm1",
    "log": "log", "log1p": "log1p", "log2": "log2", "log10": "log10", "sqrt": "sqrt",
    "tanh": "tanh", "sin": "sin", "cos": "cos", "tan": "tan", "asin": "arcsin",
    "acos": "arccos", "atan": "arctan", "sinh": "sinh", "cosh": "cosh",
    "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh", "square": "square",
    "positive": "positive", "ceil": "ceil", "floor": "floor", "trunc": "trunc",
    "round": "round", "bitwise_invert": "invert", "isfinite": "isfinite", "isinf": "isinf",
    "isnan": "isnan", "signbit": "signbit", "logical_not": "logical_not",
}


def in_result_dtype(name: str, uf: Callable) -> Callable:
    """``uf(a, b, out=None)`` computed in op ``name``'s result dtype, for ops whose
    result is floating whatever the operands ("float" rule; ``uf`` itself elsewhere).
    The ufunc alone picks the smallest float loop both operands cast to: float16 for
    int8 with uint8, where the op's rule (the float of their promoted type, int16) says
    float32; casting the operands first makes the data what ``.dtype`` says."""
    if _RULES[name][0] != "float":
        return uf
    seen: dict[tuple, Any] = {}

    def f(a: Any, b: Any, out: Any = None) -> Any:
        key = (getattr(a, "dtype", type(a)), getattr(b, "dtype", type(b)))
        d = seen.get(key)
        if d is None:
            d = seen[key] = binary_dtype(name, promote(name, a, b))
        a = a.astype(d, copy=False) if hasattr(a, "astype") else d.type(a)
        b = b.astype(d, copy=False) if hasattr(b, "astype") else d.type(b)
        return uf(a, b) if out is None else uf(a, b, out=out)
    return f
