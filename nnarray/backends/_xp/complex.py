"""Kernels of ``ops.complex`` (real, imag, conj, angle, complex_abs, make_complex) for
numpy and CuPy."""

from __future__ import annotations

from typing import Any

from ...registry import register_kernel


def register_xp_complex(backend: str, xp: Any) -> None:
    """Register the complex-part kernels of ``backend`` (numpy or CuPy as ``xp``)."""
    def fresh(r: Any) -> Any:
        return xp.ascontiguousarray(r)

    def make_complex(re, im):
        out = xp.empty(re.shape, xp.result_type(re.dtype, 1j))
        out.real, out.imag = re, im
        return out

    for name, fn in (("real", lambda x: fresh(x.real)), ("imag", lambda x: fresh(x.imag)),
                     ("conj", xp.conj), ("angle", xp.angle), ("complex_abs", xp.abs),
                     ("make_complex", make_complex)):
        register_kernel(name, backend)(fn)


def standard_tanh(xp: Any, fn: Any, tan: bool = False) -> Any:
    """``tanh`` (``tan`` with ``tan``) with the standard's ``tanh(±inf + iy) = ±1 +
    0j·sign(y)`` for finite y (``tan(x ± inf j) = 0·sign(x) ± 1j``, ``tan z = -i tanh iz``):
    numpy's complex loops follow C99's ``0·sin(2y)``, so ``1 - 0j`` for some y > 0."""
    def f(x, out=None):
        if x.dtype.kind != "c":
            return fn(x) if out is None else fn(x, out=out)
        inf, fin = (x.imag, x.real) if tan else (x.real, x.imag)
        far = xp.isinf(inf) & xp.isfinite(fin)  # before an ``out`` that is ``x``
        zero = xp.copysign(x.real.dtype.type(0), fin)
        r = xp.asarray(fn(x) if out is None else fn(x, out=out))
        part = r.real if tan else r.imag
        part[...] = xp.where(far, zero, part)
        return r if out is None or r is out else out
    return f


def standard_expm1(xp: Any, fn: Any) -> Any:
    """``expm1`` with the standard's complex special cases, which numpy's loop misses: y = 0
    kept (``expm1(inf + 0j)`` was ``inf + nan j``), ``+inf`` beside an infinite or NaN y
    ``inf + nan j``, ``-inf`` beside one ``-1 + 0j`` (both were ``nan + nan j``), and
    ``expm1(-0 + 0j) = +0 + 0j``."""
    def f(x, out=None):
        if x.dtype.kind != "c":
            return fn(x) if out is None else fn(x, out=out)
        re, im = x.real.copy(), x.imag.copy()  # before an ``out`` that is ``x``
        r = xp.asarray(fn(x) if out is None else fn(x, out=out))
        nf = ~xp.isfinite(im)
        pinf, ninf = nf & (re == xp.inf), nf & (re == -xp.inf)
        r.real[...] = xp.where(pinf, re, xp.where(ninf, re.dtype.type(-1), r.real + 0))
        r.imag[...] = xp.where(im == 0, im, xp.where(pinf, im - im,
                                                     xp.where(ninf, re.dtype.type(0), r.imag)))
        return r if out is None or r is out else out
    return f
