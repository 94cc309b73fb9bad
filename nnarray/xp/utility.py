"""The standard's utility functions: ``all``, ``any`` and ``diff``.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any

import numpy as np

from .. import functions as F
from ..ops.common import norm_axes
from ._common import _axes, _require

_I64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)


def _count(op: str, x: Any, axis: Any, keepdims: builtins.bool, truth: builtins.bool) -> Any:
    _require(op, x)
    axis = _axes(op, x, axis)
    hits = F.not_equal(x, 0) if truth else F.equal(x, 0)
    if axis == () or x.ndim == 0:
        return hits if truth else F.logical_not(hits)
    n = F.sum(F.cast(hits, _I64), axis, keepdims)
    return F.greater(n, 0) if truth else F.equal(n, 0)


def all(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    """Whether every element along ``axis`` is nonzero (True for none)."""
    return _count("all", x, axis, keepdims, False)


def any(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    """Whether some element along ``axis`` is nonzero."""
    return _count("any", x, axis, keepdims, True)


def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None,
         append: Any = None) -> Any:
    """The ``n``-th forward difference along ``axis`` (``prepend``/``append`` joined
    first); bool arrays give ``x[i+1] != x[i]``, as numpy does."""
    _require("diff", x)
    if x.ndim == 0:
        raise ValueError("diff: argument 'x' must have at least one dimension")
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"diff: argument 'n' must be >= 0, got {n}")
    a = norm_axes("diff", axis, x.shape)[0]
    parts = [v for v in (prepend, x, append) if v is not None]
    y = F.concatenate(parts, a) if len(parts) > 1 else x
    head = [builtins.slice(None)] * x.ndim
    tail = [builtins.slice(None)] * x.ndim
    head[a], tail[a] = builtins.slice(1, None), builtins.slice(None, -1)
    for _ in range(n):
        hi, lo = F.getitem(y, tuple(head)), F.getitem(y, tuple(tail))
        y = F.not_equal(hi, lo) if y.dtype == _BOOL else F.sub(hi, lo)
    return y


__all__ = ["all", "any", "diff"]
