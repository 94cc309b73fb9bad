"""rand, randn and dropout from Philox-4x32-10: the numbers of ``nnarray.philox`` (the
numpy backend's), in its layout and formulas.

Block ``g`` of a draw with seed ``s`` is Philox of the counter ``(g_lo, g_hi, stream, 0)``
under the key ``(s_lo, s_hi)``, giving 4 float32 or 2 float64 values: a pure function of
the seed and the position, whatever the GPU or the launch shape (a thread computes whole
blocks, grid-stride). No generator state is created per call (CuPy's seeded
``Generator`` initializes one cuRAND state per thread, which costs more than the draw).
``u * scale + shift`` uses ``__fmul_rn``/``__fadd_rn`` (never fused into an FMA) so
uniforms round as numpy's do, bit for bit. ``dropout`` draws its mask with the same
uniforms as ``rand`` in one fused kernel, so it equals the composition
``x * (rand(x.shape, seed) >= p) / (1 - p)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import philox
from ...ops.random import next_seed
from . import raw
from .scope import register

_SRC = raw.Source(r"""
struct nna_u4 { unsigned int x, y, z, w; };

__device__ __forceinline__ unsigned int nna_mulhi(unsigned int a, unsigned int b) {
    return (unsigned int)(((unsigned long long)a * b) >> 32);
}

