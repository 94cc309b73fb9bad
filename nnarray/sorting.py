"""The Array API's sorting, searching and set functions: ``sort``, ``argsort``,
``searchsorted``, ``nonzero`` and the ``unique_*`` family.

Sorting runs along the last axis (other axes are moved last and back); every sort is
stable. Functions with data-dependent output sizes (``nonzero``, ``unique_*``) read one
scalar, the output size, back to the host (one explicit, counted transfer), then run the
compaction on the array's device.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from . import functions as F
from . import late
from . import xp as _xp
from .ops import sorting as _ops
from .ops.common import norm_axis

_I64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)


class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


def _along(op: str, x: Any, axis: int, fn: Callable) -> Any:
    """``fn`` (a last-axis op) applied along ``axis`` of ``x``."""
    _xp._require(op, x)
    if x.ndim == 0:
        raise ValueError(f"{op}: argument 'x' must have at least one dimension")
    a = norm_axis(op, axis, x.ndim)
    if a == x.ndim - 1:
        return fn(x)
    return _xp.moveaxis(fn(_xp.moveaxis(x, a, -1)), -1, a)


def sort(x: Any, /, *, axis: int = -1, descending: builtins.bool = False,
         stable: builtins.bool = True) -> Any:
    """``x`` sorted along ``axis`` (always stable; NaNs last, first when ``descending``).
    Differentiable: the gradient goes back to each value's original position."""
    return _along("sort", x, axis, lambda y: _ops.sort(y, descending=descending))


def argsort(x: Any, /, *, axis: int = -1, descending: builtins.bool = False,
            stable: builtins.bool = True) -> Any:
    """The indices (int64) that sort ``x`` along ``axis`` (always stable)."""
    return _along("argsort", x, axis, lambda y: _ops.argsort(y, descending=descending))


def searchsorted(x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None) -> Any:
    """Indices (int64) where ``x2``'s elements would be inserted into 1-D ``x1`` (sorted
    ascending, or through the permutation ``sorter``) to keep it sorted."""
    _xp._require("searchsorted", x1)
    _xp._require("searchsorted", x2)
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: argument 'x1' must be 1-D, got shape {x1.shape}")
    if sorter is not None:
        x1 = F.take(x1, sorter, 0)
    d = _xp.result(x1, x2)
    x1 = x1 if x1.dtype == d else F.cast(x1, d)
    x2 = x2 if x2.dtype == d else F.cast(x2, d)
    return _ops.searchsorted(x1, x2, side=side)


def nonzero(x: Any, /) -> tuple:
    """Indices (int64 arrays, one per dimension) of the nonzero elements, in C order.
    Their number is read back to the host (one counted transfer)."""
    _xp._require("nonzero", x)
    if x.ndim == 0:
        raise ValueError("nonzero: argument 'x' must have at least one dimension")
    flat = _ops.true_positions(F.reshape(F.cast(x, _BOOL), (-1,)))
    out = []
    stride = x.size
    for s in x.shape:
        stride //= s if s else 1
        out.append(_xp.remainder(_xp.floor_divide(flat, stride), s) if s else flat)
    return tuple(out)


def _order(flat: Any) -> Any:
    """The stable permutation sorting 1-D ``flat``; complex values in numpy's order:
    by ``(real, imag)``, values with a NaN part after the others (``R + nanj``, then
    ``nan + Rj``, then ``nan + nanj``): stable sorts by each key, the last key first."""
    if flat.dtype.kind != "c":
        return _ops.argsort(flat)
    re, im = _xp.real(flat), _xp.imag(flat)
    nans = _xp.add(_xp.multiply(F.cast(_xp.isnan(re), _I64), 2), F.cast(_xp.isnan(im), _I64))
    p = _ops.argsort(im)
    for key in (re, nans):
        p = F.take(p, _ops.argsort(F.take(key, p, 0)), 0)
    return p


def _groups(x: Any) -> tuple:
    """(flat, perm, sorted, flags, starts) of ``x``: group boundaries of its sorted
    elements (NaNs each their own group); ``starts`` are the groups' first positions."""
    flat = F.reshape(x, (-1,))
    perm = _order(flat)
    s = F.take(flat, perm, 0)
    if flat.shape[0] > 1:
        flags = _xp.concat([_xp.ones((1,), dtype=_BOOL, device=x.device),
                            _xp.not_equal(F.getitem(s, (slice(1, None),)),
                                          F.getitem(s, (slice(None, -1),)))])
    else:
        flags = _xp.ones((flat.shape[0],), dtype=_BOOL, device=x.device)
    return flat, perm, s, flags, _ops.true_positions(flags)


def _counts(starts: Any, n: int, device: Any) -> Any:
    ends = _xp.concat([F.getitem(starts, (slice(1, None),)),
                       _xp.full((1,), n, dtype=_I64, device=device)])
    return _xp.subtract(ends, starts)


def _inverse(x: Any, perm: Any, flags: Any) -> Any:
    gid = _xp.subtract(F.cumulative_sum(F.cast(flags, _I64), 0), 1)
    return F.reshape(F.take(gid, _ops.argsort(perm), 0), x.shape)


def unique_values(x: Any, /) -> Any:
    """The distinct elements of ``x``, sorted (1-D; NaNs each distinct; complex values in
    numpy's order, by ``(real, imag)``). Their number is read back to the host (one
    counted transfer). Not differentiable."""
    _xp._require("unique_values", x)
    _, _, s, flags, starts = _groups(x)
    return F.take(s, starts, 0)


def unique_counts(x: Any, /) -> UniqueCountsResult:
    """``(values, counts)``: the distinct elements and how often each occurs."""
    _xp._require("unique_counts", x)
    _, _, s, flags, starts = _groups(x)
    return UniqueCountsResult(F.take(s, starts, 0), _counts(starts, x.size, x.device))


def unique_inverse(x: Any, /) -> UniqueInverseResult:
    """``(values, inverse_indices)``: ``values[inverse_indices]`` rebuilds ``x``."""
    _xp._require("unique_inverse", x)
    _, perm, s, flags, starts = _groups(x)
    return UniqueInverseResult(F.take(s, starts, 0), _inverse(x, perm, flags))


def unique_all(x: Any, /) -> UniqueAllResult:
    """``(values, indices, inverse_indices, counts)``; ``indices`` are each value's
    first occurrence in the flattened ``x``."""
    _xp._require("unique_all", x)
    _, perm, s, flags, starts = _groups(x)
    return UniqueAllResult(F.take(s, starts, 0), F.take(perm, starts, 0),
                           _inverse(x, perm, flags), _counts(starts, x.size, x.device))


__all__ = ["UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult", "argsort",
           "nonzero", "searchsorted", "sort", "unique_all", "unique_counts",
           "unique_inverse", "unique_values"]

late.provide(__name__)  # bind the lower layers' slots (nnarray.late)
