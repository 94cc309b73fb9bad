"""sort, argsort, searchsorted, nonzero and unique_* against numpy on every backend."""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna
from nnarray import grad
from nnarray.grad import Variable

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"]


def _data(dtype: str, shape: tuple, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 7, size=shape)  # small range: many ties
    if dtype != "bool" and np.dtype(dtype).kind == "i":
        a = a - 3
    a = a.astype(dtype)
    if a.dtype.kind == "f" and a.size > 3:
        a.reshape(-1)[[1, 3]] = np.nan
    return a


def _ref_argsort(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    r = np.flip(np.argsort(np.flip(a, axis), axis=axis, kind="stable"), axis)
    return a.shape[axis] - 1 - r


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_argsort(backend: str, dtype: str, descending: bool) -> None:
    a = _data(dtype, (3, 37))
    x = nna.asarray(a)
    for axis in (-1, 0):
        i = nna.argsort(x, axis=axis, descending=descending).numpy()
        ref = _ref_argsort(a, axis, descending)
        np.testing.assert_array_equal(i, ref)
        s = nna.sort(x, axis=axis, descending=descending)
        assert s.dtype == a.dtype and s.shape == a.shape
        np.testing.assert_array_equal(s.numpy(), np.take_along_axis(a, ref, axis))


@pytest.mark.parametrize("n", [1, 2, 3, 255, 10000])
def test_sort_large_stable(backend: str, n: int) -> None:
    a = np.random.default_rng(n).integers(0, 50, n).astype(np.float32)
    i = nna.argsort(nna.asarray(a)).numpy()
    np.testing.assert_array_equal(i, np.argsort(a, kind="stable"))


def test_sort_empty_and_0d(backend: str) -> None:
    x = nna.asarray(np.zeros((2, 0), np.float32))
    assert nna.sort(x).shape == (2, 0) and nna.argsort(x, axis=0).shape == (2, 0)
    with pytest.raises(ValueError, match="sort"):
        nna.sort(nna.asarray(1.0))
    with pytest.raises(ValueError, match="argsort"):
        nna.argsort(nna.asarray(1.0))
    with pytest.raises(ValueError, match="nonzero"):
        nna.nonzero(nna.asarray(1.0))


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("dtype", ["int8", "uint64", "float16", "float32", "float64"])
def test_searchsorted(backend: str, side: str, dtype: str) -> None:
    a = _data(dtype, (40,), seed=1)
    v = _data(dtype, (3, 5), seed=2)
    srt = np.sort(a, kind="stable")
    got = nna.searchsorted(nna.asarray(srt), nna.asarray(v), side=side)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(srt, v, side=side))
    p = np.argsort(a, kind="stable")
    got = nna.searchsorted(nna.asarray(a), nna.asarray(v), side=side, sorter=nna.asarray(p))
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(a, v, side=side, sorter=p))
    with pytest.raises(ValueError, match="searchsorted"):
        nna.searchsorted(nna.asarray(a[None]), nna.asarray(v))


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "float32", "float64"])
def test_nonzero(backend: str, dtype: str) -> None:
    for shape in ((0,), (7,), (3, 4, 5)):
        a = _data(dtype, shape, seed=3)
        got = nna.nonzero(nna.asarray(a))
        ref = np.nonzero(a)
        assert len(got) == len(ref)
        for g, r in zip(got, ref):
            assert g.dtype == np.int64
            np.testing.assert_array_equal(g.numpy(), r)


@pytest.mark.parametrize("dtype", ["int8", "uint64", "float16", "float32", "float64"])
def test_unique(backend: str, dtype: str) -> None:
    a = _data(dtype, (4, 9), seed=4)
    x = nna.asarray(a)
    v, idx, inv, cnt = np.unique(a, return_index=True, return_inverse=True,
                                 return_counts=True, equal_nan=False)
    r = nna.unique_all(x)
    assert r._fields == ("values", "indices", "inverse_indices", "counts")
    np.testing.assert_array_equal(r.values.numpy(), v)
    np.testing.assert_array_equal(r.indices.numpy(), idx)
    np.testing.assert_array_equal(r.counts.numpy(), cnt)
    assert r.inverse_indices.shape == a.shape
    np.testing.assert_array_equal(r.values.numpy()[r.inverse_indices.numpy()], a)
    c = nna.unique_counts(x)
    np.testing.assert_array_equal(c.counts.numpy(), cnt)
    i = nna.unique_inverse(x)
    np.testing.assert_array_equal(i.values.numpy()[i.inverse_indices.numpy()], a)
    np.testing.assert_array_equal(nna.unique_values(x).numpy(), v)
    if a.dtype.kind == "f":
        assert int(np.isnan(nna.unique_values(x).numpy()).sum()) == 2  # NaNs distinct