/* Philox-4x32-10 of counter c under key (k0, k1). */
__device__ __forceinline__ nna_u4 nna_philox(nna_u4 c, unsigned int k0, unsigned int k1) {
    for (int r = 0; r < 10; ++r) {
        const unsigned int hi0 = nna_mulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
        const unsigned int hi1 = nna_mulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
        const nna_u4 n = {hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0};
        c = n;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c;
}

__device__ __forceinline__ nna_u4 nna_block(long long g, unsigned int stream,
                                            unsigned int k0, unsigned int k1) {
    const nna_u4 c = {(unsigned int)g, (unsigned int)((unsigned long long)g >> 32), stream, 0u};
    return nna_philox(c, k0, k1);
}

/* Uniforms: 24 bits per float in [0, 1) (plus = 1: (0, 1]); 53 bits per double. */
__device__ __forceinline__ float nna_u24(unsigned int w, unsigned int plus) {
    return (float)((w >> 8) + plus) * 5.9604644775390625e-08f;
}
__device__ __forceinline__ double nna_u53(unsigned int a, unsigned int b,
                                          unsigned long long plus) {
    return (double)(((((unsigned long long)(a >> 5)) << 26) | (b >> 6)) + plus)
           * 1.1102230246251565e-16;
}

__device__ __forceinline__ void nna_uniform(nna_u4 w, float* v) {
    v[0] = nna_u24(w.x, 0u); v[1] = nna_u24(w.y, 0u);
    v[2] = nna_u24(w.z, 0u); v[3] = nna_u24(w.w, 0u);
}
__device__ __forceinline__ void nna_uniform(nna_u4 w, double* v) {
    v[0] = nna_u53(w.x, w.y, 0ull); v[1] = nna_u53(w.z, w.w, 0ull);
}

/* Box-Muller: r = sqrt(-2 log u1), t = fl(2 pi) u2; r cos t, r sin t. */
__device__ __forceinline__ void nna_normal(nna_u4 w, float* v) {
    const float r0 = sqrtf(-2.0f * logf(nna_u24(w.x, 1u)));
    const float t0 = 6.28318548202514648f * nna_u24(w.y, 0u);
    const float r1 = sqrtf(-2.0f * logf(nna_u24(w.z, 1u)));
    const float t1 = 6.28318548202514648f * nna_u24(w.w, 0u);
    v[0] = r0 * cosf(t0); v[1] = r0 * sinf(t0); v[2] = r1 * cosf(t1); v[3] = r1 * sinf(t1);
}
__device__ __forceinline__ void nna_normal(nna_u4 w, double* v) {
    const double r = sqrt(-2.0 * log(nna_u53(w.x, w.y, 1ull)));
    const double t = 6.283185307179586232 * nna_u53(w.z, w.w, 0ull);
    v[0] = r * cos(t); v[1] = r * sin(t);
}

/* a * b + c in two roundings (never contracted into an FMA). */
__device__ __forceinline__ float nna_affine(float a, float b, float c) {
    return __fadd_rn(__fmul_rn(a, b), c);
}
__device__ __forceinline__ double nna_affine(double a, double b, double c) {
    return __dadd_rn(__dmul_rn(a, b), c);
}

#define NNA_PER ((long long)(16 / sizeof(T)))

// One grid-stride loop for both draws: uniforms (stream 0) or normals (stream 1), each
// value mapped by v * a + b.
template <bool NORMAL>
__device__ __forceinline__ void nna_draw(T* y, long long n, unsigned int k0,
                                         unsigned int k1, T a, T b) {
    const long long blocks = (n + NNA_PER - 1) / NNA_PER;
    for (long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x; g < blocks;
         g += (long long)blockDim.x * gridDim.x) {
        T v[4];
        if (NORMAL) nna_normal(nna_block(g, 1u, k0, k1), v);
        else nna_uniform(nna_block(g, 0u, k0, k1), v);
        for (long long j = 0, i = g * NNA_PER; j < NNA_PER && i < n; ++j, ++i)
            y[i] = nna_affine(v[j], a, b);
    }
}

extern "C" __global__ void nna_rand(T* y, long long n, unsigned int k0, unsigned int k1,
                                    T scale, T low) {
    nna_draw<false>(y, n, k0, k1, scale, low);
}

extern "C" __global__ void nna_randn(T* y, long long n, unsigned int k0, unsigned int k1,
                                     T sigma, T mu) {
    nna_draw<true>(y, n, k0, k1, sigma, mu);
}

extern "C" __global__ void nna_dropout(const T* x, T* y, T* mask, long long n,
                                       unsigned int k0, unsigned int k1, T p, T scale) {
    const long long blocks = (n + NNA_PER - 1) / NNA_PER;
    for (long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x; g < blocks;
         g += (long long)blockDim.x * gridDim.x) {
        T v[4];
        nna_uniform(nna_block(g, 0u, k0, k1), v);
        for (long long j = 0, i = g * NNA_PER; j < NNA_PER && i < n; ++j, ++i) {
            const T m = v[j] >= p ? scale : (T)0;
            mask[i] = m;
            y[i] = x[i] * m;
        }
    }
}
""")


def keys(seed: int) -> tuple[np.uint32, np.uint32]:
    """The kernels' two key arguments of ``seed`` (``philox.key_words``)."""
    k0, k1 = philox.key_words(seed)
    return np.uint32(k0), np.uint32(k1)


def blocks(n: int, dtype: np.dtype) -> int:
    """Work items of a draw of ``n`` values: one per Philox block."""
    return -(-n // (16 // np.dtype(dtype).itemsize))


def _gen_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(dtype) if np.dtype(dtype) in raw.CTYPES else np.dtype(np.float32)


def register_random(xp: Any) -> None:
    def draw(name: str, shape, a: float, b: float, seed: int, dtype) -> Any:
        g = _gen_dtype(dtype)
        y = xp.empty(shape, g)
        t = g.type
        raw.launch(raw.kernel(_SRC, name, g), blocks(y.size, g),
                   (y, raw.i64(y.size), *keys(seed), t(a), t(b)))
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
            keep = u >= x.dtype.type(p)  # p rounded to x's dtype, as on every backend
            mask = keep.astype(x.dtype) * x.dtype.type(1.0 / (1.0 - p))
            return x * mask, mask
        y = xp.empty(x.shape, x.dtype)
        mask = xp.empty(x.shape, x.dtype)
        t = x.dtype.type
        raw.launch(raw.kernel(_SRC, "nna_dropout", x.dtype), blocks(x.size, x.dtype),
                   (x, y, mask, raw.i64(x.size), *keys(seed), t(p), t(1.0 / (1.0 - p))))
        return y, mask
