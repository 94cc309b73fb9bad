"""The standard's sorting functions: ``sort`` and ``argsort``, along the last axis (other
axes are moved last and back); every sort is stable.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from ..ops import sorting as _ops
from ..ops.common import norm_axis
from ._common import _require
from .manipulation import moveaxis


def _along(op: str, x: Any, axis: int, fn: Callable) -> Any:
    """``fn`` (a last-axis op) applied along ``axis`` of ``x``."""
    _require(op, x)
    if x.ndim == 0:
        raise ValueError(f"{op}: argument 'x' must have at least one dimension")
    a = norm_axis(op, axis, x.ndim)
    if a == x.ndim - 1:
        return fn(x)
    return moveaxis(fn(moveaxis(x, a, -1)), -1, a)


def sort(x: Any, /, *, axis: int = -1, descending: builtins.bool = False,
         stable: builtins.bool = True) -> Any:
    """``x`` sorted along ``axis`` (always stable; NaNs last, first when ``descending``).
    Differentiable: the gradient goes back to each value's original position."""
    return _along("sort", x, axis, lambda y: _ops.sort(y, descending=descending))


def argsort(x: Any, /, *, axis: int = -1, descending: builtins.bool = False,
            stable: builtins.bool = True) -> Any:
    """The indices (int64) that sort ``x`` along ``axis`` (always stable)."""
    return _along("argsort", x, axis, lambda y: _ops.argsort(y, descending=descending))


__all__ = ["argsort", "sort"]
