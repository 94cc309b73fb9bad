"""Inline float32 math for OpenCL CPU devices: ``exp``, ``log``, ``tanh``, ``sigmoid``,
``sin``, ``cos``, ``tan``, ``erf``, ``erfc``, ``pow``, ``hypot``, ``atan2``, ``atan``,
``asin``, ``acos``, ``sinh``, ``cosh``, ``asinh``, ``acosh``, ``atanh``, ``log1p``,
``expm1``, ``log2``, ``log10`` as branch-free polynomial code that the compiler vectorizes.

pocl's CPU drivers call the OpenCL builtins out of line, one scalar call per element, so an
elementwise kernel that uses one does not vectorize (``sin`` ran 6-12x slower than numpy).
``inline`` rewrites the calls in a kernel source into calls of the functions below, written
in the style of Cephes/SLEEF: range reduction, a polynomial, selects instead of branches.

- ``exp``, ``log``, ``tanh``, ``sigmoid`` compute in float (Cephes/SLEEF coefficients);
- ``sin``, ``cos`` and ``sincos`` (both from one reduction) reduce ``x / pi`` exactly for
  every float (Payne-Hanek in double, the bits of 1/pi cut by shifts: no table, no branch)
  and evaluate one polynomial of ``sin(pi t)`` in double; ``sincos_fast`` (complex64
  functions, ``complex_fast``) reduces by Cody-Waite, exact for |x| <= 2^20 only;
- ``erf``, ``erfc`` and ``pow`` compute in double (``pow`` as ``exp2(y * log2|x|)`` with
  the C99 special cases), then round once to float; so do ``tan``, the inverse
  trigonometric and the (inverse) hyperbolic functions, ``log1p``, ``expm1``, ``log2``,
  ``log10`` (see ``_ATAN2_D`` and below); ``hypot`` scales by a power of two, in float
  (and in double for float64).

The same rewrite turns ``fabs``, ``copysign``, ``isnan``, ``isinf``, ``isfinite`` and
``signbit`` (float and double) into exact bit operations, and ``sqrt``, ``ceil``,
``floor``, ``trunc``, ``rint``, ``fmax``, ``fmin`` into the compiler's instructions: pocl
calls those out of line too. The complex helpers (``complex_math``) call ``hypot``,
``atan2``, ``sinh``... by name, so they take these definitions as well.

Each is held within a few ULP of numpy (float64 rounded to float32) over the whole float32
range by ``tests/backends/opencl/test_inline_math.py``, which states the bounds. float64
keeps the builtins (an overload that calls them), as do the double-internal ones on a
device without fp64.

Which devices: CPU devices (pocl's ``basic``/``pthread``, any OpenCL CPU driver) get the
inline versions; GPUs keep the vendor builtins, which are vectorized hardware there.
``NNARRAY_OPENCL_MATH=inline`` or ``builtin`` overrides the choice for every device.
"""

from __future__ import annotations

import os
import re
from typing import Any

import pyopencl as cl

#: ``overloadable``: the same name serves float and (through the builtin) double.
_FN = "static inline __attribute__((overloadable, always_inline))"

#: Operator-only stand-ins for the builtins (pocl calls even ``fabs``, ``rint``, ``isnan``
#: out of line): bit operations, comparisons and the round-to-nearest magic constant.
_BITS = """
#define NNA_ABS(x) as_float(as_uint(x) & 0x7fffffffu)
#define NNA_SIGN(x) (as_uint(x) & 0x80000000u)
#define NNA_WITH_SIGN(a, s) as_float(as_uint(a) | (s))
#define NNA_FINITE(x) ((as_uint(x) & 0x7fffffffu) < 0x7f800000u)
#define NNA_ABS_D(x) as_double(as_ulong(x) & 0x7fffffffffffffffUL)
#define NNA_INF(x) ((as_uint(x) & 0x7fffffffu) == 0x7f800000u)
#ifdef __clang__
#define NNA_BF(fn, v) __builtin_##fn##f(v)
#define NNA_BD(fn, v) __builtin_##fn(v)
#else
#define NNA_BF(fn, v) fn(v)
#define NNA_BD(fn, v) fn(v)
#endif
"""

