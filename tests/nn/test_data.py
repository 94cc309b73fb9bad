"""``nnarray.data.DataLoader``: batches of host data moved once per batch."""

from __future__ import annotations

import re

import numpy as np
import pytest

import nnarray as nna
from nnarray.data import DataLoader

X = np.arange(20, dtype=np.float32).reshape(10, 2)
T = np.arange(10)


def collect(loader):
    return [tuple(a.numpy() for a in batch) for batch in loader]


def test_batches_in_order_on_the_current_device(backend):
    loader = DataLoader((X, T), batch_size=4)
    assert len(loader) == 3
    nna.reset_transfer_stats()
    batches = list(loader)
    moved = nna.transfer_stats()["count"]
    assert all(a.head == f"{backend}:0" for b in batches for a in b)
    assert moved == (0 if backend == "numpy" else 2 * 3)  # one upload per array per batch
    got = [tuple(a.numpy() for a in b) for b in batches]
    assert [len(t) for _, t in got] == [4, 4, 2]
    np.testing.assert_array_equal(np.concatenate([x for x, _ in got]), X)
    np.testing.assert_array_equal(np.concatenate([t for _, t in got]), T)


def test_shuffle_is_seeded_new_each_pass_and_drop_last():
    a = DataLoader((X, T), 3, shuffle=True, drop_last=True, seed=7)
    b = DataLoader((X, T), 3, shuffle=True, drop_last=True, seed=7)
    assert len(a) == 3
    first, again = collect(a), collect(a)
    for (x, t), (x2, t2) in zip(first, collect(b)):
        np.testing.assert_array_equal(t, t2)
        np.testing.assert_array_equal(x, X[t])  # rows stay paired
    order = np.concatenate([t for _, t in first])
    assert len(order) == 9 and len(set(order)) == 9 and not np.array_equal(order, T[:9])
    assert not np.array_equal(order, np.concatenate([t for _, t in again]))


def test_seed_none_follows_nna_seed_and_one_array_gives_one_tuples():
    nna.seed(3)
    a = collect(DataLoader(T, 4, shuffle=True))
    nna.seed(3)
    b = collect(DataLoader(T, 4, shuffle=True))
    assert all(len(x) == 1 for x in a)
    for (u,), (v,) in zip(a, b):
        np.testing.assert_array_equal(u, v)


def test_nd_arrays_are_batched_where_they_live():
    x = nna.array(X)
    got = collect(DataLoader((x, T.tolist()), 6))
    np.testing.assert_array_equal(got[1][0], X[6:])
    np.testing.assert_array_equal(got[1][1], T[6:])


@pytest.mark.parametrize("arrays, bs, match", [
    ((X, T[:5]), 2, "one length"), ((X,), 0, "batch_size must be positive"),
    ((), 2, "no arrays"), ((np.float32(1),), 2, "one length")])
def test_rejects_bad_input(arrays, bs, match):
    with pytest.raises(ValueError, match=match):
        DataLoader(arrays, bs)


@pytest.mark.parametrize("bs", [1.5, 2.7, 3.0, "3", True, np.bool_(True), float("inf"),
                                None, [2]])
def test_batch_size_must_be_an_int(backend, bs):
    """Floats were truncated, "3" and True accepted, inf an OverflowError (issue 40
    item 11): a TypeError naming batch_size and the value, before anything is made."""
    with pytest.raises(TypeError, match=r"DataLoader: batch_size must be a positive int, "
                                        rf"got {re.escape(repr(bs))} "):
        DataLoader((X, T), bs)


@pytest.mark.parametrize("bs", [0, -1, np.int64(-3)])
def test_batch_size_must_be_positive(backend, bs):
    with pytest.raises(nna.InvalidValueError, match=rf"batch_size must be positive, got {bs}"):
        DataLoader((X, T), bs)


def test_numpy_int_batch_sizes_are_accepted(backend):
    for bs in (np.int64(4), np.int32(4), np.uint8(4)):
        loader = DataLoader((X, T), bs)
        assert loader.batch_size == 4 and type(loader.batch_size) is int
        assert [len(t) for _, t in collect(loader)] == [4, 4, 2]


@pytest.mark.parametrize("n, bs, drop_last", [(0, 4, False), (0, 4, True), (3, 4, True)])
def test_arrays_that_give_no_batch_are_refused(backend, n, bs, drop_last):
    with pytest.raises(nna.InvalidValueError, match=rf"{n} samples in batches of {bs}"):
        DataLoader((X[:n], T[:n]), bs, drop_last=drop_last)
    assert len(DataLoader((X[:3], T[:3]), 4)) == 1  # a short last batch is kept
