"""``nnarray.data.DataLoader``: batches of host data moved once per batch."""

from __future__ import annotations

import re

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
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


# -- device=...: one batch uploaded ahead (issue 39 item 3) -----------------------------

N = np.arange(66, dtype=np.float64).reshape(11, 3, 2)  # 11 samples: a short last batch


def values(loader):
    return [tuple(a.numpy() for a in batch) for batch in loader]


@pytest.mark.parametrize("bs, shuffle, drop_last, pin", [
    (4, False, False, False), (4, True, False, False), (4, True, True, False),
    (3, True, False, True), (11, False, False, False), (1, True, True, False)])
def test_prefetched_batches_are_the_plain_loaders(backend, bs, shuffle, drop_last, pin):
    """The same batches in the same order (seeded shuffle, drop_last, the short last
    batch, dtypes kept, an NdArray input gathered where it lives), each on the device."""
    arrays = (X[:, 0].repeat(11)[:11].reshape(11), N, np.arange(11, dtype=np.int32),
              nna.array(np.arange(11.0)))
    args = dict(shuffle=shuffle, drop_last=drop_last, seed=5)
    plain = DataLoader(arrays, bs, **args)
    ahead = DataLoader(arrays, bs, **args, device=backend, pin_memory=pin)
    for _ in range(2):  # a second pass: a new permutation, the same for both
        batches = list(ahead)
        want = values(plain)
        assert len(batches) == len(want) == len(ahead)
        for got, exp in zip(batches, want):
            assert [a.head for a in got] == [f"{backend}:0"] * len(arrays)
            for a, e in zip(got, exp):
                assert a.dtype == e.dtype and a.shape == e.shape
                np.testing.assert_array_equal(a.numpy(), e)


def test_prefetch_uploads_the_next_batch_before_the_step(backend):
    """When batch k is handed out, batch k+1's upload was already made (counted, on the
    route host -> device); the step on the batch transfers nothing implicitly."""
    loader = DataLoader((N, np.arange(11)), 4, shuffle=True, seed=1, device=backend)
    moves = 0 if backend == "numpy" else 1
    nna.reset_transfer_stats()
    sums = []
    with nna.strict_transfers(implicit_reads=True):
        for k, (x, t) in enumerate(loader):
            assert nna.transfer_stats()["count"] == moves * 2 * min(k + 2, len(loader))
            sums.append((x * 2.0).sum() + t.sum())
    stats = nna.transfer_stats()
    assert stats["count"] == moves * 2 * len(loader)
    if moves:
        assert set(stats["by_route"]) == {("numpy:0", f"{backend}:0")}
    order = np.concatenate([t for _, t in values(DataLoader((N, np.arange(11)), 4,
                                                            shuffle=True, seed=1))])
    want = [2 * N[order[i:i + 4]].sum() + order[i:i + 4].sum() for i in range(0, 11, 4)]
    np.testing.assert_allclose([s.item() for s in sums], want)


@pytest.mark.parametrize("device, error, match", [
    ("nope", nna.BackendError, "DataLoader: argument 'device' 'nope'"),
    ("opencl:99", nna.BackendUnavailableError, "DataLoader: argument 'device' 'opencl:99'"),
    (3, nna.BackendError, "DataLoader: argument 'device' 3"),
    ("numpy:x", nna.BackendError, "DataLoader: argument 'device' 'numpy:x'")])
def test_bad_device_is_a_typed_error(device, error, match):
    with pytest.raises(error, match=re.escape(match)):
        DataLoader((X, T), 2, device=device)


def test_pin_memory_is_checked():
    with pytest.raises(TypeError, match="DataLoader: pin_memory must be a bool, got 'yes'"):
        DataLoader((X, T), 2, device="numpy", pin_memory="yes")
    with pytest.raises(nna.InvalidValueError, match="DataLoader: pin_memory=True needs "
                                                    "device="):
        DataLoader((X, T), 2, pin_memory=True)


def test_an_abandoned_pass_is_cleaned_up(backend):
    """Breaking out mid-epoch (or closing the iterator) waits for the upload in flight
    and leaves no thread or reference behind; the device keeps working."""
    import gc
    import threading
    import weakref
    threads = threading.active_count()
    big = np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32)
    loader = DataLoader(big, 2, shuffle=True, seed=2, device=backend)
    for k, (x,) in enumerate(loader):
        if k == 2:
            break
    it = iter(loader)
    first = next(it)[0]
    it.close()
    gone = weakref.ref(loader)
    del loader, it
    gc.collect()
    assert gone() is None and threading.active_count() == threads
    np.testing.assert_array_equal((first * 1.0).numpy(), first.numpy())
    nna.device_synchronize(backend)
    again = values(DataLoader(big, 16, device=backend))
    np.testing.assert_array_equal(np.concatenate([b for b, in again]), big)


def test_prefetched_ndarray_inputs_are_gathered_where_they_live(backend):
    """An NdArray input is gathered on its own device, then moved explicitly: the loop
    runs inside strict_transfers."""
    with nna.context_scope("numpy"):
        a = nna.array(N)
    with nna.strict_transfers():
        got = [x.numpy() for x, in DataLoader(a, 4, shuffle=True, seed=3, device=backend)]
    order = DataLoader(np.arange(11), 4, shuffle=True, seed=3)
    np.testing.assert_array_equal(np.concatenate(got), N[np.concatenate(
        [t for t, in values(order)])])


def test_uploads_are_ordered_with_the_steps_work(backend):
    """Large batches used at once, each step's temporaries freed while the next upload
    is under way (its pool may hand their buffers to the next batch): every step sees
    its own batch whole."""
    big = np.random.default_rng(4).standard_normal((24, 512, 256)).astype(np.float32)
    got = []
    for (x,) in DataLoader(big, 3, shuffle=True, seed=9, device=backend):
        y = x * 2.0 + 1.0
        got.append(F.sum(y * y, axis=(1, 2)))
        del y
    order = np.concatenate([t for t, in values(DataLoader(np.arange(24), 3, shuffle=True,
                                                          seed=9))])
    want = ((big[order] * 2 + 1) ** 2).sum(axis=(1, 2))
    np.testing.assert_allclose(np.concatenate([g.numpy() for g in got]), want, rtol=1e-4)
