"""Complex arithmetic and functions in OpenCL C on ``float2``/``double2`` (``.x`` real,
``.y`` imaginary): the helpers the rows' complex expressions (``Ufunc.cc``) call.

Each helper is defined per type with the type's name appended (``c_mul_float2``), so that
float and double kernels may share a program; ``expression`` renames a row's calls.
Formulas: Smith's division, ``sqrt`` by the half-angle formulas (no cancellation),
``tanh`` bounded for large real parts, ``expm1`` with ``cos y - 1 = -2 sin^2(y/2)``; a
sine and cosine of one argument come from one ``sincos`` (one argument reduction).

Speed: every helper is straight-line code (the special cases are selects, not branches),
so pocl's CPU drivers vectorize a kernel across work-items. The real functions the
formulas need (``r_hypot``, ``r_atan2``, ``r_log1p``, ...) call the builtins by name,
which ``inline_math`` replaces for ``float`` on CPU devices by its inline, branch-free
versions (one definition for the real rows and these): pocl calls ``hypot``, ``atan2``,
``log1p`` ... out of line, one scalar call per element (complex ``abs`` ran 150x slower
than float ``abs`` per element). ``double`` keeps the OpenCL builtins. ``sinh`` and
``cosh`` of a part come together from one float ``exp`` (``r_sinhcosh``; the builtins for
``double``), which lets complex64 ``tanh`` vectorize.

The complex64 kernels of some functions load each element as two floats, not one 64-bit
integer (``PAIR_IO``); those with a ``sincos`` inside, ``sign`` and ``sqrt`` take a fast
path on CPU devices, exact within a range, and redo the elements outside it
(``complex_fast``).
"""

from __future__ import annotations

import re

from ...errors import DTypeError
from ...ops.ufuncs import BY_NAME, ROWS
from .cltypes import CLType

