"""Layer normalization (torch's ``layer_norm``): one graph node normalizing over the last
axes, composed from F on NdArrays (every backend has it); the affine part is separate.

Kernel contract: ``layer_norm(x, count, eps) -> (y, rstd)``: ``y = (x - mean) * rstd`` over
the last ``count`` axes, ``rstd = 1 / sqrt(biased var + eps)`` with those axes kept as 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidValueError, ShapeError
from ..registry import register_composite
from .common import require_float
from .elementwise import functions as _ew
from .op import Op
from .reduction import mean as _mean
from .surfaces import declare


def _axes(ndim: int, count: int) -> tuple[int, ...]:
    return tuple(range(ndim - count, ndim))


def _infer(inputs, attrs):
    (x,) = inputs
    require_float("layer_norm", "x", x)
    k = attrs["count"] = int(attrs["count"])
    eps = attrs["eps"] = float(attrs.get("eps", 1e-5))
    if not 1 <= k <= x.ndim:
        raise ShapeError(f"layer_norm: cannot normalize the last {k} axes of x {x.shape}")
    if eps < 0:
        raise ValueError(f"layer_norm: eps must be >= 0, got {eps}")
    kept = x.shape[:x.ndim - k] + (1,) * k
    return ((x.shape, x.dtype), (kept, x.dtype))


layer_norm_op = Op("layer_norm", _infer)


def _compose(x: Any, count: int, eps: float) -> tuple[Any, Any]:
    axes = _axes(x.ndim, count)
    xc = x - _mean(x, axis=axes, keepdims=True)
    rstd = 1.0 / _ew["sqrt"](_mean(xc * xc, axis=axes, keepdims=True) + eps)
    return xc * rstd, rstd


register_composite("layer_norm", _compose)


def _onnx_layer_norm(ex: Any, n: Any, outs: list) -> None:
    """ONNX's ``LayerNormalization`` with a unit scale (the affine part is separate)."""
    x = n.inputs[0]
    k = int(n.attrs["count"])
    scale = ex.const(np.ones(x.shape[x.ndim - k:]), x.dtype, "layer_norm_scale")
    ex.emit("LayerNormalization", [ex.value(x), scale], [outs[0], "", outs[1]], axis=-k,
            epsilon=float(n.attrs["eps"]))


@declare(layer_norm_op, onnx=_onnx_layer_norm, macro=True)
def layer_norm(x: Any, normalized_shape: Any, weight: Any = None, bias: Any = None,
               eps: float = 1e-5) -> Any:
    """Normalize over the trailing ``normalized_shape`` axes (biased variance, as torch),
    then ``* weight + bias`` where given (each of ``normalized_shape``)."""
    if hasattr(normalized_shape, "shape"):  # an array where torch's order puts the shape
        raise InvalidValueError(
            f"layer_norm: normalized_shape takes ints (x, normalized_shape, weight, bias), "
            f"got an array of shape {tuple(normalized_shape.shape)}")
    shape = (int(normalized_shape),) if isinstance(normalized_shape, int) else \
        tuple(int(s) for s in normalized_shape)
    require_float("layer_norm", "x", x)
    if not shape or tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise ShapeError(f"layer_norm: normalized_shape {shape} does not match the last "
                         f"axes of x {x.shape}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None:
            require_float("layer_norm", name, p)
            if tuple(p.shape) != shape:
                raise ShapeError(f"layer_norm: {name} has shape {p.shape}, expected {shape}")
    y = layer_norm_op(x, count=len(shape), eps=eps)[0]
    if weight is not None:
        y = y * weight
    return y + bias if bias is not None else y


# -- backward rule --------------------------------------------------------------------
from .backward import backward as _backward  # noqa: E402


@_backward(layer_norm_op, outputs=(0, 1), grads=True)
def _layer_norm_grad(c, g):
    """``(g - mean(g) - y mean(g y)) rstd``; where a gradient graph reads ``rstd`` (the
    second output) its gradient ``gr`` adds ``-gr rstd^2 y / n`` (``d rstd/dx``)."""
    y, rstd = c.outputs
    axes = _axes(y.ndim, c.attrs["count"])
    gr = c.grads[1] if c.grads else None
    gx = None
    if g is not None:
        mg = _mean(g, axis=axes, keepdims=True)
        mgy = _mean(g * y, axis=axes, keepdims=True)
        gx = (g - mg - y * mgy) * rstd
    if gr is not None:
        n = 1
        for a in axes:
            n *= y.shape[a]
        gs = gr * (rstd * rstd) * y * (-1.0 / n)
        gx = gs if gx is None else gx + gs
    return (gx,)
