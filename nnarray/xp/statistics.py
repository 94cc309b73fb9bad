"""The standard's statistical functions: sums, products and their running forms (integers
sum in int64), ``max``/``min``, ``mean``, ``var``/``std``.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import dtypes as _dtypes
from .. import functions as F
from ..errors import DTypeError
from ..ndarray import NdArray
from ..ops import autocast as _autocast
from ..ops.common import norm_axes
from ._common import _axes, _recalled, _require, declared
from .creation import full

_I64 = np.dtype(np.int64)


def _sum_dtype(x: Any) -> np.dtype:
    d = x.dtype
    if d.kind in "bi":
        return _I64
    if d.kind == "u":
        return np.dtype(np.uint64)
    return d


def _reduce(op: str, fn: Any, x: Any, axis: Any, keepdims: builtins.bool, dtype: Any) -> Any:
    _require(op, x)
    axis = _axes(op, x, axis)
    want = _autocast.result_dtype(op, _sum_dtype(x)) if dtype is None else \
        _dtypes.normalize(dtype, op)
    if axis == () or x.ndim == 0:
        return F.cast(x, want)
    if dtype is not None and want != x.dtype:
        x = F.cast(x, want)
    y = fn(x, axis, keepdims)
    return y if y.dtype == want else F.cast(y, want)


def _cumulative(op: str, fn: Any, init: int, x: Any, axis: int | None, dtype: Any,
                include_initial: builtins.bool) -> Any:
    _require(op, x)
    if dtype is not None:
        d = _dtypes.normalize(dtype, op)
        if d != x.dtype:
            x = F.cast(x, d)
    y = fn(x, axis)
    if dtype is not None and y.dtype != x.dtype:
        y = F.cast(y, x.dtype)
    if include_initial:
        a = (0 if axis is None else axis) % x.ndim
        z = full(x.shape[:a] + (1,) + x.shape[a + 1:], init, y.dtype,
                 device=x.device if type(x) is NdArray else None)
        y = F.concatenate([z, y], a)
    return y


def _cumulative_form(s: Any) -> Any:
    """The standard's signature of a declared scan (``ops/surfaces.py``) whose
    ``initial`` value ``include_initial`` prepends."""
    def scan(x: Any, /, *, axis: int | None = None, dtype: Any = None,
             include_initial: builtins.bool = False) -> Any:
        return _cumulative(s.name, s.function, s.params["initial"], x, axis, dtype,
                           include_initial)
    scan.__doc__ = (f"{s.function.__doc__} ``include_initial`` prepends "
                    f"{s.params['initial']}.")
    return scan


def _reduce_form(s: Any) -> Any:
    """The standard's signature of a declared sum or product (``ops/surfaces.py``):
    integers sum in int64 (unsigned in uint64) unless ``dtype`` says otherwise."""
    def reduce(x: Any, /, *, axis: Any = None, dtype: Any = None,
               keepdims: builtins.bool = False) -> Any:
        return _reduce(s.name, getattr(F, s.name), x, axis, keepdims, dtype)
    reduce.__doc__ = f"{s.function.__doc__} Integers in int64 unless ``dtype`` is given."
    return reduce


def _same(op: str, fn: Any, x: Any, axis: Any, keepdims: builtins.bool) -> Any:
    _require(op, x)
    axis = _axes(op, x, axis)
    if axis == ():
        return F.cast(x, x.dtype)
    return fn(x, axis, keepdims)


def _same_form(s: Any) -> Any:
    """The standard's signature of a declared reduction keeping the input's dtype
    (``max``, ``min``; ``mean``, whose ``params`` say ``inexact``: floating inputs only)."""
    inexact = s.params.get("inexact", False)

    def same(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:
        if inexact:
            _require(s.name, x)
            if x.dtype not in _dtypes.INEXACT:
                raise DTypeError(f"{s.name}: argument 'x' must be floating, got {x.dtype} "
                                 f"(shape {x.shape})")
        return _same(s.name, getattr(F, s.name), x, axis, keepdims)
    same.__doc__ = s.function.__doc__
    return same


#: The reductions and scans the op specs declare for this chapter (``sum``, ``prod``,
#: ``max``, ``min``, ``mean``, ``cumulative_sum``, ``cumulative_prod``)
_DECLARED = declared("statistics", {"cumulative": _cumulative_form, "reduce": _reduce_form,
                                    "same": _same_form})
globals().update(_DECLARED)


@_recalled
def var(x: Any, /, *, axis: Any = None, correction: float = 0.0,
        keepdims: builtins.bool = False) -> Any:
    """The variance over ``axis`` with ``correction`` degrees of freedom removed."""
    _require("var", x)
    if not _dtypes.is_floating(x.dtype):
        raise DTypeError(f"var: argument 'x' must be floating, got {x.dtype} (shape {x.shape})")
    if x.dtype in _dtypes.LOW:  # in float32, rounded once (not at each of its steps)
        return F.cast(var(F.cast(x, np.float32), axis=axis, correction=correction,
                          keepdims=keepdims), x.dtype)
    axes = norm_axes("var", _axes("var", x, axis), x.shape)
    n = 1
    for a in axes:
        n *= x.shape[a]
    if not axes:
        return F.mul(x, 0.0) if n - correction > 0 else F.mul(x, float("nan"))
    c = F.sub(x, F.mean(x, axes, True))
    s = F.sum(F.square(c), axes, keepdims)
    dof = n - correction
    return F.mul(s, (1.0 / dof) if dof > 0 else float("nan"))


@_recalled
def std(x: Any, /, *, axis: Any = None, correction: float = 0.0,
        keepdims: builtins.bool = False) -> Any:
    """The standard deviation over ``axis`` (``sqrt(var)``; 16-bit: in float32, rounded
    once)."""
    _require("std", x)
    low = x.dtype if x.dtype in _dtypes.LOW else None
    if low is not None:
        x = F.cast(x, np.float32)
    s = F.sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))
    return s if low is None else F.cast(s, low)


__all__ = [*_DECLARED, "std", "var"]