#: Real helpers for ``float`` beyond the shared ones (``_REAL``): log|z|, the square root's
#: modulus and the sign, on x, y scaled by a power of two (no overflow).
_REAL_FLOAT = """
// |x|, |y| scaled by a power of two near 1 / max(|x|, |y|) (exact): no overflow, no division;
// r_scale: the exponent bits of that power's inverse, at most 2^126 (an infinite part's
// scale stays finite). Operators only (pocl calls max, clamp), and no max of the two
// parts' like masks: LLVM's SLP pass paired those as a two-lane reduction, which stops
// pocl's vectorizer; |y|'s bits above x's exponent mean y's exponent is the larger
NNA_CINL uint r_scale_C(R x, R y) {
  const uint ex = as_uint(x) & 0x7f800000u, ay = as_uint(y) & 0x7fffffffu;
  const uint e = ay > ex ? (ay & 0x7f800000u) : ex;
  return e > 0x7e800000u ? 0x7e800000u : e;
}
// r_scale for log|z| and arg z: 1.0's bits for parts in [2^-63, 2^62], whose squares and
// sums neither overflow nor underflow (a scale there added log 2 back to a log near
// -log 2: 2e-5 of log|z| lost at |z| = 0.9988)
NNA_CINL uint r_logscale_C(R x, R y) {
  const uint e = r_scale_C(x, y);
  return (e >= 0x20000000u) & (e <= 0x5e800000u) ? 0x3f800000u : e;
}
// log |x + iy| without the square root: log(xs^2 + ys^2) / 2 + log of the scale, the sum
// as hi + lo (lo its rounding error, exact in double), log(hi) + lo / hi: rounded to float
// first, it lost log|z|'s digits near |z| = 1 (numpy's complex64 keeps them)
NNA_CINL R r_logabs_C(R x, R y) {
  const uint e = r_logscale_C(x, y);
  const R s = as_float(0x7f000000u - e), xs = x * s, ys = y * s, hi = xs * xs + ys * ys;
  const double xd = xs, yd = ys;
  const R lo = (R)((xd * xd + yd * yd) - (double)hi);
  const R l = (R)0.5 * (log(hi) + lo / hi)
              + (R)(int)((e >> 23) - 127u) * (R)0.693147180559945309417f;
  // z = 0: log 0 = -inf (lo / hi was 0 / 0, which made complex64 log(0) NaN)
  return (isinf(x) | isinf(y)) ? (R)INFINITY : (hi == 0 ? -(R)INFINITY : l);
}
// sqrt((|x| + |x + iy|) / 2) on x, y scaled by an even power of two near 1 / max(|x|, |y|)
// (the scale at most 2^126: both parts subnormal). Tried: |z| as max(|zs|, |xs|) for the
// isinf tests, k from the exponent bits alone: no faster, and complex acosh stopped
// vectorizing
NNA_CINL R r_sqrtmod_C(R x, R y) {
  const uint e = r_scale_C(x, y);
  const int k = ((int)((e < 0x00800000u ? 0x00800000u : e) >> 23) - 127) & ~1;
  const R s = as_float((uint)(127 - k) << 23), xs = x * s, ys = y * s;
  const R h = (isinf(x) | isinf(y)) ? (R)INFINITY : NNA_SQRT(xs * xs + ys * ys);
  const R t = NNA_SQRT((R)0.5 * fabs(xs) + (R)0.5 * h);
  return t * as_float((uint)(127 + k / 2) << 23);
}
// x / |z| and y / |z| (*im) as xs / |zs|, ys / |zs| on x, y scaled as above (a subnormal z's
// modulus no longer rounds, nor its inverse overflow); 0 for 0; where a part is infinite,
// 1 / |zs| is 0, so (x 0, y 0) as x / |z| gives. One select (zero), no isinf tests
NNA_CINL R r_sign_C(R x, R y, R *im) {
  const uint e = r_scale_C(x, y);
  const R s = as_float(0x7f000000u - e), xs = x * s, ys = y * s, m = xs * xs + ys * ys;
  const R q = (R)1 / NNA_SQRT(m);
  // z = 0 gives 0 (m of a nonzero z scaled >= 2^-46): a select for one part and a mask for
  // the other (two like selects were paired into a vector one, stopping pocl's vectorizer)
  const int zero = m == 0;
  *im = as_float(as_uint(ys * q) & (zero ? 0u : ~0u));
  return zero ? (R)0 : xs * q;
}
// sign and sqrt unscaled, exact for x^2 + y^2 in [2^-124, 2^127] only (then a subnormal
// part's square is negligible): complex_fast's near path, which writes z = 0's value
// itself (here 0 / 0) and redoes the others with c_sign and c_sqrt. Bit operations for |x|
// and the sign (the builtins' tests of NaN and infinity cost sqrt 25% more)
NNA_CINL C c_sign_near_C(C a) {
  const R q = (R)1 / NNA_SQRT(a.x * a.x + a.y * a.y);
  return (C)(a.x * q, a.y * q);
}
NNA_CINL C c_sqrt_near_C(C a) {
  const R ax = as_float(as_uint(a.x) & 0x7fffffffu), ay = as_float(as_uint(a.y) & 0x7fffffffu);
  const R t = NNA_SQRT((R)0.5 * ax + (R)0.5 * NNA_SQRT(a.x * a.x + a.y * a.y));
  const R o = ay / ((R)2 * t), im = a.x >= 0 ? o : t;
  return (C)(a.x >= 0 ? t : o, as_float(as_uint(im) | (as_uint(a.y) & 0x80000000u)));
}
// arg(x + iy) = atan2(y, x) in float for log (the shared atan2 computes in double: its
// double division and polynomial were half of complex log's time): s = min/max of |x|, |y|
// (swapped by masks), reduced past tan(pi/8) to u = (n - d) / (n + d), Cephes' atanf
// polynomial (2e-7 relative on |u| <= tan(pi/8)); within 3 ULP. Equal parts (inf too):
// pi/4; 0 / 0: 0; a nan x or y: nan. On x, y scaled as log|z|'s (the same code, merged):
// n + d would overflow past 1.7e38
NNA_CINL R r_arg_C(R y, R x) {
  const R s = as_float(0x7f000000u - r_logscale_C(x, y)), xs = x * s, ys = y * s;
  const R ax = fabs(xs), ay = ys < 0 ? -ys : ys;  // unlike operations (see atan2's)
  const int sw = ay > ax;
  const uint m = (uint)0 - (uint)sw, bx = as_uint(ax), by = as_uint(ay);
  const R n = as_float((bx & m) | (by & ~m)), d = as_float((by & m) | (bx & ~m));
  const int eq = (ax == ay) & (n != 0), red = eq | (n > (R)0.414213562373095049f * d);
  R u = (red ? n - d : n) / (red ? n + d : d);
  u = (eq | (n == 0)) ? (R)0 : u;
  const R t = u * u;
  const R p = (((8.05374449538e-2f * t - 1.38776856032e-1f) * t + 1.99777106478e-1f) * t
               - 3.33329491539e-1f) * t;
  // pi/4, pi/2, pi as a float plus its rounding error (hi + lo): each step's error alone
  R r = (red ? 7.85398185e-1f : (R)0) + (u + (u * p + (red ? -2.18556949e-8f : (R)0)));
  r = sw ? (1.57079637f - r) - 4.37113900e-8f : r;
  r = as_int(x) < 0 ? (3.14159274f - r) - 8.74227801e-8f : r;
  r = as_float(as_uint(r) | (as_uint(y) & 0x80000000u));
  return x != x ? x : r;
}
// sinh x, cosh x (*c) and 1 / e^|x| (*ie) from one float exp, h = e^(|x|/2): e^|x| / 2 as
// (h / 2) h; the series below |x| = 1/2 (e - 1/e would cancel); within 3 ULP. Past |x| =
// 88, sinh and cosh come scaled by 2^-64 and *up = 2^64 (else 1): a product with a sine
// or cosine, times *up, is finite wherever it is finite exactly (sin(1158 + 89.6i) was inf)
NNA_CINL R r_sinhcosh_C(R x, R *c, R *ie, R *up) {
  const R a = fabs(x), h = exp((R)0.5 * a), i = (R)1 / (h * h);
  const int big = NNA_HUGE(a, NNA_EXP_MAX(R));
  const R e2 = (((R)0.5 * h) * (big ? (R)0x1p-64f : (R)1)) * h;
  *up = big ? (R)0x1p64f : (R)1;
  const R z = a * a;
  const R p = a + a * z * ((R)(1.0 / 6) + z * ((R)(1.0 / 120) + z * (R)(1.0 / 5040)));
  *c = e2 + (R)0.5 * i;
  *ie = i;
  return copysign(a < (R)0.5 ? p : e2 - (R)0.5 * i, x);
}
"""

