"""Complex arithmetic and functions in OpenCL C on ``float2``/``double2`` (``.x`` real,
``.y`` imaginary): the helpers the rows' complex expressions (``Ufunc.cc``) call.

Each helper is defined per type with the type's name appended (``c_mul_float2``), so that
float and double kernels may share a program; ``expression`` renames a row's calls.
Formulas: Smith's division, ``sqrt`` by the half-angle formulas (no cancellation),
``tanh`` bounded for large real parts, ``expm1`` with ``cos y - 1 = -2 sin^2(y/2)``.
"""

from __future__ import annotations

import re

from ...errors import DTypeError
from ...ops.ufuncs import BY_NAME
from .cltypes import CLType

_HELPERS = """
inline R c_re_C(C a) { return a.x; }
inline R c_im_C(C a) { return a.y; }
inline C c_new_C(R re, R im) { return (C)(re, im); }
inline R c_abs_C(C a) { return hypot(a.x, a.y); }
inline C c_mul_C(C a, C b) { return (C)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
inline C c_div_C(C a, C b) {
  if (fabs(b.x) >= fabs(b.y)) {
    if (b.x == 0) return (C)(a.x / (R)0, a.y / (R)0);
    const R r = b.y / b.x, d = b.x + b.y * r;
    return (C)((a.x + a.y * r) / d, (a.y - a.x * r) / d);
  }
  const R r = b.x / b.y, d = b.x * r + b.y;
  return (C)((a.x * r + a.y) / d, (a.y * r - a.x) / d);
}
inline C c_exp_C(C a) {  // selects, no branches: the kernel stays vectorizable
  const R e = exp(a.x);
  const int y0 = a.y == 0, sp = isinf(a.x) && !isfinite(a.y);
  R re = y0 ? e : e * cos(a.y), im = y0 ? a.y : e * sin(a.y);
  re = sp ? (a.x > 0 ? a.x : (R)0) : re;
  im = sp ? (a.x > 0 ? a.y - a.y : (R)0) : im;
  return (C)(re, im);
}
inline C c_expm1_C(C a) {
  const R h = sin(a.y * (R)0.5);
  return (C)(expm1(a.x) * cos(a.y) - (R)2 * h * h, exp(a.x) * sin(a.y));
}
inline C c_log_C(C a) { return (C)(log(hypot(a.x, a.y)), atan2(a.y, a.x)); }
inline C c_log1p_C(C a) {
  if (isinf(a.x) || isinf(a.y)) return (C)(INFINITY, atan2(a.y, (R)1 + a.x));
  if (fabs(a.x) > (R)0.5 || fabs(a.y) > (R)0.5) return c_log_C((C)((R)1 + a.x, a.y));
  return (C)((R)0.5 * log1p(a.x * ((R)2 + a.x) + a.y * a.y), atan2(a.y, (R)1 + a.x));
}
inline C c_log2_C(C a) { return c_log_C(a) * (R)1.44269504088896340736; }
inline C c_log10_C(C a) { return c_log_C(a) * (R)0.43429448190325182765; }
inline C c_sqrt_C(C a) {
  if (a.x == 0 && a.y == 0) return (C)((R)0, a.y);
  if (isinf(a.y)) return (C)(INFINITY, a.y);
  const R t = sqrt((fabs(a.x) + hypot(a.x, a.y)) * (R)0.5);
  if (a.x >= 0) return (C)(t, a.y / ((R)2 * t));
  return (C)(fabs(a.y) / ((R)2 * t), copysign(t, a.y));
}
inline C c_sin_C(C a) { return (C)(sin(a.x) * cosh(a.y), cos(a.x) * sinh(a.y)); }
inline C c_cos_C(C a) { return (C)(cos(a.x) * cosh(a.y), -sin(a.x) * sinh(a.y)); }
// sinh, cosh, tanh: the standard's (C99 Annex G's) special cases before the formulas
inline C c_sinh_C(C a) {
  if (a.y == 0) return (C)(sinh(a.x), a.y);
  if ((a.x == 0 || isinf(a.x)) && !isfinite(a.y)) return (C)(a.x, a.y - a.y);
  return (C)(sinh(a.x) * cos(a.y), cosh(a.x) * sin(a.y));
}
inline C c_cosh_C(C a) {
  if (a.y == 0) return (C)(cosh(a.x), isfinite(a.x) ? sinh(a.x) * a.y : a.y);
  if (a.x == 0 && !isfinite(a.y)) return (C)(a.y - a.y, (R)0);
  if (isinf(a.x) && !isfinite(a.y)) return (C)(fabs(a.x), a.y - a.y);
  return (C)(cosh(a.x) * cos(a.y), sinh(a.x) * sin(a.y));
}
inline C c_tanh_C(C a) {
  if (isinf(a.x)) return (C)(copysign((R)1, a.x), copysign((R)0, a.y));
  if (a.x == 0 && !isfinite(a.y)) return (C)(a.x, a.y - a.y);
  if (isnan(a.x) && a.y == 0) return a;
  if (fabs(a.x) > (R)20 && isfinite(a.y))
    return (C)(copysign((R)1, a.x), (R)4 * sin(a.y) * cos(a.y) * exp((R)-2 * fabs(a.x)));
  const R d = cosh((R)2 * a.x) + cos((R)2 * a.y);
  return (C)(sinh((R)2 * a.x) / d, sin((R)2 * a.y) / d);
}
inline C c_tan_C(C a) { const C t = c_tanh_C((C)(-a.y, a.x)); return (C)(t.y, -t.x); }
inline C c_pow_C(C a, C b) {
  if (b.x == 0 && b.y == 0) return (C)((R)1, (R)0);
  if (a.x == 0 && a.y == 0 && b.y == 0 && b.x > 0) return (C)((R)0, (R)0);
  return c_exp_C(c_mul_C(b, c_log_C(a)));
}
// Inverse functions: asinh by its logarithm on the right half-plane (odd symmetry, log 2z
// for large |z|), acosh by Kahan's log(z + sqrt(z + 1) sqrt(z - 1)), atanh from log1p;
// asin, acos, atan through them.
inline C c_asinh_C(C z) {
  if (z.y == 0) return (C)(asinh(z.x), z.y);
  const int neg = signbit(z.x);
  const C w = neg ? -z : z;
  const R big = sizeof(R) == 8 ? (R)1e150 : (R)1e18;
  C r;
  if (fabs(w.x) > big || fabs(w.y) > big || isinf(w.x) || isinf(w.y))
    r = c_log_C(w) + (C)((R)0.69314718055994530942, (R)0);
  else
    r = c_log_C(w + c_sqrt_C(c_mul_C(w, w) + (C)((R)1, (R)-0.0)));  // -0: keeps a zero's sign
  return neg ? -r : r;
}
inline C c_acosh_C(C z) {
  if (isinf(z.x) || isinf(z.y))
    return (C)(INFINITY, (isnan(z.x) || isnan(z.y)) ? NAN : atan2(z.y, z.x));
  if (z.x == 0 && isnan(z.y)) return (C)(z.y, (R)1.57079632679489661923);
  return c_log_C(z + c_mul_C(c_sqrt_C(z + (C)((R)1, (R)-0.0)), c_sqrt_C(z - (C)((R)1, (R)0))));
}
inline C c_atanh_C(C z) {
  if (isinf(z.x) || isinf(z.y))
    return (C)(copysign((R)0, z.x), isnan(z.y) ? z.y : copysign((R)1.57079632679489661923, z.y));
  if (z.x == 0 && isnan(z.y)) return z;
  return (c_log1p_C(z) - c_log1p_C(-z)) * (R)0.5;
}
inline C c_asin_C(C z) { const C t = c_asinh_C((C)(-z.y, z.x)); return (C)(t.y, -t.x); }
inline C c_acos_C(C z) {
  const C t = c_asin_C(z);
  return (C)((R)1.57079632679489661923 - t.x, -t.y);
}
inline C c_atan_C(C z) { const C t = c_atanh_C((C)(-z.y, z.x)); return (C)(t.y, -t.x); }
inline C c_sign_C(C a) {
  const R r = hypot(a.x, a.y);
  return r == 0 ? (C)((R)0, (R)0) : (C)(a.x / r, a.y / r);
}
"""

