"""Every elementwise function declared once: one ``Ufunc`` row each, written with keywords.

A row holds what each part of nnarray needs to know about the function, and each part
reads it from here (none keeps a table of its own keyed by these names):

- ``ops/elementwise.py``: the op, its dtype rule and its backward (the derivative per
  operand, written with ``F``; what backward retains is read from the names it uses);
- ``backends/_xp``: numpy's (and CuPy's) function of that name, or a composite of them;
- ``backends/opencl`` and ``backends/cuda``: the real and complex C expressions, rendered
  by each, and the row's ``Hints`` (which fast kernels take it);
- ``grad/onnx_export.py``, ``grad/onnx_import.py``: the ONNX op (or composition);
- ``nnarray.functions`` (``F``), ``nnarray.xp.elementwise`` (the Array API names) and numpy's
  protocol (the numpy function).

Adding a function is one row here plus its tests (``docs/architecture.md``).

C expressions are written in the operands ``x`` (and ``y``) and the compute type ``T``
(``(T)0.5``); math functions are called by name (``exp(x)``, ``erf(x)``), each backend maps
them (OpenCL calls its builtins, CUDA its float or double overloads). An expression may
depend on the dtype it computes in: then ``c`` is a function of that dtype giving one.
A backend may keep its own expression where the C it needs is its own (OpenCL's integer
divmod and half ``nextafter`` helpers); ``c`` is then ``None``.
"""

from __future__ import annotations

import ast
import dis
import math
from collections.abc import Callable
from dataclasses import dataclass, field
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
class ComplexFast:
    """complex64's fast path on CPU OpenCL devices (``backends/opencl/complex_fast.py``).

    ``flavor``: "trig" (Cody-Waite ``sincos``, exact for parts up to a bound) or "near"
    (no scaling, exact for moderate moduli). ``bound``: a further range test on the
    operand's parts, ``"re <= B"``, ``"|re| <= B"`` or ``"|im| <= B"``. ``zero``: z = 0's
    value where the fast formula gets it wrong, ``"(0, 0)"`` or ``"(0, im)"``."""

    flavor: str
    bound: str = ""
    zero: str = ""


@dataclass(frozen=True)
class Hints:
    """Which backend kernels take a row beyond the generic ones.

    ``cuda_vector``: CUDA's vectorized grid-stride kernels for large contiguous float work
    (``backends/cuda/vector.py``). ``cuda_kernel``: on CUDA, one kernel made from the C
    expression (numpy's composite is several passes). ``pairs``: the complex dtypes whose
    OpenCL kernels move each element as its two parts (``complex_math.PAIR_IO``: pocl
    vectorizes those wider). ``complex_fast``: complex64's fast path on CPU OpenCL devices.
    ``narrow``: the value depends on the operands' own precision (``nextafter`` steps by
    the dtype's ulp), so a 16-bit step cannot compute in float32 and round once: fused
    kernels, which widen 16-bit chains so, leave such steps out.
    """

    cuda_vector: bool = False
    cuda_kernel: bool = False
    pairs: tuple[str, ...] = ()
    complex_fast: ComplexFast | None = None
    narrow: bool = False