_EXP = _FN + """ float nna_exp(float x) {
  float c = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  float q = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f;   /* rint */
  float s = q * -0.693145751953125f + c;   /* ln2 in two parts: q * hi is exact */
  s = q * -1.428606765330187045e-06f + s;
  float u = 0.000198527617612853646278381f;
  u = u * s + 0.00139304355252534151077271f;
  u = u * s + 0.00833336077630519866943359f;
  u = u * s + 0.0416664853692054748535156f;
  u = u * s + 0.166666671633720397949219f;
  u = u * s + 0.5f;
  u = s * s * u + s + 1.0f;
  int n = (int)q, n1 = n >> 1;             /* 2^n in two normal factors: one rounding */
  u = u * as_float((n1 + 127) << 23) * as_float((n - n1 + 127) << 23);
  return x != x ? x : u;
}
"""

_LOG = _FN + """ float nna_log(float x) {
  int sub = x < 1.17549435e-38f;
  int ix = as_int(sub ? x * 8388608.0f : x);
  int e = ((ix >> 23) & 0xff) - 126 - (sub ? 23 : 0);
  float m = as_float((ix & 0x007fffff) | 0x3f000000);   /* [0.5, 1) */
  int lo = m < 0.707106781186547524f;
  e -= lo;
  float f = (lo ? m + m : m) - 1.0f, z = f * f, fe = (float)e;
  float p = 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  float y = f * z * p + fe * -2.12194440e-4f - 0.5f * z;
  float r = (f + y) + fe * 0.693359375f;
  r = x == INFINITY ? x : r;
  r = x == 0.0f ? -INFINITY : r;
  return (x < 0.0f || x != x) ? NAN : r;
}
"""

_TANH = _FN + """ float nna_tanh(float x) {
  float a = NNA_ABS(x), z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  float small = a * z * p + a, big = 1.0f - 2.0f / (nna_exp(2.0f * (a < 9.0f ? a : 9.0f)) + 1.0f);
  return x != x ? x : NNA_WITH_SIGN(a < 0.625f ? small : big, NNA_SIGN(x));
}
"""

_SIGMOID = _FN + """ float nna_sigmoid(float x) {
  float e = nna_exp(-NNA_ABS(x)), r = 1.0f / (1.0f + e);
  return x != x ? x : (x < 0.0f ? e * r : r);
}
"""

_SIGMOID_BUILTIN = _FN + """ float nna_sigmoid(float x) {
  float e = exp(-fabs(x)), r = 1.0f / (1.0f + e);
  return isnan(x) ? x : (x < 0.0f ? e * r : r);
}
"""


