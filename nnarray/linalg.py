"""The Array API 2023.12 ``linalg`` extension (``nnarray.linalg``).

Products, norms, ``trace``/``diagonal``/``cross``/``outer`` and ``matrix_power`` are built
from ``F`` ops and run on the array's device (differentiable through their parts). The
dense decompositions (``ops.decomp``) run the backend's own LAPACK (numpy/CuPy); on OpenCL
they fall back to numpy through the registry (counted in ``fallback_stats()``) and the
result is moved back to the caller's device.
"""

from __future__ import annotations

import builtins
import math
from typing import Any, NamedTuple

import numpy as np

from . import dtypes as _dtypes
from . import functions as F
from . import xp as _xf
from .errors import DTypeError, ShapeError
from .ndarray import NdArray
from .ops import decomp as _d
from .xp import matmul, matrix_transpose, tensordot, vecdot
from .xp.linalg import _vector_shapes

__all__ = [
    "EighResult", "QRResult", "SVDResult", "SlogdetResult",
    "cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
    "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr",
    "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm",
]


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


def _home(r: Any, x: Any) -> Any:
    """``r`` back on ``x``'s device (a host fallback's result)."""
    if type(r) is NdArray and type(x) is NdArray and r.device != x.device:
        return r.to_device(x.device)
    return r


def _float(op: str, x: Any, arg: str = "x") -> None:
    if x.dtype.kind not in "fc":
        raise DTypeError(f"{op}: argument '{arg}' must be floating point, got {x.dtype} "
                         f"(shape {x.shape})")


def _const(a: np.ndarray, like: Any) -> Any:
    return _d._const(a, like)


# -- host decompositions ----------------------------------------------------------------
def cholesky(x: Any, /, *, upper: bool = False) -> Any:
    """The Cholesky factor ``L`` (``x = L Lᵀ``), or ``Lᵀ`` when ``upper``."""
    lo = _home(_d.cholesky(x), x)
    return _xf.matrix_transpose(lo) if upper else lo


def det(x: Any, /) -> Any:
    return _home(_d.det(x), x)


def inv(x: Any, /) -> Any:
    return _home(_d.inv(x), x)


def slogdet(x: Any, /) -> SlogdetResult:
    ld, s = _d.slogdet(x)
    return SlogdetResult(_home(s, x), _home(ld, x))


def solve(x1: Any, x2: Any, /) -> Any:
    """``x`` with ``x1 @ x = x2``; a 1-D ``x2`` is one vector."""
    if x2.ndim == 1:
        if x1.ndim < 2 or x1.shape[-1] != x2.shape[0]:
            raise ShapeError(f"solve: 'x2' {x2.shape} does not match 'x1' {x1.shape}")
        r = _d.solve(x1, F.reshape(x2, (x2.shape[0], 1)))
        return _home(F.reshape(r, tuple(r.shape[:-1])), x1)
    return _home(_d.solve(x1, x2), x1)


