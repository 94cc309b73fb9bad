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


def _complex_only(fn: Any, fix: Any) -> Any:
    """``fn``, with complex operands through ``fix(x, fn)`` (a fresh result, then written to
    ``out`` where given)."""
    def f(x, out=None):
        if x.dtype.kind != "c":
            return fn(x) if out is None else fn(x, out=out)
        r = fix(x, fn)
        if out is None:
            return r
        out[...] = r
        return out
    return f


def _scaled_parts(xp: Any, x: Any) -> tuple[Any, Any]:
    """x's parts divided by the larger magnitude (1 for 0 and non-finite ones): neither
    overflows nor underflows when squared."""
    m = xp.maximum(xp.abs(x.real), xp.abs(x.imag))
    m = xp.where((m > 0) & xp.isfinite(m), m, m.dtype.type(1))
    return x.real / m, x.imag / m


def standard_sign(xp: Any, fn: Any) -> Any:
    """``sign`` of complex z as z / |z| on z scaled by its larger part: numpy's complex64
    loop gave 1 + 1j for subnormal parts and 1j for the largest ones (|z| over- or
    underflowed); zero and NaN as numpy gives them."""
    def fix(x, fn):
        r = xp.asarray(fn(x))
        a, b = _scaled_parts(xp, x)
        h = xp.sqrt(a * a + b * b)
        ok = xp.isfinite(x.real) & xp.isfinite(x.imag) & (h > 0)
        h = xp.where(ok, h, h.dtype.type(1))
        r.real[...] = xp.where(ok, a / h, r.real)
        r.imag[...] = xp.where(ok, b / h, r.imag)
        return r
    return _complex_only(fn, fix)


def standard_log1p(xp: Any, fn: Any) -> Any:
    """``log1p`` of complex z as ``log z`` past |z| = 2^60 (2^500 in complex128), where the
    1 is below half an ULP: numpy's loop overflowed |1 + z|^2 (inf for 1e38 + 3e38j)."""
    def fix(x, fn):
        r = xp.asarray(fn(x))
        far = xp.maximum(xp.abs(x.real), xp.abs(x.imag)) > (2.0 ** 60 if x.dtype.itemsize
                                                             == 8 else 2.0 ** 500)
        return xp.where(far & xp.isfinite(x.real) & xp.isfinite(x.imag), xp.log(x), r)
    return _complex_only(fn, fix)


def standard_square(xp: Any, fn: Any) -> Any:
    """``square`` of complex z with x^2 - y^2 as (x - y)(x + y), 0 where either is 0: numpy
    computed inf - inf for huge equal parts ((1e38 + 1e38j)^2 is 0 + inf j)."""
    def fix(x, fn):
        r = xp.asarray(fn(x))
        d, s = x.real - x.imag, x.real + x.imag
        zero = (d == 0) | (s == 0)
        r.real[...] = xp.where(zero, d.dtype.type(0), d * xp.where(zero, s.dtype.type(1), s))
        return r
    return _complex_only(fn, fix)
