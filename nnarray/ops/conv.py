"""Convolution and pooling, composed from ``im2col``/``col2im`` and ``matmul``.

Kernel contract: ``im2col(x, kernel, stride, pad, dilation, pad_value)`` maps
``(N, C, H, W)`` to ``(N, C*kh*kw, OH*OW)`` (row index ``(c*kh + i)*kw + j``), padding
with ``pad_value``; ``col2im(cols, size, kernel, stride, pad, dilation)`` is its adjoint
(scatter-add back to ``(N, C, H, W)``, ``size == (C, H, W)``). A backend that registers a
fused ``conv2d`` kernel is free to, but the composition works everywhere.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ShapeError
from .common import pair, require_array, require_float
from .elementwise import add
from .linalg import matmul
from .op import Op
from .reduction import max as rmax
from .reduction import mean as rmean
from .shape import reshape


def out_size(op: str, size: int, k: int, s: int, p: int, d: int, axis: str) -> int:
    o = (size + 2 * p - d * (k - 1) - 1) // s + 1
    if o <= 0:
        raise ShapeError(f"{op}: kernel {k} (dilation {d}) does not fit input {axis} {size} "
                         f"with pad {p}")
    return o


def _infer_im2col(inputs, attrs):
    (x,) = inputs
    require_array("im2col", "x", x)
    if x.ndim != 4:
        raise ShapeError(f"im2col: x must be (N, C, H, W), got {x.shape}")
    kh, kw = attrs["kernel"] = pair("im2col", "kernel", attrs["kernel"], 1)
    sh, sw = attrs["stride"] = pair("im2col", "stride", attrs.get("stride", 1), 1)
    ph, pw = attrs["pad"] = pair("im2col", "pad", attrs.get("pad", 0), 0)
    dh, dw = attrs["dilation"] = pair("im2col", "dilation", attrs.get("dilation", 1), 1)
    attrs["pad_value"] = float(attrs.get("pad_value", 0.0))
    n, c, h, w = x.shape
    oh = out_size("im2col", h, kh, sh, ph, dh, "height")
    ow = out_size("im2col", w, kw, sw, pw, dw, "width")
    return (((n, c * kh * kw, oh * ow), x.dtype),)


def _infer_col2im(inputs, attrs):
    (cols,) = inputs
    c, h, w = attrs["size"] = tuple(int(s) for s in attrs["size"])
    kh, kw = attrs["kernel"] = pair("col2im", "kernel", attrs["kernel"], 1)
    sh, sw = attrs["stride"] = pair("col2im", "stride", attrs.get("stride", 1), 1)
    ph, pw = attrs["pad"] = pair("col2im", "pad", attrs.get("pad", 0), 0)
    dh, dw = attrs["dilation"] = pair("col2im", "dilation", attrs.get("dilation", 1), 1)
    oh = out_size("col2im", h, kh, sh, ph, dh, "height")
    ow = out_size("col2im", w, kw, sw, pw, dw, "width")
    if cols.ndim != 3 or cols.shape[1:] != (c * kh * kw, oh * ow):
        raise ShapeError(f"col2im: cols has shape {cols.shape}, expected "
                         f"(N, {c * kh * kw}, {oh * ow})")
    return (((cols.shape[0], c, h, w), cols.dtype),)


im2col = Op("im2col", _infer_im2col)
col2im = Op("col2im", _infer_col2im)


def conv2d(x: Any, W: Any, b: Any = None, stride: Any = 1, pad: Any = 0, dilation: Any = 1,
           groups: int = 1) -> Any:
    """2-D convolution, NCHW; ``W`` is ``(out, in/groups, kh, kw)``."""
    require_float("conv2d", "x", x)
    require_float("conv2d", "W", W)
    if x.ndim != 4 or W.ndim != 4:
        raise ShapeError(f"conv2d: x must be (N, C, H, W) and W (O, C/groups, kh, kw), got "
                         f"x {x.shape}, W {W.shape}")
    g = int(groups)
    n, c, h, w = x.shape
    o, cg, kh, kw = W.shape
    if g < 1 or c % g or o % g or cg != c // g:
        raise ShapeError(f"conv2d: x {x.shape} and W {W.shape} do not fit groups={groups} "
                         "(need C % groups == 0, O % groups == 0, W.shape[1] == C / groups)")
    if b is not None:
        require_array("conv2d", "b", b)
        if b.shape != (o,):
            raise ShapeError(f"conv2d: b has shape {b.shape}, expected ({o},)")
    s, p, d = (pair("conv2d", "stride", stride, 1), pair("conv2d", "pad", pad, 0),
               pair("conv2d", "dilation", dilation, 1))
    oh = out_size("conv2d", h, kh, s[0], p[0], d[0], "height")
    ow = out_size("conv2d", w, kw, s[1], p[1], d[1], "width")
    cols = im2col(x, kernel=(kh, kw), stride=s, pad=p, dilation=d)
    if g == 1:
        y = matmul(reshape(W, shape=(o, cg * kh * kw)), cols)
    else:
        cols = reshape(cols, shape=(n, g, cg * kh * kw, oh * ow))
        y = matmul(reshape(W, shape=(g, o // g, cg * kh * kw)), cols)
    y = reshape(y, shape=(n, o, oh, ow))
    return y if b is None else add(y, reshape(b, shape=(1, o, 1, 1)))


def _pool(op: str, x: Any, kernel: Any, stride: Any, pad: Any, reduce: Any,
          pad_value: float) -> Any:
    require_array(op, "x", x)
    if x.ndim < 2:
        raise ShapeError(f"{op}: x must have at least 2 dims (..., H, W), got {x.shape}")
    k = pair(op, "kernel", kernel, 1)
    s = k if stride is None else pair(op, "stride", stride, 1)
    p = pair(op, "pad", pad, 0)
    lead, (h, w) = x.shape[:-2], x.shape[-2:]
    oh = out_size(op, h, k[0], s[0], p[0], 1, "height")
    ow = out_size(op, w, k[1], s[1], p[1], 1, "width")
    m = 1
    for v in lead:
        m *= v
    cols = im2col(reshape(x, shape=(m, 1, h, w)), kernel=k, stride=s, pad=p,
                  pad_value=pad_value)
    # keepdims: the backward broadcasts the window axis back without two reshapes
    return reshape(reduce(cols, axis=1, keepdims=True), shape=lead + (oh, ow))


def max_pooling(x: Any, kernel: Any, stride: Any = None, pad: Any = 0) -> Any:
    """Max over ``kernel`` windows of the last two axes (padding never wins)."""
    d = np.dtype(getattr(x, "dtype", np.float32))
    lowest = (float("-inf") if d.kind == "f" else float(np.iinfo(d).min) if d.kind in "iu"
              else 0.0)
    return _pool("max_pooling", x, kernel, stride, pad, rmax, lowest)


def average_pooling(x: Any, kernel: Any, stride: Any = None, pad: Any = 0) -> Any:
    """Mean over ``kernel`` windows of the last two axes (padding counted as zeros)."""
    require_float("average_pooling", "x", x)
    return _pool("average_pooling", x, kernel, stride, pad, rmean, 0.0)


# -- backward rules -------------------------------------------------------------------
from .backward import backward as _backward  # noqa: E402


@_backward(im2col)
def _im2col_grad(c, g):
    a = c.attrs
    return (col2im(g, size=c.in_meta[0][0][1:], kernel=a["kernel"], stride=a["stride"],
                   pad=a["pad"], dilation=a["dilation"]),)


@_backward(col2im)
def _col2im_grad(c, g):
    a = c.attrs
    return (im2col(g, kernel=a["kernel"], stride=a["stride"], pad=a["pad"],
                   dilation=a["dilation"]),)