def eigh(x: Any, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices. In a graph both
    carry gradients: the eigenvectors then come from a second op (``eigh_vectors``, one
    more decomposition) whose rule handles theirs."""
    w, v = _d.eigh(x)
    if type(x) is not NdArray:  # a graph value: eigenvectors with their own backward rule
        v = _d.eigh_vectors(x)
    return EighResult(_home(w, x), _home(v, x))


def eigvalsh(x: Any, /) -> Any:
    return _home(_d.eigvalsh(x), x)


def qr(x: Any, /, *, mode: str = "reduced") -> QRResult:
    """``Q`` and ``R`` with ``x = Q R``. In a graph of tall or square matrices (reduced
    mode) both factors carry gradients: they come from ``qr_q``/``qr_r``, whose rules
    handle theirs (two more decompositions)."""
    q, r = _d.qr(x, mode=mode)
    if type(x) is not NdArray and mode == "reduced" and x.shape[-2] >= x.shape[-1]:
        q, r = _d.qr_q(x), _d.qr_r(x)
    return QRResult(_home(q, x), _home(r, x))


def svd(x: Any, /, *, full_matrices: bool = True) -> SVDResult:
    """``U``, the singular values (descending) and ``Vh`` with ``x = U diag(S) Vh``. In a
    graph with ``full_matrices=False`` all three carry gradients (``svd_u``, ``svdvals``,
    ``svd_vh``: three decompositions, each with its rule)."""
    u, s, vh = _d.svd(x, full_matrices=full_matrices)
    if type(x) is not NdArray and not full_matrices:
        u, s, vh = _d.svd_u(x), _d.svdvals(x), _d.svd_vh(x)
    return SVDResult(_home(u, x), _home(s, x), _home(vh, x))


def svdvals(x: Any, /) -> Any:
    return _home(_d.svdvals(x), x)


def _tol(op: str, x: Any, s: Any, rtol: Any) -> Any:
    """The cut-off per matrix: ``rtol * max(s)`` (default ``max(M, N) * eps``)."""
    m, n = x.shape[-2:]
    if rtol is None:
        rtol = builtins.max(m, n) * float(np.finfo(x.dtype).eps)
    smax = F.max(s, axis=-1, keepdims=True) if s.shape[-1] else s
    if isinstance(rtol, (int, float)):
        return F.mul(smax, float(rtol))
    return F.mul(smax, F.reshape(F.cast(rtol, s.dtype), tuple(rtol.shape) + (1,)))


def matrix_rank(x: Any, /, *, rtol: Any = None) -> Any:
    """The number of singular values above ``rtol * max(s)``."""
    _d._matrix("matrix_rank", x, square=False)
    s = svdvals(x)
    return _xf.sum(F.greater(s, _tol("matrix_rank", x, s, rtol)), axis=-1)


def pinv(x: Any, /, *, rtol: Any = None) -> Any:
    """The Moore-Penrose pseudo-inverse, from ``svd`` (small singular values dropped)."""
    _d._matrix("pinv", x, square=False)
    u, s, vh = svd(x, full_matrices=False)
    keep = F.greater(s, _tol("pinv", x, s, rtol))
    safe = F.where(keep, s, 1.0)
    si = F.where(keep, F.div(1.0, safe), 0.0)
    vs = F.mul(_xf.matrix_transpose(_xf.conj(vh)),
               F.reshape(si, tuple(si.shape[:-1]) + (1, si.shape[-1])))
    return F.matmul(vs, _xf.matrix_transpose(_xf.conj(u)))  # V S^-1 U^H


# -- on the device ------------------------------------------------------------------------
def outer(x1: Any, x2: Any, /) -> Any:
    """``x1[:, None] * x2[None, :]`` for 1-D ``x1``, ``x2``."""
    if x1.ndim != 1 or x2.ndim != 1:
        raise ShapeError(f"outer: arguments must be 1-D, got {x1.shape} and {x2.shape}")
    return F.mul(F.reshape(x1, (x1.shape[0], 1)), F.reshape(x2, (1, x2.shape[0])))


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """The ``offset``-th diagonals of the last two axes, by one gather (``take``)."""
    if x.ndim < 2:
        raise ShapeError(f"diagonal: argument 'x' needs at least 2 dimensions, got {x.shape}")
    m, n = x.shape[-2:]
    r0, c0 = (0, offset) if offset >= 0 else (-offset, 0)
    k = builtins.max(0, builtins.min(m - r0, n - c0))
    idx = np.arange(k, dtype=np.int64) * (n + 1) + r0 * n + c0
    flat = F.reshape(x, tuple(x.shape[:-2]) + (m * n,))
    if k == 0:
        return F.reshape(F.getitem(flat, (Ellipsis, builtins.slice(0, 0))),
                         tuple(x.shape[:-2]) + (0,))
    return F.take(flat, _const(idx, x), flat.ndim - 1)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """The sum of the ``offset``-th diagonal (integers in int64 unless ``dtype``)."""
    return _xf.sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """The cross product of 3-vectors along ``axis`` (broadcast over the rest)."""
    s1, s2 = _vector_shapes("cross", x1, x2, axis)
    a = axis % len(s1)
    if s1[a] != 3 or s2[a] != 3:
        raise ShapeError(f"cross: axis {axis} must have size 3, got {x1.shape} and {x2.shape}")
    a1, a2 = F.reshape(x1, s1), F.reshape(x2, s2)

    def part(v: Any, i: int) -> Any:
        key = (builtins.slice(None),) * a + (builtins.slice(i, i + 1),)
        return F.getitem(v, key)

    u = [part(a1, i) for i in range(3)]
    w = [part(a2, i) for i in range(3)]
    c = [F.sub(F.mul(u[(i + 1) % 3], w[(i + 2) % 3]), F.mul(u[(i + 2) % 3], w[(i + 1) % 3]))
         for i in range(3)]
    return F.concatenate(c, a)


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False,
                ord: Any = 2) -> Any:  # noqa: A002
    """The ``ord``-norm over ``axis`` (``None``: all; a tuple: those axes together;
    float16/bfloat16: in float32, rounded once)."""
    if x.dtype in _dtypes.LOW:
        return F.cast(vector_norm(F.cast(x, np.float32), axis=axis, keepdims=keepdims,
                                  ord=ord), x.dtype)
    _float("vector_norm", x)
    if x.dtype.kind == "c":  # the norm of the moduli: real, as the standard says
        x = F.complex_abs(x)
    a = F.abs(x)
    if ord == math.inf:
        return _xf.max(a, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return _xf.min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return _xf.sum(F.cast(F.not_equal(x, 0), x.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return _xf.sum(a, axis=axis, keepdims=keepdims)
    if ord == 2:
        return F.sqrt(_xf.sum(F.mul(x, x), axis=axis, keepdims=keepdims))
    p = float(ord)
    return F.pow(_xf.sum(F.pow(a, p), axis=axis, keepdims=keepdims), 1.0 / p)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:  # noqa: A002
    """A norm of each matrix (last two axes): ``'fro'``, ``±1``, ``±inf`` on the device,
    ``±2`` and ``'nuc'`` from ``svdvals`` (float16/bfloat16: in float32, rounded once)."""
    if x.dtype in _dtypes.LOW:
        return F.cast(matrix_norm(F.cast(x, np.float32), keepdims=keepdims, ord=ord), x.dtype)
    _float("matrix_norm", x)
    if x.ndim < 2:
        raise ShapeError(f"matrix_norm: argument 'x' needs at least 2 dimensions, got "
                         f"{x.shape}")
    if ord == "fro":
        return vector_norm(x, axis=(-2, -1), keepdims=keepdims)
    if ord in ("nuc", 2, -2):
        s = svdvals(x)
        r = _xf.sum(s, axis=-1) if ord == "nuc" else \
            (_xf.max if ord == 2 else _xf.min)(s, axis=-1)
    elif ord in (1, -1, math.inf, -math.inf):
        red = _xf.max if ord > 0 else _xf.min
        inner = -2 if ord in (1, -1) else -1
        r = red(_xf.sum(_xf.abs(x), axis=inner), axis=-1)
    else:
        raise ValueError(f"matrix_norm: unsupported ord {ord!r}")
    return F.reshape(r, tuple(r.shape) + (1, 1)) if keepdims else r


def matrix_power(x: Any, n: int, /) -> Any:
    """``x`` multiplied by itself ``n`` times (repeated squaring; ``n < 0`` inverts)."""
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"matrix_power: argument 'x' must be a stack of square matrices, "
                         f"got shape {x.shape}")
    if n == 0:
        eye = np.broadcast_to(np.eye(x.shape[-1], dtype=x.dtype), x.shape)
        return _const(np.ascontiguousarray(eye), x)
    if n < 0:
        x, n = inv(x), -n
    result = None
    while True:
        if n & 1:
            result = x if result is None else F.matmul(result, x)
        n >>= 1
        if not n:
            return result
        x = F.matmul(x, x)
