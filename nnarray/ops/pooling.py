"""Pooling: ``max_pooling`` and ``average_pooling``, one op each, over the last two axes.

Kernel contract: ``max_pooling(x, kernel, stride, pad)`` / ``average_pooling(...)`` with
the attributes as pairs, on ``x`` of shape ``(..., H, W)``: the max (padding never wins)
or the mean (padding counted as zeros) of each window. The composite kernels run
``im2col`` on ``(prod(...), 1, H, W)`` and reduce the window axis; a backend may register
a native kernel. The backward rules are written with the same primitives.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import ShapeError
from ..registry import register_composite
from .common import pair, require_array, require_float
from .conv import col2im_op as col2im
from .conv import im2col_op as im2col
from .conv import onnx_im2col, out_size
from .op import Op
from .reduction import max_op as rmax
from .reduction import mean_op as rmean
from .shape import reshape_op as reshape
from .surfaces import declare


def _infer(op: str) -> Any:
    def infer(inputs, attrs):
        if len(inputs) != 1:
            raise TypeError(f"{op}: takes one input x, got {len(inputs)}")
        (x,) = inputs
        (require_float if op == "average_pooling" else require_array)(op, "x", x)
        if x.ndim < 2:
            raise ShapeError(f"{op}: x must have at least 2 dims (..., H, W), got {x.shape}")
        k = attrs["kernel"] = pair(op, "kernel", attrs["kernel"], 1)
        stride = attrs.get("stride")
        s = attrs["stride"] = k if stride is None else pair(op, "stride", stride, 1)
        p = attrs["pad"] = pair(op, "pad", attrs.get("pad", 0), 0)
        h, w = x.shape[-2:]
        oh = out_size(op, h, k[0], s[0], p[0], 1, "height")
        ow = out_size(op, w, k[1], s[1], p[1], 1, "width")
        return ((x.shape[:-2] + (oh, ow), x.dtype),)
    return infer


max_pooling_op = Op("max_pooling", _infer("max_pooling"))
average_pooling_op = Op("average_pooling", _infer("average_pooling"))


def lowest(dtype: Any) -> float:
    """What max pooling pads with: below every value of ``dtype``."""
    d = np.dtype(dtype)
    return (float("-inf") if d.kind == "f" else float(np.iinfo(d).min) if d.kind in "iu"
            else 0.0)


def _windows(x: Any, kernel: tuple, stride: tuple, pad: tuple, pad_value: float) -> Any:
    """``im2col`` of ``x`` as ``(prod(...), 1, H, W)``: ``(M, kh*kw, OH*OW)``."""
    h, w = x.shape[-2:]
    m = math.prod(x.shape[:-2])
    return im2col(reshape(x, shape=(m, 1, h, w)), kernel=kernel, stride=stride, pad=pad,
                  pad_value=pad_value)


def _compose(reduce: Any, max_: bool) -> Any:
    def pool(x: Any, kernel: tuple, stride: tuple, pad: tuple) -> Any:
        cols = _windows(x, kernel, stride, pad, lowest(x.dtype) if max_ else 0.0)
        y = reduce(cols, axis=1, keepdims=False)
        oh, ow = out_size("pool", x.shape[-2], kernel[0], stride[0], pad[0], 1, "height"), \
            out_size("pool", x.shape[-1], kernel[1], stride[1], pad[1], 1, "width")
        return reshape(y, shape=x.shape[:-2] + (oh, ow))
    return pool


register_composite("max_pooling", _compose(rmax, True))
register_composite("average_pooling", _compose(rmean, False))


def _onnx_pooling(ex: Any, n: Any, outs: list) -> None:
    """``MaxPool``/``AveragePool`` on ``(N, C, H, W)``; other ranks are reshaped to
    ``(M, 1, H, W)`` and back. Max pooling of integers (which ONNX's MaxPool does not
    take) reduces the windows of ``onnx_im2col`` instead."""
    x, a = n.inputs[0], n.attrs
    out_shape = n.out_metas[0][0]
    h, w = x.shape[-2:]
    m = int(np.prod(x.shape[:-2], dtype=np.int64))
    xv = ex.value(x)
    four = x.ndim == 4
    if not four:
        xv = ex.emit("Reshape", [xv, ex.ints([m, 1, h, w])])
    res = None if not four else outs
    if n.name == "max_pooling" and x.dtype.kind != "f":
        cols = onnx_im2col(ex, xv, (m, 1, h, w), dict(a, dilation=(1, 1)), lowest(x.dtype),
                           x.dtype)
        p = ex.reduce("ReduceMax", cols, [1], True)
        ex.emit("Reshape", [p, ex.ints(out_shape)], outs)
        return
    attrs = {"kernel_shape": list(a["kernel"]), "strides": list(a["stride"]),
             "pads": list(a["pad"]) * 2}
    if n.name == "average_pooling":
        attrs["count_include_pad"] = 1
    p = ex.emit("MaxPool" if n.name == "max_pooling" else "AveragePool", [xv], res, **attrs)
    if not four:
        ex.emit("Reshape", [p, ex.ints(out_shape)], outs)


@declare(max_pooling_op, onnx=_onnx_pooling)
def max_pooling(x: Any, kernel: Any, stride: Any = None, pad: Any = 0) -> Any:
    """Max over ``kernel`` windows of the last two axes (padding never wins)."""
    return max_pooling_op(x, kernel=kernel, stride=stride, pad=pad)


@declare(average_pooling_op, onnx=_onnx_pooling)
def average_pooling(x: Any, kernel: Any, stride: Any = None, pad: Any = 0) -> Any:
    """Mean over ``kernel`` windows of the last two axes (padding counted as zeros)."""
    return average_pooling_op(x, kernel=kernel, stride=stride, pad=pad)


# -- backward rules -------------------------------------------------------------------
# The rules call the ops below this one (``ops``' layers), as ``F`` exposes them.
from .backward import backward as _backward  # noqa: E402
from .backward import fit as _fit  # noqa: E402
from .elementwise import functions as _ew  # noqa: E402
from .elementwise import where as _where  # noqa: E402
from .shape import broadcast_to as _broadcast_to  # noqa: E402


def _scatter(c: Any, gcols: Any) -> Any:
    """Window gradients ``(M, kh*kw, OH*OW)`` back to the input's shape (``col2im``)."""
    a = c.attrs
    shape = c.in_meta[0][0]
    m = math.prod(shape[:-2])
    gx = col2im(gcols, size=(1, *shape[-2:]), kernel=a["kernel"], stride=a["stride"],
                pad=a["pad"], dilation=(1, 1))
    return _fit(c, 0, reshape(gx, shape=shape) if shape != (m, 1, *shape[-2:]) else gx)


@_backward(max_pooling_op, inputs=(0,), outputs=(0,))
def _max_pooling_grad(c, g):
    """Every input equal to its window's max gets the window's gradient (as ``max``)."""
    x, y, a = c.inputs[0], c.outputs[0], c.attrs
    cols = _windows(x, a["kernel"], a["stride"], a["pad"], lowest(x.dtype))
    m, L = cols.shape[0], cols.shape[2]
    hit = _ew["equal"](cols, reshape(y, shape=(m, 1, L)))
    return (_scatter(c, _where(hit, reshape(g, shape=(m, 1, L)), 0.0)),)


@_backward(average_pooling_op)
def _average_pooling_grad(c, g):
    """Each window's gradient over its ``kh*kw`` entries (padding included, as ``mean``)."""
    a = c.attrs
    shape = c.in_meta[0][0]
    kk = a["kernel"][0] * a["kernel"][1]
    m, L = math.prod(shape[:-2]), g.shape[-2] * g.shape[-1]
    gc = reshape(g, shape=(m, 1, L)) * (1.0 / kk)
    return (_scatter(c, _broadcast_to(gc, (m, kk, L))),)
