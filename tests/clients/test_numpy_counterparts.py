"""numpy functions outside the standard that clients call (scikit-learn's validation and
metrics, SciPy's signal and ndimage, xarray's nan-reductions) run on the array's device and
match numpy (issue 43 items 2, 5); arguments they do not take run numpy on the host."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import nnarray as nna

RNG = np.random.default_rng(3)
A = RNG.standard_normal((4, 5))
W = RNG.uniform(0.5, 2, 5)
N = A.copy()
N[1, 2] = N[3, 0] = N[3, 4] = np.nan
N[2, :] = np.nan  # an all-NaN row: numpy gives NaN (and warns)
INTS = np.array([[3, 1, 3], [2, 1, 7]])

CASES = {
    "atleast_1d": lambda m, a, n, i: m.atleast_1d(a[0, 0]),
    "atleast_2d": lambda m, a, n, i: m.atleast_2d(a[0]),
    "atleast_3d 1-d": lambda m, a, n, i: m.atleast_3d(a[0]),
    "atleast_3d 2-d": lambda m, a, n, i: m.atleast_3d(a),
    "atleast_2d many": lambda m, a, n, i: m.atleast_2d(a[0, 0], a[0], a)[0],
    "average": lambda m, a, n, i: m.average(a),
    "average axis": lambda m, a, n, i: m.average(a, axis=0),
    "average weights": lambda m, a, n, i: m.average(a, axis=1, weights=m.abs(a[0])),
    "average returned": lambda m, a, n, i: m.average(a, axis=0, weights=m.abs(a),
                                                     returned=True)[1],
    "average int": lambda m, a, n, i: m.average(i, axis=1),
    "cov": lambda m, a, n, i: m.cov(a),
    "cov rowvar": lambda m, a, n, i: m.cov(a, rowvar=False, ddof=0),
    "cov 1-d y": lambda m, a, n, i: m.cov(a[0], a[1]),
    "cov bias": lambda m, a, n, i: m.cov(a, bias=True),
    "corrcoef": lambda m, a, n, i: m.corrcoef(a),
    "corrcoef rowvar": lambda m, a, n, i: m.corrcoef(a, rowvar=False),
    "unique": lambda m, a, n, i: m.unique(i),
    "unique counts": lambda m, a, n, i: m.unique(i, return_counts=True)[1],
    "unique index": lambda m, a, n, i: m.unique(i, return_index=True)[1],
    "unique inverse": lambda m, a, n, i: m.unique(i, return_inverse=True)[1],
    "nansum": lambda m, a, n, i: m.nansum(n, axis=1),
    "nanprod": lambda m, a, n, i: m.nanprod(n),
    "nanmean": lambda m, a, n, i: m.nanmean(n, axis=0),
    "nanmean all": lambda m, a, n, i: m.nanmean(n),
    "nanvar": lambda m, a, n, i: m.nanvar(n, axis=0, ddof=1),
    "nanstd": lambda m, a, n, i: m.nanstd(n, axis=1, keepdims=True),
    "nanmax": lambda m, a, n, i: m.nanmax(n, axis=1),
    "nanmin": lambda m, a, n, i: m.nanmin(n, axis=0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_counterparts_match_numpy_on_the_device(backend, case):
    a, n, i = (nna.asarray(v, device=backend) for v in (A, N, INTS))
    reads = 0
    if case.startswith("unique"):  # as many reads as unique_all makes (the counts), no more
        nna.reset_transfer_stats()
        nna.unique_all(i)
        reads = nna.transfer_stats()["count"]
    nna.reset_transfer_stats()
    with warnings.catch_warnings():  # numpy warns of all-NaN slices
        warnings.simplefilter("ignore")
        got = CASES[case](np, a, n, i)
        assert nna.transfer_stats()["count"] <= reads
        want = CASES[case](np, A, N, INTS)
    assert isinstance(got, nna.NdArray), type(got)
    assert got.device.key == f"{backend}:0"
    assert got.shape == np.shape(want)
    assert got.dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


def test_may_share_memory_and_shares_memory_follow_views(backend):
    x = nna.asarray(A, device=backend)
    a = np.asarray(A)
    pairs = [(x, x[1], a, a[1]), (x[:, ::2], x[:, 1::2], a[:, ::2], a[:, 1::2]),
             (x[0], x[1], a[0], a[1]), (x.T, x[2:], a.T, a[2:])]
    for p, q, pa, qa in pairs:
        assert np.may_share_memory(p, q) == np.may_share_memory(pa, qa)
        assert np.shares_memory(p, q) == np.shares_memory(pa, qa)
    y = nna.asarray(A, device=backend)
    assert not np.may_share_memory(x, y) and not np.shares_memory(x, y)


def test_arguments_without_a_counterpart_run_numpy_on_the_host(backend):
    a = nna.asarray(A, device=backend)
    got = np.cov(a, fweights=np.array([1, 2, 1, 1, 3]))
    np.testing.assert_allclose(got, np.cov(A, fweights=[1, 2, 1, 1, 3]))
    nan_vals = nna.asarray([2.0, np.nan, 1.0, np.nan], device=backend)
    np.testing.assert_array_equal(np.unique(nan_vals), [1.0, 2.0, np.nan])  # one NaN
    np.testing.assert_array_equal(np.unique(nna.asarray(INTS, device=backend), axis=0),
                                  np.unique(INTS, axis=0))


def test_np_iterable_of_a_0d_array_is_false(backend):
    """``iter()`` of a 0-d array raises TypeError at once, as numpy's (issue 43 item 5)."""
    x = nna.asarray(1.5, device=backend)
    assert not np.iterable(x)
    with pytest.raises(TypeError, match="0-d"):
        iter(x)
    assert np.iterable(nna.asarray([1.5], device=backend))
