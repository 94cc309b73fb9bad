"""``pad``: numpy's ``constant``, ``edge`` and ``reflect`` modes, built from slices and
``concatenate`` on the array's device (differentiable)."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from . import functions as F

MODES = ("constant", "edge", "reflect")


def _widths(pad_width: Any, ndim: int) -> list[tuple[int, int]]:
    """numpy's forms (``n``, ``(before, after)``, one pair per axis) as one pair per axis."""
    w = np.asarray(pad_width)
    if w.dtype.kind not in "iu" or w.size == 0:
        raise ValueError(f"pad: argument 'pad_width' must hold integers, got {pad_width!r}")
    try:
        w = np.broadcast_to(w.reshape(-1, 2) if w.ndim == 2 else w, (ndim, 2))
    except ValueError:
        raise ValueError(f"pad: argument 'pad_width' {pad_width!r} does not fit "
                         f"{ndim} dimensions") from None
    if (w < 0).any():
        raise ValueError(f"pad: argument 'pad_width' must be >= 0, got {pad_width!r}")
    return [(int(a), int(b)) for a, b in w]


def _cut(x: Any, axis: int, start: Any, stop: Any, step: Any = None) -> Any:
    key = [slice(None)] * x.ndim
    key[axis] = slice(start, stop, step)
    return F.getitem(x, tuple(key))


def _side(x: Any, axis: int, width: int, mode: str, before: bool, value: Any) -> Any:
    n = x.shape[axis]
    shape = x.shape[:axis] + (width,) + x.shape[axis + 1:]
    if mode == "constant":
        from .xp import full
        dev = getattr(x, "device", None)
        return full(shape, operator.index(value) if x.dtype.kind in "biu" else value,
                    x.dtype, device=dev)
    if mode == "edge":
        return F.broadcast_to(_cut(x, axis, 0, 1) if before else _cut(x, axis, n - 1, n),
                              shape)
    if before:  # reflect: x[width], ..., x[1]
        return _cut(x, axis, width, 0, -1)
    return _cut(x, axis, n - 2, n - 2 - width if n - 2 - width >= 0 else None, -1)


def pad(x: Any, pad_width: Any, mode: str = "constant", *, constant_values: Any = 0) -> Any:
    """``x`` padded by ``pad_width`` (numpy's forms) with ``constant_values``, the edge
    values (``edge``) or their mirror image without the edge (``reflect``)."""
    if mode not in MODES:
        raise ValueError(f"pad: mode {mode!r} is not supported (one of {', '.join(MODES)})")
    widths = _widths(pad_width, x.ndim)
    y = x
    for axis, (b, a) in enumerate(widths):
        n = y.shape[axis]
        if mode != "constant" and (b or a) and n == 0:
            raise ValueError(f"pad: cannot pad an empty axis {axis} in mode {mode!r} "
                             f"(shape {x.shape})")
        if mode == "reflect" and max(b, a) >= n:
            raise ValueError(f"pad: reflect widths {b, a} must be smaller than axis {axis}'s "
                             f"size {n} (shape {x.shape})")
        parts = ([_side(y, axis, b, mode, True, constant_values)] if b else []) + [y] + \
                ([_side(y, axis, a, mode, False, constant_values)] if a else [])
        if len(parts) > 1:
            y = F.concatenate(parts, axis)
    return y if y is not x else F.cast(x, x.dtype)