@dataclass(frozen=True)
class Ufunc:
    """The declaration of one elementwise function (see the module docstring).

    ``rule``: the dtype rule (``ops.elementwise``: "arith", "no_bool", "pow", "div",
    "compare", "logical", "float", "integral", "int" for two operands; "any", "numeric",
    "float", "integral", "pred" for one). ``grad``: one derivative per operand, ``(x, y, g)
    -> dx`` or ``(a, b, y, g) -> da``; ``None``: not differentiable. ``keep``: what backward
    retains, read from the names the derivatives use ("x" the input, "y" the output, "ab"
    both operands). ``diag``: the derivative ``(a, y, g) -> da`` of ``f(a, a)``, where both
    operands are one value (``x * x``: one gradient, not two summed). ``xp``: numpy's
    function name (CuPy has the same), a dotted ``scipy.special`` name, or ``m -> function``
    composing the backend's functions ``m`` (``m.erf``, ``m.tanh``, ...); ``None``: written
    out by each backend. ``c``: the C expression. ``cc``: the C expression for complex
    operands (``None``: not defined for complex on the C backends), written with the
    complex helpers each C backend defines (``COMPLEX_HELPERS``). ``onnx``: the ONNX op
    (import maps it back), or ``(ex, ins, dtype, outs) -> None`` emitting a composition;
    ``None``: not exported. ``api``: the Array API names (the standard's name, then
    aliases); ``None``: the row's name. ``hints``: the backends' fast kernels (``Hints``).
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
    diag: Callable | None = None
    hints: Hints = field(default_factory=Hints)

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


def _onnx_logit(ex, ins, dt, outs):  # log(x / (1 - x))
    (x,) = ins
    ex.emit("Log", [ex.emit("Div", [x, ex.emit("Sub", [ex.const(1, dt), x])])], outs)


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


def _abs_grad(x, y, g):  # sign(x); for complex x/|x| spelled out, so it differentiates again
    if np.dtype(x.dtype).kind != "c":
        return g * F.sign(x)
    tiny = float(np.finfo(np.dtype(x.dtype)).tiny)
    return g * (x / F.maximum(F.abs(x), tiny))


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


def _names(f: str | Callable) -> set[str]:
    """The names derivative ``f`` reads: of its formula, or the parameters its code loads."""
    if isinstance(f, str):
        return {n.id for n in ast.walk(ast.parse(f, mode="eval")) if isinstance(n, ast.Name)}
    code = f.__code__
    params = set(code.co_varnames[:code.co_argcount])
    loads = set()
    for ins in dis.get_instructions(code):
        if ins.opname.startswith(("LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE")):
            v = ins.argval
            loads.update(v if isinstance(v, tuple) else (v,))
    return loads & params


def _derivative(f: str | Callable, params: str) -> Callable:
    """Derivative ``f``: a formula in ``params`` (and ``F``, this module's names), or a
    function of them as it is."""
    return f if callable(f) else eval(f"lambda {params}: {f}", globals())  # noqa: S307


def _retained(arity: int, formulas: tuple) -> str:
    """What backward retains for ``formulas``: the operands ("x", or "ab" for two) where a
    formula names one, "y" where one names the output."""
    names = set().union(*map(_names, formulas)) if formulas else set()
    operands = "x" if arity == 1 else "ab"
    return (operands if names & set(operands) else "") + ("y" if "y" in names else "")


def row(name: str, arity: int, rule: str, *, grad: Any = None, diag: Any = None,
        xp: str | Callable | None = None, c: CExpr | None = None, cc: str | None = None,
        onnx: str | Callable | None = None, api: tuple[str, ...] | None = None,
        hints: Hints = Hints()) -> Ufunc:
    """One row (``Ufunc``). ``grad``: the derivative, a formula in ``x, y, g`` (a pair of
    formulas in ``a, b, y, g`` for two operands) or a function of those; ``diag``: a
    formula in ``a, y, g``. ``c`` defaults to a one-operand row's numpy name called on
    ``x``."""
    formulas = () if grad is None else (grad,) if arity == 1 else tuple(grad)
    params = "x, y, g" if arity == 1 else "a, b, y, g"
    if c is None and arity == 1 and isinstance(xp, str) and "." not in xp:
        c = f"{xp}(x)"
    return Ufunc(name, arity, rule, _retained(arity, formulas + ((diag,) if diag else ())),
                 tuple(_derivative(f, params) for f in formulas) or None, xp, c, onnx, api,
                 cc, None if diag is None else _derivative(diag, "a, y, g"), hints)


_ROUND = "x"  # an integer rounds to itself
_ZERO = "g * 0.0"  # piecewise constant: zero almost everywhere
_VEC = Hints(cuda_vector=True)
_C64 = ("complex64",)  # complex64 kernels moving parts as pairs (``Hints.pairs``)


def _trig(bound: str = "") -> Hints:
    """A complex function with the trigonometric fast path, its parts as pairs."""
    return Hints(pairs=_C64, complex_fast=ComplexFast("trig", bound))


#: Every elementwise function, in the order ``F`` lists them.
ROWS: tuple[Ufunc, ...] = (
    # -- two operands -----------------------------------------------------------------
    row("add", 2, "arith", grad=("g", "g"), xp="add", c=_by_kind("x | y", None, "x + y"),
        cc="x + y", onnx="Add", hints=_VEC),
    row("sub", 2, "no_bool", grad=("g", "-g"), xp="subtract", c="x - y", cc="x - y",
        onnx="Sub", api=("subtract",), hints=_VEC),
    row("mul", 2, "arith", grad=("g * b", "g * a"), diag="g * (a * 2.0)", xp="multiply",
        c=_by_kind("x & y", None, "x * y"), cc="c_mul(x, y)", onnx="Mul", api=("multiply",),
        hints=_VEC),
    row("div", 2, "div", grad=("g / b", "-((g / b) * a) / b"), xp="true_divide", c="x / y",
        cc="c_div(x, y)", onnx="Div", api=("divide",), hints=Hints(cuda_vector=True,
                                                                   pairs=_C64)),
    row("pow", 2, "pow", grad=("g * (b * a ** (b - 1))", "g * y * _log(a)"), xp="power",
        c="pow(x, y)", cc="c_pow(x, y)", onnx="Pow"),  # OpenCL writes the integer power
    row("maximum", 2, "arith", grad=("F.where(F.greater_equal(a, b), g, 0.0)",
                                     "F.where(F.greater_equal(a, b), 0.0, g)"),
        xp="maximum", c=_extremum(">", "max(x, y)", "x | y"), onnx="Max", hints=_VEC),
    row("minimum", 2, "arith", grad=("F.where(F.less_equal(a, b), g, 0.0)",
                                     "F.where(F.less_equal(a, b), 0.0, g)"),
        xp="minimum", c=_extremum("<", "min(x, y)", "x & y"), onnx="Min", hints=_VEC),
    row("atan2", 2, "float", grad=("g * b / (a * a + b * b)", "-(g * a) / (a * a + b * b)"),
        xp="arctan2", c="atan2(x, y)"),
    row("hypot", 2, "float", grad=("g * a / y", "g * b / y"), xp="hypot", c="hypot(x, y)",
        onnx=_onnx_hypot),
    row("logaddexp", 2, "float", grad=("g * F.exp(a - y)", "g * F.exp(b - y)"),
        xp="logaddexp",  # nan if either is; equal values (infinities too) need no inf - inf
        c="(isnan(x) || isnan(y)) ? x + y : (x == y ? x + log((T)2) : "
          "fmax(x, y) + log1p(exp(-fabs(x - y))))"),
    row("copysign", 2, "float",
        grad=("F.where(F.equal(F.signbit(a), F.signbit(b)), g, -g)", "g * 0.0"),
        xp="copysign", c="copysign(x, y)"),
    row("remainder", 2, "no_bool", grad=("g", "-(g * F.floor_divide(a, b))"),
        xp="remainder"),  # C: each backend's divmod
    row("floor_divide", 2, "no_bool", xp="floor_divide"),
    row("nextafter", 2, "float", xp="nextafter", c="nextafter(x, y)",
        hints=Hints(narrow=True)),
    row("bitwise_and", 2, "integral", xp="bitwise_and", c="x & y"),
    row("bitwise_or", 2, "integral", xp="bitwise_or", c="x | y"),
    row("bitwise_xor", 2, "integral", xp="bitwise_xor", c="x ^ y"),
    row("bitwise_left_shift", 2, "int", xp="left_shift", c=_shift(True)),
    row("bitwise_right_shift", 2, "int", xp="right_shift", c=_shift(False)),
    row("logical_and", 2, "logical", xp="logical_and", c="(x != 0) && (y != 0)"),
    row("logical_or", 2, "logical", xp="logical_or", c="(x != 0) || (y != 0)"),
    row("logical_xor", 2, "logical", xp="logical_xor", c="(x != 0) != (y != 0)"),
    row("equal", 2, "compare", xp="equal", c="x == y", onnx="Equal",
        cc="(c_re(x) == c_re(y) && c_im(x) == c_im(y))"),
    row("not_equal", 2, "compare", xp="not_equal", c="x != y", onnx=_onnx_not_equal,
        cc="(c_re(x) != c_re(y) || c_im(x) != c_im(y))"),
    row("less", 2, "compare", xp="less", c="x < y", onnx="Less"),
    row("less_equal", 2, "compare", xp="less_equal", c="x <= y", onnx="LessOrEqual"),
    row("greater", 2, "compare", xp="greater", c="x > y", onnx="Greater"),
    row("greater_equal", 2, "compare", xp="greater_equal", c="x >= y", onnx="GreaterOrEqual"),
    # -- one operand ------------------------------------------------------------------
    row("neg", 1, "numeric", grad="-g", xp="negative", c="-x", cc="-x", onnx="Neg",
        api=("negative",), hints=_VEC),
    row("abs", 1, "any", grad=_abs_grad, xp="absolute",
        c=_by_kind("x", "(x < 0 ? -x : x)", "fabs(x)"), cc="c_abs(x)", onnx="Abs",
        hints=Hints(cuda_vector=True, pairs=("complex64", "complex128"))),
    row("sign", 1, "numeric", xp="sign", onnx="Sign", cc="c_sign(x)",
        c=_by_kind(None, "(T)((x > 0) - (x < 0))", "(isnan(x) ? x : (T)((x > 0) - (x < 0)))"),
        hints=Hints(pairs=_C64, complex_fast=ComplexFast("near", zero="(0, 0)"))),
    row("relu", 1, "any", grad="g * F.greater(y, 0)", onnx="Relu", api=(),
        c=_by_kind("x", "((x > 0) ? x : (T)0)", "((x > 0 || isnan(x)) ? x : (T)0)"),
        hints=_VEC),
    row("exp", 1, "float", grad="g * y", xp="exp", cc="c_exp(x)", onnx="Exp",
        hints=Hints(cuda_vector=True, pairs=_C64,
                    complex_fast=ComplexFast("trig", "re <= 88"))),
    row("expm1", 1, "float", grad="g * (y + 1.0)", xp="expm1", cc="c_expm1(x)",
        onnx=_onnx_expm1, hints=_trig("re <= 88")),
    row("log", 1, "float", grad="g / x", xp="log", cc="c_log(x)", onnx="Log",
        hints=Hints(cuda_vector=True, pairs=_C64)),
    row("log1p", 1, "float", grad="g / (x + 1.0)", xp="log1p", cc="c_log1p(x)",
        onnx=_onnx_log1p),
    row("log2", 1, "float", grad="g / (x * float(np.log(2.0)))", xp="log2", cc="c_log2(x)",
        onnx=_onnx_log_base(2.0), hints=Hints(pairs=_C64)),
    row("log10", 1, "float", grad="g / (x * float(np.log(10.0)))", xp="log10",
        cc="c_log10(x)", onnx=_onnx_log_base(10.0), hints=Hints(pairs=_C64)),
    row("sqrt", 1, "float", grad="g * 0.5 / y", xp="sqrt", cc="c_sqrt(x)", onnx="Sqrt",
        hints=Hints(cuda_vector=True, pairs=_C64,
                    complex_fast=ComplexFast("near", zero="(0, im)"))),
    row("tanh", 1, "float", grad="g * (1.0 - y * y)", xp="tanh", cc="c_tanh(x)",
        onnx="Tanh", hints=Hints(cuda_vector=True, pairs=_C64,
                                 complex_fast=ComplexFast("trig"))),
    row("sigmoid", 1, "float", grad="g * (y * (1.0 - y))", onnx="Sigmoid", api=(),
        # e / (1 + e) below 0, 1 / (1 + e) above, e = exp(-|x|): no overflow, each tail to
        # its relative rounding (0.5 tanh(x / 2) + 0.5 lost the left one: 0 or 2^-25)
        c="(x < (T)0 ? exp(-fabs(x)) : (T)1) / ((T)1 + exp(-fabs(x)))",
        cc="c_div(c_new(1, 0), c_new(1, 0) + c_exp(-x))",
        hints=Hints(cuda_vector=True, cuda_kernel=True)),
    row("sin", 1, "float", grad="g * F.cos(x)", xp="sin", cc="c_sin(x)", onnx="Sin",
        hints=_trig("|im| <= 88")),
    row("cos", 1, "float", grad="-(g * F.sin(x))", xp="cos", cc="c_cos(x)", onnx="Cos",
        hints=_trig("|im| <= 88")),
    row("tan", 1, "float", grad="g * (y * y + 1.0)", xp="tan", cc="c_tan(x)", onnx="Tan",
        hints=_trig()),
    row("asin", 1, "float", grad="g / F.sqrt(1.0 - x * x)", xp="arcsin", c="asin(x)",
        cc="c_asin(x)", onnx="Asin"),
    row("acos", 1, "float", grad="-(g / F.sqrt(1.0 - x * x))", xp="arccos", c="acos(x)",
        cc="c_acos(x)", onnx="Acos"),
    row("atan", 1, "float", grad="g / (x * x + 1.0)", xp="arctan", c="atan(x)",
        cc="c_atan(x)", onnx="Atan", hints=Hints(pairs=_C64)),
    row("sinh", 1, "float", grad="g * F.cosh(x)", xp="sinh", cc="c_sinh(x)", onnx="Sinh",
        hints=_trig("|re| <= 88")),
    row("cosh", 1, "float", grad="g * F.sinh(x)", xp="cosh", cc="c_cosh(x)", onnx="Cosh",
        hints=_trig("|re| <= 88")),
    row("asinh", 1, "float", grad="g / F.sqrt(x * x + 1.0)", xp="arcsinh", c="asinh(x)",
        cc="c_asinh(x)"),
    row("acosh", 1, "float", grad="g / F.sqrt(x * x - 1.0)", xp="arccosh", c="acosh(x)",
        cc="c_acosh(x)"),
    row("atanh", 1, "float", grad="g / (1.0 - x * x)", xp="arctanh", c="atanh(x)",
        cc="c_atanh(x)", hints=Hints(pairs=_C64)),
    row("erf", 1, "float", grad="g * F.exp(-(x * x)) * _TWO_SQRT_PI", xp="scipy.special.erf",
        c="erf(x)", onnx="Erf", api=(), hints=_VEC),
    row("erfc", 1, "float", grad="g * F.exp(-(x * x)) * -_TWO_SQRT_PI",
        xp="scipy.special.erfc", c="erfc(x)", onnx=_onnx_erfc, api=()),
    # x Phi(x) through erfc: no cancellation in the negative tail
    row("gelu", 1, "float", grad=_gelu_grad, xp=_gelu_xp("none"),
        c="(T)0.5 * x * erfc(x * (T)-0.70710678118654752440)", onnx=_onnx_gelu("none"),
        api=(), hints=Hints(cuda_vector=True, cuda_kernel=True)),
    # 0.5 x (1 + tanh(u)) as x / (1 + exp(-2u)): no cancellation where tanh(u) nears -1
    row("gelu_tanh", 1, "float", grad=_gelu_tanh_grad, xp=_gelu_xp("tanh"),
        c="x / ((T)1 + exp((T)-1.59576912160573071176 * (x + (T)0.044715 * x * x * x)))",
        onnx=_onnx_gelu("tanh"), api=(), hints=Hints(cuda_vector=True, cuda_kernel=True)),
    # the log-odds, scipy.special.logit (inverse of sigmoid); no scipy needed: a composite
    row("logit", 1, "float", grad="g / (x * (1.0 - x))", xp=lambda m: lambda x: m.log(
        x / (1.0 - x)), c="log(x / ((T)1 - x))", onnx=_onnx_logit, api=()),
    row("square", 1, "numeric", grad="g * (x * 2.0)", xp="square", c="x * x",
        cc="c_square(x)", hints=_VEC),
    row("positive", 1, "numeric", grad="g", xp="positive", c="x", cc="x"),
    row("ceil", 1, "numeric", grad=_ZERO, xp="ceil", c=_by_kind(None, _ROUND, "ceil(x)")),
    row("floor", 1, "numeric", grad=_ZERO, xp="floor", c=_by_kind(None, _ROUND, "floor(x)")),
    row("trunc", 1, "numeric", grad=_ZERO, xp="trunc", c=_by_kind(None, _ROUND, "trunc(x)")),
    row("round", 1, "numeric", grad=_ZERO, xp="round", c=_by_kind(None, _ROUND, "rint(x)"),
        cc="c_new(rint(c_re(x)), rint(c_im(x)))"),
    row("bitwise_invert", 1, "integral", xp="invert", c=_by_kind("!x", "~x")),
    # predicates compute in the input's type
    row("isfinite", 1, "pred", xp="isfinite", c=_by_kind(None, "1", "isfinite(x)"),
        cc="(isfinite(c_re(x)) && isfinite(c_im(x)))"),
    row("isinf", 1, "pred", xp="isinf", c=_by_kind(None, "0", "isinf(x)"),
        cc="(isinf(c_re(x)) || isinf(c_im(x)))"),
    row("isnan", 1, "pred", xp="isnan", c=_by_kind(None, "0", "isnan(x)"),
        cc="(isnan(c_re(x)) || isnan(c_im(x)))"),
    row("signbit", 1, "pred", xp="signbit", c=_signbit),
    row("logical_not", 1, "pred", xp="logical_not", c="x == 0", onnx="Not",
        cc="(c_re(x) == 0 && c_im(x) == 0)"),
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

#: The rows by name.
BY_NAME: dict[str, Ufunc] = {r.name: r for r in ROWS}