_CALL = re.compile(r"\bc_(\w+)_C\b")
_ROW_CALL = re.compile(r"\bc_(\w+)\(")
_WORD = re.compile(r"\b[xy]\b")


def helpers(ct: CLType) -> str:
    """The helper definitions for complex type ``ct`` (guarded: a program may hold both
    a float and a double kernel, each including its own)."""
    c = ct.calc
    body = _CALL.sub(lambda m: f"c_{m.group(1)}_{c}", _HELPERS)
    body = re.sub(r"\bC\b", c, re.sub(r"\bR\b", ct.real, body))
    return f"#ifndef NNA_COMPLEX_{c}\n#define NNA_COMPLEX_{c}\n{body}#endif\n"


def expression(name: str, ct: CLType) -> tuple[str, str]:
    """(OpenCL C of row ``name``'s complex expression in ``ct``, helpers), else
    ``DTypeError``."""
    cc = BY_NAME[name].cc if name in BY_NAME else None
    if cc is None:
        raise DTypeError(f"{name}: not defined for {ct.dtype} operands on OpenCL")
    e = _ROW_CALL.sub(lambda m: f"c_{m.group(1)}_{ct.calc}(", cc)
    return _WORD.sub(lambda m: {"x": "v0", "y": "v1"}[m.group()], e), helpers(ct)