def test_unique_empty(backend: str) -> None:
    r = nna.unique_all(nna.asarray(np.zeros((0,), np.float32)))
    assert [t.shape for t in r] == [(0,), (0,), (0,), (0,)]
    assert nna.unique_values(nna.asarray(np.array([5], np.int32))).numpy().tolist() == [5]


def test_unique_reads_one_scalar(backend: str) -> None:
    x = nna.asarray(np.array([3, 1, 3, 2], np.int64), device=backend)
    with nna.strict_transfers():  # the size read is explicit; nothing else moves
        r = nna.unique_all(x)
        nna.nonzero(x)
    np.testing.assert_array_equal(r.counts.numpy(), [1, 1, 2])


@pytest.mark.parametrize("descending", [False, True])
def test_sort_grad(backend: str, descending: bool) -> None:
    a = np.random.default_rng(5).standard_normal((3, 6))
    x = Variable.from_numpy_array(a, need_grad=True)
    # replayed unfused: each fused replay would be a program of its own, and the sort's
    # rule is what this checks (fusion: tests/grad/test_fusion_graphs.py)
    with grad.fusion_enabled(False):
        assert grad.gradcheck(lambda v: nna.sort(v, descending=descending) * 1.0, [x],
                              eps=1e-5)
        assert grad.gradcheck(lambda v: nna.sort(v, axis=0), [x], eps=1e-5)


def test_sort_extreme_values(backend: str) -> None:
    for v in (np.array([2**64 - 1, 0, 2**63, 5, 2**63 - 1, 2**64 - 1], np.uint64),
              np.array([np.iinfo(np.int64).min, 3, np.iinfo(np.int64).max, -1, 0], np.int64),
              np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, np.nan, 1], np.float64)):
        np.testing.assert_array_equal(nna.argsort(nna.asarray(v)).numpy(),
                                      np.argsort(v, kind="stable"))
        s = np.sort(v)
        for side in ("left", "right"):
            np.testing.assert_array_equal(
                nna.searchsorted(nna.asarray(s), nna.asarray(v), side=side).numpy(),
                np.searchsorted(s, v, side=side))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_unique_complex_in_numpys_order(backend: str, dtype: str) -> None:
    """Complex values sort by ``(real, imag)``, those with a NaN part after the rest
    (``R + nanj``, ``nan + Rj``, ``nan + nanj``) as numpy's; they raised ``argsort:
    complex input`` (issue 40 item 9)."""
    rng = np.random.default_rng(5)
    parts = np.array([-1.0, -0.0, 0.0, 2.0, np.inf, np.nan])
    a = np.empty((6, 7), dtype)
    a.real, a.imag = rng.choice(parts, a.shape), rng.choice(parts, a.shape)
    a[0, :3] = [1 + 2j, 1 + 2j, 1 - 2j]  # repeats and equal real parts
    x = nna.asarray(a)
    v, idx, inv, cnt = np.unique(a, return_index=True, return_inverse=True,
                                 return_counts=True, equal_nan=False)
    r = nna.unique_all(x)
    np.testing.assert_array_equal(r.values.numpy(), v)
    np.testing.assert_array_equal(r.indices.numpy(), idx)
    np.testing.assert_array_equal(r.inverse_indices.numpy(), inv.reshape(a.shape))
    np.testing.assert_array_equal(r.counts.numpy(), cnt)
    np.testing.assert_array_equal(nna.unique_values(x).numpy(), v)
    np.testing.assert_array_equal(nna.unique_counts(x).counts.numpy(), cnt)
    i = nna.unique_inverse(x)
    np.testing.assert_array_equal(i.values.numpy()[i.inverse_indices.numpy()], a)
