"""numpy functions outside the array API standard that clients call on their arrays
(scikit-learn, SciPy, xarray), run on the arrays' device: ``np.atleast_1d/2d/3d``,
``np.may_share_memory``, ``np.shares_memory``, ``np.average``, ``np.unique``, ``np.cov``,
``np.corrcoef`` and the nan-reductions (``np.nansum nanprod nanmean nanvar nanstd nanmax
nanmin``). Arguments these do not take run numpy on the host instead (``numpy_host``).
"""

from __future__ import annotations

import builtins
import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import late, views
from . import numpy_host as _host
from .ndarray import NdArray
from .numpy_host import HostOnly
from .ops.common import norm_axis

#: the ``nnarray`` namespace (the package imports this module first)
nna: Any = late.bind(__name__, "nna", "nnarray")


def _arrays(*xs: Any) -> list:
    """``xs`` as arrays on the NdArray operands' device (``None`` kept; scalars made 0-d
    arrays there)."""
    ys = _host.operands(*xs)
    if all(y is None or _host._is_array(y) for y in ys):
        return ys
    dev = next((y.device for y in ys if _host._is_array(y)), None)
    return [y if y is None or _host._is_array(y) else nna.asarray(y, device=dev) for y in ys]


# -- shapes ------------------------------------------------------------------------------
def _atleast(ndim: int) -> Callable:
    def impl(*arys: Any) -> Any:
        out = [_at_least(x, ndim) for x in _arrays(*arys)]
        return out[0] if len(out) == 1 else tuple(out)
    impl.__name__ = f"atleast_{ndim}d"
    return impl


def _at_least(x: Any, ndim: int) -> Any:
    """numpy's padding: 1-d ``(n,)`` -> ``(1, n)`` -> ``(1, n, 1)``; 2-d -> ``(m, n, 1)``."""
    s = tuple(x.shape)
    if len(s) >= ndim:
        return x
    if ndim == 1 or (ndim == 2 and len(s) <= 1):
        s = (1,) * (ndim - len(s)) + s
    elif len(s) == 0:
        s = (1, 1, 1)
    else:  # ndim 3 from 1-d or 2-d
        s = ((1,) + s if len(s) == 1 else s) + (1,)
    return nna.reshape(x, s)


# -- memory ------------------------------------------------------------------------------
def _overlap(fn: Callable) -> Callable:
    """``np.may_share_memory``/``np.shares_memory`` of two NdArrays: views of one root are
    laid out as numpy arrays on a stand-in buffer of the root's size (never written)."""
    def impl(a: Any, b: Any, /, max_work: Any = None) -> bool:
        if not (isinstance(a, NdArray) and isinstance(b, NdArray)):
            raise HostOnly
        ra, oa, sa = views.layout(a)
        rb, ob, sb = views.layout(b)
        if ra is not rb:
            return False
        buf = np.empty(ra.size, ra.dtype)
        return builtins.bool(fn(_strided(buf, oa, a.shape, sa), _strided(buf, ob, b.shape, sb),
                                **({} if max_work is None else {"max_work": max_work})))
    return impl


def _strided(buf: np.ndarray, offset: int, shape: tuple, strides: tuple) -> np.ndarray:
    it = buf.itemsize
    return np.lib.stride_tricks.as_strided(buf[offset:], shape, tuple(s * it for s in strides))


# -- statistics ----------------------------------------------------------------------------
def _float(x: Any, dtype: Any = None) -> Any:
    """``x`` in numpy's result dtype of a statistic (ints and bools: float64)."""
    dt = np.dtype(dtype) if dtype is not None else (
        x.dtype if x.dtype.kind in "fc" else np.dtype(np.float64))
    return x if x.dtype == dt else nna.astype(x, dt)


