"""Reductions over axes.

Kernel contract: ``sum/prod/mean/max/min(x, axis: tuple[int, ...], keepdims: bool)`` with
``axis`` sorted, non-negative and never empty unless ``x`` is 0-d; ``argmax/argmin(x,
axis: int | None, keepdims: bool)`` -> int64 (``None``: over the flattened array).
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ..errors import DTypeError
from .common import norm_axes, norm_axis, require_array, require_ordered
from .op import Op
from .surfaces import declare

_I64 = np.dtype(np.int64)
_F64 = np.dtype(np.float64)
_U64 = np.dtype(np.uint64)


def _out_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _infer_reduce(name: str):
    def infer(inputs, attrs):
        (x,) = inputs
        require_array(name, "x", x)
        if name in ("max", "min"):
            require_ordered(name, (x,))
        axes = attrs["axis"] = norm_axes(name, attrs.get("axis"), x.shape)
        keep = attrs["keepdims"] = bool(attrs.get("keepdims", False))
        if name in ("max", "min") and (any(x.shape[a] == 0 for a in axes) or
                                       x.size == 0 and not axes):  # numpy: no identity
            raise ValueError(f"{name}: zero-size reduction over axis {axes} of shape {x.shape}")
        d = x.dtype
        if name in ("sum", "prod") and d.kind in "bi":
            d = _I64
        elif name in ("sum", "prod") and d.kind == "u":
            d = _U64
        elif name == "mean" and d.kind in "biu":
            d = _F64
        return ((_out_shape(x.shape, axes, keep), d),)
    return infer


def _infer_arg(name: str):
    def infer(inputs, attrs):
        (x,) = inputs
        require_array(name, "x", x)
        require_ordered(name, (x,))
        if x.dtype == np.bool_:
            raise DTypeError(f"{name}: bool input is not supported (shape {x.shape})")
        axis = attrs.get("axis")
        keep = attrs["keepdims"] = bool(attrs.get("keepdims", False))
        if x.size == 0:
            raise ValueError(f"{name}: empty input of shape {x.shape}")
        if axis is None:
            attrs["axis"] = None
            return (((1,) * x.ndim if keep else (), _I64),)
        a = attrs["axis"] = norm_axis(name, axis, x.ndim, shape=x.shape)
        return ((_out_shape(x.shape, (a,), keep), _I64),)
    return infer


def _infer_cumulative(name: str):
    def infer(inputs, attrs):
        (x,) = inputs
        require_array(name, "x", x)
        if x.ndim == 0:
            raise ValueError(f"{name}: argument 'x' must have at least one dimension")
        axis = attrs.get("axis")
        if axis is None:
            if x.ndim != 1:
                raise ValueError(f"{name}: argument 'axis' is required for shape {x.shape}")
            axis = 0
        attrs["axis"] = norm_axis(name, axis, x.ndim, shape=x.shape)
        d = x.dtype
        d = _I64 if d.kind in "bi" else _U64 if d.kind == "u" else d
        return ((x.shape, d),)
    return infer


#: Running sum and product along one axis (kernel contract: ``cumulative_sum(x, axis:
#: int)``, likewise ``cumulative_prod``; the result has ``sum``'s dtype).
_cumulative_sum = Op("cumulative_sum", _infer_cumulative("cumulative_sum"))
_cumulative_prod = Op("cumulative_prod", _infer_cumulative("cumulative_prod"))


@declare(_cumulative_sum, xp="statistics:cumulative", numpy="cumsum:scan",
         params={"initial": 0})
def cumulative_sum(x: Any, axis: Any = None) -> Any:
    """Running sum along ``axis`` (optional for 1-D input); integers sum in int64."""
    return _cumulative_sum(x, axis=axis)


@declare(_cumulative_prod, xp="statistics:cumulative", numpy="cumprod:scan",
         params={"initial": 1})
def cumulative_prod(x: Any, axis: Any = None) -> Any:
    """Running product along ``axis`` (optional for 1-D input); integers multiply in
    int64."""
    return _cumulative_prod(x, axis=axis)
sum_op, prod_op, mean_op, max_op, min_op = (Op(n, _infer_reduce(n), normalizes=True)
                                            for n in ("sum", "prod", "mean", "max", "min"))
argmax_op = Op("argmax", _infer_arg("argmax"), differentiable=False)
argmin_op = Op("argmin", _infer_arg("argmin"), differentiable=False)


# -- the public functions and their ONNX translations -----------------------------------
def _onnx_reduce(onnx_op: str) -> Any:
    """The translation to ONNX's ``onnx_op`` (``ReduceSum``, ...; the exporter:
    ``grad/onnx_export.py``), the input cast to the output's dtype."""
    def translate(ex: Any, n: Any, outs: list) -> None:
        xi = ex.operand(n.inputs[0], n.out_metas[0][1])
        if not n.attrs["axis"]:  # a 0-d input
            ex.emit("Identity", [xi], outs)
            return
        ex.reduce(onnx_op, xi, n.attrs["axis"], n.attrs["keepdims"], outs[0])
    return translate


def _onnx_arg(ex: Any, n: Any, outs: list) -> None:
    """ONNX's ``ArgMax``/``ArgMin`` (``axis=None``: over the flattened input)."""
    x = ex.value(n.inputs[0])
    op = "ArgMax" if n.name == "argmax" else "ArgMin"
    axis, keep = n.attrs["axis"], n.attrs["keepdims"]
    if axis is None:
        flat = ex.emit("Reshape", [x, ex.ints([-1])])
        if keep:
            r = ex.emit(op, [flat], axis=0, keepdims=1)
            ex.emit("Reshape", [r, ex.ints([1] * len(n.inputs[0].shape))], outs)
        else:
            ex.emit(op, [flat], outs, axis=0, keepdims=0)
        return
    ex.emit(op, [x], outs, axis=int(axis), keepdims=int(keep))