def _inv_pi_words() -> tuple[int, ...]:
    """The first 256 bits of the binary expansion of 1/pi as four 64-bit words (bit ``i`` of
    the expansion, weight 2^-i, at position ``i``; the most significant bit of a word first)."""
    g = 400  # pi to ``g`` bits by Machin's formula

    def atan_inv(k: int) -> int:
        total, term, n, sign = 0, (1 << g) // k, 1, 1
        while term:
            total += sign * (term // n)
            term //= k * k
            n += 2
            sign = -sign
        return total

    bits = (1 << (2 * g)) // (16 * atan_inv(5) - 4 * atan_inv(239))  # 1/pi * 2^g
    return tuple((bits >> (g - 64 * j - 63)) & ((1 << 64) - 1) for j in range(4))


#: sin(pi t) / t in z = t^2 for |t| <= 1/2 (relative error 2e-11, fit here by Lawson's
#: iteration): one polynomial serves sin and cos, which shift t by 1/2.
_SINPI = ("3.1415926535233494", "-5.167712762116038", "2.5501632403213903",
          "-0.5992513301260797", "0.08204647885406796", "-0.007022163486241424")

_REDPI = """
#define NNA_M52 6755399441055744.0
#define NNA_U2D(u) (as_double((u) | 0x4330000000000000UL) - 4503599627370496.0)
/* x / pi + sh = K + t, |t| <= 1/2, for every float x, with no table (a gather, which pocl
   scalarizes) and no branch: x = m 2^e; G = 2^e / pi mod 2 is the window of 1/pi's bits
   at position p = max(e, 0), cut from the words Q by shifts into pieces of 28, 27 and 32
   bits, whose products with m (24 bits) are exact in double (Payne-Hanek in floating
   point). *k: the parity of K in the sign bit. */
static inline __attribute__((always_inline)) double nna_redpi(float x, double sh, ulong *k) {
  double d = (double)x;
  long e = (long)((as_ulong(d) << 1) >> 53) - 1046;
  ulong p = e < 0 ? 0UL : (ulong)e, s = p & 63UL;
  int j = p > 63UL;
  ulong q0 = j ? Q1 : Q0, q1 = j ? Q2 : Q1, q2 = j ? Q3 : Q2;
  ulong hi = (q0 << s) | ((q1 >> 1) >> (63UL - s)), lo = (q1 << s) | ((q2 >> 1) >> (63UL - s));
  double m = d * as_double((1023UL - 27UL - p) << 52);   /* x 2^-p 2^-27 */
  double p1 = m * NNA_U2D(hi >> 36) + sh, r1 = p1 + NNA_M52, f1 = p1 - (r1 - NNA_M52);
  double s2 = (m * 0x1p-27) * NNA_U2D((hi >> 9) & 0x7ffffffUL) + f1, r2 = s2 + NNA_M52;
  double t = (m * 0x1p-59) * NNA_U2D(((hi & 0x1ffUL) << 23) | (lo >> 41))
             + (s2 - (r2 - NNA_M52));
  *k = (as_ulong(r1) + as_ulong(r2)) << 63;
  return t;
}
/* (-1)^K sin(pi t) (in double, then rounded to float); inf and nan reach here as nan */
static inline __attribute__((always_inline)) double nna_sinpi_d(double t, ulong k) {
  double z = t * t;
  return as_double(as_ulong(t * POLY) ^ k);
}
static inline __attribute__((always_inline)) float nna_sinpi_f(double t, ulong k) {
  return (float)nna_sinpi_d(t, k);
}
"""


def _redpi() -> str:
    words = _inv_pi_words()
    src = _REDPI.replace("POLY", _horner(_SINPI, "z"))
    for j, w in enumerate(words):
        src = src.replace(f"Q{j}", f"0x{w:016x}UL")
    return src


#: sin: t of x / pi (-0.0 keeps a zero's sign); cos x = sin(x + pi/2): t of x / pi + 1/2.
_SIN = _FN + """ float nna_sin(float x) {
  ulong k;
  double t = nna_redpi(x, -0.0, &k);
  return nna_sinpi_f(t, k);
}
"""

_COS = _FN + """ float nna_cos(float x) {
  ulong k;
  double t = nna_redpi(x, 0.5, &k);
  return nna_sinpi_f(t, k);
}
"""

#: Both from one reduction (the compiler shares the window and the products).
_SINCOS = _FN + """ float nna_sincos(float x, float *c) {
  ulong ks, kc;
  double ts = nna_redpi(x, -0.0, &ks), tc = nna_redpi(x, 0.5, &kc);
  *c = nna_sinpi_f(tc, kc);
  return nna_sinpi_f(ts, ks);
}
"""

#: ``sincos`` for |x| <= ``FAST_TRIG_BOUND`` only (complex64 functions on CPU devices, see
#: ``complex_fast``, redo the elements past it with ``sincos``): x - K pi/2 by Cody-Waite in
#: double (pi/2 in parts of 33, 33 and 53 bits: K < 2^20 times each part is exact), then
#: Cephes' float polynomials of sin and cos on [-pi/4, pi/4], swapped and signed by K mod 4.
#: Within 2 ULP; about half the exact reduction's time.
FAST_TRIG_BOUND = 2.0 ** 20
_SINCOS_FAST = _FN + """ float nna_sincos_fast(float x, float *c) {
  /* K = rint(x 2/pi) by the magic constant, whose low bits then hold K mod 4 (a double to
     long conversion has no vector instruction before AVX-512: 20% of the time) */
  const double d = (double)x, km = d * 0.6366197723675814 + 6755399441055744.0;
  const double k = km - 6755399441055744.0;
  const double r = ((d - k * 1.5707963267341256) - k * 6.077100506303966e-11)
                   - k * 2.0222662487959506e-21;
  const float f = (float)r, z = f * f;
  const float p = ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * f + f;
  const float s = f == 0.0f ? f : p;   /* -0.0 (only x = 0 gives f = 0) */
  const float co = ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z
                    + 4.166664568298827e-2f) * z * z - 0.5f * z + 1.0f;
  const uint q = (uint)as_ulong(km), odd = q & 1u;
  *c = as_float(as_uint(odd ? s : co) ^ (((q + 1u) & 2u) << 30));
  return as_float(as_uint(odd ? co : s) ^ ((q & 2u) << 30));
}
"""

#: tan: sin / cos of the two reductions, divided in double, rounded once.
_TAN = _FN + """ float nna_tan(float x) {
  ulong ks, kc;
  double ts = nna_redpi(x, -0.0, &ks), tc = nna_redpi(x, 0.5, &kc);
  return (float)(nna_sinpi_d(ts, ks) / nna_sinpi_d(tc, kc));
}
"""

_EXP2_D = """
/* 2^t in double for t in [-200, 200] (callers clamp; nan is theirs to select) */
static inline __attribute__((always_inline)) double nna_exp2_d(double t) {
  double n = (t + 6755399441055744.0) - 6755399441055744.0, g = (t - n) * 0.6931471805599453;
  double p = 1.0 + g * (1.0 + g * (1.0 / 2 + g * (1.0 / 6 + g * (1.0 / 24 + g * (1.0 / 120
             + g * (1.0 / 720 + g * (1.0 / 5040 + g * (1.0 / 40320 + g * (1.0 / 362880
             + g * (1.0 / 3628800))))))))));
  return p * as_double((long)(n + 1023.0) << 52);
}
"""

_ERF_A = ("1.1283791670955055", "-0.37612638902925766", "0.11283791661128775",
          "-0.026866169286545522", "0.0052239683134260185", "-0.000854796421424626",
          "0.00012046754973233838", "-1.4799734762805212e-05", "1.533069407890465e-06",
          "-1.0521767405927974e-07")
#: erfcx(x) = exp(x^2) erfc(x) on [1, 4] in powers of 1/x (Chebyshev fit, 3e-9 relative).
_ERF_B = ("3.4379045010135556e-05", "0.5635483716577698", "0.00453299517917749",
          "-0.2929546100467685", "-0.04387586474178984", "0.8440642775001008",
          "-1.4421790471873197", "1.34307513481393", "-0.7593179738267426",
          "0.2458236615910613", "-0.03516774854020145")


def _horner(coefs: tuple[str, ...], var: str) -> str:
    expr = coefs[-1]
    for c in reversed(coefs[:-1]):
        expr = f"({c} + {var} * {expr})"
    return expr


_ERF = _FN + f""" float nna_erf(float x) {{
  double a = NNA_ABS_D((double)x);
  a = a < 4.0 ? a : 4.0;
  double t = a * a, u = 1.0 / a;
  double small = a * {_horner(_ERF_A, "t")};   /* erf(x) / x in x^2 on [0, 1] */
  double big = 1.0 - nna_exp2_d(-t * 1.4426950408889634) * {_horner(_ERF_B, "u")};
  float e = (float)(a < 1.0 ? small : big);
  return x != x ? x : NNA_WITH_SIGN(e, NNA_SIGN(x));
}}
"""

#: erfcx(x) = exp(x^2) erfc(x) on [1, 10.5] in powers of 1/(1 + x) (1.3e-10 relative).
_ERFC_B = ("-2.9912968230183523e-07", "0.5642076436242178", "0.5637078221974132",
           "0.28958582285181056", "-0.3573993314867452", "-0.19397945480915024",
           "-2.5013168060694984", "8.767357005120063", "-10.277031068102772",
           "0.9330713328587725", "10.054804853231335", "-10.206878877580488",
           "3.3964630531049016")

_ERFC = _FN + f""" float nna_erfc(float x) {{
  double d = (double)x, a = NNA_ABS_D(d);
  a = a < 10.5 ? a : 10.5;                      /* erfc(10.5) rounds to 0 in float */
  double t = a * a, u = 1.0 / (1.0 + a);
  double small = 1.0 - d * {_horner(_ERF_A, "t")};
  double big = nna_exp2_d(-t * 1.4426950408889634) * {_horner(_ERFC_B, "u")};
  float e = (float)(a < 1.0 ? small : (d < 0.0 ? 2.0 - big : big));
  return x != x ? x : e;
}}
"""

_LOG2_D = """
/* log2 of a float's magnitude in double: -inf at 0, inf and nan pass (callers take the sign) */
static inline __attribute__((always_inline)) double nna_log2_d(double ax) {
  long ib = as_long(ax);   /* a float's magnitude: a normal double (or 0, inf, nan) */
  long e = (ib >> 52) - 1023;
  double m = as_double((ib & 0x000fffffffffffffL) | 0x3ff0000000000000L);  /* [1, 2) */
  int hi = m > 1.4142135623730951;
  m = hi ? 0.5 * m : m;
  e += hi;
  double s = (m - 1.0) / (m + 1.0), s2 = s * s;   /* ln m = 2 atanh s, |s| < 0.172 */
  double l = 2.0 * s * (1.0 + s2 * (1.0 / 3 + s2 * (1.0 / 5 + s2 * (1.0 / 7 + s2 * (1.0 / 9
             + s2 * (1.0 / 11 + s2 * (1.0 / 13 + s2 * (1.0 / 15 + s2 * (1.0 / 17)))))))));
  double lg = (double)e + l * 1.4426950408889634;
  return ax == 0.0 ? -INFINITY : (ax < INFINITY ? lg : ax);   /* inf, nan */
}
"""

#: log2, log10 of x < 0 (and -inf, nan) are nan; log10 scales log2 in double.
_LOG2 = _FN + """ float nna_log2(float x) {
  float r = (float)nna_log2_d((double)x);
  return x < 0.0f ? NAN : r;
}
"""
_LOG10 = _FN + """ float nna_log10(float x) {
  float r = (float)(nna_log2_d((double)x) * 0.30102999566398119521);
  return x < 0.0f ? NAN : r;
}
"""

_POW = _FN + """ float nna_pow(float x, float y) {
  double lg = nna_log2_d(NNA_ABS_D((double)x));
  double t = (double)y * lg;
  t = t > 200.0 ? 200.0 : (t < -200.0 ? -200.0 : t);
  float r = (float)nna_exp2_d(t);
  float ay = NNA_ABS(y);   /* |y| >= 2^24: an even integer (or inf, nan) */
  int big = !(ay < 16777216.0f), iy = (int)(big ? 0.0f : y);
  int exact = (float)iy == y, yint = big || exact, odd = !big && exact && (iy & 1);
  r = t != t ? NAN : r;
  r = (as_int(x) < 0 && odd) ? -r : r;
  r = (x < 0.0f && x > -INFINITY && ay < INFINITY && !yint) ? NAN : r;
  return (y == 0.0f || x == 1.0f || (x == -1.0f && ay == INFINITY)) ? 1.0f : r;
}
"""

#: Real functions that complex_math's formulas need too (complex ``abs``, ``log``, ``sin``...
#: call them by their builtin names, so these serve both). hypot in float, scaled by a power
#: of two (no overflow, no division); the others compute in double and round once:
#: atan2 (atan, asin, acos through it) reduces ``s = min/max`` to ``|u| <= tan(pi/8)`` and
#: takes a degree-6 polynomial in ``u^2`` (fit here, 3e-12 relative); log1p by Kahan's
#: correction of ``log(1 + x)``, expm1, sinh, cosh from ``exp2``, asinh, acosh, atanh by
#: their logarithms (series near 0, where the logarithm's argument would round).
_HYPOT = _FN + """ float nna_hypot(float x, float y) {
  const uint ex = as_uint(x) & 0x7f800000u, ey = as_uint(y) & 0x7f800000u;
  uint e = ex > ey ? ex : ey;
  e = e < 0x00800000u ? 0x00800000u : (e > 0x7e800000u ? 0x7e800000u : e);
  const float s = as_float(0x7f000000u - e), xs = x * s, ys = y * s;
  const float h = NNA_BF(sqrt, xs * xs + ys * ys) * as_float(e);
  return (NNA_INF(x) | NNA_INF(y)) ? INFINITY : h;
}
"""

#: hypot in double the same way (complex128 ``abs`` takes it): within 1 ULP of numpy.
_HYPOT_D = _FN + """ double nna_hypot(double x, double y) {
  const ulong ex = as_ulong(x) & 0x7ff0000000000000UL, ey = as_ulong(y) & 0x7ff0000000000000UL;
  ulong e = ex > ey ? ex : ey;
  e = e < 0x0010000000000000UL ? 0x0010000000000000UL
                               : (e > 0x7fd0000000000000UL ? 0x7fd0000000000000UL : e);
  const double s = as_double(0x7fe0000000000000UL - e), xs = x * s, ys = y * s;
  const double h = NNA_BD(sqrt, xs * xs + ys * ys) * as_double(e);
  const ulong m = 0x7fffffffffffffffUL, inf = 0x7ff0000000000000UL;
  return ((as_ulong(x) & m) == inf | (as_ulong(y) & m) == inf) ? INFINITY : h;
}
"""

_ATAN_P = ("-0.3333333333150554", "0.19999998944179312", "-0.14285614325364676",
           "0.11107539978593796", "-0.09029485250143209", "0.07137915113173796",
           "-0.040482417023995756")

#: atan2 in double of float operands that are not nan (the quadrant from the sign bits).
_ATAN2_D = """
static inline __attribute__((always_inline)) double nna_atan2_d(double y, double x) {
  /* |y| by a select, |x| by a mask: two like operations on a complex number's parts were
     paired into one vector operation, which stopped pocl's vectorizer (complex log) */
  const double ax = NNA_ABS_D(x), ay = y < 0.0 ? -y : y;
  const int sw = ay > ax;
  /* s = n / d in [0, 1]; the swap by masks: two selects of the pair made LLVM select a
     {double, double} pair, which stopped pocl's vectorizer (atan2 4x slower) */
  const ulong m = -(ulong)sw, bx = as_ulong(ax), by = as_ulong(ay);
  const double n = as_double((bx & m) | (by & ~m)), d = as_double((by & m) | (bx & ~m));
  /* s > tan(pi/8): atan s = pi/4 + atan u, u = (n - d) / (n + d) (exact sum, difference):
     one division (two stopped pocl's vectorizer); equal (inf too): pi/4, 0 / 0: 0 */
  const int eq = (ax == ay) & (n != 0.0), red = eq | (n > 0.41421356237309503 * d);
  double u = (red ? n - d : n) / (red ? n + d : d);
  u = (eq | (n == 0.0)) ? 0.0 : u;
  const double t = u * u;
  double r = (u + u * t * POLY) + (red ? 0.78539816339744831 : 0.0);
  r = sw ? 1.5707963267948966 - r : r;
  r = as_long(x) < 0 ? 3.1415926535897932 - r : r;
  return as_double(as_ulong(r) | (as_ulong(y) & 0x8000000000000000UL));
}
""".replace("POLY", _horner(_ATAN_P, "t"))

_ATAN2 = _FN + """ float nna_atan2(float y, float x) {
  const float r = (float)nna_atan2_d((double)y, (double)x);   /* a nan y passes */
  return x != x ? x : r;
}
"""
_ATAN = _FN + """ float nna_atan(float x) {
  return x != x ? x : (float)nna_atan2_d((double)x, 1.0);
}
"""
#: asin, acos: atan2 of (x, sqrt((1 - x)(1 + x))) in double (|x| > 1, nan: a nan root).
_ASIN = _FN + """ float nna_asin(float x) {
  const double d = (double)x;
  return (float)nna_atan2_d(d, NNA_BD(sqrt, (1.0 - d) * (1.0 + d)));
}
"""
_ACOS = _FN + """ float nna_acos(float x) {
  const double d = (double)x;
  return (float)nna_atan2_d(NNA_BD(sqrt, (1.0 - d) * (1.0 + d)), d);
}
"""

#: ln w in double for w >= 0 (a float's range; 0 gives -inf).
_LN_D = "#define NNA_LN_D(w) (nna_log2_d(w) * 0.69314718055994531)\n"

_LOG1P = _FN + """ float nna_log1p(float x) {
  const double d = (double)x, w = 1.0 + d;
  const float r = (float)(w == 1.0 ? d : NNA_LN_D(w) * (d / (w - 1.0)));
  return (x < -1.0f | x != x) ? NAN : (x == INFINITY ? x : r);
}
"""

#: 2^(x log2 e) in double, the exponent clamped to [-200, 200] (beyond: 0 or inf in float).
_EXPD = """
static inline __attribute__((always_inline)) double nna_expd(double d) {
  const double t = d * 1.4426950408889634;
  return nna_exp2_d(t > 200.0 ? 200.0 : (t < -200.0 ? -200.0 : t));
}
"""

_EXPM1 = _FN + """ float nna_expm1(float x) {
  const double d = (double)x;
  const double s = d * (1.0 + d * (1.0 / 2 + d * (1.0 / 6 + d * (1.0 / 24 + d * (1.0 / 120
                   + d * (1.0 / 720))))));   /* |x| < 2^-5 */
  const float r = (float)(NNA_ABS_D(d) < 0x1p-5 ? s : nna_expd(d) - 1.0);
  return x != x ? x : r;
}
"""

_COSH = _FN + """ float nna_cosh(float x) {
  const double e = nna_expd(NNA_ABS_D((double)x));
  return x != x ? x : (float)(0.5 * e + 0.5 / e);
}
"""

_SINH = _FN + """ float nna_sinh(float x) {
  const double a = NNA_ABS_D((double)x), z = a * a, e = nna_expd(a);
  const double p = a + a * z * (1.0 / 6 + z * (1.0 / 120 + z * (1.0 / 5040 + z * (1.0 / 362880
                   + z * (1.0 / 39916800)))));   /* |x| < 1/2 */
  const float r = (float)(a < 0.5 ? p : 0.5 * e - 0.5 / e);
  return x != x ? x : NNA_WITH_SIGN(r, NNA_SIGN(x));
}
"""

_ASINH = _FN + """ float nna_asinh(float x) {
  const double a = NNA_ABS_D((double)x), z = a * a;
  const double s = a * (1.0 + z * (-1.0 / 6 + z * (3.0 / 40 + z * (-15.0 / 336))));
  const float r = (float)(a < 0x1p-8 ? s : NNA_LN_D(a + NNA_BD(sqrt, z + 1.0)));
  return x != x ? x : NNA_WITH_SIGN(r, NNA_SIGN(x));
}
"""

#: acosh x = log(x + sqrt(x^2 - 1)): x^2 - 1 is exact in double near 1.
_ACOSH = _FN + """ float nna_acosh(float x) {
  const double d = (double)x;
  const float r = (float)NNA_LN_D(d + NNA_BD(sqrt, d * d - 1.0));
  return x < 1.0f ? NAN : r;
}
"""

_ATANH = _FN + """ float nna_atanh(float x) {
  const double a = NNA_ABS_D((double)x), z = a * a;
  const double s = a * (1.0 + z * (1.0 / 3 + z * (1.0 / 5 + z * (1.0 / 7))));
  const float r = (float)(a < 0x1p-8 ? s : 0.5 * NNA_LN_D((1.0 + a) / (1.0 - a)));
  return (NNA_ABS(x) > 1.0f | x != x) ? NAN : NNA_WITH_SIGN(r, NNA_SIGN(x));
}
"""


def _bit_ops() -> tuple[dict[str, str], dict[str, str]]:
    """Exact stand-ins for the classification and sign builtins (pocl calls them out of
    line too, which left ``relu`` and ``maximum`` 10-20x slower than ``mul``): float and
    double definitions."""
    out: dict[str, dict[str, str]] = {"float": {}, "double": {}}
    for t, u, i, top in (("float", "uint", "int", "0x7f800000u"),
                         ("double", "ulong", "long", "0x7ff0000000000000UL")):
        mag = f"(as_{u}(x) << 1 >> 1)"  # the bits without the sign
        sign = f"(({u})1 << {31 if t == 'float' else 63})"
        defs = {
            "isnan": f"int nna_isnan({t} x) {{ return x != x; }}",
            "isinf": f"int nna_isinf({t} x) {{ return {mag} == {top}; }}",
            "isfinite": f"int nna_isfinite({t} x) {{ return {mag} < {top}; }}",
            "signbit": f"int nna_signbit({t} x) {{ return as_{i}(x) < 0; }}",
            "fabs": f"{t} nna_fabs({t} x) {{ return as_{t}({mag}); }}",
            "copysign": f"{t} nna_copysign({t} x, {t} y) {{ return as_{t}({mag} | "
                        f"(as_{u}(y) & {sign})); }}",
            "fmax": f"{t} nna_fmax({t} x, {t} y) {{ return (x > y || y != y) ? x : y; }}",
            "fmin": f"{t} nna_fmin({t} x, {t} y) {{ return (x < y || y != y) ? x : y; }}",
        }
        b = "NNA_BF" if t == "float" else "NNA_BD"  # the compiler's instructions
        defs.update({f: f"{t} nna_{f}({t} x) {{ return {b}({f}, x); }}"
                     for f in ("sqrt", "ceil", "floor", "trunc", "rint")})
        out[t] = {k: f"{_FN} {v}\n" for k, v in defs.items()}
    return out["float"], out["double"]


_BIT_F, _BIT_D = _bit_ops()

#: name -> (arity, float definition, helpers it needs, computes in double).
_FUNCS: dict[str, tuple[int, str, tuple[str, ...], bool]] = {
    "exp": (1, _EXP, (), False),
    "log": (1, _LOG, (), False),
    "tanh": (1, _TANH, ("exp",), False),
    "sigmoid": (1, _SIGMOID, ("exp",), False),
    "sin": (1, _SIN, ("redpi",), True),
    "cos": (1, _COS, ("redpi",), True),
    "sincos": (2, _SINCOS, ("redpi",), True),
    "sincos_fast": (2, _SINCOS_FAST, (), True),
    "tan": (1, _TAN, ("redpi",), True),
    "erf": (1, _ERF, ("exp2_d",), True),
    "erfc": (1, _ERFC, ("exp2_d",), True),
    "pow": (2, _POW, ("exp2_d", "log2_d"), True),
    "log2": (1, _LOG2, ("log2_d",), True),
    "log10": (1, _LOG10, ("log2_d",), True),
    "hypot": (2, _HYPOT, (), False),
    "atan2": (2, _ATAN2, ("atan2_d",), True),
    "atan": (1, _ATAN, ("atan2_d",), True),
    "asin": (1, _ASIN, ("atan2_d",), True),
    "acos": (1, _ACOS, ("atan2_d",), True),
    "log1p": (1, _LOG1P, ("log2_d",), True),
    "expm1": (1, _EXPM1, ("expd",), True),
    "cosh": (1, _COSH, ("expd",), True),
    "sinh": (1, _SINH, ("expd",), True),
    "asinh": (1, _ASINH, ("log2_d",), True),
    "acosh": (1, _ACOSH, ("log2_d",), True),
    "atanh": (1, _ATANH, ("log2_d",), True),
    **{n: (2 if n in ("copysign", "fmax", "fmin") else 1, d, (), False)
       for n, d in _BIT_F.items()},
}
_HELPERS = {"redpi": _redpi, "exp2_d": lambda: _EXP2_D, "expd": lambda: _EXPD,
            "log2_d": lambda: _LOG2_D + _LN_D, "atan2_d": lambda: _ATAN2_D}
_HELPER_USES = {"expd": ("exp2_d",)}  # (``_HELPERS`` lists a helper after its uses)
#: The math names of kernel expressions this module can replace (``sigmoid`` is not an
#: OpenCL builtin: an expression may use it on every device, see ``inline``).
NAMES = tuple(_FUNCS)
_CALL = re.compile(r"\b(" + "|".join(NAMES) + r")\s*\(")
_cache: dict[str, str] = {}


def use_inline(cl_device: Any) -> bool:
    """Whether kernels on ``cl_device`` get the inline math: CPU devices, unless
    ``NNARRAY_OPENCL_MATH`` says ``inline`` or ``builtin``."""
    mode = os.environ.get("NNARRAY_OPENCL_MATH", "").strip().lower()
    if mode in ("inline", "builtin"):
        return mode == "inline"
    return bool(cl_device.type & cl.device_type.CPU)


def _double(n: str) -> str:
    """The double overload of ``n``: the builtin (the bit operations' and hypot's own
    versions)."""
    if n in _BIT_D:
        return _BIT_D[n]
    if n == "hypot":
        return _HYPOT_D
    if n.startswith("sincos"):  # the second argument is the cosine's destination
        return f"{_FN} double nna_{n}(double a0, double *a1) {{ return sincos(a0, a1); }}\n"
    arity = _FUNCS[n][0]
    args = ", ".join(f"double a{i}" for i in range(arity))
    body = (f"return {n}({', '.join(f'a{i}' for i in range(arity))});" if n != "sigmoid" else
            "double e = exp(-fabs(a0)), r = 1.0 / (1.0 + e); "
            "return isnan(a0) ? a0 : (a0 < 0.0 ? e * r : r);")
    return f"{_FN} double nna_{n}({args}) {{ {body} }}\n"


def _definitions(names: set[str], doubles: bool, inline: bool) -> str:
    """The definitions of ``names`` (before them, what they use): float inline (the builtin
    form of ``sigmoid`` unless ``inline``), double through the builtins."""
    out: list[str] = []
    if inline:  # what they use, transitively (``_FUNCS`` lists a function after its uses)
        used, todo = set(), list(names)
        while todo:
            n = todo.pop()
            for d in _FUNCS[n][2] if n in _FUNCS else _HELPER_USES.get(n, ()):
                if d not in used:
                    used.add(d)
                    todo.append(d)
        out = [_cache.setdefault(d, _HELPERS[d]()) for d in _HELPERS if d in used]
        out += [_FUNCS[d][1] for d in NAMES if d in used - names]
    for n in NAMES:
        if n in names:
            out.append(_FUNCS[n][1] if inline else _SIGMOID_BUILTIN)
            if doubles:
                out.append(_double(n))
    fp64 = doubles or (inline and any(_FUNCS[n][3] for n in names))
    return ("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if fp64 else "") + \
        (_BITS if inline else "") + "".join(out)


def inline(src: str, dev: Any) -> str:
    """``src`` with its calls of ``NAMES`` replaced by the inline versions where ``dev``
    (an ``OpenCLDevice``) takes them (``use_inline``; the double-internal ones only with
    fp64). Elsewhere only ``sigmoid``, which is no builtin, is defined (from the builtin
    ``exp``). A source without such calls is returned unchanged."""
    used = set(_CALL.findall(src))
    if not used:
        return src
    fast = use_inline(dev.cl_device)
    names = {n for n in used if dev.fp64 or not _FUNCS[n][3]} if fast else used & {"sigmoid"}
    if not names:
        return src
    body = re.sub(r"\b(" + "|".join(sorted(names)) + r")\s*\(", r"nna_\1(", src)
    return _definitions(names, "cl_khr_fp64" in src, fast) + body