_REAL_DOUBLE = """
// scaled past |x| = 709, as float's (a branch: these double kernels do not vectorize, and
// the scaled exp computed for every element cost complex128 sin 22%)
NNA_CINL R r_sinhcosh_C(R x, R *c, R *ie, R *up) {
  *ie = exp(-fabs(x));
  if (NNA_HUGE(fabs(x), NNA_EXP_MAX(R))) {
    const R h = exp(0.5 * fabs(x)), e2 = ((0.5 * h) * 0x1p-512) * h;
    *c = e2;
    *up = 0x1p512;
    return copysign(e2, x);
  }
  *c = cosh(x);
  *up = 1.0;
  return sinh(x);
}
// log|z| as log1p(x^2 + y^2 - 1) where the larger part m lies in [0.5, 2): the squares
// exact (fma), m^2 - 1 exact (Fast2Sum), so the sum cancels without rounding near |z| = 1,
// where log(hypot) lost log|z|'s digits (a branch: these double kernels do not vectorize
// anyway). NaN and infinite parts take hypot's C99 cases
NNA_CINL R r_logabs_C(R x, R y) {
  const R ax = fabs(x), ay = fabs(y), m = ax > ay ? ax : ay, n = ax > ay ? ay : ax;
  if (m >= 0.5 && m < 2.0) {
    const R p = m * m, pe = fma(m, m, -p), n2 = n * n, n2e = fma(n, n, -n2);
    const R s = p - 1.0, se = p - (s + 1.0);  // p - 1 = s + se exactly
    return 0.5 * log1p((s + n2) + ((se + pe) + n2e));
  }
  // parts below 2^-900 scaled up, above 2^1000 down (exactly): hypot of subnormal parts
  // rounded to the subnormal grid (log(5e-324 + 5e-324i) was off by 0.35), of the largest
  // ones overflowed (log(max + max i) was inf)
  const R k = m < 0x1p-900 ? -600.0 : (m > 0x1p1000 ? 600.0 : 0.0);
  const R sc = m < 0x1p-900 ? 0x1p600 : (m > 0x1p1000 ? 0x1p-600 : 1.0);
  return log(hypot(x * sc, y * sc)) + k * 0.69314718055994530942;
}
NNA_CINL R r_sqrtmod_C(R x, R y) {  // tiny x, y scaled up (exactly): 0.5 x keeps its bits
  const int tiny = (fabs(x) < 0x1p-900) & (fabs(y) < 0x1p-900);
  // parts past 2^1020 scaled down: |x| / 2 + |z| / 2 overflowed (sqrt(max + max i) was inf)
  const int huge = (fabs(x) > 0x1p1020) | (fabs(y) > 0x1p1020);
  const R sc = tiny ? 0x1p600 : (huge ? 0x1p-4 : 1.0), xs = x * sc;
  // (y scaled first: 0.5 * 5e-324 rounds to 0, which made sqrt(5e-324i) 1.1e-16i)
  return NNA_SQRT(0.5 * fabs(xs) + hypot(0.5 * xs, 0.5 * (y * sc)))
         * (tiny ? 0x1p-300 : (huge ? 4.0 : 1.0));
}
NNA_CINL R r_arg_C(R y, R x) { return atan2(y, x); }
NNA_CINL R r_sign_C(R x, R y, R *im) {
  // divided: 1 / |z| of a subnormal z overflows (0 * inf); parts scaled (exactly): up below
  // 2^-900 (hypot of subnormal parts rounded: sign(5e-324 + 5e-324i) was 1 + i), down past
  // 2^1000 (hypot overflowed: sign(max + max i) was 0)
  const R m = fabs(x) > fabs(y) ? fabs(x) : fabs(y);
  const R sc = m < 0x1p-900 ? 0x1p600 : (m > 0x1p1000 ? 0x1p-600 : 1.0);
  const R xs = x * sc, ys = y * sc, r = hypot(xs, ys);
  *im = r == 0 ? (R)0 : ys / r;
  return r == 0 ? (R)0 : xs / r;
}
"""

#: The real functions both types take by their builtin names: ``inline_math`` makes them
#: inline, branch-free code for ``float`` on CPU devices (pocl calls ``hypot``, ``atan2``,
#: ``sinh``... out of line, one scalar call per element).
_REAL = """
NNA_CINL R r_hypot_C(R x, R y) { return hypot(x, y); }
NNA_CINL R r_atan2_C(R y, R x) { return atan2(y, x); }
NNA_CINL R r_log1p_C(R x) { return log1p(x); }
NNA_CINL R r_expm1_C(R x) { return expm1(x); }
NNA_CINL R r_asinh_C(R x) { return asinh(x); }
"""

