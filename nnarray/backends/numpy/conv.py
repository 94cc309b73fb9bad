"""Host ``conv2d`` and pooling kernels: the ops' compositions (``ops/conv.py``,
``ops/pooling.py``) run on numpy arrays in one call, so that a static graph holding them
stays one generated function of plain kernel calls (a composite kernel is not one)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...ops.conv import out_size
from ...ops.pooling import lowest
from ...registry import backend_kernels, register_kernel
from . import reduction  # noqa: F401  (registers the kernels called here, im2col's too)

_k = backend_kernels("numpy")
_im2col: Callable = _k["im2col"]
_max: Callable = _k["max"]
_mean: Callable = _k["mean"]


@register_kernel("conv2d", "numpy")
def conv2d(x: np.ndarray, W: np.ndarray, b: np.ndarray | None = None, stride: tuple = (1, 1),
           pad: tuple = (0, 0), dilation: tuple = (1, 1), groups: int = 1) -> np.ndarray:
    """``im2col`` then one (batched) matmul per group, plus the bias."""
    n, _, h, w = x.shape
    o, cg, kh, kw = W.shape
    ckk = cg * kh * kw
    cols = _im2col(x, (kh, kw), stride, pad, dilation, 0.0)
    if groups == 1:
        y = np.matmul(W.reshape(o, ckk), cols)
    else:
        y = np.matmul(W.reshape(groups, o // groups, ckk),
                      cols.reshape(n, groups, ckk, cols.shape[2]))
    y = y.reshape(n, o, out_size("conv2d", h, kh, stride[0], pad[0], dilation[0], "height"),
                  out_size("conv2d", w, kw, stride[1], pad[1], dilation[1], "width"))
    if b is None:
        return y
    b = b.reshape(1, o, 1, 1)
    return np.add(y, b, out=y) if np.result_type(y, b) == y.dtype else np.add(y, b)


def _pooling(reduce: Callable, is_max: bool) -> Callable:
    def pool(x: np.ndarray, kernel: tuple, stride: tuple, pad: tuple) -> np.ndarray:
        h, w = x.shape[-2:]
        cols = _im2col(x.reshape(math.prod(x.shape[:-2]), 1, h, w), kernel, stride, pad,
                       (1, 1), lowest(x.dtype) if is_max else 0.0)
        y = reduce(cols, (1,), True)
        return y.reshape(x.shape[:-2] + (out_size("pool", h, kernel[0], stride[0], pad[0], 1,
                                                  "height"),
                                         out_size("pool", w, kernel[1], stride[1], pad[1], 1,
                                                  "width")))
    return pool


register_kernel("max_pooling", "numpy")(_pooling(_max, True))
register_kernel("average_pooling", "numpy")(_pooling(_mean, False))
