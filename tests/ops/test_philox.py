"""One random stream on every backend (issue 42, item 5): Philox-4x32-10 against Random123's
known answers and a scalar transcription; rand, dropout masks, DataLoader's permutations
and the initializers bit-identical on numpy, OpenCL and the CUDA kernel source (run on the
host through ``cuda_host``); randn within the stated few units of the last place; unseeded
draws following the per-thread counter rule whatever the threads' interleaving; plain
statistics."""

from __future__ import annotations

import ctypes
import math
import threading

import cuda_host
import numpy as np
import pytest
from helpers import A, ids

import nnarray as nna
import nnarray.functions as F
from nnarray import philox
from nnarray.data import DataLoader
from nnarray.errors import InvalidValueError
from nnarray.nn import initializers as I
from nnarray.ops import random as R

FLOATS = [np.float32, np.float64, np.float16]
#: Random123's tests/kat_vectors for philox4x32 10: counter, key, output.
KAT = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
       ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
       ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]
#: randn's bound between backends: |a - b| <= NORMAL_ULPS * eps * max(1, |z|) for standard
#: normals (log, cos and sin round differently per library; measured <= 2.7 over 2^20).
NORMAL_ULPS = 4


def scalar_philox(ctr, key, rounds=10):
    """Philox-4x32 transcribed from Random123's philox.h, one counter, in Python ints."""
    c, (k0, k1) = list(ctr), key
    for _ in range(rounds):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & 0xFFFFFFFF, (p0 >> 32) ^ c[3] ^ k1, p0 & 0xFFFFFFFF]
        k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
    return tuple(c)


