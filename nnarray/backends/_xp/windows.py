"""Gather indices of ``im2col`` for one image, so that small batches run it (and ``col2im``
on windows that never overlap) as one ``take`` along the flattened image.

numpy copies a window offset at a time with inner loops as short as the output width (a
2x2 pooling of 8x8 images: 4 elements) and pays per loop: ``take`` with a cached index
runs the same gather at a flat per-element cost (pooling's gather and its ``col2im``:
benchmarks/README.md).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

#: Longest per-image index kept (int64): beyond it the loop over offsets is as fast.
MAX_INDEX = 1 << 16


@lru_cache(maxsize=64)
def im2col_index(c: int, h: int, w: int, kernel: tuple, stride: tuple, pad: tuple,
                 dilation: tuple, oh: int, ow: int) -> np.ndarray:
    """For each ``im2col`` output of one image, in its ``(c, i, j, oy, ox)`` order, the
    flat position in the ``(c, h, w)`` image it copies, or ``c*h*w`` where it lies in the
    padding (read-only)."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, pad, dilation
    ch, i, j, oy, ox = np.ix_(np.arange(c), np.arange(kh), np.arange(kw), np.arange(oh),
                              np.arange(ow))
    r, s = oy * sh + i * dh - ph, ox * sw + j * dw - pw
    inside = (r >= 0) & (r < h) & (s >= 0) & (s < w)
    idx = np.where(inside, (ch * h + r) * w + s, c * h * w).reshape(-1)
    idx.flags.writeable = False
    return idx


@lru_cache(maxsize=64)
def col2im_index(c: int, h: int, w: int, kernel: tuple, stride: tuple, pad: tuple,
                 dilation: tuple, oh: int, ow: int) -> tuple[np.ndarray, bool] | None:
    """Where windows never overlap: for each pixel of one ``(c, h, w)`` image, the flat
    position in its ``(c*kh*kw, oh*ow)`` columns of the one output that copied it, or
    ``c*kh*kw*oh*ow`` where none did (read-only), and whether some pixel is in no window;
    ``None`` where windows overlap."""
    fwd = im2col_index(c, h, w, kernel, stride, pad, dilation, oh, ow)
    m = c * h * w
    hit = np.flatnonzero(fwd < m)
    src = fwd[hit]
    if len(np.unique(src)) != len(src):
        return None
    inv = np.full(m, len(fwd), np.int64)
    inv[src] = hit
    inv.flags.writeable = False
    return inv, len(src) < m
