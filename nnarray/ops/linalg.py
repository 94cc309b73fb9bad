"""Matrix products.

Kernel contract: ``matmul(a, b, transpose_a, transpose_b)`` with numpy's rules (1-D
promotion, batched broadcast); ``transpose_a``/``transpose_b`` swap an operand's last two
axes first (operands of 2 dims or more), so that the backward rules' products with a
transposed operand need no copy of it (BLAS takes the transposed view as it is).
``affine`` is composed from ``reshape``, ``matmul`` and ``add``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..errors import ShapeError
from . import autocast as _autocast
from .common import require_array
from .elementwise import add
from .op import Op
from .shape import reshape_op as reshape


def matmul_shape(op: str, sa: tuple[int, ...], sb: tuple[int, ...]) -> tuple[int, ...]:
    """numpy matmul's output shape, else ``ShapeError`` naming both shapes."""
    if not sa or not sb:
        raise ShapeError(f"{op}: operands must be at least 1-D, got {sa} and {sb}")
    a2 = (1,) + sa if len(sa) == 1 else sa
    b2 = sb + (1,) if len(sb) == 1 else sb
    if a2[-1] != b2[-2]:
        raise ShapeError(f"{op}: inner dimensions differ: 'a' {sa} and 'b' {sb}")
    try:
        batch = a2[:-2] if a2[:-2] == b2[:-2] else np.broadcast_shapes(a2[:-2], b2[:-2])
    except ValueError:
        raise ShapeError(f"{op}: batch dimensions of 'a' {sa} and 'b' {sb} do not "
                         "broadcast") from None
    out = batch + (a2[-2],) * (len(sa) > 1) + (b2[-1],) * (len(sb) > 1)
    return tuple(out)


def _swapped(op: str, name: str, shape: tuple[int, ...], flag: Any) -> tuple[int, ...]:
    if not flag:
        return shape
    if len(shape) < 2:
        raise ShapeError(f"{op}: transpose_{name} needs '{name}' of 2 dims or more, got "
                         f"shape {shape}")
    return shape[:-2] + (shape[-1], shape[-2])


def _infer_matmul(inputs, attrs):
    a, b = inputs
    require_array("matmul", "a", a)
    require_array("matmul", "b", b)
    ta, tb = attrs.get("transpose_a", False), attrs.get("transpose_b", False)
    d = dtypes.promote("matmul", a, b)
    if d == np.bool_:
        d = np.dtype(np.bool_)
    return ((matmul_shape("matmul", _swapped("matmul", "a", a.shape, ta),
                          _swapped("matmul", "b", b.shape, tb)), d),)


#: ``pure``: its metas are cached by value (the kernels default the transpose flags).
matmul = Op("matmul", _infer_matmul, pure=True)


def affine(x: Any, W: Any, b: Any = None) -> Any:
    """``x.reshape(N, -1) @ W + b`` (under ``autocast``: all three in its dtype)."""
    if _autocast.ACTIVE[0]:
        x, W, b = _autocast.cast_inputs("affine", (x, W, b))
    for n, v in (("x", x), ("W", W)):
        require_array("affine", n, v)
    if x.ndim < 1 or W.ndim != 2:
        raise ShapeError(f"affine: need x of >= 1 dims and a 2-D W, got x {x.shape}, "
                         f"W {W.shape}")
    n = x.shape[0]
    k = 1
    for s in x.shape[1:]:
        k *= s
    if k != W.shape[0]:
        raise ShapeError(f"affine: x {x.shape} flattens to ({n}, {k}) but W is {W.shape}")
    if b is not None:
        require_array("affine", "b", b)
        if b.shape not in ((W.shape[1],), (1, W.shape[1])):
            raise ShapeError(f"affine: b has shape {b.shape}, expected ({W.shape[1]},) for "
                             f"W {W.shape}")
    if x.ndim != 2:
        x = reshape(x, shape=(n, k))
    y = matmul(x, W)
    return y if b is None else add(y, b)


# -- backward rules -------------------------------------------------------------------
from .backward import backward as _backward  # noqa: E402
from .backward import fit as _fit  # noqa: E402
from .backward import sum_to as _sum_to  # noqa: E402
from .elementwise import _cj  # noqa: E402


@_backward(matmul, inputs=(0, 1))
def _matmul_grad(c, g):
    """With ``A = a`` or its transpose (``transpose_a``), likewise ``B``: ``dA = g Bᵀ``,
    ``dB = Aᵀ g``, each written as one matmul with transpose flags (no copies)."""
    a, b = c.inputs
    sa, sb = c.in_meta[0][0], c.in_meta[1][0]
    ta, tb = c.attrs.get("transpose_a", False), c.attrs.get("transpose_b", False)
    a2 = reshape(a, shape=(1,) + sa) if len(sa) == 1 else a
    b2 = reshape(b, shape=sb + (1,)) if len(sb) == 1 else b
    a2, b2 = _cj(a2), _cj(b2)  # complex: dA = g B^H, dB = A^H g (PyTorch's convention)
    g2 = reshape(g, shape=matmul_shape("matmul", _swapped("", "a", a2.shape, ta),
                                       _swapped("", "b", b2.shape, tb))) \
        if len(sa) == 1 or len(sb) == 1 else g
    ga = gb = None
    if c.need[0]:
        ga = matmul(b2, g2, transpose_a=tb, transpose_b=True) if ta else \
            matmul(g2, b2, transpose_b=not tb)
        ga = _sum_to(ga, a2.shape)
        ga = _fit(c, 0, reshape(ga, shape=sa) if ga.shape != sa else ga)
    if c.need[1]:
        gb = matmul(g2, a2, transpose_a=True, transpose_b=ta) if tb else \
            matmul(a2, g2, transpose_a=not ta)
        gb = _sum_to(gb, b2.shape)
        gb = _fit(c, 1, reshape(gb, shape=sb) if gb.shape != sb else gb)
    return ga, gb
