"""The standard's indexing functions: ``take`` and ``take_along_axis``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import functions as F
from ..errors import DTypeError
from ..ndarray import NdArray
from ..ops.common import norm_axes
from ..views import c_strides
from ._common import _require

_I64 = np.dtype(np.int64)


def take(x: Any, indices: Any, /, *, axis: int | None = None) -> Any:
    """Elements of ``x`` at the 1-D integer ``indices`` along ``axis``."""
    return F.take(x, indices, axis)


def take_along_axis(x: Any, indices: Any, /, *, axis: int = -1) -> Any:
    """``x``'s elements at ``indices`` along ``axis`` (negative count from the end); the
    other axes of ``x`` and ``indices`` broadcast. Runs where ``x`` is: one gather."""
    from ..ops.indexing import check_bounds, gather
    _require("take_along_axis", x)
    _require("take_along_axis", indices)
    if x.ndim == 0 or indices.ndim != x.ndim:
        raise ValueError(f"take_along_axis: x {x.shape} and indices {indices.shape} must "
                         f"have the same number (>= 1) of dimensions")
    if indices.dtype.kind not in "iu":
        raise DTypeError(f"take_along_axis: argument 'indices' must be integer, got "
                         f"{indices.dtype}")
    a = norm_axes("take_along_axis", axis, x.shape)[0]
    try:
        out = np.broadcast_shapes(x.shape[:a] + (1,) + x.shape[a + 1:],
                                  indices.shape[:a] + (1,) + indices.shape[a + 1:])
    except ValueError:
        raise ValueError(f"take_along_axis: x {x.shape} and indices {indices.shape} do not "
                         f"broadcast outside axis {a}") from None
    out = out[:a] + (indices.shape[a],) + out[a + 1:]
    dim = x.shape[a]
    i = F.cast(indices, _I64) if indices.dtype != _I64 else indices
    check_bounds("take_along_axis", i, dim, a, x.shape)
    i = F.remainder(i, dim) if dim else i
    # the element strides, 0 along broadcast axes
    st = [s if n > 1 else 0 for s, n in zip(c_strides(x.shape), x.shape)]
    base = np.zeros([1 if d == a else out[d] for d in range(x.ndim)], np.int64)
    for d in range(x.ndim):
        if d != a:
            base = base + (np.arange(out[d], dtype=np.int64) * st[d]).reshape(
                [-1 if e == d else 1 for e in range(x.ndim)])
    offs = F.broadcast_to(F.mul(i, int(st[a])), out)
    if base.any():
        host = NdArray.from_numpy_array(np.ascontiguousarray(base))
        dev = getattr(offs, "device", None)
        if dev is not None and dev != host.device:  # the offsets go where x is, explicitly
            host = host.to_device(dev)
        offs = F.add(offs, host)
    return F.reshape(gather(F.reshape(x, (-1,)), F.reshape(offs, (-1,))), out)


__all__ = ["take", "take_along_axis"]
