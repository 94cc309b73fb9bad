"""Every complex function at every pair of special parts (±0, the smallest subnormal, the
least normal, 0.5, 1, 2, 20, huge, the largest, ±inf, NaN), complex64 and complex128, on
every backend and both OpenCL devices (the second: one function per dtype, ``on_device``),
against C99 Annex G (and the Array API standard's special cases, which follow it).

The oracle is numpy's complex128 function, corrected where numpy itself deviates:
``tanh(±inf + iy) = ±1 + 0j·sign(y)`` for finite y, the standard's rule (numpy and C99:
``0j·sin 2y``, so ``1 - 0j`` for some y > 0), hence ``tan(x ± inf j) = 0·sign(x) ± 1j``;
``expm1`` as ``exp(z) - 1`` where a part is not finite or z = 0 (numpy's misses the
standard's list: ``expm1(inf + 0j)`` is ``inf + nan j``); ``exp(x + 0j)`` keeps ``+0j``
past e^709 (numpy: ``nan j``); ``square``, ``sign`` in long double (numpy: ``inf - inf``
for huge parts, ``1 + 1j`` for subnormal ones); ``log1p`` past 1e300 as ``log`` (numpy:
inf). Where Annex G leaves a sign unspecified (both input parts non-finite, or a zero part
beside a non-finite one: ``exp(-inf + inf j) = ±0 ± 0j``) or a zero comes from underflow,
only the kind of value is compared; finite values to ``rtol`` plus one least normal number.
``sign`` of an infinite part is left out: the standard defers to complex division, which
has no rule for inf / inf.

Before the fixes, among others: complex64 ``log(0)`` (and ``log2``, ``log10``,
``log1p(-1)``, ``atanh(±1)``) was ``nan`` on OpenCL; ``cosh(1e38 + 0j)`` and ``cos(inf j)``
had a NaN part; ``expm1(inf + 0j)`` was ``inf + nan j`` on both backends; ``atanh(-0 + iy)``
lost the zero's sign and ``atanh(1e38)`` its real part; ``asin(0.5 + 0j)`` had a 4e-8
imaginary part and ``asin(1 + 1e-45j)`` a zero one (3.7e-23); complex128 ``sqrt(5e-324j)``
was 1.1e-16j and ``log(max + max j)`` inf; numpy's ``tanh(inf + 2j)`` was ``1 - 0j``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import needs

import nnarray as nna
import nnarray.functions as F

FUNCTIONS = ("exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin", "cos", "tan",
             "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh",
             "sign", "abs", "square")
_NP = {"asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh,
       "acosh": np.arccosh, "atanh": np.arctanh}
DEVICES = ("numpy", "opencl:0", "opencl:1", "cuda")
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's inf and nan notes


def special_grid(dtype) -> np.ndarray:
    """Every pair of the special parts (the smallest subnormal, least normal and largest
    finite numbers among them) as complex ``dtype``."""
    r = np.finfo(np.float32 if dtype == np.complex64 else np.float64)
    huge = 1e38 if dtype == np.complex64 else 1e300
    p = np.array([0.0, float(r.smallest_subnormal), float(r.tiny), 0.5, 1.0, 2.0, 20.0, huge,
                  float(r.max), np.inf], np.float64)
    p = np.concatenate([p, -p, [np.nan]])
    re, im = np.meshgrid(p, p, indexing="ij")
    return _pairs(re.ravel(), im.ravel(), dtype)


def _pairs(re: np.ndarray, im: np.ndarray, dtype) -> np.ndarray:
    z = np.empty(re.size, dtype)
    z.real, z.imag = re, im  # (re + 1j * im would turn inf * 1j into nan + inf j)
    return z


def oracle(name: str, z: np.ndarray) -> np.ndarray:
    """``name`` of ``z`` by the standard (see the module docstring), in complex128."""
    w = z.astype(np.complex128)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        r = np.asarray(_NP.get(name, getattr(np, name, None))(w))
    if name == "expm1":  # exp(z) - 1 where a part is not finite or z = 0: the standard's list
        special = ~np.isfinite(w.real) | ~np.isfinite(w.imag) | (w == 0)
        with np.errstate(all="ignore"):
            r[special] = np.exp(w[special]) - 1
    if name == "square":  # x^2 - y^2 in long double (numpy's: inf - inf past 1e154)
        x, y = w.real.astype(np.longdouble), w.imag.astype(np.longdouble)
        with np.errstate(all="ignore"):
            return _pairs((x * x - y * y).astype(np.float64), (2 * x * y).astype(np.float64),
                          np.complex128)
    if name == "log1p":  # numpy's complex128 loop overflows |1 + z|^2 past 1e154 (inf)
        far = np.maximum(np.abs(w.real), np.abs(w.imag)) > 1e300
        r[far] = np.log(w[far])
    if name == "sign":  # z / |z| in long double (numpy's: 1 + 1j for subnormal parts)
        x, y = w.real.astype(np.longdouble), w.imag.astype(np.longdouble)
        with np.errstate(all="ignore"):
            h = np.sqrt(x * x + y * y)
            ok = np.isfinite(h) & (h > 0)
            r[ok] = _pairs((x[ok] / h[ok]).astype(np.float64), (y[ok] / h[ok]).astype(np.float64),
                           np.complex128)
    if name in ("exp", "expm1"):  # Annex G: exp(x + 0i) = e^x + 0i (numpy: inf + nan j past
        y0 = w.imag == 0  # e^709)
        r.imag[y0] = w.imag[y0]
    if name in ("tanh", "tan"):
        inf, fin = (w.imag, w.real) if name == "tan" else (w.real, w.imag)
        part = r.real if name == "tan" else r.imag
        far = np.isinf(inf) & np.isfinite(fin)
        part[far] = np.copysign(0.0, fin[far])
    return r


def _unspecified_sign(z: np.ndarray) -> np.ndarray:
    a, b = z.real, z.imag
    nf_a, nf_b = ~np.isfinite(a), ~np.isfinite(b)
    return (nf_a & nf_b) | ((a == 0) & nf_b) | ((b == 0) & nf_a)


def _underflow(z: np.ndarray) -> np.ndarray:
    """Inputs with a nonzero part whose square underflows: their results' zeros come from
    underflow, whose sign Annex G does not fix."""
    small = np.sqrt(np.finfo(z.real.dtype).tiny)  # (its square underflows)
    return np.any([(v != 0) & (np.abs(v) < small) for v in (z.real, z.imag)], axis=0)


def _part_ok(g: np.ndarray, w: np.ndarray, loose: np.ndarray, rtol: float) -> np.ndarray:
    """Per element: NaN for NaN, the same infinity, the same zero (either sign where
    ``loose``), else within ``rtol`` or one least normal number (the oracle is rounded
    from complex128, and numpy's own loops flush some subnormal results)."""
    nan, inf = np.isnan(w), np.isinf(w)
    atol = np.finfo(w.dtype).tiny
    same_sign = np.signbit(g) == np.signbit(w)
    with np.errstate(invalid="ignore"):
        close = np.isfinite(g) & (np.abs(g - w) <= rtol * np.abs(w) + atol)
        zero_ok = (g == 0) & (same_sign | loose) | ((w == 0) & close & loose)
    return np.where(nan, np.isnan(g),
                    np.where(inf, (np.abs(g) == np.abs(w)) & (same_sign | loose),
                             np.where(w == 0, zero_ok, close)))


def _needs_device(device: str) -> None:
    """Skip (or, in CI, fail: ``needs``) without the device's backend; skip without a
    second OpenCL device."""
    needs(device.split(":")[0])
    if device == "opencl:1":
        try:
            nna.backends.get_device("opencl", 1)
        except Exception as e:  # noqa: BLE001  (no second device)
            pytest.skip(f"no opencl:1: {e}")


#: The function the second OpenCL device checks, per dtype (one of ``ACCURATE`` each).
ON_OPENCL1 = {np.complex64: ("asinh",), np.complex128: ("log",)}


def on_device(device: str, dtype, names: tuple) -> tuple:
    """The functions of ``names`` checked on ``device`` in ``dtype``: every one, except on
    ``opencl:1`` those of ``ON_OPENCL1``. Both OpenCL devices are pocl's (the basic and
    pthread drivers: one compiler, the same source, a program for each); ``opencl:0``'s
    programs are the ones test_complex's elementwise test builds too, ``opencl:1``'s were
    a second copy of each (44 cold compiles), now of one function in each dtype."""
    return tuple(n for n in names if device != "opencl:1" or n in ON_OPENCL1[dtype])


def test_the_second_device_checks_some_functions_in_each_dtype():
    for names in (FUNCTIONS, ACCURATE):
        for dtype in (np.complex64, np.complex128):
            assert on_device("opencl:0", dtype, names) == names
            assert on_device("opencl:1", dtype, names)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("device", DEVICES)
def test_complex_special_values(device, dtype):
    _needs_device(device)
    z = special_grid(dtype)
    rdt = np.float32 if dtype == np.complex64 else np.float64
    rtol = 1e-5 if dtype == np.complex64 else 1e-12
    loose = _unspecified_sign(z) | _underflow(z)
    failures = []
    with nna.context_scope(device):
        a = nna.asarray(z)
        for name in on_device(device, dtype, FUNCTIONS):
            keep = ~(np.isinf(z.real) | np.isinf(z.imag)) if name == "sign" else \
                np.ones(z.size, bool)
            got = np.asarray(getattr(F, name)(a).numpy())[keep]
            want = oracle(name, z)[keep]
            if name == "abs":
                assert got.dtype == rdt
                ok = _part_ok(got, want.astype(rdt), loose[keep], rtol)
            else:
                assert got.dtype == dtype
                want = want.astype(dtype)
                ok = _part_ok(got.real, want.real, loose[keep], rtol) & \
                    _part_ok(got.imag, want.imag, loose[keep], rtol)
            zs = z[keep]
            failures += [f"{name}({zs[i]}) = {got[i]}, want {want[i]}"
                         for i in np.flatnonzero(~ok)]
    assert not failures, f"{len(failures)} wrong:\n" + "\n".join(failures[:400])


def accuracy_points(dtype) -> np.ndarray:
    """Random z of magnitudes 1e-6 to 1e6 and every angle, and z near the branch points ±1,
    ±i and near the real axis (where the special-case code paths meet the formulas)."""
    g = np.random.default_rng(0)
    n = 20000
    z = 10 ** g.uniform(-6, 6, n) * np.exp(1j * g.uniform(-np.pi, np.pi, n))
    near = [c + (g.normal(size=n // 4) + 1j * g.normal(size=n // 4)) * s
            for c, s in ((1, 1e-4), (-1, 1e-3), (1j, 1e-3), (-1j, 1e-4))]
    axis = g.uniform(-3, 3, n // 4) + 1j * g.normal(size=n // 4) * 1e-6
    return np.concatenate([z, *near, axis]).astype(dtype)


ACCURATE = ("log", "sqrt", "sign", "square", "asin", "acos", "atan", "asinh", "acosh", "atanh")


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("device", DEVICES)
def test_complex_inverse_functions_accurate(device, dtype):
    """Within 8 ULP of |f(z)| (normwise) of numpy's complex128 value: the special-case
    paths added for the test above must not cost accuracy where they meet the formulas
    (atanh's log1p form was 2.5e6 ULP off next to z = -1 while being written)."""
    _needs_device(device)
    z = accuracy_points(dtype)
    eps = np.finfo(np.float32 if dtype == np.complex64 else np.float64).eps
    worst = {}
    with nna.context_scope(device):
        a = nna.asarray(z)
        for name in on_device(device, dtype, ACCURATE):
            w = oracle(name, z)
            g = np.asarray(getattr(F, name)(a).numpy()).astype(np.complex128)
            err = np.abs(g - w) / np.abs(w) / eps
            worst[name] = float(np.nanmax(np.where(w == 0, 0, err)))
    bad = {k: v for k, v in worst.items() if not v <= 8}
    assert not bad, f"ULP errors above 8: {bad}"
