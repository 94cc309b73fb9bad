"""In-place writes: ``a op= b`` into ``a``'s storage, and ``assign`` (a cast into ``dst``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import context as _context
from ..errors import DTypeError, ShapeError
from ..ndarray import NdArray
from ..registry import dispatch
from .elementwise import cast
from .hot_path import BinaryOp, short_key
from .op import Op


def inplace(op: Op, a: Any, b: Any) -> Any:
    """``a op= b`` really in place: the result is written into ``a``'s storage."""
    op = getattr(op, "op", op)  # F.add is the function of the op
    if type(a) is not NdArray:
        return a._inplace(op, b)  # graph values define their own in-place semantics
    k = dispatch(op, _context.dispatch_into(a, (a, b), op.name))
    if type(b) is NdArray and k.plain and isinstance(op, BinaryOp) and \
            op.metas.get(short_key(a, b)) == a.dtype:
        return k.run((a, b), {}, out=a)  # the cached fast path (solver updates)
    ((shape, dt),) = op.out_metas((a, b), {})
    if shape != a.shape:
        raise ShapeError(f"{op.name} (in place): result shape {shape} differs from the "
                         f"target's shape {a.shape}")
    if not np.can_cast(dt, a.dtype, "same_kind"):
        raise DTypeError(f"{op.name} (in place): cannot store a {dt} result in a {a.dtype} "
                         "array (same_kind casting)")
    if k.composite:
        a.copy_from(op(a, b))
        return a
    return k.run((a, b), {}, out=a)


def assign(dst: Any, src: Any) -> None:
    """Write ``src`` (same shape, any dtype) into ``dst`` where ``dst`` is (or in the
    current scope)."""
    if src.shape != dst.shape:
        raise ShapeError(f"assign: source shape {src.shape} differs from target {dst.shape}")
    dispatch(cast, _context.dispatch_into(dst, (dst, src), "assign")).run(
        (src,), {"dtype": dst.dtype}, out=dst, mode="w")