#: ``sqrt`` as the compiler's instruction where it is clang (pocl calls ``sqrt`` out of line).
_SQRT = """
#define NNA_CINL static inline __attribute__((always_inline))
// x past t, where e^x overflows: the exact helpers then scale (complex_fast's fast copies
// take NNA_NOT_HUGE, their range test keeps such parts out)
#define NNA_HUGE(x, t) ((x) > (t))
#define NNA_NOT_HUGE(x, t) 0
#define NNA_EXP_MAX(R) ((R)(sizeof(R) == 8 ? 709 : 88))
// a special case (a part zero, infinite or NaN) the general formula gets wrong or need not
// take: complex_fast's fast copies, whose range test admits finite parts only and whose
// formulas give a zero part's results, take NNA_NOT_SPECIAL (a test less per element)
#define NNA_SPECIAL(c) (c)
#define NNA_NOT_SPECIAL(c) 0
#ifdef __clang__
#define NNA_SQRT_float(v) __builtin_sqrtf(v)
#define NNA_SQRT_double(v) __builtin_sqrt(v)
#else
#define NNA_SQRT_float(v) sqrt(v)
#define NNA_SQRT_double(v) sqrt(v)
#endif
"""

_HELPERS = """
NNA_CINL R c_re_C(C a) { return a.x; }
NNA_CINL R c_im_C(C a) { return a.y; }
NNA_CINL C c_new_C(R re, R im) { return (C)(re, im); }
NNA_CINL C c_add_C(C a, C b) { return (C)(a.x + b.x, a.y + b.y); }
NNA_CINL C c_sub_C(C a, C b) { return (C)(a.x - b.x, a.y - b.y); }
NNA_CINL C c_neg_C(C a) { return (C)(-a.x, -a.y); }
NNA_CINL C c_scale_C(C a, R k) { return (C)(a.x * k, a.y * k); }
NNA_CINL C c_sel_C(int c, C a, C b) { return (C)(c ? a.x : b.x, c ? a.y : b.y); }
NNA_CINL R c_abs_C(C a) { return r_hypot_C(a.x, a.y); }
NNA_CINL C c_mul_C(C a, C b) { return (C)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
// z^2 with x^2 - y^2 as (x - y)(x + y): (1e38 + 1e38i)^2 was -inf + inf i (inf - inf), not
// 0 + inf i
// (|x| = |y|: x - y or x + y is 0 exactly, the other maybe inf: 0, made +0 by + 0, as
// x^2 - y^2 rounds)
NNA_CINL C c_square_C(C a) {
  const R d = a.x - a.y, s = a.x + a.y;
  return (C)((d == 0 | s == 0 ? (R)0 : d * s) + (R)0, (R)2 * (a.x * a.y));
}
// x where the mask m is all ones, else y: bit operations, not a select (selects of a pair's
// two parts made LLVM select the pair, a vector, which stops pocl's vectorizer)
NNA_CINL R r_pick_C(U m, R x, R y) { return as_R((as_U(x) & m) | (as_U(y) & ~m)); }
NNA_CINL C c_div_C(C a, C b) {  // Smith's: divide by the larger part of b
  const int big = fabs(b.x) >= fabs(b.y);
  const U m = (U)0 - (U)big;
  const R p = r_pick_C(m, b.x, b.y), s = r_pick_C(m, b.y, b.x), r = s / p, d = p + s * r;
  const R u = r_pick_C(m, a.x, a.y), w = r_pick_C(m, a.y, a.x);
  const R q = (R)1 / d, re = (u + w * r) * q, im = (w - u * r) * q;  // 1/d: one division
  const int z = big & (b.x == 0);  // b == 0: a.x / 0, a.y / 0
  return (C)(z ? a.x * (R)INFINITY : re, z ? a.y * (R)INFINITY : (big ? im : -im));
}
// e^x as e * *e2: past e^88 (e^709), e^(x/2) twice, so that (e t) *e2 for |t| <= 1 is
// finite wherever it is exactly (exp(88.77 + 0.37i) was inf); else *e2 = 1
NNA_CINL R r_exp2_C(R x, R *e2) {
  const int big = NNA_HUGE(x, NNA_EXP_MAX(R));
  const R e = exp(big ? (R)0.5 * x : x);
  *e2 = big ? e : (R)1;
  return e;
}
NNA_CINL C c_exp_C(C a) {
  R c, e2;
  const R e = r_exp2_C(a.x, &e2), s = sincos(a.y, &c);
  // y - y: nan where y is not finite (a test unlike isinf(x)'s: like tests of the two parts
  // made LLVM test the pair as a vector, which stops pocl's vectorizer)
  const int y0 = NNA_SPECIAL(a.y == 0), sp = NNA_SPECIAL(isinf(a.x) & (a.y - a.y != a.y - a.y));
  R re = y0 ? e * e2 : (e * c) * e2, im = y0 ? a.y : (e * s) * e2;
  const int pos = a.x > 0;
  const R spr = pos ? a.x : (R)0, spi = pos ? a.y - a.y : (R)0;
  return (C)(sp ? spr : re, sp ? spi : im);
}
NNA_CINL C c_expm1_C(C a) {  // past e^88 (e^709) as exp's (expm1 x is e^x there)
  R c, e2;
  const R h = sin(a.y * (R)0.5), s = sincos(a.y, &c), e = r_exp2_C(a.x, &e2);
  R re = NNA_HUGE(a.x, NNA_EXP_MAX(R)) ? (e * c) * e2 : r_expm1_C(a.x) * c - (R)2 * h * h;
  R im = (e * s) * e2;
  // the standard's cases: y = 0 keeps it (inf * 0 was NaN); x = +inf beside an infinite or
  // NaN y: inf + NaN i; x = -inf: -1 + 0i (NaN times e^x = 0 was NaN)
  const int y0 = NNA_SPECIAL(a.y == 0), nf = NNA_SPECIAL(!isfinite(a.y));
  const int pinf = NNA_SPECIAL(isinf(a.x) & (a.x > 0)) & nf;
  const int ninf = NNA_SPECIAL(isinf(a.x) & (a.x < 0)) & nf;
  re = pinf ? a.x : (ninf ? (R)-1 : re + (R)0);  // + 0: expm1(-0 + 0i) is +0 + 0i
  im = y0 ? a.y : (pinf ? a.y - a.y : (ninf ? (R)0 : im));
  return (C)(re, im);
}
NNA_CINL C c_log_C(C a) { return (C)(r_logabs_C(a.x, a.y), r_arg_C(a.y, a.x)); }
// log1p given t = arg(1 + z)
NNA_CINL C c_log1pt_C(C a, R t) {
  const R nr = (R)0.5 * r_log1p_C(a.x * ((R)2 + a.x) + a.y * a.y);
  const int far = (fabs(a.x) > (R)0.5) | (fabs(a.y) > (R)0.5);
  const R lr = r_logabs_C((R)1 + a.x, a.y);
  return (C)((isinf(a.x) | isinf(a.y)) ? (R)INFINITY : (far ? lr : nr), t);
}
// arg(1 + z) by r_arg (float): complex64 atanh and atan 1.2x faster than with the shared
// atan2 (in double); asinh (two logs) stopped vectorizing with it (5x slower), and keeps
// that atan2 (c_log1pd)
NNA_CINL C c_log1p_C(C a) { return c_log1pt_C(a, r_arg_C(a.y, (R)1 + a.x)); }
NNA_CINL C c_log1pd_C(C a) { return c_log1pt_C(a, r_atan2_C(a.y, (R)1 + a.x)); }
NNA_CINL C c_log2_C(C a) { return c_scale_C(c_log_C(a), (R)1.44269504088896340736); }
NNA_CINL C c_log10_C(C a) { return c_scale_C(c_log_C(a), (R)0.43429448190325182765); }
NNA_CINL C c_sqrt_C(C a) {  // t = sqrt((|x| + |z|) / 2), then y / 2t: no cancellation
  // t of a nonzero z >= 2^-75 (float), 2^-538 (double): the max only turns z = 0's 0 / 0
  // into 0 (the least normal first: a NaN t stays NaN)
  const R lo = sizeof(R) == 8 ? (R)2.2250738585072014e-308 : (R)1.17549435e-38f;
  const R t = r_sqrtmod_C(a.x, a.y), tm = lo > t ? lo : t;
  const R o = fabs(a.y) / ((R)2 * tm);
  const int pos = a.x >= 0, yinf = isinf(a.y);
  const R re = pos ? t : o, im = copysign(pos ? o : t, a.y);
  return (C)(yinf ? (R)INFINITY : re, yinf ? a.y : im);
}
// sinh, cosh, tanh: the standard's (C99 Annex G's) special cases, as selects over the
// formulas (the first case listed wins)
NNA_CINL C c_sinh_C(C a) {
  R cy, cx, ie, up;
  const R sy = sincos(a.y, &cy), sx = r_sinhcosh_C(a.x, &cx, &ie, &up);
  const R re = (sx * cy) * up, im = (cx * sy) * up;
  const int y0 = NNA_SPECIAL(a.y == 0), sp = NNA_SPECIAL((a.x == 0 | isinf(a.x)) & !isfinite(a.y));
  return (C)(y0 ? sx * up : (sp ? a.x : re), y0 ? a.y : (sp ? a.y - a.y : im));
}
NNA_CINL C c_cosh_C(C a) {
  R cy, cx, ie, up;
  const R sy = sincos(a.y, &cy), sx = r_sinhcosh_C(a.x, &cx, &ie, &up);
  const R re = (cx * cy) * up, im = (sx * sy) * up;
  // y = 0: y sinh x, a zero of y's sign times x's (sinh x overflowed past 1e38 to 0 * inf
  // = NaN; cosh(-inf + 0i) = inf - 0i, cosh being even)
  const R i0 = a.y * copysign((R)1, a.x), nan = a.y - a.y;
  const int y0 = NNA_SPECIAL(a.y == 0), nf = NNA_SPECIAL(!isfinite(a.y));
  const int z = (a.x == 0) & nf, inf = isinf(a.x) & nf;
  return (C)(y0 ? cx * up : (z ? nan : (inf ? fabs(a.x) : re)),
             y0 ? i0 : (z ? (R)0 : (inf ? nan : im)));
}
NNA_CINL C c_tanh_C(C a) {
  // (sinh x cosh x + i sin y cos y) / (sinh^2 x + cos^2 y): cosh 2x + cos 2y without the
  // cancellation near the poles (x = 0, y = pi/2 + k pi)
  R cy, cx, v, up;  // up: |x| past 88 takes the big case below
  const R sx = r_sinhcosh_C(a.x, &cx, &v, &up), sy = sincos(a.y, &cy);
  const R q = (R)1 / (sx * sx + cy * cy);
  // past |x| = 20: 4 sin y cos y exp(-2|x|), from v = exp(-|x|) (0 past 88.7, where
  // the product is below the least subnormal anyway)
  const R one = copysign((R)1, a.x), tiny = (((R)4 * sy * cy) * v) * v;
  R re = sx * cx * q, im = sy * cy * q;
  const int big = (fabs(a.x) > (R)20) & isfinite(a.y);
  re = big ? one : re;
  im = big ? tiny : im;
  const int keep = NNA_SPECIAL(isnan(a.x) & (a.y == 0));
  re = keep ? a.x : re;
  im = keep ? a.y : im;
  const int nf = NNA_SPECIAL((a.x == 0) & !isfinite(a.y));
  re = nf ? a.x : re;
  im = nf ? a.y - a.y : im;
  const int inf = NNA_SPECIAL(isinf(a.x));
  return (C)(inf ? one : re, inf ? copysign((R)0, a.y) : im);
}
// sin z = -i sinh(iz), cos z = cosh(iz) (C99 Annex G): sinh's and cosh's special cases
// (cos(inf i) and sin(inf i) had a NaN part from 0 * inf)
NNA_CINL C c_sin_C(C a) { const C t = c_sinh_C((C)(-a.y, a.x)); return (C)(t.y, -t.x); }
NNA_CINL C c_cos_C(C a) { return c_cosh_C((C)(-a.y, a.x)); }
NNA_CINL C c_tan_C(C a) { const C t = c_tanh_C((C)(-a.y, a.x)); return (C)(t.y, -t.x); }
NNA_CINL C c_pow_C(C a, C b) {
  const C r = c_exp_C(c_mul_C(b, c_log_C(a)));
  const int one = (b.x == 0) & (b.y == 0);
  const int zero = (a.x == 0) & (a.y == 0) & (b.y == 0) & (b.x > 0);
  return (C)(one ? (R)1 : (zero ? (R)0 : r.x), (one | zero) ? (R)0 : r.y);
}
// Inverse functions: asinh by its logarithm on the right half-plane (odd symmetry, log 2z
// for large |z|, log1p near 0), acosh by Kahan's log(z + sqrt(z + 1) sqrt(z - 1)), atanh
// from log1p; asin, acos, atan through them.
NNA_CINL C c_acosh_C(C z) {
  // z + sqrt(z + 1) sqrt(z - 1) ~ 2z overflows for |z| past half the largest number (acosh
  // of 2.4e38 was inf): there, the log of half of it, plus log 2 (scaled only there: near
  // z = 1, adding log 2 back would cancel)
  const R big = sizeof(R) == 8 ? (R)1e300 : (R)1e37;
  const int far = (fabs(z.x) > big) | (fabs(z.y) > big);
  // (a quarter: with a half, acosh(3.4e38 + 1e38i)'s sum 2z / 2 overflowed)
  const R h = (R)0.25;
  // (quartered inside the square roots: their product's parts square |z|'s square roots)
  const C rf = c_log_C(c_add_C(c_scale_C(z, h),
                               c_mul_C(c_sqrt_C(c_scale_C(c_add_C(z, (C)((R)1, (R)-0.0)), h)),
                                       c_sqrt_C(c_scale_C(c_sub_C(z, (C)((R)1, (R)0)), h)))));
  // elsewhere on the right half-plane w = ±z: log1p((w - 1) + sqrt(w + 1) sqrt(w - 1)), exact
  // next to the branch point 1 (log(w + ...) rounded w + ... to 1 there: acosh(1 + 1e-45i)
  // lost its 3.7e-23 real part); the left half-plane by acosh(z) = acosh(-z) ± i pi (y's sign)
  const int left = signbit(z.x);
  const C w = c_sel_C(left, c_neg_C(z), z), wm = c_sub_C(w, (C)((R)1, (R)0));
  C r = c_log1p_C(c_add_C(wm, c_mul_C(c_sqrt_C(c_add_C(w, (C)((R)1, (R)-0.0))), c_sqrt_C(wm))));
  r.y = left ? r.y + copysign((R)3.14159265358979323846, z.y) : r.y;  // (-0 + 0 is +0)
  r = c_sel_C(far, (C)(rf.x + (R)1.38629436111989061883, rf.y), r);
  const R ii = (isnan(z.x) | isnan(z.y)) ? (R)NAN : r_atan2_C(z.y, z.x);
  const int inf = isinf(z.x) | isinf(z.y), zn = (z.x == 0) & isnan(z.y);
  // next to the segment y = 0, |x| < 1 (as asinh's): |y| / sqrt(1 - x^2) + i acos(x) (sign
  // of y), not the formula's 4e-8 real part
  const R thr = sizeof(R) == 8 ? (R)1e-8 : (R)1e-4, ax = fabs(z.x);
  const int seg = (ax <= (R)1) & (fabs(z.y) < thr * ((R)1 - ax) | (z.y == 0));
  const R sr = z.y == 0 ? (R)0 : fabs(z.y) / NNA_SQRT(((R)1 - ax) * ((R)1 + ax));
  return (C)(inf ? (R)INFINITY : (zn ? z.y : (seg ? sr : r.x)),
             inf ? ii : (zn ? (R)1.57079632679489661923 : (seg ? copysign(acos(z.x), z.y) : r.y)));
}
// acos z = -i acosh z for y >= +0, i acosh z below (Annex G's signs follow): its real part
// is acosh's argument, not pi/2 - asin z (-2e-16, not 0, at 2 + 1e-300i; 0 for 1e38 + i)
NNA_CINL C c_acos_C(C z) {
  const C t = c_acosh_C(z);
  return signbit(z.y) ? (C)(-t.y, t.x) : (C)(t.y, -t.x);
}
NNA_CINL C c_asinh_C(C z) {
  const int neg = signbit(z.x);
  const C w = c_sel_C(neg, c_neg_C(z), z);
  // past big, log 2w (its error 1/(4w^2) is below an ULP); below, w^2 conj(d) ~ |w|^3 stays
  // finite (big was 1e18 in float: asinh(5.5e12 + 5.5e12i) gave inf, as did acos and asin)
  const R big = sizeof(R) == 8 ? (R)1e100 : (R)1e6;
  const int far = (fabs(w.x) > big) | (fabs(w.y) > big) | isinf(w.x) | isinf(w.y);
  // -0: keeps a zero's sign
  // log(w + sqrt(w^2 + 1)) = log1p(w + w^2 / (1 + sqrt(w^2 + 1))): no cancellation near 0
  const C w2 = c_mul_C(w, w), sq = c_sqrt_C(c_add_C(w2, (C)((R)1, (R)-0.0)));
  const C d = c_add_C(sq, (C)((R)1, (R)0));  // Re d >= 1, |d| <= 2 big: a plain quotient
  const C u = c_add_C(w, c_scale_C(c_mul_C(w2, (C)(d.x, -d.y)), (R)1 / (d.x * d.x + d.y * d.y)));
  const C l = c_sel_C(far, c_log_C(w), c_log1pd_C(u));
  const R re = l.x + (far ? (R)0.69314718055994530942 : (R)0);
  const int y0 = z.y == 0;
  // next to the segment x = 0, |y| < 1 (|x| below thr (1 - |y|): the next terms are below
  // an ULP): x / sqrt(1 - y^2) + i asin y (the formula left 4e-8 |z| in the real part)
  const R thr = sizeof(R) == 8 ? (R)1e-8 : (R)1e-4, ay = fabs(z.y);
  const int seg = (ay <= (R)1) & (fabs(z.x) < thr * ((R)1 - ay) | (z.x == 0));
  const R sr = z.x == 0 ? z.x : z.x / NNA_SQRT(((R)1 - ay) * ((R)1 + ay));  // (no 0 / 0)
  // next to the branch points ±i (|y| > 3/4, |x| < 1/4): -i (pi/2 - acos iz), exact there
  // (the formula rounded 1 + sqrt|x| to 1: asinh(1e-45 + i) lost its 3.7e-23 real part)
  const C a = c_acos_C((C)(-z.y, z.x));
  const int br = (ay > (R)0.75) & (fabs(z.x) < (R)0.25) & isfinite(z.y);
  const R bre = -a.y, bim = a.x - (R)1.57079632679489661923;
  return (C)(y0 ? r_asinh_C(z.x) : (seg ? sr : (br ? bre : (neg ? -re : re))),
             y0 ? z.y : (seg ? asin(z.y) : (br ? bim : (neg ? -l.y : l.y))));
}
NNA_CINL C c_atanh_C(C z) {
  C r = c_scale_C(c_sub_C(c_log1p_C(z), c_log1p_C(c_neg_C(z))), (R)0.5);
  // real part log1p(4x / ((1 - x)^2 + y^2)) / 4, and x / |z|^2 on scaled parts past big:
  // (log|1 + z| - log|1 - z|) / 2 cancelled (atanh(1e38) had real part 0, not 1e-38; 1e-5
  // relative at 0.5 + 20i)
  const R ax = fabs(z.x), ay = fabs(z.y), m = ax > ay ? ax : ay, n = ax > ay ? ay : ax;
  const R big = sizeof(R) == 8 ? (R)1e150 : (R)1e15, q = n / m, u = (R)1 - z.x;
  const R far = ((z.x / m) / m) / ((R)1 + q * q);
  // (only for |t| < 1/2: past it |1 + z|^2 / |1 - z|^2 = 1 + t is at least 3/2 or at most
  // 1/2, the two logs do not cancel, and 1 + t would (near z = -1, t is -1 + |1 + z|^2 / 4:
  // 2.5e6 ULP); y^2 may underflow near z = 1, where the logs take it)
  const R t = (R)4 * z.x / (u * u + z.y * z.y);
  r.x = m > big ? far : (fabs(t) < (R)0.5 ? (R)0.25 * r_log1p_C(t) : r.x);
  const R ii = isnan(z.y) ? z.y : copysign((R)1.57079632679489661923, z.y);
  // x = 0: atanh(iy) = i atan y, the real part x itself (+0 - 0 lost -0's sign)
  const int inf = isinf(z.x) | isinf(z.y), zn = (z.x == 0) & isnan(z.y), x0 = z.x == 0;
  return (C)(inf ? copysign((R)0, z.x) : (x0 ? z.x : r.x), inf ? ii : (zn ? z.y : r.y));
}
NNA_CINL C c_asin_C(C z) { const C t = c_asinh_C((C)(-z.y, z.x)); return (C)(t.y, -t.x); }
NNA_CINL C c_atan_C(C z) { const C t = c_atanh_C((C)(-z.y, z.x)); return (C)(t.y, -t.x); }
NNA_CINL C c_sign_C(C a) {
  R im;
  const R re = r_sign_C(a.x, a.y, &im);
  return (C)(re, im);
}
"""

