"""Counter-based random numbers: element ``i`` of a draw with seed ``s`` is a pure
function of ``(s, i)`` (SplitMix64 of ``key(s) + (i + 1) * golden``).

No generator state is created per call (CuPy's seeded ``Generator`` initializes one
cuRAND state per thread, which costs more than the draw), results do not depend on the
GPU model or launch shape, and the same seed gives the same numbers run to run. Uniform
floats take the top 24 (float32) or 53 (float64) bits; normals use Box-Muller.
``dropout`` draws its mask with the same uniforms as ``rand`` in one fused kernel, so it
equals the composition ``x * (rand(x.shape, seed) >= p) / (1 - p)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops.random import next_seed
from . import raw
from .scope import register

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15

_SRC = raw.Source(r"""
__device__ __forceinline__ unsigned long long nna_mix(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

__device__ __forceinline__ unsigned long long nna_bits(unsigned long long key,
                                                       unsigned long long i) {
    return nna_mix(key + (i + 1ULL) * 0x9E3779B97F4A7C15ULL);
}

/* A uniform in [0, 1) from the top bits of b: 24 for float, 53 for double. */
__device__ __forceinline__ float nna_unit(unsigned long long b, float) {
    return (float)(b >> 40) * 5.9604644775390625e-08f;
}
__device__ __forceinline__ double nna_unit(unsigned long long b, double) {
    return (double)(b >> 11) * 1.1102230246251565e-16;
}

extern "C" __global__ void nna_rand(T* y, long long n, unsigned long long key, T scale,
                                    T low) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        y[i] = nna_unit(nna_bits(key, (unsigned long long)i), (T)0) * scale + low;
    }
}

extern "C" __global__ void nna_randn(T* y, long long n, unsigned long long key, T sigma,
                                     T mu) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        unsigned long long c = 2ULL * (unsigned long long)i;
        T u1 = (T)1 - nna_unit(nna_bits(key, c), (T)0);     /* (0, 1]: log is finite */
        T u2 = nna_unit(nna_bits(key, c + 1ULL), (T)0);
        T z = SQRT((T)-2 * LOG(u1)) * COSPI((T)2 * u2);
        y[i] = z * sigma + mu;
    }
}

extern "C" __global__ void nna_dropout(const T* x, T* y, T* mask, long long n,
                                       unsigned long long key, T p, T scale) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        T m = nna_unit(nna_bits(key, (unsigned long long)i), (T)0) >= p ? scale : (T)0;
        mask[i] = m;
        y[i] = x[i] * m;
    }
}
""")


def _splitmix(z: int) -> int:
    z = (z + _GOLDEN) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def key(seed: int) -> np.uint64:
    """The 64-bit stream key of ``seed`` (seeds are mixed so nearby seeds do not overlap)."""
    return np.uint64(_splitmix(int(seed) & _MASK))


def _gen_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(dtype) if np.dtype(dtype) in raw.CTYPES else np.dtype(np.float32)


def register_random(xp: Any) -> None:
    def draw(name: str, shape, a: float, b: float, seed: int, dtype) -> Any:
        g = _gen_dtype(dtype)
        y = xp.empty(shape, g)
        t = g.type
        raw.launch(raw.kernel(_SRC, name, g), y.size,
                   (y, raw.i64(y.size), key(seed), t(a), t(b)))
        return y if g == dtype else y.astype(dtype)

    @register("rand")
    def rand(shape, low, high, seed, dtype):
        return draw("nna_rand", shape, high - low, low, seed, dtype)

    @register("randn")
    def randn(shape, mu, sigma, seed, dtype):
        return draw("nna_randn", shape, sigma, mu, seed, dtype)

    @register("dropout")
    def dropout(x, p, seed):
        if seed is None:
            seed = next_seed()
        if x.dtype not in raw.CTYPES:
            u = rand(x.shape, 0.0, 1.0, seed, x.dtype)
            mask = (u >= p).astype(x.dtype) * x.dtype.type(1.0 / (1.0 - p))
            return x * mask, mask
        y = xp.empty(x.shape, x.dtype)
        mask = xp.empty(x.shape, x.dtype)
        t = x.dtype.type
        raw.launch(raw.kernel(_SRC, "nna_dropout", x.dtype), x.size,
                   (x, y, mask, raw.i64(x.size), key(seed), t(p), t(1.0 / (1.0 - p))))
        return y, mask
