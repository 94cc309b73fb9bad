"""Elementwise overrides of the shared CuPy kernels.

Scalars: numpy 2 promotes Python scalars weakly (NEP 50: ``float32_array * 0.1`` stays
float32); CuPy versions differ on scalar promotion. So every scalar operand is first
turned into a numpy scalar of the result dtype the op specs use (``dtypes.promote``),
casting the array operand up where numpy would, which every CuPy version promotes the
same way. A comparison with a Python int outside the array's integer range (``uint8 ==
300``) has a known answer, filled in, where casting the int would overflow.

Result dtypes follow the op specs (``ops.elementwise.unary_dtype``) rather than CuPy's
loops: ``sigmoid`` of an integer computes in the spec's float dtype (float16 for 8-bit
integers), and ``floor``/``ceil``/``trunc``/``round`` of an integer are the integer
itself (CuPy 13 has only float loops for the first three: ``floor(int8)`` gave float16).
``pow`` refuses integers to negative integer powers, as every backend does. ``sigmoid``
and ``gelu`` are one ``ElementwiseKernel`` each, made from their rows' C expressions
(``ops/ufuncs.py``), instead of several passes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ... import dtypes
from ...ops.common import check_int_pow
from ...ops.elementwise import unary_dtype
from ...ops.ufuncs import BY_NAME, ROWS
from .._xp.elementwise import functions, in_result_dtype
from .cmath import math_names, overloads, render
from .scope import register, registered
from .table import Elementwise

COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
#: Unary ops that are the identity on integers.
INTEGER_IDENTITY = ("ceil", "floor", "trunc", "round")
#: ``array OP v`` for every element, when ``v`` lies above the array dtype's range.
_ABOVE = {"equal": False, "not_equal": True, "less": True, "less_equal": True,
          "greater": False, "greater_equal": False}
_SWAPPED = {"less": "greater", "less_equal": "greater_equal", "greater": "less",
            "greater_equal": "less_equal", "equal": "equal", "not_equal": "not_equal"}


def constant_comparison(name: str, dtype: np.dtype, v: Any, scalar_first: bool) -> bool | None:
    """The result of comparison ``name`` of every element of an integer array of
    ``dtype`` with the Python int ``v`` when ``v`` lies outside the dtype's range (numpy
    2 compares exactly there), else ``None``."""
    if dtype.kind not in "iu" or not isinstance(v, (int, np.integer)) or \
            isinstance(v, (bool, np.bool_)):
        return None
    info = np.iinfo(dtype)
    if info.min <= v <= info.max:
        return None
    op = _SWAPPED[name] if scalar_first else name
    above = _ABOVE[op]
    return above if v > info.max or op in ("equal", "not_equal") else not above


def coerce(a: Any, b: Any) -> tuple[Any, Any]:
    """``(a, b)`` with a scalar operand made a numpy scalar of the result dtype."""
    if dtypes.is_scalar(b):
        d = dtypes.promote("cuda", a, b)
        return (a if a.dtype == d else a.astype(d)), d.type(b)
    if dtypes.is_scalar(a):
        d = dtypes.promote("cuda", a, b)
        return d.type(a), (b if b.dtype == d else b.astype(d))
    return a, b


def _binary(uf: Callable) -> Callable:
    def k(a, b, out=None):
        a, b = coerce(a, b)
        if out is None:
            return uf(a, b)
        uf(a, b, out=out)
        return out
    return k


def _compare(name: str, uf: Callable, xp: Any) -> Callable:
    plain = _binary(uf)

    def k(a, b, out=None):
        first = dtypes.is_scalar(a)
        arr, v = (b, a) if first else (a, b)
        known = constant_comparison(name, arr.dtype, v, first) \
            if dtypes.is_scalar(v) else None
        if known is None:
            return plain(a, b, out)
        if out is None:
            return xp.full(arr.shape, known, np.bool_)
        out.fill(known)
        return out
    return k


def _device_min(b: Any) -> Any:
    return int(b.min())  # a device read: only integer powers with an array exponent


def _pow(uf: Callable) -> Callable:
    plain = _binary(uf)

    def k(a, b, out=None):
        check_int_pow(a, b, _device_min)
        return plain(a, b, out)
    return k


def integer_identity(uf: Callable, xp: Any) -> Callable:
    """``uf`` (floor, ceil, trunc or round), with integers returned as they are (a fresh
    copy, their own dtype)."""
    def k(x, out=None):
        if x.dtype.kind in "iu":
            if out is None:
                return x.copy()
            xp.copyto(out, x, casting="unsafe")
            return out
        return uf(x) if out is None else uf(x, out=out)
    return k


#: Rows one CuPy kernel computes from their C expression (``Hints.cuda_kernel``: numpy
#: composes them of several functions, each a pass over memory).
ROW_KERNELS = tuple(r.name for r in ROWS if r.hints.cuda_kernel)


def complex_logical_not(generic: Callable, xp: Any) -> Callable:
    """``logical_not`` with complex operands as ``x == 0`` (CuPy has no complex loop for
    it: "Wrong type ((dtype('complex64'),))", seen on an H200 with CuPy 14.2)."""
    def k(x, out=None):
        if x.dtype.kind != "c":
            return generic(x) if out is None else generic(x, out=out)
        r = xp.equal(x, x.dtype.type(0))
        if out is None:
            return r
        out[...] = r
        return out
    return k


#: complex64 ``sqrt`` computed in complex128 and rounded once. CuPy's kernels flush
#: float32 subnormals to zero, in its complex64 sqrt and in a float-to-double cast alike
#: (``sqrt(1e-40+1e-40j)`` gave 0 on an H200 with CuPy 14.2), so the parts are widened
#: from their bits; subnormal parts have normal square roots.
_F2D = """
__device__ __forceinline__ double nna_f2d(float f) {
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7f800000u) != 0u) return (double)f;  /* normal, inf, nan: exact */
    double m = (double)(u & 0x7fffffu) * 1.401298464324817e-45;  /* 2^-149 */
    return (u >> 31) ? -m : m;
}
"""
_CSQRT = Elementwise("T a", "T b",
                     "b = T(sqrt(complex<double>(nna_f2d(a.real()), nna_f2d(a.imag()))));",
                     "nna_csqrt64", ("complex64",), preamble=_F2D).declare()


def _complex64_through(generic: Callable, kern: Callable, redo: bool = False) -> Callable:
    """``generic``, with complex64 operands through ``kern``: ``kern(x)``, or with ``redo``
    ``kern(x, generic(x))`` (a second launch over ``generic``'s result)."""
    def k(x, out=None):
        if x.dtype != np.complex64:
            return generic(x) if out is None else generic(x, out=out)
        args = (x, generic(x)) if redo else (x,)
        return kern(*args) if out is None else kern(*args, out)
    return k


def complex_sqrt(generic: Callable, xp: Any) -> Callable:
    """``sqrt`` with complex64 operands through ``_CSQRT``; the rest as ``generic``."""
    return _complex64_through(generic, _CSQRT.build(xp))


#: complex64 ``sign`` of a finite number with a subnormal part, in double from the parts'
#: bits (CuPy's kernel flushed them: ``sign(1e-40j)`` gave 0 on an H200 with CuPy 14.2);
#: every other element keeps CuPy's result ``r`` (its special cases pass the standard's).
_CSIGN = Elementwise(
    "T a, T r", "T b",
    "const float p = a.real(), q = a.imag();"
    " const unsigned int u = __float_as_uint(p), v = __float_as_uint(q);"
    " const bool tiny = ((u & 0x7f800000u) == 0u && (u & 0x7fffffu) != 0u)"
    " || ((v & 0x7f800000u) == 0u && (v & 0x7fffffu) != 0u);"
    " const bool finite = (u & 0x7f800000u) != 0x7f800000u && (v & 0x7f800000u) != 0x7f800000u;"
    " if (tiny && finite) { const double x = nna_f2d(p) * 18446744073709551616.0,"
    " y = nna_f2d(q) * 18446744073709551616.0; const double h = hypot(x, y);"
    " b = T((float)(x / h), (float)(y / h)); } else { b = r; }",
    "nna_csign64", ("complex64",), preamble=_F2D).declare()


def complex_sign(generic: Callable, xp: Any) -> Callable:
    """``sign`` with complex64 operands: CuPy's, then ``_CSIGN`` redoes the elements with
    a subnormal part (a second launch, on complex64 only)."""
    return _complex64_through(generic, _CSIGN.build(xp), redo=True)


def _row_body(name: str, calc: str, dtypes: tuple[str, ...]) -> Elementwise:
    """Row ``name``'s C expression as a CuPy kernel body computing in ``calc`` (float16 in
    float arithmetic), for inputs of ``dtypes``."""
    e = re.sub(r"\bT\b", "C", render(BY_NAME[name].c_expr(np.dtype(calc))))
    return Elementwise("T a", "T b", f"typedef {calc} C; const C x = (C)a; b = (T)({e});",
                       f"nna_{name}_{calc[0]}", dtypes,
                       preamble=overloads(math_names((name,)))).declare()


_BODIES = {n: (_row_body(n, "float", ("float16", "float32")),
               _row_body(n, "double", ("float64",))) for n in ROW_KERNELS}


def _row_kernel(name: str, xp: Any) -> Callable:
    """The kernel of row ``name`` (a floating result): integers computed in the row's
    float dtype, float64 in double, float16 and float32 in float."""
    single, double = (b.build(xp) for b in _BODIES[name])

    def k(x, out=None):
        if x.dtype.kind != "f":
            x = x.astype(unary_dtype(name, x.dtype))
        kern = double if x.dtype == np.float64 else single
        if out is None:
            return kern(x)
        if out.dtype == x.dtype:
            kern(x, out)
        else:
            out[...] = kern(x)
        return out
    return k


def register_elementwise(xp: Any) -> None:
    for name, uf in functions(xp)[0].items():
        f = in_result_dtype(name, uf)
        register(name)(_compare(name, f, xp) if name in COMPARISONS else
                       _pow(f) if name == "pow" else _binary(f))
    for name in INTEGER_IDENTITY:
        register(name)(integer_identity(getattr(xp, name), xp))
    register("logical_not")(complex_logical_not(registered()["logical_not"], xp))
    register("sqrt")(complex_sqrt(registered()["sqrt"], xp))
    register("sign")(complex_sign(registered()["sign"], xp))

    for name in ROW_KERNELS:
        register(name)(_row_kernel(name, xp))

    @register("leaky_relu")
    def leaky_relu(x, alpha):
        d = dtypes.promote("leaky_relu", x, float(alpha))
        x = x.astype(d, copy=False)
        return xp.where(x > 0, x, x * d.type(alpha))

    @register("clip")
    def clip(x, a_min, a_max):
        bounds = [v for v in (a_min, a_max) if v is not None]
        d = dtypes.promote("clip", x, *bounds)
        y = x.astype(d, copy=True)
        if a_min is not None:
            xp.maximum(y, d.type(a_min), out=y)
        if a_max is not None:
            xp.minimum(y, d.type(a_max), out=y)
        return y

    @register("where")
    def where(c, x, y):
        d = dtypes.promote("where", x, y)
        if dtypes.is_scalar(x) and dtypes.is_scalar(y):  # a 0-d array makes the dtype explicit
            return xp.where(c, xp.full((), x, d), d.type(y))
        x, y = (d.type(v) if dtypes.is_scalar(v) else v.astype(d, copy=False) for v in (x, y))
        return xp.where(c, x, y)