def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *,
            keepdims: bool = False) -> Any:
    x, w = _arrays(a, weights)
    x = _float(x)
    if w is None:
        avg = nna.mean(x, axis=axis, keepdims=keepdims)
        scl = nna.full(avg.shape, math.prod(x.shape) / max(avg.size, 1), dtype=avg.dtype,
                       device=avg.device) if returned else None
    else:
        w = _float(w)
        if w.shape != x.shape:
            w = _weights_along(w, x, axis)
        scl = nna.sum(nna.broadcast_to(w, x.shape), axis=axis, keepdims=keepdims)
        avg = nna.divide(nna.sum(nna.multiply(x, w), axis=axis, keepdims=keepdims), scl)
    if returned:
        return avg, nna.broadcast_to(nna.astype(scl, avg.dtype), avg.shape)
    return avg


def _weights_along(w: Any, x: Any, axis: Any) -> Any:
    """1-d weights along ``axis`` shaped to broadcast against ``x`` (numpy's errors)."""
    if axis is None or not isinstance(axis, int):
        raise TypeError("np.average: axis must be specified when shapes of a and weights "
                        "differ")
    if w.ndim != 1:
        raise TypeError("np.average: 1D weights expected when shapes of a and weights "
                        "differ")
    ax = norm_axis("np.average", axis, x.ndim)
    if w.shape[0] != x.shape[ax]:
        raise ValueError("np.average: length of weights not compatible with specified axis")
    return nna.reshape(w, tuple(x.shape[ax] if i == ax else 1 for i in range(x.ndim)))


def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: Any = None,
        fweights: Any = None, aweights: Any = None, *, dtype: Any = None) -> Any:
    if fweights is not None or aweights is not None:
        raise HostOnly
    x, y = _arrays(m, y)
    if x.ndim > 2:
        raise ValueError(f"np.cov: m has more than 2 dimensions (shape {tuple(x.shape)})")
    dt = np.result_type(x.dtype, *([] if y is None else [y.dtype]), np.float64) \
        if dtype is None else np.dtype(dtype)
    x = _rows(x, rowvar, dt)
    if y is not None:
        x = nna.concat([x, _rows(y, rowvar, dt)], axis=0)
    n = x.shape[1]
    fact = n - (ddof if ddof is not None else (0 if bias else 1))
    x = nna.subtract(x, nna.mean(x, axis=1, keepdims=True))
    c = nna.divide(nna.matmul(x, nna.conj(nna.matrix_transpose(x))), fact)
    return nna.squeeze(c, axis=tuple(i for i, s in enumerate(c.shape) if s == 1)) \
        if 1 in c.shape else c


def _rows(x: Any, rowvar: bool, dt: Any) -> Any:
    """``x`` as numpy's 2-d observations-in-columns array in ``dt``."""
    x = _at_least(nna.astype(x, dt), 2)
    return x if rowvar or x.shape[0] == 1 else nna.matrix_transpose(x)


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> Any:
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return nna.divide(c, c)
    d = nna.sqrt(nna.real(nna.reshape(c, (-1,))[::c.shape[0] + 1]))  # the diagonal, a view
    c = nna.divide(nna.divide(c, nna.reshape(d, (-1, 1))), nna.reshape(d, (1, -1)))
    if c.dtype.kind == "c":
        return c
    return nna.clip(c, -1.0, 1.0)


# -- unique ----------------------------------------------------------------------------------
def unique(ar: Any, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: Any = None, *, equal_nan: bool = True,
           sorted: bool = True) -> Any:  # noqa: A002
    if axis is not None or not sorted:
        raise HostOnly
    (x,) = _arrays(ar)
    if equal_nan and x.dtype.kind in "fc" and builtins.bool(nna.any(nna.isnan(x))):
        raise HostOnly  # numpy keeps one NaN; the standard's unique keeps each
    if not (return_index or return_inverse or return_counts):
        return nna.unique_values(nna.reshape(x, (-1,)) if x.ndim != 1 else x)
    r = nna.unique_all(x)
    out = [r.values]
    if return_index:
        out.append(r.indices)
    if return_inverse:
        out.append(r.inverse_indices if _INVERSE_KEEPS_SHAPE() else
                   nna.reshape(r.inverse_indices, (-1,)))
    if return_counts:
        out.append(r.counts)
    return tuple(out)


