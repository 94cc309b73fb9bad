"""Fused solver updates: one dispatch updates every parameter of a device in place.

``sgd_update(ws, gs, lr)`` is ``w -= lr * g`` for each pair (torch's ``_foreach`` idea):
a training step's update costs one dispatch instead of two per parameter, and a backend
may do each pair in one pass (OpenCL does; numpy and CuPy run ``w -= lr * g``).

Kernel contract: ``sgd_update(ws, gs, lr)`` with lists of native arrays (``ws`` written
in place, same shapes and dtypes as ``gs``) and a Python float.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..context import get_current_context
from ..errors import DTypeError, ShapeError
from ..ndarray import NdArray
from ..registry import Entry, dispatch

#: The kernel's dispatch entry (no Op: nothing is inferred or recorded).
SGD_UPDATE = Entry("sgd_update")


def sgd_update(ws: Sequence[NdArray], gs: Sequence[NdArray], lr: float) -> None:
    """``w -= lr * g`` in place for every pair, on the current context."""
    if len(ws) != len(gs):
        raise ShapeError(f"sgd_update: {len(ws)} parameters but {len(gs)} gradients")
    for w, g in zip(ws, gs):  # the usual case in one pass, the error's details below
        if type(w) is not NdArray or type(g) is not NdArray or w.shape != g.shape or \
                w.dtype is not g.dtype and w.dtype != g.dtype or w.dtype.kind != "f":
            _reject(ws, gs)
    if ws:
        dispatch(SGD_UPDATE, get_current_context()).run(gs, {"lr": float(lr)}, out=ws)


def _reject(ws: Sequence[NdArray], gs: Sequence[NdArray]) -> None:
    """Raise the error naming the first pair ``sgd_update`` cannot take."""
    for i, (w, g) in enumerate(zip(ws, gs)):
        if type(w) is not NdArray or type(g) is not NdArray:
            raise TypeError(f"sgd_update: pair {i} must be NdArrays, got "
                            f"{type(w).__name__} and {type(g).__name__}")
        if w.shape != g.shape:
            raise ShapeError(f"sgd_update: parameter {i} has shape {w.shape}, its gradient "
                             f"{g.shape}")
        if w.dtype != g.dtype or w.dtype.kind != "f":
            raise DTypeError(f"sgd_update: parameter {i} is {w.dtype} and its gradient "
                             f"{g.dtype}; both must be the same floating dtype")
