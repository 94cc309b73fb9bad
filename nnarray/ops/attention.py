"""Scaled dot-product attention with torch's semantics, composed from F functions
(``matmul``, ``softmax``, ``where``), so it runs and differentiates on every backend."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import late
from ..errors import DTypeError, ShapeError
from .common import require_array, require_float

_F: Any = late.bind(__name__, "_F", "nnarray.functions")

#: ``{(L, S): bool NdArray}``: lower-triangular causal masks, each uploaded to a device
#: once and reused (its copies stay current).
_causal: dict[tuple[int, int], Any] = {}


def causal_mask(L: int, S: int) -> Any:
    """The ``(L, S)`` bool mask of torch's ``is_causal`` (``ones(L, S).tril()``)."""
    m = _causal.get((L, S))
    if m is None:
        from ..ndarray import NdArray
        if len(_causal) >= 32:
            _causal.clear()
        m = _causal[(L, S)] = NdArray.from_numpy_array(np.tril(np.ones((L, S), bool)))
    return m


def _check(q: Any, k: Any, v: Any, attn_mask: Any, is_causal: bool) -> None:
    op = "scaled_dot_product_attention"
    for name, a in (("query", q), ("key", k), ("value", v)):
        require_float(op, name, a)
        if a.ndim < 2:
            raise ShapeError(f"{op}: {name} must be at least 2-D (..., length, dim), got "
                             f"shape {a.shape}")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ShapeError(f"{op}: query {q.shape}, key {k.shape} and value {v.shape} need "
                         "query and key of one feature size and key and value of one length")
    if attn_mask is not None:
        if is_causal:
            raise ValueError(f"{op}: give attn_mask or is_causal=True, not both")
        require_array(op, "attn_mask", attn_mask)
        if attn_mask.dtype.kind not in "bf":
            raise DTypeError(f"{op}: attn_mask must be bool or floating point, got "
                             f"{attn_mask.dtype}")


def scaled_dot_product_attention(query: Any, key: Any, value: Any, attn_mask: Any = None,
                                 is_causal: bool = False, scale: float | None = None) -> Any:
    """``softmax(query @ key^T * scale + mask) @ value`` over the last two axes, as torch:
    ``scale`` defaults to ``1 / sqrt(E)``; a bool ``attn_mask`` marks the positions that
    take part (``False``: ``-inf``), a float one is added; ``is_causal`` masks positions
    after the query's (top-left aligned ``(L, S)`` lower triangle)."""
    _check(query, key, value, attn_mask, is_causal)
    E = query.shape[-1]
    s = _F.matmul(query, key, transpose_b=True) * (1.0 / math.sqrt(E) if scale is None
                                                  else float(scale))
    if is_causal:
        s = _F.where(causal_mask(query.shape[-2], key.shape[-2]), s, -math.inf)
    elif attn_mask is not None:
        s = _F.where(attn_mask, s, -math.inf) if attn_mask.dtype.kind == "b" else s + attn_mask
    return _F.matmul(_F.softmax(s, axis=-1), value)
