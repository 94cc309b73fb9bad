"""Helpers shared by the function tests: NdArray construction, readable ids, checks."""

from __future__ import annotations

import re

import numpy as np
from conftest import tol

import nnarray as nna


def S(*parts: str) -> str:
    """A regex matching ``parts`` in order (for ``pytest.raises(match=...)``)."""
    return ".*".join(re.escape(p) for p in parts)


def A(a) -> nna.NdArray:
    """An NdArray copy of ``a`` (dtype kept)."""
    return nna.NdArray.from_numpy_array(np.asarray(a))


def ids(v) -> str:
    """Readable test ids: dtype names, not ``<class 'numpy.float32'>`` (keeps ``-k numpy``
    selecting the numpy backend only)."""
    if isinstance(v, type) and issubclass(v, np.generic):
        return np.dtype(v).name
    if isinstance(v, (tuple, list)):
        return "(" + ",".join(ids(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return str(v).replace(" ", "")


def check(got, want, dtype=None, exact: bool = False) -> None:
    """``got`` is an NdArray with ``want``'s shape, dtype (``dtype`` overrides) and values:
    within ``tol`` for floats unless ``exact``, equal otherwise."""
    want = np.asarray(want)
    if dtype is not None:
        want = want.astype(dtype)
    assert isinstance(got, nna.NdArray)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    if want.dtype.kind == "f" and not exact:
        np.testing.assert_allclose(np.asarray(got), want, **tol(want.dtype))
    else:
        np.testing.assert_array_equal(np.asarray(got), want)


def sample(shape, dtype, lo=-3, hi=3, seed=0) -> np.ndarray:
    """Values in ``[lo, hi]``: quarters for floats (exact sums, even in float16), ints, or
    bools."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "i":
        return rng.integers(lo, hi + 1, shape).astype(dtype)
    if dtype.kind == "u":
        return rng.integers(max(lo, 0), max(hi, 0) + 1, shape).astype(dtype)
    return (rng.integers(lo * 4, hi * 4 + 1, shape) / 4).astype(dtype)