def scalar_uniform(seed, n, dtype):
    """rand's stream from ``scalar_philox`` and exact integer arithmetic."""
    key, out = philox.key_words(seed), []
    for g in range(-(-n // (4 if dtype != np.float64 else 2))):
        w = scalar_philox((g & 0xFFFFFFFF, g >> 32, 0, 0), key)
        if dtype == np.float64:
            out += [(((w[0] >> 5) << 26) | (w[1] >> 6)) / 2.0 ** 53,
                    (((w[2] >> 5) << 26) | (w[3] >> 6)) / 2.0 ** 53]
        else:
            out += [(x >> 8) / 2.0 ** 24 for x in w]
    return np.array(out[:n], np.float64 if dtype == np.float64 else np.float32)


def want_rand(shape, low, high, seed, dtype):
    """``u * (high - low) + low``, two roundings in float32 (float64 for float64), then
    cast: the formula every backend follows."""
    g = np.float64 if dtype == np.float64 else np.float32
    u = scalar_uniform(seed, math.prod(shape), dtype)
    return (u * g(high - low) + g(low)).astype(dtype).reshape(shape)


def assert_normals_close(got, want, dtype, z=None, sigma=1.0):
    """``got`` and ``want`` are the normals ``z * sigma + mu`` (``z``: the standard normals
    in float32, float64 for float64; ``None``: ``want`` itself) of two backends: apart by
    at most NORMAL_ULPS * eps * max(1, |z|) * |sigma|, plus one rounding of the output
    where ``z * sigma + mu`` or a cast to float16 rounds again."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    g = np.float64 if np.dtype(dtype) == np.float64 else np.float32
    z = want if z is None else np.asarray(z, np.float64)
    bound = NORMAL_ULPS * np.finfo(g).eps * np.maximum(1, np.abs(z)) * abs(sigma)
    if sigma != 1.0 or np.dtype(dtype) == np.float16 or not np.array_equal(z, want):
        bound += np.spacing(np.maximum(np.abs(got), np.abs(want)).astype(dtype)).astype(float)
    assert (np.abs(got - want) <= bound).all(), np.max(np.abs(got - want) / bound)


# -- the generator -------------------------------------------------------------------------
@pytest.mark.parametrize("ctr, key, out", KAT)
def test_known_answers(ctr, key, out):
    assert scalar_philox(ctr, key) == out
    assert tuple(int(w) for w in philox.philox4x32(ctr, key)) == out


def test_host_draws_are_float32_or_float64():
    with pytest.raises(ValueError, match="float32 or float64, got float16"):
        philox.uniform(1, 4, np.float16)
    with pytest.raises(ValueError, match="float32 or float64, got int32"):
        philox.normal(1, 4, np.int32)


def test_vectorized_philox_equals_the_scalar_one_on_random_counters():
    rng = np.random.default_rng(0)
    ctr = rng.integers(0, 2**32, (4, 200), dtype=np.uint64)
    key = (0x12345678, 0xFEDCBA98)
    got = np.stack(philox.philox4x32(tuple(ctr), key))
    for i in range(200):
        assert tuple(int(w) for w in got[:, i]) == scalar_philox(tuple(int(c) for c in ctr[:, i]),
                                                                 key)


def test_every_backend_reproduces_the_zero_vector(backend):
    """seed 0, element block 0 is Philox of counter 0 under key 0: rand's first four
    float32 values are Random123's first answer's top 24 bits."""
    u = F.rand((4,), seed=0).numpy()
    np.testing.assert_array_equal(u, np.array([w >> 8 for w in KAT[0][2]], np.float32) / 2**24)


# -- equal streams on every backend --------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS, ids=ids)
@pytest.mark.parametrize("shape, seed", [((1001,), 2**63 - 5), ((3, 7, 5), 12345678901),
                                         ((), 1), ((0, 4), 2), ((9,), -1)], ids=ids)
def test_rand_is_the_same_stream_on_every_backend(backend, dtype, shape, seed):
    got = F.rand(shape, low=-2.0, high=3.0, seed=seed, dtype=dtype)
    assert got.dtype == np.dtype(dtype) and got.shape == shape
    np.testing.assert_array_equal(got.numpy(), want_rand(shape, -2.0, 3.0, seed, dtype))


@pytest.mark.parametrize("dtype", FLOATS, ids=ids)
def test_rand_depends_on_the_position_not_the_size(backend, dtype):
    """A draw's prefix is the shorter draw (kernels compute whole blocks per work item:
    the tails of 1, 2, 3 values match too)."""
    whole = F.rand((4099,), seed=77, dtype=dtype).numpy()
    for n in (1, 2, 3, 5, 1024, 4097):
        np.testing.assert_array_equal(F.rand((n,), seed=77, dtype=dtype).numpy(), whole[:n])


@pytest.mark.parametrize("dtype", FLOATS, ids=ids)
def test_randn_is_the_same_stream_within_the_stated_ulps(backend, dtype):
    n = 1 << 16
    got = F.randn((n,), seed=99, dtype=dtype).numpy()
    g = np.float64 if dtype == np.float64 else np.float32
    z = philox.normal(99, n, g)
    affine = F.randn((n,), mu=1.5, sigma=2.0, seed=99, dtype=dtype).numpy()
    want_affine = (z * g(2.0) + g(1.5)).astype(dtype)
    if backend == "numpy":
        np.testing.assert_array_equal(got, z.astype(dtype))
        np.testing.assert_array_equal(affine, want_affine)
    assert_normals_close(got, z.astype(dtype), dtype, z)
    assert_normals_close(affine, want_affine, dtype, z, sigma=2.0)


@pytest.mark.parametrize("dtype", FLOATS, ids=ids)
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9], ids=ids)
def test_dropout_masks_are_the_same_on_every_backend(backend, dtype, p):
    """mask = (rand(x.shape, seed) >= p) / (1 - p) in x's dtype, on every backend."""
    shape, seed = (37, 29), 2024
    x = np.ones(shape, dtype)
    u = want_rand(shape, 0.0, 1.0, seed, dtype)
    keep = u >= np.dtype(dtype).type(p)
    want = keep.astype(dtype) * np.dtype(dtype).type(1 / (1 - p))
    np.testing.assert_array_equal(F.dropout(A(x), p, seed=seed).numpy(), want)
    y, mask = R.dropout_op(A(x), p=p, seed=seed)
    np.testing.assert_array_equal(mask.numpy(), want)


@pytest.mark.parametrize("dtype", FLOATS, ids=ids)
def test_dropout_at_a_threshold_equal_to_a_drawn_value(backend, dtype):
    """``p`` a drawn uniform exactly, and a double a quarter of its spacing above it
    (which rounds to it in x's dtype): kept, on every backend alike."""
    u = want_rand((64,), 0.0, 1.0, 5, dtype)
    for p in (float(u[10]), float(u[10]) + float(np.spacing(u[10])) / 4):
        got = F.dropout(A(np.ones(64, dtype)), p, seed=5).numpy()
        assert got[10] != 0
        np.testing.assert_array_equal(got != 0, u >= np.dtype(dtype).type(p))


# -- the counter rule: unseeded draws ------------------------------------------------------
def test_unseeded_draws_take_the_counter_rule_seeds(backend):
    """The c-th unseeded draw of the main thread after seed(n) uses derive(n, c, 0, OPS),
    dropout included; the same numbers on every backend."""
    nna.seed(31)
    a, z = F.rand((5, 3)), F.randn((6,), dtype=np.float64)
    d = F.dropout(A(np.ones(40, np.float32)), 0.5)
    s = [philox.derive(31, c, 0, R.OPS) for c in range(3)]
    np.testing.assert_array_equal(a.numpy(), want_rand((5, 3), 0.0, 1.0, s[0], np.float32))
    assert_normals_close(z.numpy(), philox.normal(s[1], 6, np.float64), np.float64)
    np.testing.assert_array_equal(d.numpy() != 0,
                                  want_rand((40,), 0.0, 1.0, s[2], np.float32) >= 0.5)


def _draws_per_thread(backend, order):
    """Threads "a" and "b" each draw three unseeded rand((4,)) after seed(8), in ``order``
    (a list of thread names, one per draw): {name: [arrays]}."""
    nna.seed(8)
    turn = threading.Condition()
    pos = [0]
    got: dict[str, list] = {"a": [], "b": []}
    errors = []

    def work(name):
        try:
            with nna.context_scope(backend):
                for _ in range(3):
                    with turn:
                        turn.wait_for(lambda: order[pos[0]] == name)
                    got[name].append(F.rand((4,)).numpy())
                    with turn:
                        pos[0] += 1
                        turn.notify_all()
        except Exception as e:  # reported below
            errors.append(e)
            with turn:
                pos[0] = len(order) - 1
                turn.notify_all()

    threads = [threading.Thread(target=work, args=(n,), name=n) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not errors, errors
    return got


def test_each_thread_has_its_stream_whatever_the_interleaving(backend):
    runs = [_draws_per_thread(backend, list(o) + ["-"])
            for o in ("aaabbb", "bbbaaa", "ababab", "babbaa")]
    for name in "ab":
        lane = _lane(name)
        assert lane != 0
        want = [want_rand((4,), 0.0, 1.0, philox.derive(8, c, lane, R.OPS), np.float32)
                for c in range(3)]
        for run in runs:
            for g, w in zip(run[name], want, strict=True):
                np.testing.assert_array_equal(g, w)
    assert not np.array_equal(runs[0]["a"][0], runs[0]["b"][0])


def _lane(name):
    """The lane of a thread named ``name``."""
    box = []
    t = threading.Thread(target=lambda: box.append(R.thread_lane()), name=name)
    t.start()
    t.join()
    return box[0]


def test_seed_restarts_every_threads_count():
    nna.seed(4)
    first = F.rand((3,)).numpy()
    F.rand((3,))
    nna.seed(4)
    np.testing.assert_array_equal(F.rand((3,)).numpy(), first)


@pytest.mark.parametrize("bad", [1.5, "3", None])
def test_a_seed_must_be_an_integer(backend, bad):
    if bad is not None:
        with pytest.raises(InvalidValueError, match="rand: argument 'seed' must be an integer"):
            F.rand((3,), seed=bad)
        with pytest.raises(InvalidValueError, match="dropout: argument 'seed'"):
            F.dropout(A(np.ones(3, np.float32)), 0.5, seed=bad)
    with pytest.raises(InvalidValueError, match="seed: argument 'seed'"):
        nna.seed(bad)
    F.rand((2,), seed=np.int64(3))  # numpy integers are integers


# -- host draws: initializers, DataLoader --------------------------------------------------
def test_initializers_draw_the_stream_on_any_current_backend(backend):
    """Initializer c after seed(n) is rand/randn in float64 with seed derive(n, c, 0,
    INITIALIZERS), cast to float32, whatever the current backend."""
    nna.seed(9)
    u = I.Uniform(0.2)((30, 20))
    n = I.Normal(0.3)((30, 20))
    s = [philox.derive(9, c, 0, R.INITIALIZERS) for c in range(2)]
    want_u = F.rand((30, 20), -0.2, 0.2, seed=s[0], dtype=np.float64).numpy().astype(np.float32)
    np.testing.assert_array_equal(u, want_u)
    z = F.randn((30, 20), 0.0, 0.3, seed=s[1], dtype=np.float64).numpy()
    assert_normals_close(n, z.astype(np.float32), np.float32, z / 0.3, sigma=0.3)
    with nna.context_scope("numpy"):
        nna.seed(9)
        np.testing.assert_array_equal(I.Uniform(0.2)((30, 20)), u)


def test_dataloader_permutations_follow_philox(backend):
    x = np.arange(50)
    got = [np.concatenate([b.numpy() for (b,) in DataLoader(x, 7, shuffle=True, seed=21)])
           for _ in range(1)]
    loader = DataLoader(x, 7, shuffle=True, seed=21)
    passes = [np.concatenate([b.numpy() for (b,) in loader]) for _ in range(2)]
    for k, p in enumerate(passes):
        want = philox.permutation(philox.derive(21, k, 0, R.OWN), 50)
        np.testing.assert_array_equal(p, want)
    np.testing.assert_array_equal(got[0], passes[0])
    assert sorted(passes[0].tolist()) == list(range(50))
    assert not np.array_equal(passes[0], passes[1])


# -- the CUDA kernel source, run on the host ------------------------------------------------
def _cuda_lib(dtype):
    from nnarray.backends.cuda import random as rnd
    from nnarray.backends.cuda import raw
    return cuda_host.load(rnd._SRC.variants[np.dtype(dtype)]), rnd, raw


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=ids)
def test_cuda_kernels_give_the_same_stream(dtype):
    lib, rnd, _ = _cuda_lib(dtype)
    t, i64 = cuda_host.scalar(dtype), ctypes.c_longlong
    seed, n = 2**63 - 5, 1001
    k0, k1 = (ctypes.c_uint(int(k)) for k in rnd.keys(seed))
    y = np.empty(n, dtype)
    lib.nna_rand(cuda_host.ptr(y), i64(n), k0, k1, t(5.0), t(-2.0))
    np.testing.assert_array_equal(y, want_rand((n,), -2.0, 3.0, seed, dtype))
    x = np.full(n, 3.0, dtype)
    out, mask = np.empty_like(x), np.empty_like(x)
    lib.nna_dropout(cuda_host.ptr(x), cuda_host.ptr(out), cuda_host.ptr(mask), i64(n), k0, k1,
                    t(0.3), t(1 / 0.7))
    keep = want_rand((n,), 0.0, 1.0, seed, dtype) >= np.dtype(dtype).type(0.3)
    np.testing.assert_array_equal(mask, keep * np.dtype(dtype).type(1 / 0.7))
    np.testing.assert_array_equal(out, x * mask)
    z = np.empty(1 << 16, dtype)
    lib.nna_randn(cuda_host.ptr(z), i64(z.size), k0, k1, t(1.0), t(0.0))
    assert_normals_close(z, philox.normal(seed, z.size, dtype), dtype)


# -- statistics ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=ids)
def test_statistics(backend, dtype):
    """2^20 draws: uniform mean and variance within 5 standard errors, 64-bin chi-square
    below its 0.1% point, lag-1 correlation within 5/sqrt(n); normal mean, variance,
    kurtosis; uniforms of neighbouring seeds uncorrelated."""
    n = 1 << 20
    u = F.rand((n,), seed=3, dtype=dtype).numpy().astype(np.float64)
    assert abs(u.mean() - 0.5) < 5 * math.sqrt(1 / 12 / n)
    assert abs(u.var() - 1 / 12) < 5 * math.sqrt(1 / 180 / n)
    hist = np.bincount((u * 64).astype(np.int64), minlength=64)
    assert ((hist - n / 64) ** 2 / (n / 64)).sum() < 103.4  # chi2(63) 0.999 quantile
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 5 / math.sqrt(n)
    v = F.rand((n,), seed=4, dtype=dtype).numpy().astype(np.float64)
    assert abs(np.corrcoef(u, v)[0, 1]) < 5 / math.sqrt(n)
    z = F.randn((n,), seed=3, dtype=dtype).numpy().astype(np.float64)
    assert abs(z.mean()) < 5 / math.sqrt(n) and abs(z.var() - 1) < 5 * math.sqrt(2 / n)
    assert abs((z ** 4).mean() - 3) < 5 * math.sqrt(96 / n)
    assert np.isfinite(z).all() and np.abs(z).max() < 9
