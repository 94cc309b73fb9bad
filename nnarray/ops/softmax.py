"""Softmax family and classification losses.

Kernel contract: ``softmax(x, axis)``, ``log_softmax(x, axis)`` (``axis`` non-negative);
``softmax_cross_entropy(x, t, axis)`` -> per-sample ``-log_softmax(x)[t]`` with ``t``
integer of ``x.shape`` minus ``axis``, each in ``[0, x.shape[axis])`` (else
``InvalidValueError`` naming the op; a device may report it at its next synchronization
instead of before the kernel); ``one_hot(t, num_classes, axis, dtype)`` inserts
a class axis at ``axis`` (out-of-range labels give an all-zero row).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..errors import InvalidValueError, ShapeError
from ..registry import register_composite
from .common import check_labels, host_values, norm_axis, require_float, require_int
from .op import Op
from .reduction import mean_op as mean
from .surfaces import declare


def _infer_softmax(name: str):
    def infer(inputs, attrs):
        (x,) = inputs
        require_float(name, "x", x)
        if x.ndim == 0:
            raise ShapeError(f"{name}: input must be at least 1-D, got shape ()")
        attrs["axis"] = norm_axis(name, attrs.get("axis", -1), x.ndim)
        return ((x.shape, x.dtype),)
    return infer


def _infer_sce(inputs, attrs):
    x, t = inputs
    require_float("softmax_cross_entropy", "x", x)
    require_int("softmax_cross_entropy", "t", t)
    if x.ndim == 0:
        raise ShapeError("softmax_cross_entropy: x must be at least 1-D, got shape ()")
    a = attrs["axis"] = norm_axis("softmax_cross_entropy", attrs.get("axis", -1), x.ndim)
    out = x.shape[:a] + x.shape[a + 1:]
    if t.shape != out:
        raise ShapeError(f"softmax_cross_entropy: t has shape {t.shape}, expected {out} for "
                         f"x {x.shape} with axis {a}")
    if x.shape[a] == 0 and t.size:  # every label is out of range (kernels read no class)
        raise InvalidValueError(f"softmax_cross_entropy: x of shape {x.shape} has no classes "
                                f"along axis {a} for labels of shape {t.shape}")
    return ((out, x.dtype),)


def _infer_one_hot(inputs, attrs):
    (t,) = inputs
    require_int("one_hot", "t", t)
    n = int(attrs["num_classes"])
    if n <= 0:
        raise ValueError(f"one_hot: num_classes must be positive, got {n}")
    a = attrs["axis"] = norm_axis("one_hot", attrs.get("axis", -1), t.ndim + 1)
    d = attrs["dtype"] = dtypes.normalize(attrs.get("dtype", np.float32), "one_hot")
    return ((t.shape[:a] + (n,) + t.shape[a:], d),)


softmax_op = Op("softmax", _infer_softmax("softmax"))
log_softmax_op = Op("log_softmax", _infer_softmax("log_softmax"))
_sce = Op("softmax_cross_entropy", _infer_sce)
one_hot_op = Op("one_hot", _infer_one_hot, differentiable=False)


# -- the public functions and their ONNX translations -----------------------------------
def _onnx_softmax(ex: Any, n: Any, outs: list) -> None:
    op = "Softmax" if n.name == "softmax" else "LogSoftmax"
    ex.emit(op, [ex.value(n.inputs[0])], outs, axis=int(n.attrs["axis"]))


def _onnx_one_hot_of(ex: Any, t: Any, depth: int, axis: int, dtype: Any,
                     out: Any = None) -> str:
    """OneHot in float32 (the type onnxruntime implements for every index type), cast."""
    from onnx import helper
    dd = np.int32 if t.dtype == np.int32 else np.int64
    ins = [ex.value(t), ex.const(depth, dd), ex.const(np.array([0, 1], np.float32),
                                                      np.float32, "onehot_values")]
    outs = None if out is None else [out]
    if np.dtype(dtype) == np.float32:
        return ex.emit("OneHot", ins, outs, axis=int(axis))
    h = ex.emit("OneHot", ins, axis=int(axis))
    return ex.emit("Cast", [h], outs, to=helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))


def _onnx_one_hot(ex: Any, n: Any, outs: list) -> None:
    a = n.attrs
    _onnx_one_hot_of(ex, n.inputs[0], int(a["num_classes"]), a["axis"], a["dtype"], outs[0])


def _onnx_sce(ex: Any, n: Any, outs: list) -> None:
    """``-sum(log_softmax(x) * one_hot(t))`` over ``axis``."""
    x, t = n.inputs
    axis = n.attrs["axis"]
    ls = ex.emit("LogSoftmax", [ex.value(x)], axis=int(axis))
    oh = _onnx_one_hot_of(ex, t, x.shape[axis], axis, x.dtype)
    s = ex.reduce("ReduceSum", ex.emit("Mul", [ls, oh]), [axis], False)
    ex.emit("Neg", [s], outs)


def _onnx_mse(ex: Any, n: Any, outs: list) -> None:
    dt = n.out_metas[0][1]
    x, t = n.inputs
    d = ex.emit("Sub", [ex.operand(x, dt), ex.operand(t, dt)])
    sq = ex.emit("Mul", [d, d])
    if not x.shape:
        ex.emit("Identity", [sq], outs)
        return
    ex.reduce("ReduceMean", sq, None, False, outs[0])


@declare(softmax_op, onnx=_onnx_softmax, macro=True)
def softmax(x: Any, axis: int = -1) -> Any:
    """``exp(x) / sum(exp(x))`` along ``axis``."""
    return softmax_op(x, axis=axis)


@declare(log_softmax_op, onnx=_onnx_softmax, macro=True)
def log_softmax(x: Any, axis: int = -1) -> Any:
    """``log(softmax(x))`` along ``axis``, computed stably."""
    return log_softmax_op(x, axis=axis)


@declare(one_hot_op, onnx=_onnx_one_hot)
def one_hot(t: Any, num_classes: int, axis: int = -1, dtype: Any = np.float32) -> Any:
    """Integer labels to one-hot vectors along a new ``axis``."""
    return one_hot_op(t, num_classes=num_classes, axis=axis, dtype=dtype)


@declare(_sce, onnx=_onnx_sce, macro=True)
def softmax_cross_entropy(x: Any, t: Any, axis: int = -1) -> Any:
    """Per-sample cross entropy of logits ``x`` against integer labels ``t``.

    ``t`` has the shape of ``x`` without ``axis``; a size-1 ``axis`` kept in ``t``
    (nnabla's ``(N, 1)`` labels) is accepted too.
    """
    from .shape import reshape_op as reshape
    require_float("softmax_cross_entropy", "x", x)
    require_int("softmax_cross_entropy", "t", t)
    if x.ndim:
        a = norm_axis("softmax_cross_entropy", axis, x.ndim)
        if t.shape in (x.shape[:a] + x.shape[a + 1:], x.shape[:a] + (1,) + x.shape[a + 1:]):
            _check_host_labels(t, x.shape[a])  # else infer raises the ShapeError
        if t.ndim == x.ndim and t.shape[a] == 1:
            t = reshape(t, shape=t.shape[:a] + t.shape[a + 1:])
    return _sce(x, t, axis=axis)


def _check_host_labels(t: Any, n: int) -> None:
    """Check labels whose host copy is current (or a lazy fill) now, before any kernel
    runs and at no transfer; labels only on a device are checked by the backend's kernel
    (OpenCL and CUDA report them at the next synchronization)."""
    h = host_values(t)
    if h is not None:
        check_labels("softmax_cross_entropy", h, n)


def _infer_mse(inputs, attrs):
    x, t = inputs
    require_float("mean_squared_error", "x", x)
    require_float("mean_squared_error", "t", t)
    if t.shape != x.shape:
        raise ShapeError(f"mean_squared_error: x has shape {x.shape}, t has shape {t.shape}")
    return (((), dtypes.promote("mean_squared_error", x, t, args=("x", "t"))),)


_mse = Op("mean_squared_error", _infer_mse)


def _mse_compose(x: Any, t: Any) -> Any:
    d = x - t  # the operators take F's fast path
    return mean(d * d)


register_composite("mean_squared_error", _mse_compose)


@declare(_mse, onnx=_onnx_mse, macro=True)
def mean_squared_error(x: Any, t: Any) -> Any:
    """The mean of ``(x - t) ** 2`` over every element (a 0-d array); one graph node
    whose backward is ``2 (x - t) / n``."""
    if dtypes.is_scalar(t) or not hasattr(t, "shape"):
        raise ShapeError(f"mean_squared_error: t must be an array of x's shape "
                         f"{getattr(x, 'shape', ())}, got {type(t).__name__}")
    return _mse(x, t)


# -- backward rules -------------------------------------------------------------------
# The rules call the ops below this one (``ops``' layers), as ``F`` exposes them.
from . import elementwise as _ew  # noqa: E402
from . import reduction as _red  # noqa: E402
from . import shape as _sh  # noqa: E402
from .backward import backward as _backward  # noqa: E402
from .backward import fit  # noqa: E402

_exp = _ew.functions["exp"]


@_backward(softmax_op, outputs=(0,))
def _softmax_grad(c, g):
    y, axis = c.outputs[0], c.attrs["axis"]
    gy = g * y
    return (gy - y * _red.sum(gy, axis, True),)


@_backward(log_softmax_op, outputs=(0,))
def _log_softmax_grad(c, g):
    y, axis = c.outputs[0], c.attrs["axis"]
    return (g - _exp(y) * _red.sum(g, axis, True),)


@_backward(_sce, inputs=(0, 1))
def _sce_grad(c, g):
    x, t = c.inputs
    axis = c.attrs["axis"]
    p = softmax_op(x, axis=axis) - one_hot_op(t, num_classes=x.shape[axis], axis=axis,
                                              dtype=x.dtype)
    return (p * _sh.reshape(g, x.shape[:axis] + (1,) + x.shape[axis + 1:]), None)


@_backward(_mse, inputs=(0, 1))
def _mse_grad(c, g):
    x, t = c.inputs
    d = (x - t) * (g * (2.0 / max(x.size, 1)))
    return (fit(c, 0, d) if c.need[0] else None, fit(c, 1, -d) if c.need[1] else None)
