"""The standard's searching functions: ``argmax``, ``argmin``, ``count_nonzero``,
``nonzero``, ``searchsorted``, ``where``. ``nonzero``'s output size is data-dependent: one
scalar, its length, is read back to the host (one explicit, counted transfer), then the
compaction runs on the array's device.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import functions as F
from ..ops import elementwise as _ew
from ..ops import sorting as _ops
from ._common import _axes, _require, declared
from .data_type import result_type
from .elementwise import floor_divide, remainder

_I64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)


#: The searches the op specs declare for this chapter (``argmax``, ``argmin``)
_DECLARED = declared("searching")
globals().update(_DECLARED)


def count_nonzero(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    """The number of nonzero elements over ``axis`` (int64)."""
    _require("count_nonzero", x)
    axis = _axes("count_nonzero", x, axis)
    hits = F.cast(F.not_equal(x, 0), _I64)
    return hits if axis == () else F.sum(hits, axis, keepdims)


def nonzero(x: Any, /) -> tuple:
    """Indices (int64 arrays, one per dimension) of the nonzero elements, in C order.
    Their number is read back to the host (one counted transfer)."""
    _require("nonzero", x)
    if x.ndim == 0:
        raise ValueError("nonzero: argument 'x' must have at least one dimension")
    flat = _ops.true_positions(F.reshape(F.cast(x, _BOOL), (-1,)))
    out = []
    stride = x.size
    for s in x.shape:
        stride //= s if s else 1
        out.append(remainder(floor_divide(flat, stride), s) if s else flat)
    return tuple(out)


def searchsorted(x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None) -> Any:
    """Indices (int64) where ``x2``'s elements would be inserted into 1-D ``x1`` (sorted
    ascending, or through the permutation ``sorter``) to keep it sorted."""
    _require("searchsorted", x1)
    _require("searchsorted", x2)
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: argument 'x1' must be 1-D, got shape {x1.shape}")
    if sorter is not None:
        x1 = F.take(x1, sorter, 0)
    d = result_type(x1, x2)
    x1 = x1 if x1.dtype == d else F.cast(x1, d)
    x2 = x2 if x2.dtype == d else F.cast(x2, d)
    return _ops.searchsorted(x1, x2, side=side)


def where(condition: Any, x1: Any, x2: Any, /) -> Any:
    """``x1`` where ``condition`` holds, else ``x2`` (broadcast, promoted)."""
    return _ew.where(condition, x1, x2)


__all__ = [*_DECLARED, "count_nonzero", "nonzero", "searchsorted", "where"]
