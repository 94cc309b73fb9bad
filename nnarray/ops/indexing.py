"""Array API 2023.12 advanced indexing: boolean masks and integer arrays.

Every key is reduced to one integer array of *flat element offsets* into the
C-contiguous ``x`` (shape = the result's shape); ``x[key]`` is then a ``gather`` of the
flattened ``x`` (differentiable: its gradient is a ``scatter_add``, repeats accumulate)
and ``x[key] = v`` a ``scatter`` kernel. numpy placement rules: the broadcast shape of
the integer/mask indices replaces their axes where they are adjacent, else goes first.

A mask's true count is data-dependent: it is read to the host (one counted transfer of
one int64), then ``ops.sorting.positions`` compacts the true positions on the device
(shared with ``nonzero`` and ``unique_*``). An out-of-range integer index raises
``IndexError`` naming it and the shape; the check is a device-side reduction whose one
flag is read back (counted). ``gather`` and ``scatter_add`` check their own indices the
same way (``check_indices``: ``InvalidValueError``), except those made in range here.
"""

from __future__ import annotations

import operator
import weakref
from typing import Any

import numpy as np

from .. import late
from ..errors import DTypeError, InvalidValueError, ShapeError
from ..ndarray import NdArray
from ..views import c_strides
from .common import require_array
from .op import Op

#: ``ops.shape`` (above: its ``getitem`` comes here for advanced keys)
_shape: Any = late.bind(__name__, "_shape", "nnarray.ops.shape")

_I64 = np.dtype(np.int64)


def _infer_gather(inputs, attrs):
    x, idx = inputs
    require_array("gather", "x", x)
    _require_indices("gather", idx)
    if len(x.shape) != 1:
        raise ShapeError(f"gather: argument 'x' must be 1-D, got shape {x.shape}")
    check_indices("gather", idx, x.shape[0])
    return ((idx.shape, x.dtype),)


def _infer_scatter_add(inputs, attrs):
    v, idx = inputs
    require_array("scatter_add", "values", v)
    _require_indices("scatter_add", idx)
    size = attrs.get("size")
    if type(size) is not int:
        try:
            if isinstance(size, (bool, np.bool_)):
                raise TypeError
            size = attrs["size"] = operator.index(size)
        except TypeError:
            raise InvalidValueError(f"scatter_add: attribute 'size' must be an int, got "
                                    f"{size!r}") from None
    if size < 0:
        raise InvalidValueError(f"scatter_add: attribute 'size' is negative ({size})")
    if v.shape != idx.shape:
        raise ShapeError(f"scatter_add: values of shape {v.shape} for indices of shape "
                         f"{idx.shape}")
    check_indices("scatter_add", idx, size)
    return (((size,), v.dtype),)


def _require_indices(op: str, idx: Any) -> None:
    require_array(op, "indices", idx)
    if idx.dtype != _I64 or len(idx.shape) != 1:
        raise DTypeError(f"{op}: argument 'indices' must be a 1-D int64 array, got "
                         f"{idx.dtype} of shape {idx.shape}")


#: Index arrays made here whose elements are known to lie in ``[0, bound)``, by id:
#: ``(weak reference, version, bound)``; ``check_indices`` trusts them while unchanged.
_in_range: dict[int, tuple] = {}


def _trust(idx: Any, bound: int) -> Any:
    """Record that ``idx`` (made in range here) lies in ``[0, bound)``; returns it."""
    k = id(idx)
    _in_range[k] = (weakref.ref(idx, lambda _, k=k: _in_range.pop(k, None)), idx.version,
                    bound)
    return idx


def check_indices(op: str, idx: Any, bound: int, lo: int = 0) -> None:
    """``InvalidValueError`` unless every element of the concrete array ``idx`` lies in
    ``[lo, bound)`` (one device reduction and a flag read back, counted; none for arrays
    made in range by ``advanced_getitem``). A graph's constants are checked when its
    nodes are recorded (a loaded graph's at load and on bind)."""
    if type(idx) is not NdArray or idx.size == 0:
        return
    t = _in_range.get(id(idx))
    if t is not None and t[0]() is idx and t[1] == idx.version and t[2] <= bound:
        return
    worst = _first_outside(idx, lo, bound)
    if worst is not None:
        raise InvalidValueError(f"{op}: index {worst} of 'indices' (shape {idx.shape}) is "
                                f"outside [{lo}, {bound})")


def _first_outside(i: Any, lo: int, hi: int) -> int | None:
    """The first element of NdArray ``i`` outside ``[lo, hi)``, else ``None``: a device
    reduction whose one flag is read back (counted), the values only when one is out."""
    from . import reduction as _red
    from .elementwise import cast as _cast
    from .elementwise import functions as _ew
    if i.size == 0:
        return None
    bad = _ew["logical_or"](_ew["less"](i, lo), _ew["greater_equal"](i, hi))
    if not _red.max_op(_cast(bad, dtype=np.int32)).item():
        return None
    v = np.asarray(i.get_data("r", "numpy")).reshape(-1)
    return int(v[(v < lo) | (v >= hi)][0])


