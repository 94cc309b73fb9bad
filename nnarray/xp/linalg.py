"""The standard's linear algebra functions of the main namespace: ``matmul``,
``matrix_transpose``, ``tensordot``, ``vecdot`` (the ``linalg`` extension is
``nnarray.linalg``).
"""

from __future__ import annotations

import builtins
import operator
from typing import Any

import numpy as np

from .. import functions as F
from .creation import zeros
from .data_type import result_type
from .statistics import sum

_BOOL = np.dtype(np.bool_)


def matmul(x1: Any, x2: Any, /) -> Any:
    return F.matmul(x1, x2)


def matrix_transpose(x: Any, /) -> Any:
    return x.mT


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Any:
    """Sum of products over ``axes`` (an int: the last of ``x1`` with the first of
    ``x2``; or two sequences of axes)."""
    if isinstance(axes, int):
        if axes < 0:
            raise ValueError(f"tensordot: axes must be >= 0, got {axes}")
        a1 = tuple(range(x1.ndim - axes, x1.ndim))
        a2 = tuple(range(axes))
    else:
        a1 = tuple(operator.index(a) % x1.ndim for a in axes[0])
        a2 = tuple(operator.index(a) % x2.ndim for a in axes[1])
    for i, j in zip(a1, a2):
        if x1.shape[i] != x2.shape[j]:
            raise ValueError(f"tensordot: axis {i} of {x1.shape} and axis {j} of {x2.shape} "
                             "differ in size")
    k1 = [i for i in range(x1.ndim) if i not in a1]
    k2 = [j for j in range(x2.ndim) if j not in a2]
    m = int(np.prod([x1.shape[i] for i in k1], dtype=np.int64))
    n = int(np.prod([x2.shape[j] for j in k2], dtype=np.int64))
    k = int(np.prod([x1.shape[i] for i in a1], dtype=np.int64))
    p = F.reshape(F.transpose(x1, (*k1, *a1)), (m, k))
    q = F.reshape(F.transpose(x2, (*a2, *k2)), (k, n))
    if k == 0 or p.dtype == _BOOL or q.dtype == _BOOL:
        r = F.sum(F.mul(F.reshape(p, (m, k, 1)), F.reshape(q, (1, k, n))), axis=1) \
            if k else zeros((m, n), result_type(p, q))
    else:
        r = F.matmul(p, q)
    d = result_type(x1, x2)
    if r.dtype != d:
        r = F.cast(r, d)
    return F.reshape(r, tuple(x1.shape[i] for i in k1) + tuple(x2.shape[j] for j in k2))


def _vector_shapes(op: str, x1: Any, x2: Any, axis: int) -> tuple:
    """``(s1, s2)``: both shapes left-padded to one rank, for a function of vectors along
    ``axis`` (``vecdot``, ``linalg.cross``); ``axis`` checked against that rank."""
    nd = builtins.max(x1.ndim, x2.ndim)
    if not -nd <= axis < nd:
        raise ValueError(f"{op}: axis {axis} is out of range for {x1.shape}, {x2.shape}")
    return (1,) * (nd - x1.ndim) + tuple(x1.shape), (1,) * (nd - x2.ndim) + tuple(x2.shape)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """The dot product of vectors along ``axis`` (broadcast over the rest)."""
    s1, s2 = _vector_shapes("vecdot", x1, x2, axis)
    if s1[axis] != s2[axis]:
        raise ValueError(f"vecdot: shapes {x1.shape} and {x2.shape} differ along axis {axis}")
    if x1.dtype.kind == "c":  # the standard conjugates the first argument
        x1 = F.conj(x1)
    return sum(F.mul(x1, x2), axis=axis, dtype=result_type(x1, x2))


__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]
