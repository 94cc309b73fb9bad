"""Floating ``floor_divide`` and ``remainder`` with numpy's results at every value.

CuPy's float ``floor_divide`` is ``floor(a / b)``: ``inf // 2`` gives ``inf`` and
``-2.5 // inf`` gives ``-0`` where numpy gives ``nan`` and ``-1`` (seen on an H200 with
CuPy 14.2). numpy derives both results from ``fmod`` (``npy_divmod``); ``DIVMOD`` is
that algorithm, written once as a C++ template that NVRTC compiles for the device and
the tests compile with g++ on the host to check it against numpy without a GPU.
Integer dtypes keep CuPy's kernels.
"""

from __future__ import annotations

from typing import Any

from .elementwise import coerce
from .scope import register, registered
from .table import Elementwise

#: numpy's ``npy_divmod``/``npy_floor_divide``/``npy_remainder`` for one float type ``F``.
DIVMOD = r"""
template <typename F> __device__ F nna_floordiv(F a, F b) {
    if (b == (F)0) return a / b;
    F mod = fmod(a, b);
    F div = (a - mod) / b;
    if (mod != (F)0) {
        if ((b < (F)0) != (mod < (F)0)) div -= (F)1;
    }
    if (div != (F)0) {
        F fl = floor(div);
        if (div - fl > (F)0.5) fl += (F)1;
        return fl;
    }
    return copysign((F)0, a / b);
}
template <typename F> __device__ F nna_remainder(F a, F b) {
    F mod = fmod(a, b);
    if (b == (F)0) return mod;
    if (mod != (F)0) {
        if ((b < (F)0) != (mod < (F)0)) mod += b;
    } else {
        mod = copysign((F)0, b);
    }
    return mod;
}
"""

#: (op, C++ function) pairs the kernels are made from.
FUNCTIONS = (("floor_divide", "nna_floordiv"), ("remainder", "nna_remainder"))


#: The C type each float dtype computes in (float16 in float, as numpy does).
_WIDE = {"float": ("float16", "float32"), "double": ("float64",)}
#: op -> {C type: its ``ElementwiseKernel`` body}.
KERNELS = {op: {w: Elementwise("T a, T b", "T q", f"q = (T){fn}<{w}>(({w})a, ({w})b)",
                               f"{fn}_{w}", dts, preamble=DIVMOD).declare()
                for w, dts in _WIDE.items()}
           for op, fn in FUNCTIONS}


def register_divmod(xp: Any) -> None:
    """Register float ``floor_divide``/``remainder`` over CuPy's integer kernels."""
    generic = registered()
    for op, bodies in KERNELS.items():
        register(op)(_kernel(generic[op], {w: e.build(xp) for w, e in bodies.items()}))


def _kernel(integer: Any, kern: dict) -> Any:
    def k(a, b, out=None):
        a, b = coerce(a, b)  # a scalar becomes a numpy scalar of the result dtype
        if a.dtype != b.dtype or a.dtype.kind != "f":
            return integer(a, b, out=out)
        f = kern["double" if a.dtype.itemsize == 8 else "float"]
        return f(a, b) if out is None else f(a, b, out)
    return k