#: ``x[indices]`` of a 1-D ``x`` (validated, non-negative int64 indices); kernel
#: ``gather(x, indices)``; its gradient is ``scatter_add``.
gather = Op("gather", _infer_gather)

#: ``zeros(size)`` with ``values`` added at ``indices`` (repeats accumulate); kernel
#: ``scatter_add(values, indices, size)``.
scatter_add = Op("scatter_add", _infer_scatter_add)


def is_advanced(key: Any) -> bool:
    """Whether ``key`` holds a mask or an integer array (not only basic indices)."""
    k = key if isinstance(key, tuple) else (key,)
    for i in k:
        if isinstance(i, (list, np.ndarray, bool, np.bool_)):
            return True
        if hasattr(i, "dtype") and hasattr(i, "shape") and not isinstance(i, np.generic):
            if i.dtype.kind == "b" or i.ndim > 0:
                return True
    return False


def _on(a: Any, ctx: Any) -> Any:
    """``a`` (an NdArray index) on ``ctx``: moved there in one explicit, counted transfer
    when it is elsewhere (indexing keeps the indexed array's device)."""
    if ctx is None or type(a) is not NdArray or a.device == ctx:
        return a
    return a.to_device(ctx)


def _array(i: Any, ctx: Any = None) -> Any:
    """An index component as an NdArray-like on ``ctx`` (lists and numpy arrays
    uploaded there)."""
    return _on(_host_array(i), ctx)


def _host_array(i: Any) -> Any:
    if isinstance(i, (bool, np.bool_)):
        return NdArray.from_numpy_array(np.asarray(i, dtype=bool))
    if isinstance(i, (list, np.ndarray)):
        a = np.asarray(i)
        if a.size == 0 and a.dtype.kind == "f":
            a = a.astype(np.int64)
        if a.dtype.kind not in "biu":
            raise IndexError(f"getitem: index arrays must be integer or bool, got {a.dtype}")
        return NdArray.from_numpy_array(a)
    if i.dtype.kind not in "biu":
        raise IndexError(f"getitem: index arrays must be integer or bool, got {i.dtype}")
    return i


def _positions(mask: Any) -> Any:
    """The flat true positions of ``mask`` (int64, 1-D; count read back, counted)."""
    from .sorting import true_positions
    reshape = _shape.reshape_op
    return true_positions(reshape(mask, shape=(-1,)) if mask.ndim != 1 else mask)


def check_bounds(op: str, i: Any, dim: int, ax: int, shape: tuple) -> None:
    """``IndexError`` when an element of ``i`` is outside ``[-dim, dim)``."""
    worst = _first_outside(i, -dim, dim)
    if worst is not None:
        raise IndexError(f"{op}: index {worst} is out of bounds for axis {ax} with size "
                         f"{dim} (shape {shape})")


def _expand(op: str, shape: tuple[int, ...], key: Any, ctx: Any = None) -> list:
    """Key components, one per consumed axis group: (kind, value, axes)."""
    k = list(key) if isinstance(key, tuple) else [key]
    if any(i is None for i in k):
        raise IndexError(f"{op}: None cannot be combined with integer-array or mask "
                         f"indices (shape {shape})")
    if sum(1 for i in k if i is Ellipsis) > 1:
        raise IndexError(f"{op}: an index can only have a single ellipsis")
    comps = []
    for i in k:
        if i is Ellipsis or isinstance(i, slice):
            comps.append(("slice", i, 1))
        elif isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)):
            comps.append(("int", _on(NdArray.from_numpy_array(
                np.asarray(operator.index(i), np.int64)), ctx), 1))
        else:
            a = _array(i, ctx)
            comps.append(("mask", a, a.ndim) if a.dtype.kind == "b" else ("int", a, 1))
    used = sum(c[2] for c in comps if c[1] is not Ellipsis)
    if used > len(shape):
        raise IndexError(f"{op}: too many indices ({used}) for shape {shape}")
    out, ax = [], 0
    for kind, v, n in comps:
        if v is Ellipsis:
            for _ in range(len(shape) - used):
                out.append(("slice", slice(None), (ax,)))
                ax += 1
            continue
        out.append((kind, v, tuple(range(ax, ax + n))))
        ax += n
    out.extend(("slice", slice(None), (a,)) for a in range(ax, len(shape)))
    return out


