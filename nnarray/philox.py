"""Philox-4x32-10 (Salmon et al., SC'11; Random123), the one generator of every backend,
and the formulas that turn its words into numbers, vectorized in numpy (the reference
the OpenCL and CUDA kernels reproduce).

The numbers of a draw with seed ``s`` are a pure function of ``s`` and the position:
block ``g`` is Philox of the counter ``(g mod 2^32, g >> 32, stream, 0)`` under the key
``(s mod 2^32, (s >> 32) mod 2^32)``, with ``stream`` 0 for uniforms (``rand``,
``dropout``), 1 for normals (``randn``) and 2 for the 64-bit words of permutations.

- float32 uniform: 4 per block, ``(w >> 8) * 2^-24``, in ``[0, 1)``.
- float64 uniform: 2 per block, ``((w0 >> 5) * 2^26 + (w1 >> 6)) * 2^-53`` from the
  pairs ``(w0, w1)`` and ``(w2, w3)``, in ``[0, 1)``.
- normals, Box-Muller on the same pairs: ``u1`` in ``(0, 1]`` (the uniform's integer plus
  one, times its scale), ``u2`` in ``[0, 1)``; ``r = sqrt(-2 log u1)``,
  ``t = fl(2 pi) * u2``; ``r cos t`` then ``r sin t``. float32 normals take ``(w0, w1)``
  and ``(w2, w3)`` with 24 bits each, 4 per block; float64 normals take 53-bit ``u1``
  from ``(w0, w1)`` and ``u2`` from ``(w2, w3)``, 2 per block.

Every step but ``log``, ``cos``, ``sin`` is exact or one correctly rounded IEEE operation
(no fused multiply-add), so uniforms are bit-identical on every backend and normals
differ only by those functions' last-place errors (docs/api.md states the bound).
"""

from __future__ import annotations

import numpy as np

M0, M1 = 0xD2511F53, 0xCD9E8D57  # the multipliers
W0, W1 = 0x9E3779B9, 0xBB67AE85  # the key increments (golden ratio, sqrt(3) - 1)
MASK32, MASK64 = 0xFFFFFFFF, (1 << 64) - 1
UNIFORM, NORMAL, PERMUTATION = 0, 1, 2  # the counter's third word per distribution
#: Blocks per numpy pass: the temporaries (4 words x 8 bytes each) stay in the caches
#: (a larger chunk spills them; benchmarks/README.md).
CHUNK = 1 << 14

_TWO_PI = {np.dtype(np.float32): np.float32(2 * np.pi), np.dtype(np.float64): 2 * np.pi}


def key_words(seed: int) -> tuple[int, int]:
    """The two 32-bit key words of a seed (taken modulo 2^64)."""
    s = int(seed) & MASK64
    return s & MASK32, s >> 32


def philox4x32(ctr, key: tuple[int, int], rounds: int = 10) -> tuple[np.ndarray, ...]:
    """Philox-4x32 of the counter words ``ctr`` (four ints or uint arrays, broadcast)
    under ``key``: four uint64 arrays holding 32-bit words."""
    c0, c1, c2, c3 = (np.asarray(c, np.uint64) & np.uint64(MASK32) for c in ctr)
    k0, k1 = (int(k) & MASK32 for k in key)
    m0, m1, low, shift = np.uint64(M0), np.uint64(M1), np.uint64(MASK32), np.uint64(32)
    for _ in range(rounds):
        p0, p1 = c0 * m0, c2 * m1  # 32 x 32 -> 64 bits, exact in uint64
        c0, c1, c2, c3 = ((p1 >> shift) ^ c1 ^ np.uint64(k0), p1 & low,
                          (p0 >> shift) ^ c3 ^ np.uint64(k1), p0 & low)
        k0, k1 = (k0 + W0) & MASK32, (k1 + W1) & MASK32
    return c0, c1, c2, c3


def blocks(seed: int, start: int, count: int, stream: int) -> np.ndarray:
    """Blocks ``start .. start + count - 1`` of ``seed``'s ``stream``: ``(count, 4)``
    uint64 words."""
    g = np.arange(start, start + count, dtype=np.uint64)
    return np.stack(philox4x32((g, g >> np.uint64(32), stream, 0), key_words(seed)), axis=1)


