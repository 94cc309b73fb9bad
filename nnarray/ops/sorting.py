"""Sorting, searching and mask-compaction ops.

Kernel contract (every op works along the last axis of a C-contiguous input):
``sort(x, descending: bool)`` and ``argsort(x, descending: bool)`` are stable (ties keep
their order; NaN sorts after every number, and first when ``descending``, as numpy's
flip-sort-flip gives); ``argsort`` returns int64. ``searchsorted(x1, x2, side)``: x1 1-D
sorted ascending, x2 any shape of the same dtype -> int64 insertion points.
``positions(mask, count)``: the int64 indices where 1-D bool ``mask`` holds, in order;
``count`` (their number) is known on the host.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DTypeError, ShapeError
from .common import require_array, require_ordered
from .op import Op

_I64 = np.dtype(np.int64)


def _infer_sort(name: str, out_dtype: np.dtype | None):
    def infer(inputs, attrs):
        (x,) = inputs
        require_array(name, "x", x)
        if x.ndim == 0:
            raise ValueError(f"{name}: argument 'x' must have at least one dimension")
        require_ordered(name, (x,))
        attrs["descending"] = bool(attrs.get("descending", False))
        return ((x.shape, out_dtype or x.dtype),)
    return infer


def _infer_searchsorted(inputs, attrs):
    x1, x2 = inputs
    require_array("searchsorted", "x1", x1)
    require_array("searchsorted", "x2", x2)
    require_ordered("searchsorted", (x1, x2), ("x1", "x2"))
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: argument 'x1' must be 1-D, got shape {x1.shape}")
    if x1.dtype != x2.dtype:
        raise DTypeError(f"searchsorted: x1 ({x1.dtype}) and x2 ({x2.dtype}) must have "
                         "the same dtype")
    side = attrs.get("side", "left")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: argument 'side' must be 'left' or 'right', "
                         f"got {side!r}")
    attrs["side"] = side
    return ((x2.shape, _I64),)


def _infer_positions(inputs, attrs):
    (mask,) = inputs
    require_array("positions", "mask", mask)
    if mask.ndim != 1 or mask.dtype != np.bool_:
        raise ShapeError(f"positions: mask must be 1-D bool, got {mask.shape} ({mask.dtype})")
    n = attrs["count"] = int(attrs["count"])
    if not 0 <= n <= mask.shape[0]:
        raise ValueError(f"positions: count {n} is out of range for shape {mask.shape}")
    return (((n,), _I64),)


#: Stable sort of the last axis.
sort = Op("sort", _infer_sort("sort", None))
#: The stable sorting permutation of the last axis (int64).
argsort = Op("argsort", _infer_sort("argsort", _I64), differentiable=False)
#: Insertion points of ``x2`` in sorted 1-D ``x1`` (int64).
searchsorted = Op("searchsorted", _infer_searchsorted, differentiable=False)
#: The int64 indices where 1-D bool ``mask`` holds (their ``count`` given).
positions = Op("positions", _infer_positions, differentiable=False)


def true_positions(mask) -> object:
    """The int64 indices where 1-D bool ``mask`` holds. Their number is data-dependent:
    it is read to the host (one explicit, counted scalar) before ``positions`` runs."""
    from .elementwise import cast
    from .reduction import sum_op as _sum
    return positions(mask, count=int(_sum(cast(mask, dtype=_I64)).item()))


# -- backward rules -------------------------------------------------------------------
from .. import late  # noqa: E402
from .backward import backward as _backward  # noqa: E402
from .backward import fit as _fit  # noqa: E402

_F: Any = late.bind(__name__, "_F", "nnarray.functions")


@_backward(sort, inputs=(0,))
def _sort_grad(c, g):  # each gradient goes back to the position its value came from
    x = c.inputs[0]
    perm = argsort(x, descending=c.attrs["descending"])
    inv = argsort(perm)  # where each input position landed
    n = x.shape[-1]
    # each element's flat position p, from the data (no constant, so traced programs
    # stay device-free); the row's start is p - p % n
    ones = _F.cast(_F.equal(inv, inv), _I64)
    p = _F.cumulative_sum(_F.reshape(ones, (-1,)), 0) - 1
    flat = p - p % n + _F.reshape(inv, (-1,))
    return (_fit(c, 0, _F.reshape(_F.take(_F.reshape(g, (-1,)), flat, 0), x.shape)),)
