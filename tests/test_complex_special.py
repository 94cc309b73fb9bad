"""Every complex function at every pair of special parts (±0, ±finite, ±huge, ±inf, NaN),
complex64 and complex128, on every backend and both OpenCL devices, against C99 Annex G
(and the Array API standard's special cases, which follow it).

The oracle is numpy's complex128 function with the standard's rules where numpy follows
C99 instead: ``tanh(±inf + iy) = ±1 + 0j·sign(y)`` for finite y (numpy and C99: ``0j·sin
2y``, so ``1 - 0j`` for some y > 0), hence ``tan(x ± inf j) = 0·sign(x) ± 1j``; ``expm1``
as ``exp(z) - 1`` (numpy's ``expm1`` misses the standard's cases: ``expm1(inf + 0j)`` is
``inf + nan j``). Where Annex G leaves a sign unspecified (both input parts non-finite, or
a zero part beside a non-finite one: ``exp(-inf + inf j) = ±0 ± 0j``), only the kind of
value is compared. ``sign`` of an infinite part is left out: the standard defers to
complex division, which has no rule for inf / inf. Before the fixes complex64 ``log(0)``
(and ``log2``, ``log10``, ``log1p(-1)``, ``atanh(±1)``) was ``nan`` on OpenCL, ``cosh(1e38 +
0j)`` and ``cos(inf j)`` had a NaN part, ``atanh(-0 + iy)`` lost the zero's sign, complex128
``sign`` of a subnormal was NaN, and numpy's ``tanh(inf + 2j)`` was ``1 - 0j``.
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
    """Every pair of the special parts as complex ``dtype``."""
    huge = 1e38 if dtype == np.complex64 else 1e300
    p = np.array([0.0, 0.5, 1.0, 2.0, 20.0, huge, np.inf], np.float64)
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
        if name == "expm1":
            return np.exp(w) - 1
        r = np.asarray(_NP.get(name, getattr(np, name, None))(w))
    if name in ("tanh", "tan"):
        inf, fin = (w.imag, w.real) if name == "tan" else (w.real, w.imag)
        part = r.real if name == "tan" else r.imag
        far = np.isinf(inf) & np.isfinite(fin)
        part[far] = np.copysign(0.0, fin[far])
    return r


def _big(v: np.ndarray) -> np.ndarray:
    return np.abs(v) >= 20


#: Inputs left out, by function: accuracy defects found by this test and NOT fixed yet
#: (none is a special case of Annex G's lists; each is a finite result off or a zero's
#: sign lost). expm1: no backend follows the standard's expm1 cases (``expm1(inf + 0j)``
#: is ``inf + nan j``; numpy's own loop neither, see ``.ci/array_api_xfails.txt``).
LEFT_OUT = {
    "expm1": lambda z: np.ones(z.size, bool),
    # OpenCL: atanh's real part loses its digits for large |z| (0 for 1e38, where 1e-38;
    # 1e-5 relative at 20j), and atan's imaginary part with it
    "atanh": lambda z: _big(z.real) | _big(z.imag),
    "atan": lambda z: _big(z.real) | _big(z.imag),
    # OpenCL: on the real segment (-1, 1) of asin/acos/acosh (imaginary one of asinh) the
    # other part is 4e-8 (complex64) or 8e-18 (complex128), not an exact zero; acos(1e38 +
    # iy) loses its 1e-38 real part
    "asin": lambda z: ((z.imag == 0) & (np.abs(z.real) < 1)) | _big(z.real),
    "acos": lambda z: ((z.imag == 0) & np.isfinite(z.real)) | _big(z.real),  # and
    # pi/2 - asin x for x > 1: -2.2e-16 (complex128), not 0
    "acosh": lambda z: ((z.imag == 0) & (np.abs(z.real) < 1)) | _big(z.real),
    "asinh": lambda z: ((z.real == 0) & (np.abs(z.imag) < 1)) | _big(z.imag),
    # numpy's complex64 square overflows x^2 - y^2 to inf - inf for huge parts
    "square": lambda z: _big(z.real) & _big(z.imag),
}


def _unspecified_sign(z: np.ndarray) -> np.ndarray:
    a, b = z.real, z.imag
    nf_a, nf_b = ~np.isfinite(a), ~np.isfinite(b)
    return (nf_a & nf_b) | ((a == 0) & nf_b) | ((b == 0) & nf_a)


def _part_ok(g: np.ndarray, w: np.ndarray, loose: np.ndarray, rtol: float) -> np.ndarray:
    nan, inf, zero = np.isnan(w), np.isinf(w), w == 0
    same_sign = np.signbit(g) == np.signbit(w)
    with np.errstate(invalid="ignore"):
        close = np.isfinite(g) & (np.abs(g - w) <= rtol * np.abs(w))
    return np.where(nan, np.isnan(g),
                    np.where(inf | zero, (np.abs(g) == np.abs(w)) & (same_sign | loose),
                             ~zero & close))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("device", DEVICES)
def test_complex_special_values(device, dtype):
    needs(device.split(":")[0])
    if device == "opencl:1":
        try:
            nna.backends.get_device("opencl", 1)
        except Exception as e:  # noqa: BLE001  (no second device)
            pytest.skip(f"no opencl:1: {e}")
    z = special_grid(dtype)
    rdt = np.float32 if dtype == np.complex64 else np.float64
    rtol = 1e-5 if dtype == np.complex64 else 1e-12
    loose = _unspecified_sign(z)
    failures = []
    with nna.context_scope(device):
        a = nna.asarray(z)
        for name in FUNCTIONS:
            keep = ~(np.isinf(z.real) | np.isinf(z.imag)) if name == "sign" else \
                np.ones(z.size, bool)
            if name in LEFT_OUT:
                keep &= ~LEFT_OUT[name](z)
            if not keep.any():
                continue
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