#: Ops whose complex kernels load and store each element as its two parts, by compute type
#: (``cltypes._PAIRS``): on pocl complex64 then vectorizes 8 lanes, not 4, for those listed
#: (div's pairs picked by masks, ``r_pick``; exp, see its ``y - y``; atan2's |y| by a
#: select, see ``inline_math``); others stop vectorizing that way (log1p, pow). complex128
#: abs vectorizes at all; its others did not (the double builtins). Each function's
#: before/after is in benchmarks/README.md ("Figures that sat in code comments").
#: The rows say so (``Hints.pairs``); ``complex_abs`` (``ops/complex.py``) is abs's kernel.
PAIR_IO = {calc: frozenset({r.name for r in ROWS if dtype in r.hints.pairs} |
                           ({"complex_abs"} if dtype in BY_NAME["abs"].hints.pairs else set()))
           for dtype, calc in (("complex64", "float2"), ("complex128", "double2"))}

#: Rows whose complex expression is an operator on ``float2``: a vector instruction, which
#: keeps pocl from vectorizing the kernel (see ``cltypes._C64``); these spell it per part.
_OPERATORS = {"add": "c_add(x, y)", "sub": "c_sub(x, y)", "neg": "c_neg(x)"}

_CALL = re.compile(r"\b([cr])_(\w+)_C\b")
_ROW_CALL = re.compile(r"\bc_(\w+)\(")
_WORD = re.compile(r"\b[xy]\b")


