"""Fused softmax, log-softmax and softmax cross-entropy: one kernel, one thread per row.

A row is the ``K`` elements along ``axis`` (stride ``inner``); each thread keeps a
running maximum and rescaled sum (the online softmax), so a row is read twice for
softmax and once for the loss, instead of the five whole-array passes of the
composition. Rows longer than ``MAX_ROW`` and float16 use the CuPy composition, whose
reductions spread one row over many threads. Labels are range-checked on the GPU on
both paths (``CudaDevice.check_range``): one out of ``[0, K)`` raises
``InvalidValueError`` at the next synchronization, as OpenCL's kernel does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import raw
from .devices import get_device
from .scope import register

MAX_ROW = 1024
#: What a label out of range raises (``CudaDevice.check_range``; OpenCL's wording).
LABEL_MESSAGE = "label {value} is out of range for {bound} classes"

_SRC = raw.Source(r"""
__device__ __forceinline__ void nna_row_stats(const T* xr, long long K, long long inner,
                                              A* m_out, A* s_out) {
    /* m: the running maximum; s: the sum of EXP(x - m) so far. An element equal to m
       adds 1, also when both are -inf (masked entries: they count until a finite
       maximum rescales them to 0; an all -inf row gives NaN, as numpy's x - max does).
       +inf or NaN make s NaN (EXP(inf - inf), EXP(NaN)), as in numpy. */
    A m = (A)xr[0];
    A s = (m < (A)0) ? (A)1 : EXP(m - m);
    for (long long k = 1; k < K; ++k) {
        A v = (A)xr[k * inner];
        if (v > m) { s = s * EXP(m - v) + EXP(v - v); m = v; }
        else { s += (v == m) ? (A)1 : EXP(v - m); }
    }
    *m_out = m; *s_out = s;
}

extern "C" __global__ void nna_softmax(const T* x, T* y, long long rows, long long K,
                                       long long inner, int log_mode) {
    for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < rows;
         r += (long long)blockDim.x * gridDim.x) {
        long long o = r / inner, i = r - o * inner;
        long long base = o * K * inner + i;
        A m, s;
        nna_row_stats(x + base, K, inner, &m, &s);
        if (log_mode) {
            A ls = LOG(s);
            for (long long k = 0; k < K; ++k)
                y[base + k * inner] = (T)(((A)x[base + k * inner] - m) - ls);
        } else {
            A inv = (A)1 / s;
            for (long long k = 0; k < K; ++k)
                y[base + k * inner] = (T)(EXP((A)x[base + k * inner] - m) * inv);
        }
    }
}

extern "C" __global__ void nna_softmax_xent(const T* x, const long long* t, T* y,
                                            long long rows, long long K, long long inner) {
    for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < rows;
         r += (long long)blockDim.x * gridDim.x) {
        long long o = r / inner, i = r - o * inner;
        long long base = o * K * inner + i;
        A m, s;
        nna_row_stats(x + base, K, inner, &m, &s);
        long long c = t[r];  /* out of [0, K): NaN here, InvalidValueError at the sync */
        A picked = (c >= 0 && c < K) ? (A)x[base + c * inner] : (A)NAN("");
        y[r] = (T)(LOG(s) + m - picked);
    }
}
""")


def _rows(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    """``(rows, K, inner)`` of ``shape`` seen as rows along ``axis``."""
    k = shape[axis]
    inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    return outer * inner, k, inner


def _fused(x: Any, axis: int) -> bool:
    return x.dtype in raw.CTYPES and 0 < x.shape[axis] <= MAX_ROW and x.size > 0


def register_softmax(xp: Any, generic: dict) -> None:
    """Register the fused kernels; ``generic`` maps op names to the CuPy compositions."""

    def softmax_like(log_mode: int, fallback: Any):
        def k(x, axis):
            if not _fused(x, axis):
                return fallback(x, axis)
            rows, kk, inner = _rows(x.shape, axis)
            y = xp.empty(x.shape, x.dtype)
            raw.launch(raw.kernel(_SRC, "nna_softmax", x.dtype), rows,
                       (x, y, raw.i64(rows), raw.i64(kk), raw.i64(inner), np.int32(log_mode)))
            return y
        return k

    register("softmax")(softmax_like(0, generic["softmax"]))
    register("log_softmax")(softmax_like(1, generic["log_softmax"]))

    @register("softmax_cross_entropy")
    def softmax_cross_entropy(x, t, axis):
        """A label out of ``[0, K)`` gives NaN and is reported at the next sync."""
        kk = x.shape[axis]
        tt = xp.ascontiguousarray(t.astype(np.int64, copy=False))
        get_device(x.data.device_id).check_range("softmax_cross_entropy", tt, 0, kk,
                                                  LABEL_MESSAGE)
        if not _fused(x, axis):
            return generic["softmax_cross_entropy"](x, tt, axis)
        rows, kk, inner = _rows(x.shape, axis)
        y = xp.empty(x.shape[:axis] + x.shape[axis + 1:], x.dtype)
        raw.launch(raw.kernel(_SRC, "nna_softmax_xent", x.dtype), rows,
                   (x, tt, y, raw.i64(rows), raw.i64(kk), raw.i64(inner)))
        return y
