"""The standard's manipulation functions: views of an NdArray where numpy's would be
one (``reshape``, ``permute_dims``), the rest built on ``F``.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any

import numpy as np

from .. import functions as F
from ..ndarray import NdArray
from ..ops.common import norm_axes
from ._common import _recalled
from .creation import zeros


def reshape(x: Any, /, shape: Any, *, copy: builtins.bool | None = None) -> Any:
    """A view of an NdArray where numpy's would be one (``copy=None``; ``copy=False``
    raises where it cannot), else a new array."""
    if type(x) is NdArray:
        return x.reshape(shape, copy=copy)
    return F.reshape(x, shape)


def permute_dims(x: Any, /, axes: Any) -> Any:
    """A view of an NdArray (a graph value records a transpose)."""
    if type(x) is NdArray:
        return x.transpose(tuple(axes))
    return F.transpose(x, tuple(axes))


def broadcast_to(x: Any, /, shape: Any) -> Any:
    return F.broadcast_to(x, tuple(shape))


@_recalled
def broadcast_arrays(*arrays: Any) -> list:
    """The arrays broadcast against each other."""
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    return [a if a.shape == shape else F.broadcast_to(a, shape) for a in arrays]


def concat(arrays: Any, /, *, axis: int | None = 0) -> Any:
    if axis is None:
        return F.concatenate([F.reshape(a, (-1,)) for a in arrays], 0)
    return F.concatenate(list(arrays), axis)


def stack(arrays: Any, /, *, axis: int = 0) -> Any:
    return F.stack(list(arrays), axis)


def expand_dims(x: Any, /, axis: int = 0) -> Any:
    nd = x.ndim + 1
    if not -nd <= axis < nd:
        raise IndexError(f"expand_dims: axis {axis} is out of range for {nd} dimensions")
    a = axis % nd
    return reshape(x, x.shape[:a] + (1,) + x.shape[a:])


def moveaxis(x: Any, source: Any, destination: Any, /) -> Any:
    """Axes ``source`` moved to ``destination`` (ints or sequences), others in order."""
    nd = x.ndim

    def axes(v: Any, arg: str) -> tuple:
        out = tuple(operator.index(a) for a in (v if isinstance(v, (tuple, list)) else (v,)))
        for a in out:
            if not -nd <= a < nd:
                raise ValueError(f"moveaxis: {arg} axis {a} is out of range for {nd} dims")
        return out

    src = tuple(a % nd for a in axes(source, "source"))
    dst = axes(destination, "destination")
    if len(src) != len(dst) or len(set(src)) != len(src):
        raise ValueError(f"moveaxis: source {source} and destination {destination} must be "
                         "distinct axes of equal number")
    dst = tuple(a % nd for a in dst)
    order = [a for a in range(nd) if a not in src]
    for d, s_ in sorted(zip(dst, src)):
        order.insert(d, s_)
    return permute_dims(x, tuple(order))


def flip(x: Any, /, *, axis: Any = None) -> Any:
    """``x`` with the order of elements along ``axis`` (default: every axis) reversed."""
    axes = norm_axes("flip", axis, x.shape)
    key = tuple(builtins.slice(None, None, -1) if i in axes else builtins.slice(None)
                for i in range(x.ndim))
    return F.getitem(x, key) if axes else F.cast(x, x.dtype)


def roll(x: Any, /, shift: Any, *, axis: Any = None) -> Any:
    """Elements shifted along ``axis`` (flattened when ``None``), wrapping around."""
    if axis is None:
        return F.reshape(roll(F.reshape(x, (-1,)), shift, axis=0), x.shape)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift {shift} and axis {axis} differ in length")
    y = x
    for s_, a in zip(shifts, axes):
        a = operator.index(a) % x.ndim
        n = x.shape[a]
        if n == 0:
            continue
        k = operator.index(s_) % n
        if k:
            head = [builtins.slice(None)] * x.ndim
            tail = [builtins.slice(None)] * x.ndim
            head[a], tail[a] = builtins.slice(n - k, None), builtins.slice(0, n - k)
            y = F.concatenate([F.getitem(y, tuple(head)), F.getitem(y, tuple(tail))], a)
    return y if y is not x else F.cast(x, x.dtype)


def tile(x: Any, repetitions: Any, /) -> Any:
    """``x`` repeated ``repetitions[i]`` times along each axis."""
    reps = tuple(operator.index(r) for r in repetitions)
    nd = builtins.max(len(reps), x.ndim)
    reps = (1,) * (nd - len(reps)) + reps
    shape = (1,) * (nd - x.ndim) + tuple(x.shape)
    y = F.reshape(x, tuple(v for s_ in shape for v in (1, s_)))
    y = F.broadcast_to(y, tuple(v for r, s_ in zip(reps, shape) for v in (r, s_)))
    return F.reshape(y, tuple(r * s_ for r, s_ in zip(reps, shape)))


def repeat(x: Any, repeats: Any, /, *, axis: int | None = None) -> Any:
    """Each element repeated ``repeats`` times (an int, or one count per element, read
    on the host) along ``axis`` (the flattened array when ``None``)."""
    if axis is None:
        x, axis = F.reshape(x, (-1,)), 0
    a = operator.index(axis) % x.ndim
    n = x.shape[a]
    if isinstance(repeats, int) or (hasattr(repeats, "ndim") and repeats.ndim == 0):
        r = int(repeats)
        y = expand_dims(x, axis=a + 1)
        shape = x.shape[:a + 1] + (r,) + x.shape[a + 1:]
        return F.reshape(F.broadcast_to(y, shape), x.shape[:a] + (n * r,) + x.shape[a + 1:])
    counts = np.asarray(repeats).astype(np.int64).reshape(-1)
    if counts.shape[0] not in (1, n):
        raise ValueError(f"repeat: {counts.shape[0]} repeats for an axis of length {n}")
    if counts.shape[0] == 1:
        return repeat(x, int(counts[0]), axis=a)
    parts = [F.getitem(x, (builtins.slice(None),) * a + (builtins.slice(i, i + 1),))
             for i in range(n)]
    parts = [repeat(p, int(c), axis=a) for p, c in zip(parts, counts) if c]
    if not parts:
        return zeros(x.shape[:a] + (0,) + x.shape[a + 1:], x.dtype)
    return F.concatenate(parts, a)


def unstack(x: Any, /, *, axis: int = 0) -> tuple:
    """The slices of ``x`` along ``axis``."""
    a = operator.index(axis)
    if not -x.ndim <= a < x.ndim:
        raise IndexError(f"unstack: axis {axis} is out of range for shape {x.shape}")
    a %= x.ndim
    return tuple(F.getitem(x, (builtins.slice(None),) * a + (i,)) for i in range(x.shape[a]))


def squeeze(x: Any, /, axis: Any) -> Any:
    axes = norm_axes("squeeze", axis, x.shape)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} has size {x.shape[a]}, not 1 "
                             f"(shape {x.shape})")
    return reshape(x, tuple(s for i, s in enumerate(x.shape) if i not in axes))


__all__ = [
    "broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis",
    "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack"
]
