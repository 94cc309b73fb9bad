"""``nextafter`` on the floats' bit patterns.

CuPy's ``nextafter`` runs under flush-to-zero, so ``nextafter(0, 1)`` in float32 gives
the smallest normal number instead of the smallest subnormal, and its float16 loop
gives NaN for ``nextafter(inf, 0)`` (both seen on an H200, CuPy 14.2). Stepping the bit
pattern as an unsigned integer involves no float arithmetic, so nothing is flushed: the
kernel runs on ``uint16``/``uint32``/``uint64`` views of float16/32/64 data. The same
template is compiled by g++ in the tests and checked against numpy on the host.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtypes
from ...ops.elementwise import binary_dtype
from .scope import register
from .table import Elementwise

#: The next representable value after ``a`` towards ``b``, on IEEE bit patterns ``U``.
BITS = r"""
template <typename U> __device__ U nna_nextafter_bits(U a, U b) {
    const U sign = (U)1 << (sizeof(U) * 8 - 1);
    const U inf = sizeof(U) == 2 ? (U)0x7c00u : sizeof(U) == 4 ? (U)0x7f800000u
                                                               : (U)0x7ff0000000000000ull;
    const U ma = a & ~sign, mb = b & ~sign;
    if (ma > inf) return a;                      /* NaN */
    if (mb > inf) return b;
    if (a == b || (ma == 0 && mb == 0)) return b;
    if (ma == 0) return (b & sign) | (U)1;       /* the smallest subnormal towards b */
    const bool na = (a & sign) != 0, nb = (b & sign) != 0;
    const bool less = na != nb ? na : (na ? ma > mb : ma < mb);
    return less != na ? a + 1 : a - 1;           /* away from zero, or towards it */
}
"""

#: Float dtype -> the unsigned dtype its bits are stepped as.
UNSIGNED = {np.dtype(np.float16): np.dtype(np.uint16), np.dtype(np.float32):
            np.dtype(np.uint32), np.dtype(np.float64): np.dtype(np.uint64)}
KERNEL = Elementwise("U a, U b", "U q", "q = nna_nextafter_bits(a, b)", "nna_nextafter",
                     ("uint16", "uint32", "uint64"), preamble=BITS).declare()


def register_nextafter(xp: Any) -> None:
    """Register ``nextafter`` for CUDA."""
    kern = KERNEL.build(xp)

    @register("nextafter")
    def nextafter(a, b, out=None):
        d = binary_dtype("nextafter", dtypes.promote("nextafter", a, b))  # ints: float
        u = UNSIGNED[d]
        a, b = (xp.asarray(np.asarray(v, d)) if dtypes.is_scalar(v) else v.astype(d, copy=False)
                for v in (a, b))
        q = kern(a.view(u), b.view(u)).view(d)
        if out is None:
            return q
        out[...] = q
        return out
