"""The standard's set functions: the ``unique_*`` family. Their output sizes are
data-dependent: one scalar, the number of distinct values, is read back to the host (one
explicit, counted transfer), then the compaction runs on the array's device.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import functions as F
from ..ops import sorting as _ops
from ._common import _require
from .creation import full, ones
from .elementwise import add, imag, isnan, multiply, not_equal, real, subtract
from .manipulation import concat

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


def _order(flat: Any) -> Any:
    """The stable permutation sorting 1-D ``flat``; complex values in numpy's order:
    by ``(real, imag)``, values with a NaN part after the others (``R + nanj``, then
    ``nan + Rj``, then ``nan + nanj``): stable sorts by each key, the last key first."""
    if flat.dtype.kind != "c":
        return _ops.argsort(flat)
    re, im = real(flat), imag(flat)
    nans = add(multiply(F.cast(isnan(re), _I64), 2), F.cast(isnan(im), _I64))
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
        flags = concat([ones((1,), dtype=_BOOL, device=x.device),
                            not_equal(F.getitem(s, (slice(1, None),)),
                                          F.getitem(s, (slice(None, -1),)))])
    else:
        flags = ones((flat.shape[0],), dtype=_BOOL, device=x.device)
    return flat, perm, s, flags, _ops.true_positions(flags)


def _counts(starts: Any, n: int, device: Any) -> Any:
    ends = concat([F.getitem(starts, (slice(1, None),)),
                       full((1,), n, dtype=_I64, device=device)])
    return subtract(ends, starts)


def _inverse(x: Any, perm: Any, flags: Any) -> Any:
    gid = subtract(F.cumulative_sum(F.cast(flags, _I64), 0), 1)
    return F.reshape(F.take(gid, _ops.argsort(perm), 0), x.shape)


def unique_values(x: Any, /) -> Any:
    """The distinct elements of ``x``, sorted (1-D; NaNs each distinct; complex values in
    numpy's order, by ``(real, imag)``). Their number is read back to the host (one
    counted transfer). Not differentiable."""
    _require("unique_values", x)
    _, _, s, flags, starts = _groups(x)
    return F.take(s, starts, 0)


def unique_counts(x: Any, /) -> UniqueCountsResult:
    """``(values, counts)``: the distinct elements and how often each occurs."""
    _require("unique_counts", x)
    _, _, s, flags, starts = _groups(x)
    return UniqueCountsResult(F.take(s, starts, 0), _counts(starts, x.size, x.device))


def unique_inverse(x: Any, /) -> UniqueInverseResult:
    """``(values, inverse_indices)``: ``values[inverse_indices]`` rebuilds ``x``."""
    _require("unique_inverse", x)
    _, perm, s, flags, starts = _groups(x)
    return UniqueInverseResult(F.take(s, starts, 0), _inverse(x, perm, flags))


def unique_all(x: Any, /) -> UniqueAllResult:
    """``(values, indices, inverse_indices, counts)``; ``indices`` are each value's
    first occurrence in the flattened ``x``."""
    _require("unique_all", x)
    _, perm, s, flags, starts = _groups(x)
    return UniqueAllResult(F.take(s, starts, 0), F.take(perm, starts, 0),
                           _inverse(x, perm, flags), _counts(starts, x.size, x.device))


__all__ = [
    "UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult", "unique_all",
    "unique_counts", "unique_inverse", "unique_values"
]
