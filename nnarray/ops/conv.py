"""Convolution: ``conv2d``, one op whose composite kernel is ``im2col`` and ``matmul``.

Kernel contract: ``im2col_op(x, kernel, stride, pad, dilation, pad_value)`` maps
``(N, C, H, W)`` to ``(N, C*kh*kw, OH*OW)`` (row index ``(c*kh + i)*kw + j``), padding
with ``pad_value``; ``col2im_op(cols, size, kernel, stride, pad, dilation)`` is its adjoint
(scatter-add back to ``(N, C, H, W)``, ``size == (C, H, W)``).
``conv2d(x, W[, b], stride, pad, dilation, groups)`` with the attributes as pairs: a
backend may register a native kernel (cuDNN, a fused host one); the composite works
everywhere. Its backward rule is written with the same primitives.
"""

from __future__ import annotations

from typing import Any

from ..dtypes import promote
from ..errors import GraphError, ShapeError
from ..registry import register_composite
from .common import pair, require_array, require_float
from .elementwise import add
from .linalg import matmul
from .op import Op
from .shape import reshape_op as reshape
from .surfaces import declare


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


im2col_op = Op("im2col", _infer_im2col)
col2im_op = Op("col2im", _infer_col2im)


def _infer_conv2d(inputs, attrs):
    if len(inputs) not in (2, 3):
        raise TypeError(f"conv2d: takes x, W and optionally b, got {len(inputs)} inputs")
    x, W = inputs[0], inputs[1]
    b = inputs[2] if len(inputs) == 3 else None
    require_float("conv2d", "x", x)
    require_float("conv2d", "W", W)
    if x.ndim != 4 or W.ndim != 4:
        raise ShapeError(f"conv2d: x must be (N, C, H, W) and W (O, C/groups, kh, kw), got "
                         f"x {x.shape}, W {W.shape}")
    groups = attrs.get("groups", 1)
    g = attrs["groups"] = int(groups)
    n, c, h, w = x.shape
    o, cg, kh, kw = W.shape
    if g < 1 or c % g or o % g or cg != c // g:
        raise ShapeError(f"conv2d: x {x.shape} and W {W.shape} do not fit groups={groups} "
                         "(need C % groups == 0, O % groups == 0, W.shape[1] == C / groups)")
    if b is not None:
        require_array("conv2d", "b", b)
        if b.shape != (o,):
            raise ShapeError(f"conv2d: b has shape {b.shape}, expected ({o},)")
    s = attrs["stride"] = pair("conv2d", "stride", attrs.get("stride", 1), 1)
    p = attrs["pad"] = pair("conv2d", "pad", attrs.get("pad", 0), 0)
    d = attrs["dilation"] = pair("conv2d", "dilation", attrs.get("dilation", 1), 1)
    oh = out_size("conv2d", h, kh, s[0], p[0], d[0], "height")
    ow = out_size("conv2d", w, kw, s[1], p[1], d[1], "width")
    dt = promote("conv2d", *inputs, args=("x", "W", "b"))
    return (((n, o, oh, ow), dt),)


#: ``conv2d(x, W[, b], stride, pad, dilation, groups)``: one graph node per call.
conv2d_op = Op("conv2d", _infer_conv2d)