@functools.cache
def _INVERSE_KEEPS_SHAPE() -> bool:  # noqa: N802
    """Whether this numpy's ``unique(return_inverse=True)`` keeps the input's shape."""
    return np.unique(np.zeros((2, 2)), return_inverse=True)[1].ndim == 2


# -- nan-reductions ------------------------------------------------------------------------
def _nan_mask(x: Any) -> Any:
    return nna.isnan(x) if x.dtype.kind in "fc" else nna.zeros(x.shape, dtype=nna.bool,
                                                              device=x.device)


def _nan_sum_like(name: str, neutral: float) -> Callable:
    def impl(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
             keepdims: bool = False, **kw: Any) -> Any:
        if out is not None or kw:
            raise HostOnly
        (x,) = _arrays(a)
        x = nna.where(_nan_mask(x), neutral, x)
        return getattr(nna, name)(x, axis=_axis(axis), dtype=dtype, keepdims=keepdims)
    impl.__name__ = f"nan{name}"
    return impl


def _axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def _nan_extreme(name: str) -> Callable:
    def impl(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False,
             **kw: Any) -> Any:
        if out is not None or kw:
            raise HostOnly
        (x,) = _arrays(a)
        nan = _nan_mask(x)
        fill = -math.inf if name == "max" else math.inf
        if x.dtype.kind not in "fc":
            return getattr(nna, name)(x, axis=_axis(axis), keepdims=keepdims)
        m = getattr(nna, name)(nna.where(nan, fill, x), axis=_axis(axis), keepdims=keepdims)
        empty = nna.all(nan, axis=_axis(axis), keepdims=keepdims)  # numpy: NaN, warned
        return nna.where(empty, math.nan, m)
    impl.__name__ = f"nan{name}"
    return impl


def _nan_input(a: Any, dtype: Any, out: Any, kw: dict) -> tuple[Any, Any]:
    """``a`` as a floating NdArray and where it is not NaN (``out=`` or other numpy
    arguments: ``HostOnly``)."""
    if out is not None or kw:
        raise HostOnly
    (x,) = _arrays(a)
    x = _float(x, dtype)
    return x, nna.logical_not(_nan_mask(x))


def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: bool = False, **kw: Any) -> Any:
    x, keep = _nan_input(a, dtype, out, kw)
    s = nna.sum(nna.where(keep, x, 0.0), axis=_axis(axis), keepdims=keepdims)
    n = nna.sum(nna.astype(keep, s.dtype if s.dtype.kind == "f" else nna.float64),
                axis=_axis(axis), keepdims=keepdims)
    return nna.divide(s, n)


def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0,
           keepdims: bool = False, **kw: Any) -> Any:
    x, keep = _nan_input(a, dtype, out, kw)
    mu = nanmean(x, axis=axis, keepdims=True)
    d = nna.where(keep, nna.subtract(x, mu), 0.0)
    sq = nna.real(nna.multiply(d, nna.conj(d))) if d.dtype.kind == "c" else nna.multiply(d, d)
    n = nna.sum(nna.astype(keep, sq.dtype), axis=_axis(axis), keepdims=keepdims)
    return nna.divide(nna.sum(sq, axis=_axis(axis), keepdims=keepdims), nna.subtract(n, ddof))


def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0,
           keepdims: bool = False, **kw: Any) -> Any:
    return nna.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, **kw))


def table() -> dict[Callable, Callable]:
    """numpy function -> its counterpart on NdArrays (``numpy_protocol._functions``)."""
    return {
        np.atleast_1d: _atleast(1), np.atleast_2d: _atleast(2), np.atleast_3d: _atleast(3),
        np.may_share_memory: _overlap(np.may_share_memory),
        np.shares_memory: _overlap(np.shares_memory),
        np.average: average, np.cov: cov, np.corrcoef: corrcoef, np.unique: unique,
        np.nansum: _nan_sum_like("sum", 0.0), np.nanprod: _nan_sum_like("prod", 1.0),
        np.nanmax: _nan_extreme("max"), np.nanmin: _nan_extreme("min"),
        np.nanmean: nanmean, np.nanvar: nanvar, np.nanstd: nanstd,
    }