def helpers(ct: CLType) -> str:
    """The helper definitions for complex type ``ct`` (guarded: a program may hold both
    a float and a double kernel, each including its own)."""
    c, r = ct.calc, ct.real
    text = (_REAL_FLOAT if r == "float" else _REAL_DOUBLE) + _REAL + _HELPERS
    body = _CALL.sub(lambda m: f"{m.group(1)}_{m.group(2)}_{c}", text)
    u = "uint" if r == "float" else "ulong"
    body = re.sub(r"\bC\b", c, re.sub(r"\bR\b", r, re.sub(r"\bU\b", u, body)))
    body = body.replace("NNA_SQRT(", f"NNA_SQRT_{r}(").replace("as_R(", f"as_{r}(") \
        .replace("as_U(", f"as_{u}(")
    return (f"#ifndef NNA_SQRT_float{_SQRT}#endif\n"
            f"#ifndef NNA_COMPLEX_{c}\n#define NNA_COMPLEX_{c}\n{body}#endif\n")


def expression(name: str, ct: CLType) -> tuple[str, str]:
    """(OpenCL C of row ``name``'s complex expression in ``ct``, helpers), else
    ``DTypeError``."""
    cc = BY_NAME[name].cc if name in BY_NAME else None
    if cc is None:
        raise DTypeError(f"{name}: not defined for {ct.dtype} operands on OpenCL")
    cc = _OPERATORS.get(name, cc)
    e = _ROW_CALL.sub(lambda m: f"c_{m.group(1)}_{ct.calc}(", cc)
    return _WORD.sub(lambda m: {"x": "v0", "y": "v1"}[m.group()], e), helpers(ct)