def _draw(seed: int, n: int, per: int, stream: int, convert, dtype) -> np.ndarray:
    """``n`` values, ``per`` per block, ``convert(words) -> (count, per) values``."""
    out = np.empty(n, dtype)
    nblocks = -(-n // per)
    for start in range(0, nblocks, CHUNK):
        count = min(CHUNK, nblocks - start)
        v = convert(blocks(seed, start, count, stream)).reshape(-1)
        lo = start * per
        out[lo:lo + len(v)] = v[:n - lo]
    return out


def _u24(w: np.ndarray, plus: int = 0) -> np.ndarray:
    return ((w >> np.uint64(8)) + np.uint64(plus)).astype(np.float32) * np.float32(2.0 ** -24)


def _u53(a: np.ndarray, b: np.ndarray, plus: int = 0) -> np.ndarray:
    i = ((a >> np.uint64(5)) << np.uint64(26)) | (b >> np.uint64(6))
    return (i + np.uint64(plus)).astype(np.float64) * 2.0 ** -53


def _check_dtype(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype not in _TWO_PI:
        raise ValueError(f"philox: draws are float32 or float64, got {dtype}")
    return dtype


def _uniform_words(dtype: np.dtype):
    if dtype == np.float32:
        return 4, lambda w: _u24(w)
    return 2, lambda w: np.stack([_u53(w[:, 0], w[:, 1]), _u53(w[:, 2], w[:, 3])], axis=1)


def uniform(seed: int, n: int, dtype=np.float32) -> np.ndarray:
    """``n`` uniforms in ``[0, 1)`` (float32 or float64) of ``seed``."""
    dtype = _check_dtype(dtype)
    per, convert = _uniform_words(dtype)
    return _draw(seed, n, per, UNIFORM, convert, dtype)


def box_muller(u1: np.ndarray, u2: np.ndarray) -> np.ndarray:
    """``(r cos t, r sin t)`` side by side, ``r = sqrt(-2 log u1)``, ``t = fl(2 pi) u2``
    (each step one rounding in ``u1``'s dtype)."""
    r = np.sqrt(u1.dtype.type(-2) * np.log(u1))
    t = _TWO_PI[u1.dtype] * u2
    return np.stack([r * np.cos(t), r * np.sin(t)], axis=-1)


def _normal_words(dtype: np.dtype):
    if dtype == np.float32:
        return 4, lambda w: box_muller(_u24(w[:, 0::2], 1), _u24(w[:, 1::2]))
    return 2, lambda w: box_muller(_u53(w[:, 0], w[:, 1], 1), _u53(w[:, 2], w[:, 3]))


def normal(seed: int, n: int, dtype=np.float32) -> np.ndarray:
    """``n`` standard normals (float32 or float64) of ``seed``, by Box-Muller."""
    dtype = _check_dtype(dtype)
    per, convert = _normal_words(dtype)
    return _draw(seed, n, per, NORMAL, convert, dtype)


def bits64(seed: int, n: int) -> np.ndarray:
    """``n`` 64-bit words of ``seed``'s permutation stream, ``w0 | w1 << 32`` then
    ``w2 | w3 << 32`` per block."""
    def convert(w):
        s = np.uint64(32)
        return np.stack([w[:, 0] | (w[:, 1] << s), w[:, 2] | (w[:, 3] << s)], axis=1)
    return _draw(seed, n, 2, PERMUTATION, convert, np.uint64)


def permutation(seed: int, n: int) -> np.ndarray:
    """A permutation of ``range(n)``: the stable order of ``bits64(seed, n)``."""
    return np.argsort(bits64(seed, n), kind="stable")


def derive(key: int, count: int, lane: int, tag: int) -> int:
    """The seed of a stream's ``count``-th draw: words 0 and 1 of Philox of the counter
    ``(count mod 2^32, count >> 32, lane, tag)`` under ``key``, as ``w0 | w1 << 32``."""
    w = philox4x32((count & MASK32, (count >> 32) & MASK32, lane, tag), key_words(key))
    return int(w[0]) | int(w[1]) << 32
