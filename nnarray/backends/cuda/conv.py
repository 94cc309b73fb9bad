"""im2col and col2im as single kernels (one thread per output element), instead of
``kh*kw`` strided slice copies.

im2col only moves bytes, so one kernel per item size serves every dtype (the pad value
is passed as its bit pattern). col2im gathers, for each image element, the window
entries that read it: no atomics, and the sum order is fixed, so results are
deterministic. float16 and integer col2im use the CuPy composition.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import raw
from .scope import register

_IM2COL = raw.Source(r"""
extern "C" __global__ void nna_im2col(const T* x, T* cols, T pad, long long total,
        long long C, long long H, long long W, long long KH, long long KW,
        long long OH, long long OW, long long SH, long long SW, long long PH, long long PW,
        long long DH, long long DW) {
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
         idx += (long long)blockDim.x * gridDim.x) {
        long long ow = idx % OW;
        long long r = idx / OW;
        long long oh = r % OH; r /= OH;
        long long j = r % KW; r /= KW;
        long long i = r % KH; r /= KH;
        long long c = r % C;
        long long n = r / C;
        long long h = oh * SH - PH + i * DH;
        long long w = ow * SW - PW + j * DW;
        cols[idx] = (h >= 0 && h < H && w >= 0 && w < W) ? x[((n * C + c) * H + h) * W + w]
                                                         : pad;
    }
}
""", by="itemsize")

_COL2IM = raw.Source(r"""
extern "C" __global__ void nna_col2im(const T* cols, T* img, long long total,
        long long C, long long H, long long W, long long KH, long long KW,
        long long OH, long long OW, long long SH, long long SW, long long PH, long long PW,
        long long DH, long long DW) {
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
         idx += (long long)blockDim.x * gridDim.x) {
        long long w = idx % W;
        long long r = idx / W;
        long long h = r % H;
        long long nc = r / H;
        A acc = (A)0;
        for (long long i = 0; i < KH; ++i) {
            long long hp = h + PH - i * DH;
            if (hp < 0) break;
            if (hp % SH != 0) continue;
            long long oh = hp / SH;
            if (oh >= OH) continue;
            for (long long j = 0; j < KW; ++j) {
                long long wp = w + PW - j * DW;
                if (wp < 0) break;
                if (wp % SW != 0) continue;
                long long ow = wp / SW;
                if (ow >= OW) continue;
                acc += (A)cols[((nc * KH + i) * KW + j) * OH * OW + oh * OW + ow];
            }
        }
        img[idx] = (T)acc;
    }
}
""")


def _out_hw(h: int, w: int, kernel, stride, pad, dilation) -> tuple[int, int]:
    return tuple((s + 2 * p - d * (k - 1) - 1) // st + 1
                 for s, k, st, p, d in zip((h, w), kernel, stride, pad, dilation))


def _geometry(kernel, stride, pad, dilation, oh: int, ow: int) -> tuple:
    vals = (*kernel, oh, ow, *stride, *pad, *dilation)
    return tuple(raw.i64(v) for v in vals)


def _pad_bits(value: float, dtype: np.dtype) -> Any:
    """``value`` cast to ``dtype`` (as numpy would fill), as same-size unsigned bits."""
    with np.errstate(invalid="ignore", over="ignore"):
        v = np.asarray(value).astype(dtype)
    return v.view(raw.UTYPES[dtype.itemsize][1])[()]


def register_conv(xp: Any, generic: dict) -> None:
    """Register the kernels; ``generic`` maps op names to the CuPy compositions."""

    @register("im2col")
    def im2col(x, kernel, stride, pad, dilation, pad_value):
        n, c, h, w = x.shape
        oh, ow = _out_hw(h, w, kernel, stride, pad, dilation)
        cols = xp.empty((n, c * kernel[0] * kernel[1], oh * ow), x.dtype)
        total = cols.size
        k = raw.kernel_bytes(_IM2COL, "nna_im2col", x.dtype.itemsize)
        raw.launch(k, total, (x, cols, _pad_bits(pad_value, x.dtype), raw.i64(total),
                              raw.i64(c), raw.i64(h), raw.i64(w),
                              *_geometry(kernel, stride, pad, dilation, oh, ow)))
        return cols

    @register("col2im")
    def col2im(cols, size, kernel, stride, pad, dilation):
        if cols.dtype not in raw.CTYPES:
            return generic["col2im"](cols, size, kernel, stride, pad, dilation)
        c, h, w = size
        n = cols.shape[0]
        oh, ow = _out_hw(h, w, kernel, stride, pad, dilation)
        img = xp.empty((n, c, h, w), cols.dtype)
        total = img.size
        raw.launch(raw.kernel(_COL2IM, "nna_col2im", cols.dtype), total,
                   (cols, img, raw.i64(total), raw.i64(c), raw.i64(h), raw.i64(w),
                    *_geometry(kernel, stride, pad, dilation, oh, ow)))
        return img
