"""NdArrays and Variables as Python values: ``repr`` with the values, ``format()``,
``round()``, ``tolist()``, and host data (numpy arrays, sequences) written into arrays.

Every host read here is one of the protocol reads that
``strict_transfers(implicit_reads=True)`` refuses for an array whose host copy is not
current (``NdArray._implicit_read``), except ``tolist()``, an explicit read like
``item()`` and ``numpy()``. A Variable reads its ``data``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import functions as F
from . import late
from .context import context_scope, dispatch_context, dispatch_into
from .errors import DTypeError
from .ndarray import NdArray


def ndarray_of(x: Any) -> NdArray:
    """The NdArray holding ``x``'s values (a Variable's ``data``)."""
    return x if isinstance(x, NdArray) else x.data


def _scalar(x: Any, what: str) -> Any:
    """The numpy scalar of a 0-d array (an implicit read)."""
    a = ndarray_of(x)
    a._implicit_read(what)
    return a._host_view()[()]


def format_value(x: Any, spec: str) -> str:
    """``format(x, spec)``: a 0-d array formats as its numpy scalar; any other array
    formats with an empty spec only (as ``numpy.ndarray``)."""
    if not x.shape:
        return format(_scalar(x, "format()"), spec)
    if spec:
        raise TypeError(f"format(): the spec {spec!r} applies to 0-d arrays only, this "
                        f"one has shape {x.shape} (format x.item() or each element)")
    return str(x)


def round_value(x: Any, ndigits: int | None) -> Any:
    """``round(x, ndigits)``: a 0-d array rounds as its numpy scalar (``round(x)`` gives an
    int); any other array gives ``x.round(ndigits or 0)``, on its device."""
    if not x.shape:
        v = _scalar(x, "round()")
        return round(v) if ndigits is None else round(v, ndigits)
    return x.round(0 if ndigits is None else ndigits)


def round_array(x: Any, decimals: int) -> Any:
    """``x`` rounded half to even at ``decimals`` digits (numpy's ``around``: scaled,
    rounded, scaled back; integers with ``decimals >= 0`` are returned as they are)."""
    if x.dtype.kind in "biu":
        if decimals >= 0:
            return F.cast(x, x.dtype)
        s = float(10 ** -decimals)
        return F.cast(F.mul(F.round(F.div(x, s)), s), x.dtype)
    if decimals == 0:
        return F.round(x)
    s = 10.0 ** decimals
    return F.div(F.round(F.mul(x, s)), s)


def tolist(x: Any) -> Any:
    """Nested Python lists (a Python scalar for a 0-d array): an explicit host read."""
    return ndarray_of(x).numpy().tolist()


def sort_inplace(x: Any, axis: int | None, order: Any) -> None:
    """``x.sort(axis)``: an NdArray sorted in place on its device (``None``: flattened)."""
    if not isinstance(x, NdArray):
        raise TypeError("sort(): sorts in place, as numpy.ndarray.sort; a Variable is not "
                        "changed in place: use nnarray.sort(v), which is differentiable")
    if order is not None:
        raise TypeError("sort: order= is not supported (no structured dtypes)")
    from .xp import sort
    with context_scope(dispatch_into(x, (x,), "sort")):
        y = sort(F.reshape(x, (-1,)), axis=0) if axis is None else sort(x, axis=axis)
        F.assign(x, F.reshape(y, x.shape))


# -- repr ---------------------------------------------------------------------------------
def _edges(a: NdArray, edge: int) -> NdArray:
    """``a`` with every axis longer than ``2 * edge`` cut to its first ``edge + 1`` and
    last ``edge`` entries, on ``a``'s device: numpy's summary of it (``threshold=0``)
    prints what the summary of ``a`` prints (the middle entry stands for the "...")."""
    y = a
    with context_scope(dispatch_context((a,))):
        for ax, n in enumerate(a.shape):
            if n > 2 * edge:
                head = y[(slice(None),) * ax + (slice(0, edge + 1),)]
                tail = y[(slice(None),) * ax + (slice(n - edge, n),)]
                y = F.concatenate([head, tail], axis=ax)
    return y


def _body(a: NdArray, prefix: str) -> str:
    """numpy's text of ``a``'s values; a large array is summarised as numpy does and only
    the entries shown are read to the host."""
    opts = np.get_printoptions()
    if a.size <= opts["threshold"]:
        return np.array2string(a._host_view(), separator=", ", prefix=prefix)
    shown = _edges(a, opts["edgeitems"])._host_view()
    return np.array2string(shown, separator=", ", prefix=prefix, threshold=0)


def ndarray_repr(a: NdArray) -> str:
    """``NdArray([...], dtype=float32, device=opencl:0)`` (a host read)."""
    a._implicit_read("repr()")
    return f"NdArray({_body(a, 'NdArray(')}, dtype={a.dtype}, device={a.device})"


def variable_repr(v: Any) -> str:
    """``Variable([...], dtype=..., device=..., need_grad=..., parent=...)``; the shape
    alone where the data holds no values yet (a static graph before ``forward()``)."""
    p = "" if v.parent is None else f", parent={v.parent.label}"
    n = "" if v._name is None else f"name={v._name!r}, "
    d = v._data
    if d is None or (d._head is None and d.lazy_fill is None):
        return (f"Variable({n}shape={v.shape}, dtype={v.dtype}, "
                f"need_grad={v.need_grad}{p})")
    d._implicit_read("repr()")
    n = "" if v._name is None else f", name={v._name!r}"
    return (f"Variable({_body(d, 'Variable(')}, dtype={v.dtype}, device={d.device}, "
            f"need_grad={v.need_grad}{p}{n})")


# -- host data written into arrays ---------------------------------------------------------
def host_value(x: NdArray, value: Any) -> NdArray:
    """``value`` of ``x[key] = value`` (a numpy array or nested sequences) as an NdArray of
    ``x``'s dtype where the write runs: cast on the host (numpy's ``same_kind`` rule, as
    for NdArray values), then one explicit, counted upload."""
    try:
        a = np.asarray(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"setitem: value must be an NdArray, a scalar, a numpy array or a "
                        f"sequence of numbers, got {type(value).__name__} ({e})") from None
    if a.dtype.kind not in "biufc":
        raise TypeError(f"setitem: value must be an NdArray, a scalar, a numpy array or a "
                        f"sequence of numbers, got {type(value).__name__} of dtype {a.dtype}")
    if not np.can_cast(a.dtype, x.dtype, "same_kind"):
        raise DTypeError(f"setitem: cannot store {a.dtype} values in a {x.dtype} array "
                         f"(shape {x.shape})")
    nd = NdArray.from_numpy_array(np.ascontiguousarray(a, dtype=x.dtype))
    ctx = dispatch_into(x, (x,), "setitem")
    return nd if nd.device == ctx else nd.to_device(ctx)

late.provide(__name__)  # bind the lower layers' slots (nnarray.late)
