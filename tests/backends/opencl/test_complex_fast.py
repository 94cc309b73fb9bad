"""complex64 functions with a fast path on contiguous arrays (``backends/opencl/complex_fast.py``):
OpenCL CPU devices compute each chunk by a formula exact within a range (a fast reduction for
``sincos``, no scaling for ``sign`` and ``sqrt``) and redo the elements outside it exactly.
Elements out of range, not finite, or in the last partial chunk must equal the exact path's
(an output in the input's own buffer takes it), the others lie within 1e-6 of it, and both
within 1e-5 of numpy."""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna
from nnarray import registry

_TRIG = ["exp", "expm1", "sin", "cos", "tan", "sinh", "cosh", "tanh"]
_NEAR = ["sign", "sqrt"]
#: The part each function takes the sine and cosine of (``tan`` goes through ``tanh``).
_TRIG_PART = {"sin": "re", "cos": "re", "tan": "re"}
_N = 128 * 10 + 77  # chunks of 128 (and of 64) and a partial one
_SPECIAL = [5, 70, 71]
#: Zeros and in-range values with zero parts (``sign`` and ``sqrt`` inputs), in chunks of
#: 128 with nothing else out of range, so the fast loop's values stand; 896 begins a chunk.
_ZEROS = [641, 650, 700, 701, 702, 767, 896]


#: Rows whose other part (not the sine's) must not pass 88, where e^|x| overflows float32,
#: and where it does in the test, in a chunk with nothing else out of range.
_HUGE = {"exp", "expm1", "sinh", "cosh", "sin", "cos"}
_BIG = [660, 661]
#: Zero parts of both signs in a chunk of their own (``_TRIG`` inputs): the fast copies
#: leave out the exact helpers' special cases, so their formulas must give these.
_SIGNED = list(range(900, 906))


def _trig_inputs(rng, far: np.ndarray, idx: np.ndarray, name: str) -> np.ndarray:
    """Moderate values, some with the trigonometric part far past 2^20, and for ``_HUGE``
    rows two with the other part past 88 (finite results: e^88.6 and cosh 88.9 are)."""
    small = rng.standard_normal(_N) * 3
    if name in _HUGE:
        small[_BIG] = [88.5, 88.6] if "exp" in name else [88.5, -88.9]
        far[_BIG] = True
    trig = rng.standard_normal(_N) * 3
    trig[idx] = rng.choice([-1, 1], idx.size) * 10.0 ** rng.uniform(6.5, 30, idx.size)
    trig[-3:] = [3e7, -1e12, 2.0**20 + 1]
    z = trig + 1j * small if _TRIG_PART.get(name) == "re" else small + 1j * trig
    z[_SIGNED] = [1 + 0j, complex(1, -0.0), complex(-2, 0.0), complex(-2, -0.0),
                  complex(0.0, 1.5), complex(-0.0, -1.5)]
    return z


def _near_inputs(rng, far: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Moderate values, some with |z| past the unscaled range (about 2e-19 to 9e18): subnormal,
    tiny or huge parts. In range: zeros of both signs, parts that are zero or whose square is
    subnormal."""
    z = (rng.standard_normal(_N) + 1j * rng.standard_normal(_N)) * 3
    z[idx] *= 10.0 ** np.where(rng.random(idx.size) < 0.5, rng.uniform(-44, -21, idx.size),
                               rng.uniform(22, 37, idx.size))
    z[-3:] = [1e-40 + 0j, 3e37 - 1j, -1e-20 + 2e-21j]
    z[_ZEROS] = [0, complex(-0.0, -0.0), complex(0.0, -0.0), -3 + 0j, complex(-0.0, 2),
                 1 + 1e-30j, complex(-0.0, 0.0)]
    return z


def _inputs(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(array, mask of the elements out of the fast path's range, not finite, or in the last
    partial chunk)."""
    rng = np.random.default_rng(7)
    far = np.zeros(_N, bool)
    free = np.setdiff1d(np.arange(20, _N - 20), np.r_[256, 640:1024])
    idx = rng.choice(free, 30, replace=False)
    idx = np.concatenate([idx, [256, 768]])  # a chunk's first element (which skips its fast loop)
    far[idx] = True
    far[-3:] = True  # the partial chunk
    z = _near_inputs(rng, far, idx) if name in _NEAR else _trig_inputs(rng, far, idx, name)
    z[_SPECIAL] = [complex(np.inf, 1), complex(1, np.nan), complex(-np.inf, np.inf)]
    far[_SPECIAL] = True
    return z.astype(np.complex64), far


def _in_place(backend: str, name: str, z: np.ndarray) -> np.ndarray:
    """``name`` of ``z`` written into its own buffer: the exact kernel (the fast kernel's
    second loop would read the input after its first wrote it)."""
    x = nna.asarray(z)
    data = x.get_data("rw")
    registry.backend_kernels(backend)[name](data, out=data)
    return np.asarray(x)


@pytest.mark.parametrize("name", _TRIG + _NEAR)
def test_out_of_range_and_non_finite_match_the_exact_path(backend, name):
    z, far = _inputs(name)
    with np.errstate(all="ignore"):  # the numpy backend's inf and nan
        got = np.asarray(getattr(nna, name)(nna.asarray(z)))
        exact = _in_place(backend, name, z)
        want = getattr(np, name)(z.astype(np.complex128))
    np.testing.assert_array_equal(got[far], exact[far])
    signed = _ZEROS if name in _NEAR else _SIGNED  # zero parts keep the exact path's signs
    pair = got[signed].view(np.float32), exact[signed].view(np.float32)
    np.testing.assert_array_equal(np.signbit(pair[0]), np.signbit(pair[1]), err_msg=name)
    np.testing.assert_allclose(got[~far], exact[~far], rtol=1e-6, atol=1e-30)
    fin = np.isfinite(want) & ~np.isin(np.arange(_N), _SPECIAL)
    if backend == "numpy" and name == "sign":  # numpy's own complex64 sign of a subnormal
        fin &= np.abs(z) > 1e-37                # z (0.5% off at 1e-44, the numpy backend's)
    if backend == "numpy" and name == "expm1":  # numpy's own complex expm1 overflows past
        fin[_BIG] = False                        # e^88.7 (the numpy backend's)
    for r in (got, exact):
        err = np.abs(r[fin] - want[fin]) / np.maximum(np.abs(want[fin]), 1e-300)
        assert fin.sum() > _N - 40 and err.max() < 1e-5, (name, err.max())


@pytest.mark.parametrize("name", _TRIG + _NEAR)
def test_fast_kernel_differs_from_the_exact_one(name):
    """Each fast row's kernel calls its fast helpers: a rename in ``complex_math`` that the
    flavors' rewrites no longer match would silently leave the exact (slow) code."""
    pytest.importorskip("pyopencl")
    from nnarray.backends.opencl import cltypes, complex_fast, complex_math

    t = cltypes.cltype(np.dtype(np.complex64))
    expr, helpers = complex_math.expression(name, t)
    src = complex_fast.source(name, expr, t, t, helpers, True)
    fast_loop = src[src.index("for (int j"):src.index("if (!far) return;")]
    marker = "sincos_fast(" if name in _TRIG else "_near_float2("
    assert marker in (src if name in _TRIG else fast_loop) and expr not in fast_loop
