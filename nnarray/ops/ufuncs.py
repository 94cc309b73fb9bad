"""Every elementwise function declared once: one ``Ufunc`` row each.

A row holds what each part of nnarray needs to know about the function, and each part
reads it from here (none keeps a table of its own keyed by these names):

- ``ops/elementwise.py``: the op, its dtype rule and its backward (what it retains, the
  derivative per operand, written with ``F``);
- ``backends/_xp``: numpy's (and CuPy's) function of that name, or a composite of them;
- ``backends/opencl`` and ``backends/cuda``: the C expression, rendered by each;
- ``grad/onnx.py``: the ONNX op (or composition) for export, and that op for import;
- ``nnarray.functions`` (``F``) and ``nnarray.xp_functions`` (the Array API names).

Adding a function is one row here plus its tests.

C expressions are written in the operands ``x`` (and ``y``) and the compute type ``T``
(``(T)0.5``); math functions are called by name (``exp(x)``, ``erf(x)``), each backend maps
them (OpenCL calls its builtins, CUDA its float or double overloads). An expression may
depend on the dtype it computes in: then ``c`` is a function of that dtype giving one.
A backend may keep its own expression where the C it needs is its own (OpenCL's integer
divmod and half ``nextafter`` helpers); ``c`` is then ``None``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import late

#: ``nnarray.functions`` (above the op specs): the derivatives call it at backward time
F: Any = late.bind(__name__, "F", "nnarray.functions")


def _log(a: Any) -> Any:
    """``log(a)`` of an operand: a Python scalar base (``2.0 ** x``) is a number."""
    return np.log(a) if isinstance(a, (int, float, complex)) else F.log(a)

#: A C expression, or a function of the compute dtype giving one.
CExpr = str | Callable[[np.dtype], str]


@dataclass(frozen=True)
class Ufunc:
    """The declaration of one elementwise function (see the module docstring).

    ``rule``: the dtype rule (``ops.elementwise``: "arith", "no_bool", "pow", "div",
    "compare", "logical", "float", "integral", "int" for two operands; "any", "numeric",
    "float", "integral", "pred" for one). ``keep``: what backward retains ("x" the input,
    "y" the output, "ab" both operands, "aby" those and the output). ``grad``: one
    derivative per operand, ``(x, y, g) -> dx`` or ``(a, b, y, g) -> da``; ``None``: not
    differentiable. ``xp``: numpy's function name (CuPy has the same), a dotted
    ``scipy.special`` name, or ``m -> function`` composing the backend's functions ``m``
    (``m.erf``, ``m.tanh``, ...); ``None``: written out by each backend. ``c``: the C
    expression. ``onnx``: the ONNX op (import maps it back), or ``(ex, ins, dtype, outs)
    -> None`` emitting a composition; ``None``: not exported. ``api``: the Array API names
    (the standard's name, then aliases); ``None``: the row's name. ``cc``: the C expression
    for complex operands (``None``: not defined for complex on the C backends), written with
    the complex helpers each C backend defines (``COMPLEX_HELPERS``).
    """

    name: str
    arity: int
    rule: str
    keep: str = ""
    grad: tuple[Callable, ...] | None = None
    xp: str | Callable | None = None
    c: CExpr | None = None
    onnx: str | Callable | None = None
    api: tuple[str, ...] | None = None
    cc: str | None = None

    @property
    def api_names(self) -> tuple[str, ...]:
        return (self.name,) if self.api is None else self.api

    def c_expr(self, dtype: np.dtype) -> str | None:
        """The C expression computing in ``dtype`` (``None`` where a backend writes it)."""
        return self.c(np.dtype(dtype)) if callable(self.c) else self.c


# -- dtype-dependent C expressions ---------------------------------------------------------
def _by_kind(boolean: str | None = None, integer: str | None = None, other: str = "") -> Any:
    """An expression by the compute dtype's kind: bool, integer (signed or not), float."""
    def c(d: np.dtype) -> str:
        if d.kind == "b" and boolean is not None:
            return boolean
        if d.kind in "iub" and integer is not None:
            return integer
        return other
    return c


def _signbit(d: np.dtype) -> str:
    return "signbit(x)" if d.kind == "f" else ("x < 0" if d.kind == "i" else "0")


def _shift(left: bool) -> Callable[[np.dtype], str]:
    """numpy's shifts: a count outside ``[0, bits)`` (negative ones too: numpy compares it
    as unsigned) shifts every bit out, where C would take it modulo ``bits``."""
    def c(d: np.dtype) -> str:
        out = f"(y < 0 || y >= {8 * d.itemsize})"
        if left:
            return f"({out} ? (T)0 : (T)(x << y))"
        return f"({out} ? (x < 0 ? (T)-1 : (T)0) : (T)(x >> y))"
    return c


def _extremum(cmp: str, integer: str, boolean: str) -> CExpr:
    return _by_kind(boolean, integer, f"(x {cmp} y || isnan(x)) ? x : y")  # numpy's NaN rule


# -- ONNX compositions (``ex``: the exporter; ``ins``: operand names in ``dt``) -----------
def _onnx_not_equal(ex, ins, dt, outs):
    ex.emit("Not", [ex.emit("Equal", ins)], outs)


def _onnx_expm1(ex, ins, dt, outs):
    ex.emit("Sub", [ex.emit("Exp", ins), ex.const(1, dt)], outs)


def _onnx_log1p(ex, ins, dt, outs):
    ex.emit("Log", [ex.emit("Add", [ins[0], ex.const(1, dt)])], outs)


def _onnx_log_base(base: float) -> Callable:
    def emit(ex, ins, dt, outs):
        ex.emit("Div", [ex.emit("Log", ins), ex.const(math.log(base), dt)], outs)
    return emit


def _onnx_hypot(ex, ins, dt, outs):
    a, b = ins
    ex.emit("Sqrt", [ex.emit("Add", [ex.emit("Mul", [a, a]), ex.emit("Mul", [b, b])])], outs)


def _onnx_erfc(ex, ins, dt, outs):
    ex.emit("Sub", [ex.const(1, dt), ex.emit("Erf", ins)], outs)


def _onnx_gelu(approximate: str) -> Callable:
    def emit(ex, ins, dt, outs):
        (x,) = ins
        if ex.opset >= 20:
            ex.emit("Gelu", [x], outs, approximate=approximate)
            return
        if approximate == "tanh":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
            x3 = ex.emit("Mul", [ex.emit("Mul", [x, x]), x])
            inner = ex.emit("Add", [x, ex.emit("Mul", [x3, ex.const(GELU_K, dt)])])
            t = ex.emit("Tanh", [ex.emit("Mul", [inner, ex.const(SQRT_2_PI, dt)])])
        else:  # 0.5 x (1 + erf(x / sqrt(2)))
            t = ex.emit("Erf", [ex.emit("Mul", [x, ex.const(SQRT1_2, dt)])])
        half = ex.emit("Mul", [x, ex.const(0.5, dt)])
        ex.emit("Mul", [half, ex.emit("Add", [t, ex.const(1.0, dt)])], outs)
    return emit


# -- derivatives needing more than one line ------------------------------------------------
SQRT1_2 = math.sqrt(0.5)
SQRT_2_PI = math.sqrt(2.0 / math.pi)  #: the tanh GELU's scale
GELU_K = 0.044715  #: the tanh GELU's cubic coefficient
_TWO_SQRT_PI = 2.0 / math.sqrt(math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gelu_grad(x, y, g):  # Phi(x) + x phi(x)
    cdf = (F.erf(x * SQRT1_2) + 1.0) * 0.5
    return g * (cdf + x * F.exp(x * x * -0.5) * _INV_SQRT_2PI)


def _gelu_tanh_grad(x, y, g):
    t = F.tanh((x + x * x * x * GELU_K) * SQRT_2_PI)
    return g * ((t + 1.0) * 0.5 + x * 0.5 * (1.0 - t * t) * SQRT_2_PI *
                (x * x * (3.0 * GELU_K) + 1.0))


def _gelu_xp(approximate: str) -> Callable:
    """GELU from the backend's functions ``m`` (numpy's or CuPy's, with ``m.erf``)."""
    def build(m: Any) -> Callable:
        if approximate == "tanh":  # 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u))
            def gelu(x):
                return x / (m.exp((x + x * x * x * GELU_K) * (-2.0 * SQRT_2_PI)) + 1.0)
        else:
            def gelu(x):
                return x * 0.5 * m.erfc(x * -SQRT1_2)
        return gelu
    return build


def _zero(x, y, g):  # piecewise constant: zero almost everywhere
    return g * 0.0


def _u(name, rule, keep="", grad=None, xp=None, c=None, onnx=None, api=None) -> Ufunc:
    return Ufunc(name, 1, rule, keep, None if grad is None else (grad,), xp,
                 c if c is not None else (f"{xp}(x)" if isinstance(xp, str) else None),
                 onnx, api)


def _b(name, rule, keep="", grad=None, xp=None, c=None, onnx=None, api=None) -> Ufunc:
    return Ufunc(name, 2, rule, keep, grad, xp, c, onnx, api)


_ROUND = "x"  # an integer rounds to itself


#: Every elementwise function, in the order ``F`` lists them.
ROWS: tuple[Ufunc, ...] = (
    # -- two operands -----------------------------------------------------------------
    _b("add", "arith", "", (lambda a, b, y, g: g, lambda a, b, y, g: g), "add",
       _by_kind("x | y", None, "x + y"), "Add"),
    _b("sub", "no_bool", "", (lambda a, b, y, g: g, lambda a, b, y, g: -g), "subtract",
       "x - y", "Sub", ("subtract",)),
    _b("mul", "arith", "ab", (lambda a, b, y, g: g * b, lambda a, b, y, g: g * a),
       "multiply", _by_kind("x & y", None, "x * y"), "Mul", ("multiply",)),
    _b("div", "div", "ab", (lambda a, b, y, g: g / b, lambda a, b, y, g: -((g / b) * a) / b),
       "true_divide", "x / y", "Div", ("divide",)),
    _b("pow", "pow", "aby", (lambda a, b, y, g: g * (b * a ** (b - 1)),
                             lambda a, b, y, g: g * y * _log(a)),
       "power", "pow(x, y)", "Pow"),  # OpenCL writes the integer power
    _b("maximum", "arith", "ab", (lambda a, b, y, g: F.where(F.greater_equal(a, b), g, 0.0),
                                  lambda a, b, y, g: F.where(F.greater_equal(a, b), 0.0, g)),
       "maximum", _extremum(">", "max(x, y)", "x | y"), "Max"),
    _b("minimum", "arith", "ab", (lambda a, b, y, g: F.where(F.less_equal(a, b), g, 0.0),
                                  lambda a, b, y, g: F.where(F.less_equal(a, b), 0.0, g)),
       "minimum", _extremum("<", "min(x, y)", "x & y"), "Min"),
    _b("atan2", "float", "ab", (lambda a, b, y, g: g * b / (a * a + b * b),
                                lambda a, b, y, g: -(g * a) / (a * a + b * b)),
       "arctan2", "atan2(x, y)"),
    _b("hypot", "float", "aby", (lambda a, b, y, g: g * a / y, lambda a, b, y, g: g * b / y),
       "hypot", "hypot(x, y)", _onnx_hypot),
    _b("logaddexp", "float", "aby", (lambda a, b, y, g: g * F.exp(a - y),
                                     lambda a, b, y, g: g * F.exp(b - y)),
       "logaddexp",  # nan if either is; equal values (infinities too) need no inf - inf
       "(isnan(x) || isnan(y)) ? x + y : (x == y ? x + log((T)2) : "
       "fmax(x, y) + log1p(exp(-fabs(x - y))))"),
    _b("copysign", "float", "ab",
       (lambda a, b, y, g: F.where(F.equal(F.signbit(a), F.signbit(b)), g, -g),
        lambda a, b, y, g: g * 0.0), "copysign", "copysign(x, y)"),
    _b("remainder", "no_bool", "ab", (lambda a, b, y, g: g,
                                      lambda a, b, y, g: -(g * F.floor_divide(a, b))),
       "remainder"),  # C: each backend's divmod
    _b("floor_divide", "no_bool", xp="floor_divide"),
    _b("nextafter", "float", xp="nextafter", c="nextafter(x, y)"),
    _b("bitwise_and", "integral", xp="bitwise_and", c="x & y"),
    _b("bitwise_or", "integral", xp="bitwise_or", c="x | y"),
    _b("bitwise_xor", "integral", xp="bitwise_xor", c="x ^ y"),
    _b("bitwise_left_shift", "int", xp="left_shift", c=_shift(True)),
    _b("bitwise_right_shift", "int", xp="right_shift", c=_shift(False)),
    _b("logical_and", "logical", xp="logical_and", c="(x != 0) && (y != 0)"),
    _b("logical_or", "logical", xp="logical_or", c="(x != 0) || (y != 0)"),
    _b("logical_xor", "logical", xp="logical_xor", c="(x != 0) != (y != 0)"),
    _b("equal", "compare", xp="equal", c="x == y", onnx="Equal"),
    _b("not_equal", "compare", xp="not_equal", c="x != y", onnx=_onnx_not_equal),
    _b("less", "compare", xp="less", c="x < y", onnx="Less"),
    _b("less_equal", "compare", xp="less_equal", c="x <= y", onnx="LessOrEqual"),
    _b("greater", "compare", xp="greater", c="x > y", onnx="Greater"),
    _b("greater_equal", "compare", xp="greater_equal", c="x >= y", onnx="GreaterOrEqual"),
    # -- one operand ------------------------------------------------------------------
    _u("neg", "numeric", "", lambda x, y, g: -g, "negative", "-x", "Neg", ("negative",)),
    _u("abs", "any", "x", lambda x, y, g: g * F.sign(x), "absolute",
       _by_kind("x", "(x < 0 ? -x : x)", "fabs(x)"), "Abs"),
    _u("sign", "numeric", xp="sign", onnx="Sign",
       c=_by_kind(None, "(T)((x > 0) - (x < 0))", "(isnan(x) ? x : (T)((x > 0) - (x < 0)))")),
    _u("relu", "any", "y", lambda x, y, g: g * F.greater(y, 0), None,
       _by_kind("x", "((x > 0) ? x : (T)0)", "((x > 0 || isnan(x)) ? x : (T)0)"), "Relu",
       ()),
    _u("exp", "float", "y", lambda x, y, g: g * y, "exp", onnx="Exp"),
    _u("expm1", "float", "y", lambda x, y, g: g * (y + 1.0), "expm1", onnx=_onnx_expm1),
    _u("log", "float", "x", lambda x, y, g: g / x, "log", onnx="Log"),
    _u("log1p", "float", "x", lambda x, y, g: g / (x + 1.0), "log1p", onnx=_onnx_log1p),
    _u("log2", "float", "x", lambda x, y, g: g / (x * float(np.log(2.0))), "log2",
       onnx=_onnx_log_base(2.0)),
    _u("log10", "float", "x", lambda x, y, g: g / (x * float(np.log(10.0))), "log10",
       onnx=_onnx_log_base(10.0)),
    _u("sqrt", "float", "y", lambda x, y, g: g * 0.5 / y, "sqrt", onnx="Sqrt"),
    _u("tanh", "float", "y", lambda x, y, g: g * (1.0 - y * y), "tanh", onnx="Tanh"),
    _u("sigmoid", "float", "y", lambda x, y, g: g * (y * (1.0 - y)), None,
       # e / (1 + e) below 0, 1 / (1 + e) above, e = exp(-|x|): no overflow, each tail to
       # its relative rounding (0.5 tanh(x / 2) + 0.5 lost the left one: 0 or 2^-25)
       "(x < (T)0 ? exp(-fabs(x)) : (T)1) / ((T)1 + exp(-fabs(x)))", "Sigmoid", ()),
    _u("sin", "float", "x", lambda x, y, g: g * F.cos(x), "sin", onnx="Sin"),
    _u("cos", "float", "x", lambda x, y, g: -(g * F.sin(x)), "cos", onnx="Cos"),
    _u("tan", "float", "y", lambda x, y, g: g * (y * y + 1.0), "tan", onnx="Tan"),
    _u("asin", "float", "x", lambda x, y, g: g / F.sqrt(1.0 - x * x), "arcsin", "asin(x)",
       "Asin"),
    _u("acos", "float", "x", lambda x, y, g: -(g / F.sqrt(1.0 - x * x)), "arccos", "acos(x)",
       "Acos"),
    _u("atan", "float", "x", lambda x, y, g: g / (x * x + 1.0), "arctan", "atan(x)", "Atan"),
    _u("sinh", "float", "x", lambda x, y, g: g * F.cosh(x), "sinh", onnx="Sinh"),
    _u("cosh", "float", "x", lambda x, y, g: g * F.sinh(x), "cosh", onnx="Cosh"),
    _u("asinh", "float", "x", lambda x, y, g: g / F.sqrt(x * x + 1.0), "arcsinh", "asinh(x)"),
    _u("acosh", "float", "x", lambda x, y, g: g / F.sqrt(x * x - 1.0), "arccosh", "acosh(x)"),
    _u("atanh", "float", "x", lambda x, y, g: g / (1.0 - x * x), "arctanh", "atanh(x)"),
    _u("erf", "float", "x", lambda x, y, g: g * F.exp(-(x * x)) * _TWO_SQRT_PI,
       "scipy.special.erf", "erf(x)", "Erf", ()),
    _u("erfc", "float", "x", lambda x, y, g: g * F.exp(-(x * x)) * -_TWO_SQRT_PI,
       "scipy.special.erfc", "erfc(x)", _onnx_erfc, ()),
    # x Phi(x) through erfc: no cancellation in the negative tail
    _u("gelu", "float", "x", _gelu_grad, _gelu_xp("none"),
       "(T)0.5 * x * erfc(x * (T)-0.70710678118654752440)", _onnx_gelu("none"), ()),
    # 0.5 x (1 + tanh(u)) as x / (1 + exp(-2u)): no cancellation where tanh(u) nears -1
    _u("gelu_tanh", "float", "x", _gelu_tanh_grad, _gelu_xp("tanh"),
       "x / ((T)1 + exp((T)-1.59576912160573071176 * (x + (T)0.044715 * x * x * x)))",
       _onnx_gelu("tanh"), ()),
    _u("square", "numeric", "x", lambda x, y, g: g * (x * 2.0), "square", "x * x"),
    _u("positive", "numeric", "", lambda x, y, g: g, "positive", "x"),
    _u("ceil", "numeric", "", _zero, "ceil", _by_kind(None, _ROUND, "ceil(x)")),
    _u("floor", "numeric", "", _zero, "floor", _by_kind(None, _ROUND, "floor(x)")),
    _u("trunc", "numeric", "", _zero, "trunc", _by_kind(None, _ROUND, "trunc(x)")),
    _u("round", "numeric", "", _zero, "round", _by_kind(None, _ROUND, "rint(x)")),
    _u("bitwise_invert", "integral", xp="invert", c=_by_kind("!x", "~x")),
    # predicates compute in the input's type
    _u("isfinite", "pred", xp="isfinite", c=_by_kind(None, "1", "isfinite(x)")),
    _u("isinf", "pred", xp="isinf", c=_by_kind(None, "0", "isinf(x)")),
    _u("isnan", "pred", xp="isnan", c=_by_kind(None, "0", "isnan(x)")),
    _u("signbit", "pred", xp="signbit", c=_signbit),
    _u("logical_not", "pred", xp="logical_not", c="x == 0", onnx="Not"),
)

#: The names a complex C expression (``Ufunc.cc``) may use, each defined by every C backend
#: for its complex types (``C``; ``R`` its real component type): ``c_re``/``c_im`` (parts),
#: ``c_new(re, im)``, ``c_abs``, and the complex ``c_mul c_div c_pow c_exp c_expm1 c_log
#: c_log1p c_log2 c_log10 c_sqrt c_sin c_cos c_tan c_sinh c_cosh c_tanh c_asin c_acos c_atan
#: c_asinh c_acosh c_atanh c_sign c_square``. ``+``,
#: ``-`` and unary ``-`` act on the parts (C vector types and structs with operators).
COMPLEX_HELPERS = ("c_re", "c_im", "c_new", "c_abs", "c_mul", "c_div", "c_pow", "c_exp",
                   "c_expm1", "c_log", "c_log1p", "c_log2", "c_log10", "c_sqrt", "c_sin",
                   "c_cos", "c_tan", "c_sinh", "c_cosh", "c_tanh", "c_asin", "c_acos",
                   "c_atan", "c_asinh", "c_acosh", "c_atanh", "c_sign", "c_square")

#: The complex variant of the rows defined for complex operands (``Ufunc.cc``).
_COMPLEX_C = {
    "add": "x + y", "sub": "x - y", "mul": "c_mul(x, y)", "div": "c_div(x, y)",
    "pow": "c_pow(x, y)",
    "equal": "(c_re(x) == c_re(y) && c_im(x) == c_im(y))",
    "not_equal": "(c_re(x) != c_re(y) || c_im(x) != c_im(y))",
    "neg": "-x", "positive": "x", "abs": "c_abs(x)", "square": "c_square(x)", "sign": "c_sign(x)",
    "round": "c_new(rint(c_re(x)), rint(c_im(x)))",
    **{f: f"c_{f}(x)" for f in ("exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin",
                                "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan",
                                "asinh", "acosh", "atanh")},
    "isfinite": "(isfinite(c_re(x)) && isfinite(c_im(x)))",
    "isinf": "(isinf(c_re(x)) || isinf(c_im(x)))",
    "isnan": "(isnan(c_re(x)) || isnan(c_im(x)))",
    "logical_not": "(c_re(x) == 0 && c_im(x) == 0)",
}
ROWS = tuple(replace(r, cc=_COMPLEX_C.get(r.name)) for r in ROWS)

#: The rows by name.
BY_NAME: dict[str, Ufunc] = {r.name: r for r in ROWS}
