"""The elementwise tables of the numpy-compatible backends: op name -> the array
module's function (numpy and CuPy share the names). One row per function of the
tables in ``nnarray/ops/elementwise.py``; ``relu`` and ``sigmoid`` are written out in
``kernels.py``."""

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