def flat_offsets(op: str, shape: tuple[int, ...], key: Any, ctx: Any = None) -> Any:
    """The int64 array of flat offsets into a C-contiguous ``shape`` selected by ``key``
    (its shape is ``x[key]``'s), computed on ``ctx`` (where the indexed array's op runs:
    index arrays elsewhere are moved there, counted); every index is validated here."""
    from .elementwise import cast as _cast
    from .elementwise import functions as _ew
    broadcast_to, reshape = _shape.broadcast_to_op, _shape.reshape_op
    st = c_strides(shape)
    comps = _expand(op, shape, key, ctx)
    adv = []  # (position in comps, 1-D/N-D offsets array)
    for p, (kind, v, axes) in enumerate(comps):
        if kind == "mask":
            want = tuple(shape[a] for a in axes)
            if v.shape != want and not (v.size == 0 and len(v.shape) == len(want) and all(
                    m in (d, 0) for m, d in zip(v.shape, want))):
                # numpy (and the suite) accept an empty mask axis (nothing is taken)
                raise IndexError(f"{op}: boolean index of shape {v.shape} does not match "
                                 f"the indexed dimensions {want} "
                                 f"of shape {shape}")
            pos = _positions(v)
            adv.append((p, _ew["mul"](pos, st[axes[-1]] if axes else 0)))
        elif kind == "int":
            dim, a = shape[axes[0]], axes[0]
            v = _cast(v, dtype=np.int64) if v.dtype != _I64 else v
            check_bounds(op, v, dim, a, shape)
            if dim:
                v = _ew["remainder"](v, dim)
            adv.append((p, _ew["mul"](v, st[a])))
    try:
        bshape = tuple(np.broadcast_shapes(*[a.shape for _, a in adv]))
    except ValueError:
        raise IndexError(f"{op}: index arrays of shapes {[a.shape for _, a in adv]} do not "
                         f"broadcast together (shape {shape})") from None
    ps = [p for p, _ in adv]
    adjacent = ps == list(range(ps[0], ps[0] + len(ps)))
    slots: list = []  # result dims: ("b",) for the broadcast block or a slice comp index
    for p, c in enumerate(comps):
        if c[0] == "slice":
            slots.append(p)
        elif p == ps[0]:
            slots.append("b")
    if not adjacent:
        slots = ["b"] + [s for s in slots if s != "b"]
    bpos = slots.index("b")
    ranges = {}
    dims: list[int] = []
    for s in slots:
        if s == "b":
            dims.extend(bshape)
        else:
            a = comps[s][2][0]
            r = np.arange(*comps[s][1].indices(shape[a]), dtype=np.int64)
            ranges[s] = r * st[a]
            dims.append(len(r))
    out_shape = tuple(dims)
    nb = len(bshape)
    total = None
    for _, a in adv:  # the index terms first: a mask-only key uploads nothing
        sh = [1] * bpos + [1] * (nb - a.ndim) + list(a.shape) + [1] * (len(out_shape) - bpos - nb)
        t = reshape(a, shape=tuple(sh))
        total = t if total is None else _ew["add"](total, t)
    for i, s in enumerate(slots):  # each slice: its (small, host-made) offsets
        if s == "b":
            continue
        d = i if i < bpos else i + nb - 1
        sh = [1] * len(out_shape)
        sh[d] = len(ranges[s])
        r = NdArray.from_numpy_array(ranges[s].reshape(sh))
        if total.device != r.device:  # uploaded where the index terms are (explicit)
            r = r.to_device(total.device)
        total = _ew["add"](total, r)
    return broadcast_to(total, shape=out_shape) if total.shape != out_shape else total


def device_context(ctx: Any) -> Any:
    """``ctx`` where it names a device other than the host (index arrays go there), else
    ``None`` (host keys stay where they are)."""
    return None if ctx.backend == "numpy" else ctx


def advanced_getitem(x: Any, key: Any) -> Any:
    """``x[key]`` for keys holding masks or integer arrays (see the module docstring)."""
    from ..context import dispatch_context
    reshape = _shape.reshape_op
    data = x if type(x) is NdArray else getattr(x, "_data", None)  # a graph value's (None: un-run)
    ctx = dispatch_context((data,) if type(data) is NdArray else ())
    flat = flat_offsets("getitem", x.shape, key, device_context(ctx))
    src = reshape(x, shape=(-1,))
    r = gather(src, _trust(reshape(flat, shape=(-1,)), src.shape[0]))
    return reshape(r, shape=flat.shape)


__all__ = ["advanced_getitem", "device_context", "flat_offsets", "gather", "is_advanced",
           "scatter_add"]


from .backward import backward as _backward  # noqa: E402


@_backward(gather, inputs=(1,))
def _gather_grad(c, g):
    """The scatter-add of ``g`` (float16 accumulates in float32)."""
    from .elementwise import cast as _cast
    n = c.in_meta[0][0][0]
    if g.dtype == np.float16:
        r = scatter_add(_cast(g, dtype=np.float32), c.inputs[1], size=n)
        return (_cast(r, dtype=np.float16), None)
    return (scatter_add(g, c.inputs[1], size=n), None)


@_backward(scatter_add, inputs=(1,))
def _scatter_add_grad(c, g):
    """The gather of ``g`` at the indices (what makes ``gather``'s gradient, and so
    indexing's and embedding's, differentiable again)."""
    return (gather(g, c.inputs[1]), None)

late.provide(__name__)  # bind the lower layers' slots (nnarray.late)