@declare(sum_op, xp="statistics:reduce", numpy="sum:method", onnx=_onnx_reduce("ReduceSum"))
def sum(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Sum over ``axis`` (``None``: every axis)."""
    return sum_op(x, axis=axis, keepdims=keepdims)


@declare(prod_op, xp="statistics:reduce", numpy="prod:method")
def prod(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Product over ``axis`` (``None``: every axis)."""
    return prod_op(x, axis=axis, keepdims=keepdims)


@declare(mean_op, xp="statistics:same", numpy="mean:method", params={"inexact": True},
         onnx=_onnx_reduce("ReduceMean"), macro=True)
def mean(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Mean over ``axis``."""
    return mean_op(x, axis=axis, keepdims=keepdims)


@declare(max_op, xp="statistics:same", numpy="max:method", onnx=_onnx_reduce("ReduceMax"))
def max(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Maximum over ``axis``."""
    return max_op(x, axis=axis, keepdims=keepdims)


@declare(min_op, xp="statistics:same", numpy="min:method", onnx=_onnx_reduce("ReduceMin"))
def min(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Minimum over ``axis``."""
    return min_op(x, axis=axis, keepdims=keepdims)


@declare(argmax_op, xp="searching:keywords", numpy="argmax:method", onnx=_onnx_arg)
def argmax(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Index of the maximum (int64, no gradient)."""
    return argmax_op(x, axis=axis, keepdims=keepdims)


@declare(argmin_op, xp="searching:keywords", numpy="argmin:method", onnx=_onnx_arg)
def argmin(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Index of the minimum (int64, no gradient)."""
    return argmin_op(x, axis=axis, keepdims=keepdims)


# -- backward rules -------------------------------------------------------------------
from .. import late  # noqa: E402
from .backward import backward as _backward  # noqa: E402
from .backward import conj as _cj  # noqa: E402
from .backward import fit as _fit  # noqa: E402
from .backward import unreduce as _unreduce  # noqa: E402

_F: Any = late.bind(__name__, "_F", "nnarray.functions")


@_backward(sum_op)
def _sum_grad(c, g):
    shape = c.in_meta[0][0]
    g = _unreduce(g, shape, c.attrs["axis"], c.attrs["keepdims"])
    return (_fit(c, 0, _F.broadcast_to(g, shape)),)


@_backward(prod_op, inputs=(0,), outputs=(0,))
def _prod_grad(c, g):  # g * y / x where x != 0; the product of the others where x == 0
    x, y = _cj(c.inputs[0]), _cj(c.outputs[0])  # complex: g * conj(dy/dx), as PyTorch
    axes, keep = c.attrs["axis"], c.attrs["keepdims"]
    shape = c.in_meta[0][0]
    zero = _F.equal(x, 0)
    others = _F.prod(_F.where(zero, 1.0, x), axis=axes, keepdims=True)  # prod of nonzeros
    nz = _F.sum(_F.cast(zero, np.int64), axis=axes, keepdims=True)
    g = _unreduce(g, shape, axes, keep)
    y = _unreduce(y, shape, axes, keep)
    d = _F.where(zero, _F.where(_F.equal(nz, 1), others, 0.0), y / _F.where(zero, 1.0, x))
    return (_fit(c, 0, g * d),)


@_backward(_cumulative_sum)
def _cumsum_grad(c, g):  # the reversed running sum: total - running + own
    a = c.attrs["axis"]
    return (_fit(c, 0, _reverse_cumsum(g, a)),)


def _reverse_cumsum(g, a):
    """``g`` summed from each position to the end of axis ``a``."""
    return _F.sum(g, axis=a, keepdims=True) - cumulative_sum(g, axis=a) + g


@_backward(_cumulative_prod, inputs=(0,), outputs=(0,))
def _cumprod_grad(c, g):
    """Exact with zeros: where ``x != 0`` the gradient is the reversed running sum of
    ``g * y`` over ``x``; at the first zero of a line it is that of ``g * y'``, ``y'`` the
    running product with that zero replaced by 1; later zeros get 0. Complex: on the
    conjugates (``g * conj(dy/dx)``, PyTorch's convention)."""
    x, y, a = _cj(c.inputs[0]), _cj(c.outputs[0]), c.attrs["axis"]
    zero = _F.equal(x, 0)
    first = _F.logical_and(zero, _F.equal(cumulative_sum(zero, axis=a), 1))
    nonzero = _F.where(zero, 1.0, x)
    at_first = _reverse_cumsum(g * cumulative_prod(_F.where(first, 1.0, x), axis=a), a)
    d = _F.where(zero, _F.where(first, at_first, 0.0), _reverse_cumsum(g * y, a) / nonzero)
    return (_fit(c, 0, d),)


@_backward(mean_op)
def _mean_grad(c, g):
    shape = c.in_meta[0][0]
    axes = c.attrs["axis"]
    n = 1
    for a in axes:
        n *= shape[a]
    g = _unreduce(g * (1.0 / builtins.max(n, 1)), shape, axes, c.attrs["keepdims"])
    return (_fit(c, 0, _F.broadcast_to(g, shape)),)


def _extremum_grad(c, g):
    x, y = c.inputs[0], c.outputs[0]
    axes, keep = c.attrs["axis"], c.attrs["keepdims"]
    hit = _F.equal(x, _unreduce(y, x.shape, axes, keep))
    return (_fit(c, 0, _F.where(hit, _unreduce(g, x.shape, axes, keep), 0.0)),)


_backward(max_op, inputs=(0,), outputs=(0,))(_extremum_grad)
_backward(min_op, inputs=(0,), outputs=(0,))(_extremum_grad)
