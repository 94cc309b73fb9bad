"""Embedding lookup (torch's ``embedding``): rows of a weight matrix picked by integer
indices, one graph node whose gradient is a scatter-add (repeated indices accumulate).

Composed from the indexing kernels (``gather``/``scatter_add`` of the flattened weight),
so every backend has it. Kernel contract: ``embedding(indices, W) -> (y, offsets)``: ``y``
of shape ``indices.shape + (D,)`` and the int64 flat offsets into ``W`` it read (the
second output is not differentiable; the backward rule scatters into them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DTypeError, ShapeError
from ..registry import register_composite
from . import elementwise as _ew
from . import reduction as _red
from .common import require_array, require_float
from .indexing import gather, scatter_add
from .op import Op
from .shape import reshape as _reshape
from .surfaces import declare


def _infer(inputs, attrs):
    idx, W = inputs
    require_array("embedding", "indices", idx)
    require_float("embedding", "weight", W)
    if idx.dtype.kind not in "iu":
        raise DTypeError(f"embedding: indices must be integers, got {idx.dtype} of shape "
                         f"{idx.shape}")
    if W.ndim != 2:
        raise ShapeError(f"embedding: weight must be 2-D (num_embeddings, dim), got shape "
                         f"{W.shape}")
    out = tuple(idx.shape) + (W.shape[1],)
    return ((out, W.dtype), (out, np.dtype(np.int64)))


embedding_op = Op("embedding", _infer)


def _check_range(idx: Any, n: int) -> None:
    """``IndexError`` unless every index is in ``[0, n)``: on a current host copy where
    there is one, else on the device with one flag read back (counted)."""
    from .. import discovery as backends
    if idx.size == 0:
        return
    v = idx.current_copy(backends.host_device()) if idx.lazy_fill is None else None
    if v is None:
        f = _ew.functions
        bad = f["logical_or"](f["less"](idx, 0), f["greater_equal"](idx, n))
        if not bool(_red.max(_ew.cast(bad, dtype=np.int32)).item()):
            return
        v = idx.get_data("r", "numpy")
    v = np.asarray(v).reshape(-1)
    out = v[(v < 0) | (v >= n)]
    if out.size:
        raise IndexError(f"embedding: index {int(out[0])} is out of range for a weight of "
                         f"{n} rows")


def _compose(idx: Any, W: Any) -> tuple[Any, Any]:
    from ..ndarray import ones
    n, d = W.shape
    _check_range(idx, n)
    cols = _red.cumulative_sum(ones((d,), np.int64)) - 1  # arange(d), made on the device
    rows = _reshape(_ew.cast(idx, dtype=np.int64) * d, tuple(idx.shape) + (1,))
    offsets = rows + cols
    y = gather(_reshape(W, (-1,)), _reshape(offsets, (-1,)))
    return _reshape(y, offsets.shape), offsets


register_composite("embedding", _compose)


def _onnx_embedding(ex: Any, n: Any, outs: list) -> None:
    idx, W = n.inputs
    ex.emit("Gather", [ex.value(W), ex.value(idx)], [outs[0]], axis=0)


@declare(embedding_op, onnx=_onnx_embedding, macro=True)
def embedding(indices: Any, weight: Any) -> Any:
    """``weight[indices]``: rows of ``weight`` (``(num_embeddings, dim)``) at integer
    ``indices`` of any shape (each in ``[0, num_embeddings)``, else ``IndexError``)."""
    return embedding_op(indices, weight)[0]


# -- backward rule --------------------------------------------------------------------
from .backward import backward as _backward  # noqa: E402


@_backward(embedding_op, outputs=(1,))
def _embedding_grad(c, g):
    shape = c.in_meta[1][0]
    n = shape[0] * shape[1]
    flat = _reshape(c.outputs[1], (-1,))
    gf = _reshape(g, (-1,))
    if g.dtype == np.float16:  # accumulate in float32
        r = _ew.cast(scatter_add(_ew.cast(gf, dtype=np.float32), flat, size=n), dtype=np.float16)
    else:
        r = scatter_add(gf, flat, size=n)
    return (None, _reshape(r, shape))