def _conv2d_compose(x: Any, W: Any, b: Any = None, stride: Any = (1, 1), pad: Any = (0, 0),
                    dilation: Any = (1, 1), groups: int = 1) -> Any:
    """The composite kernel: ``im2col`` then one (batched) ``matmul`` per group."""
    n, _, h, w = x.shape
    o, cg, kh, kw = W.shape
    oh = out_size("conv2d", h, kh, stride[0], pad[0], dilation[0], "height")
    ow = out_size("conv2d", w, kw, stride[1], pad[1], dilation[1], "width")
    cols = im2col_op(x, kernel=(kh, kw), stride=stride, pad=pad, dilation=dilation)
    if groups == 1:
        y = matmul(reshape(W, shape=(o, cg * kh * kw)), cols)
    else:
        cols = reshape(cols, shape=(n, groups, cg * kh * kw, oh * ow))
        y = matmul(reshape(W, shape=(groups, o // groups, cg * kh * kw)), cols)
    y = reshape(y, shape=(n, o, oh, ow))
    return y if b is None else add(y, reshape(b, shape=(1, o, 1, 1)))


register_composite("conv2d", _conv2d_compose)


# -- the public functions and their ONNX translations -----------------------------------
def _onnx_conv2d(ex: Any, n: Any, outs: list) -> None:
    """One ``Conv`` (the operands cast to the output's dtype, as the op computes)."""
    a = n.attrs
    dt = n.out_metas[0][1]
    ex.emit("Conv", [ex.operand(v, dt) for v in n.inputs], outs,
            kernel_shape=list(n.inputs[1].shape[2:]), strides=list(a["stride"]),
            pads=list(a["pad"]) * 2, dilations=list(a["dilation"]), group=int(a["groups"]))


def onnx_im2col(ex: Any, xv: str, shape: tuple, a: dict, pad_value: float, dtype: Any,
                out: Any = None) -> str:
    """im2col of ONNX value ``xv`` (of ``shape``): pad, one strided slice per kernel
    offset, stacked on a new axis: row ``(c*kh + i)*kw + j`` as the kernel contract."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = a["kernel"], a["stride"], a["pad"], a["dilation"]
    N, C, H, W = shape
    oh = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if ph or pw:
        xv = ex.emit("Pad", [xv, ex.ints([0, 0, ph, pw, 0, 0, ph, pw]),
                             ex.const(pad_value, dtype)], mode="constant")
    parts = []
    for i in range(kh):
        for j in range(kw):
            s = ex.emit("Slice", [xv, ex.ints([i * dh, j * dw]),
                                  ex.ints([i * dh + (oh - 1) * sh + 1,
                                           j * dw + (ow - 1) * sw + 1]),
                                  ex.ints([2, 3]), ex.ints([sh, sw])])
            parts.append(ex.emit("Unsqueeze", [s, ex.ints([2])]))
    cat = ex.emit("Concat", parts, axis=2) if len(parts) > 1 else parts[0]
    return ex.emit("Reshape", [cat, ex.ints([N, C * kh * kw, oh * ow])],
                   None if out is None else [out])


def _onnx_im2col(ex: Any, n: Any, outs: list) -> None:
    x = n.inputs[0]
    onnx_im2col(ex, ex.value(x), x.shape, n.attrs, n.attrs["pad_value"], x.dtype, outs[0])


def _onnx_col2im(ex: Any, n: Any, outs: list) -> None:
    if ex.opset < 18:
        raise GraphError(f"onnx export: op 'col2im' needs ONNX Col2Im, which is opset 18; "
                         f"export with opset=18 (node {n!r})")
    a = n.attrs
    ex.emit("Col2Im", [ex.value(n.inputs[0]), ex.ints(a["size"][1:]), ex.ints(a["kernel"])],
            outs, strides=list(a["stride"]), pads=list(a["pad"]) * 2,
            dilations=list(a["dilation"]))


@declare(im2col_op, onnx=_onnx_im2col, macro=True)
def im2col(x: Any, kernel: Any, stride: Any = 1, pad: Any = 0, dilation: Any = 1,
           pad_value: float = 0.0) -> Any:
    """``(N, C, H, W)`` -> ``(N, C*kh*kw, OH*OW)`` sliding windows."""
    return im2col_op(x, kernel=kernel, stride=stride, pad=pad, dilation=dilation,
                     pad_value=pad_value)


@declare(col2im_op, onnx=_onnx_col2im, macro=True)
def col2im(cols: Any, size: Any, kernel: Any, stride: Any = 1, pad: Any = 0,
           dilation: Any = 1) -> Any:
    """The adjoint of ``im2col``: scatter-add windows back to ``(N, C, H, W)``."""
    return col2im_op(cols, size=size, kernel=kernel, stride=stride, pad=pad,
                     dilation=dilation)


@declare(conv2d_op, onnx=_onnx_conv2d)
def conv2d(x: Any, W: Any, b: Any = None, stride: Any = 1, pad: Any = 0, dilation: Any = 1,
           groups: int = 1) -> Any:
    """2-D convolution, NCHW; ``W`` is ``(out, in/groups, kh, kw)``."""
    inputs = (x, W) if b is None else (x, W, b)
    return conv2d_op(*inputs, stride=stride, pad=pad, dilation=dilation, groups=groups)


# -- backward rules -------------------------------------------------------------------
from .backward import backward as _backward  # noqa: E402
from .backward import fit as _fit  # noqa: E402
from .backward import sum_to as _sum_to  # noqa: E402


@_backward(im2col_op)
def _im2col_grad(c, g):
    a = c.attrs
    return (col2im_op(g, size=c.in_meta[0][0][1:], kernel=a["kernel"], stride=a["stride"],
                   pad=a["pad"], dilation=a["dilation"]),)


@_backward(col2im_op)
def _col2im_grad(c, g):
    a = c.attrs
    return (im2col_op(g, kernel=a["kernel"], stride=a["stride"], pad=a["pad"],
                   dilation=a["dilation"]),)


@_backward(conv2d_op, inputs=(0, 1))
def _conv2d_grad(c, g):
    """The composition's gradients: ``dW = sum_n g colsᵀ`` (im2col of ``x`` again),
    ``dx = col2im_op(Wᵀ g)``, ``db = sum g`` over every axis but channels."""
    x, W = c.inputs[0], c.inputs[1]
    a = c.attrs
    geo = {"stride": a["stride"], "pad": a["pad"], "dilation": a["dilation"]}
    (n, ch, h, w), (o, cg, kh, kw) = c.in_meta[0][0], c.in_meta[1][0]
    groups, ckk, L = a["groups"], cg * kh * kw, g.shape[2] * g.shape[3]
    lead = (o,) if groups == 1 else (groups, o // groups)
    g3 = reshape(g, shape=(n, *lead, L))
    gx = gW = None
    if c.need[1]:
        cols = im2col_op(x, kernel=(kh, kw), **geo)
        if groups > 1:
            cols = reshape(cols, shape=(n, groups, ckk, L))
        gw = _sum_to(matmul(g3, cols, transpose_b=True), (*lead, ckk))
        gW = _fit(c, 1, reshape(gw, shape=(o, cg, kh, kw)))
    if c.need[0]:
        gcols = matmul(reshape(W, shape=(*lead, ckk)), g3, transpose_a=True)
        if groups > 1:
            gcols = reshape(gcols, shape=(n, ch * kh * kw, L))
        gx = _fit(c, 0, col2im_op(gcols, size=(ch, h, w), kernel=(kh, kw), **geo))
    if len(c.in_meta) == 2:
        return gx, gW
    gb = _fit(c, 2, reshape(_sum_to(g, (1, o, 1, 1)), shape=(o,))) if c.need[2] else None
    return gx, gW, gb
