"""complex64 functions with a sine and cosine inside, on contiguous arrays: OpenCL CPU devices
take a fast reduction there, then a fix-up launch redoes the elements past its range
(``backends/opencl/complex_trig.py``). Elements with parts past the bound, not finite, or in
the last partial chunk must equal the exact path's (an output in the input's own buffer
takes it), the others lie within 1e-6 of it, and both within 1e-5 of numpy."""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna
from nnarray import registry

_FUNCS = ["exp", "expm1", "sin", "cos", "tan", "sinh", "cosh", "tanh"]
#: The part each function takes the sine and cosine of (``tan`` goes through ``tanh``).
_TRIG_PART = {"sin": "re", "cos": "re", "tan": "re"}
_N = 64 * 21 + 13  # chunks of 64 and a partial one


def _inputs(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Moderate values, some with the trigonometric part far past 2^20, and some not finite;
    (array, mask of the far and non-finite elements)."""
    rng = np.random.default_rng(7)
    small = rng.standard_normal(_N) * 3
    trig = rng.standard_normal(_N) * 3
    far = np.zeros(_N, bool)
    idx = rng.choice(_N - 20, 30, replace=False)
    far[idx] = True
    trig[idx] = rng.choice([-1, 1], idx.size) * 10.0 ** rng.uniform(6.5, 30, idx.size)
    far[-3:] = True  # the partial chunk
    trig[-3:] = [3e7, -1e12, 2.0**20 + 1]
    z = trig + 1j * small if _TRIG_PART.get(name) == "re" else small + 1j * trig
    z[[5, 70, 71]] = [complex(np.inf, 1), complex(1, np.nan), complex(-np.inf, np.inf)]
    far[[5, 70, 71]] = True
    return z.astype(np.complex64), far


def _in_place(backend: str, name: str, z: np.ndarray) -> np.ndarray:
    """``name`` of ``z`` written into its own buffer: the exact kernel (a fix-up would read
    the input after the main kernel wrote it)."""
    x = nna.asarray(z)
    data = x.get_data("rw")
    registry.backend_kernels(backend)[name](data, out=data)
    return np.asarray(x)


@pytest.mark.parametrize("name", _FUNCS)
def test_far_and_non_finite_parts_match_the_exact_path(backend, name):
    z, far = _inputs(name)
    with np.errstate(all="ignore"):  # the numpy backend's inf and nan
        got = np.asarray(getattr(nna, name)(nna.asarray(z)))
        exact = _in_place(backend, name, z)
        want = getattr(np, name)(z.astype(np.complex128))
    np.testing.assert_array_equal(got[far], exact[far])
    np.testing.assert_allclose(got[~far], exact[~far], rtol=1e-6, atol=1e-30)
    fin = np.isfinite(want) & ~np.isin(np.arange(_N), [5, 70, 71])
    for r in (got, exact):
        err = np.abs(r[fin] - want[fin]) / np.abs(want[fin])
        assert fin.sum() > _N - 40 and err.max() < 1e-5, (name, err.max())
