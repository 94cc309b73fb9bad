"""Shape ops. Storage is always C-contiguous, so every output is a fresh array (the
NdArray methods ``reshape``/``transpose`` and basic indexing give views instead:
``nnarray.views``).

Kernel contract: ``reshape(x, shape)``; ``transpose(x, axes)`` (a full permutation);
``broadcast_to(x, shape)``; ``concatenate(*xs, axis)`` (same dtype, spec-cast);
``slice(x, start, step, count, shape)``: per axis of ``x``, element ``i`` of the output
comes from index ``start + i * step`` (``count`` elements, ``step`` may be negative);
the gathered block of shape ``count`` is then reshaped to ``shape``.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any

import numpy as np

from .. import dtypes, late
from ..errors import InvalidValueError, ShapeError
from ..ndarray import normalize_shape
from .common import broadcast_to_shape, check_indices, norm_axis, require_array
from .op import Op
from .surfaces import declare


def _infer_reshape(inputs, attrs):
    (x,) = inputs
    require_array("reshape", "x", x)
    shape = attrs.get("shape")
    if type(shape) is tuple:  # fast path: a tuple of sizes that fits
        n = 1
        for s in shape:
            if type(s) is not int or s < 0:
                break
            n *= s
        else:
            size = 1
            for s in x.shape:
                size *= s
            if n == size:
                return ((shape, x.dtype),)
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = tuple(operator.index(s) for s in shape)
    size = 1
    for s in x.shape:
        size *= s
    if shape.count(-1) > 1 or any(s < -1 for s in shape):
        raise ShapeError(f"reshape: invalid target shape {shape} for input shape {x.shape}")
    if -1 in shape:
        known = 1
        for s in shape:
            if s != -1:
                known *= s
        if known == 0 or size % known:
            raise ShapeError(f"reshape: cannot reshape {x.shape} (size {size}) to {shape}")
        shape = tuple(size // known if s == -1 else s for s in shape)
    n = 1
    for s in shape:
        n *= s
    if n != size:
        raise ShapeError(f"reshape: cannot reshape {x.shape} (size {size}) to {shape} "
                         f"(size {n})")
    attrs["shape"] = shape
    return ((shape, x.dtype),)


def _infer_transpose(inputs, attrs):
    (x,) = inputs
    require_array("transpose", "x", x)
    axes = attrs.get("axes")
    if axes is None:
        axes = tuple(range(x.ndim))[::-1]
    else:
        axes = tuple(norm_axis("transpose", a, x.ndim, "axes") for a in axes)
        if sorted(axes) != list(range(x.ndim)):
            raise ValueError(f"transpose: axes {tuple(attrs['axes'])} are not a permutation "
                             f"for shape {x.shape}")
    attrs["axes"] = axes
    return ((tuple(x.shape[a] for a in axes), x.dtype),)


def _infer_broadcast_to(inputs, attrs):
    (x,) = inputs
    require_array("broadcast_to", "x", x)
    shape = attrs["shape"] = normalize_shape(attrs.get("shape"), "broadcast_to")
    broadcast_to_shape("broadcast_to", x.shape, shape)
    return ((shape, x.dtype),)


def _infer_concatenate(inputs, attrs):
    if not inputs:
        raise ValueError("concatenate: need at least one array")
    for i, x in enumerate(inputs):
        require_array("concatenate", f"xs[{i}]", x)
    x0 = inputs[0]
    if x0.ndim == 0:
        raise ShapeError("concatenate: zero-dimensional arrays cannot be concatenated")
    axis = attrs["axis"] = norm_axis("concatenate", attrs.get("axis", 0), x0.ndim)
    for i, x in enumerate(inputs):
        if x.ndim != x0.ndim or any(a != b for k, (a, b) in enumerate(zip(x.shape, x0.shape))
                                    if k != axis):
            raise ShapeError(f"concatenate: xs[{i}] has shape {x.shape}, incompatible with "
                             f"xs[0] {x0.shape} along axis {axis}")
    d = inputs[0].dtype
    for x in inputs[1:]:
        d = np.promote_types(d, x.dtype)
    attrs["dtype"] = d
    shape = list(x0.shape)
    shape[axis] = builtins_sum(x.shape[axis] for x in inputs)
    return ((tuple(shape), d),)


builtins_sum = builtins.sum
_pyslice = builtins.slice


def _ints(op: str, attrs: dict, k: str) -> tuple[int, ...]:
    """Attribute ``k`` as a tuple of ints (``InvalidValueError`` otherwise)."""
    v = attrs.get(k)
    try:
        if isinstance(v, (str, bytes)) or any(isinstance(i, (bool, np.bool_)) for i in v):
            raise TypeError
        t = tuple(operator.index(i) for i in v)
    except TypeError:
        raise InvalidValueError(f"{op}: attribute '{k}' must be a sequence of ints, got "
                                f"{v!r}") from None
    attrs[k] = t
    return t


def _infer_slice(inputs, attrs):
    """Every index the kernel reads lies inside ``x``: the strided block's first and last
    along each axis (so a saved graph cannot make the kernel read other memory)."""
    (x,) = inputs
    require_array("slice", "x", x)
    start, step, count, shape = (attrs.get("start"), attrs.get("step"), attrs.get("count"),
                                 attrs.get("shape"))
    if not (type(start) is tuple and type(step) is tuple and type(count) is tuple
            and type(shape) is tuple):
        start, step, count, shape = [_ints("slice", attrs, k)
                                     for k in ("start", "step", "count", "shape")]
    xs = x.shape
    key = (xs, start, step, count, shape)
    if key in _valid_slices:
        return ((shape, x.dtype),)
    if len(start) != len(xs) or len(step) != len(xs) or len(count) != len(xs):
        raise ShapeError(f"slice: start {start}, step {step} and count {count} need one "
                         f"entry per axis of shape {xs}")
    n = 1
    for b, s, c, d in zip(start, step, count, xs):
        if type(b) is not int or type(s) is not int or type(c) is not int or c < 0 \
                or s == 0 or c and not (0 <= b < d and 0 <= b + (c - 1) * s < d):
            raise InvalidValueError(f"slice: start {start}, step {step}, count {count} "
                                    f"read outside shape {xs}")
        n *= c
    m = 1
    for d in shape:
        if type(d) is not int or d < 0:
            m = -1
            break
        m *= d
    if m != n:
        raise ShapeError(f"slice: output shape {shape} does not hold count {count}")
    if len(_valid_slices) >= 4096:
        _valid_slices.clear()
    _valid_slices.add(key)
    return ((shape, x.dtype),)


#: ``(x.shape, start, step, count, shape)`` of slices checked (the hot path's repeats).
_valid_slices: set = set()


reshape_op = Op("reshape", _infer_reshape)
transpose_op = Op("transpose", _infer_transpose, normalizes=True)
broadcast_to_op = Op("broadcast_to", _infer_broadcast_to, normalizes=True)
concatenate_op = Op("concatenate", _infer_concatenate)
slice_op = Op("slice", _infer_slice)


def slice_plan(op: str, shape: tuple[int, ...], key: Any) -> dict:
    """Normalize a basic-indexing key (ints, slices, ``...``, ``None``) against ``shape``
    into the ``slice`` kernel's ``start/step/count/shape`` attributes."""
    if not isinstance(key, tuple):
        key = (key,)
    n_real = len([k for k in key if k is not None and k is not Ellipsis])
    if builtins_sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError(f"{op}: an index can only have a single ellipsis")
    if n_real > len(shape):
        raise IndexError(f"{op}: too many indices ({n_real}) for shape {shape}")
    expanded: list[Any] = []
    for k in key:
        if k is Ellipsis:
            expanded.extend([_pyslice(None)] * (len(shape) - n_real))
        else:
            expanded.append(k)
    n_axes = builtins_sum(1 for k in expanded if k is not None)
    expanded.extend([_pyslice(None)] * (len(shape) - n_axes))
    start, step, count, out = [], [], [], []
    ax = 0
    for k in expanded:
        if k is None:
            out.append(1)
            continue
        dim = shape[ax]
        if isinstance(k, _pyslice):
            b, e, s = k.indices(dim)
            n = len(range(b, e, s))
            start.append(b if n else 0)
            step.append(s)
            count.append(n)
            out.append(n)
        else:
            try:
                if isinstance(k, (bool, np.bool_)):  # numpy: a mask, not the index 0/1
                    raise TypeError
                i = operator.index(k)
            except TypeError:
                raise IndexError(f"{op}: only integers, slices, ... and None are valid "
                                 f"indices, got {type(k).__name__}") from None
            if not -dim <= i < dim:
                raise IndexError(f"{op}: index {i} is out of bounds for axis {ax} with "
                                 f"size {dim} (shape {shape})")
            start.append(i % dim)
            step.append(1)
            count.append(1)
        ax += 1
    return {"start": tuple(start), "step": tuple(step), "count": tuple(count),
            "shape": tuple(out)}


# -- the public functions and their ONNX translations -----------------------------------
_INT64_MIN = -(2**63)


def _onnx_reshape(ex: Any, n: Any, outs: list) -> None:
    ex.emit("Reshape", [ex.value(n.inputs[0]), ex.ints(n.attrs["shape"])], outs)


def _onnx_transpose(ex: Any, n: Any, outs: list) -> None:
    ex.emit("Transpose", [ex.value(n.inputs[0])], outs, perm=list(n.attrs["axes"]))


def _onnx_broadcast_to(ex: Any, n: Any, outs: list) -> None:
    ex.emit("Expand", [ex.value(n.inputs[0]), ex.ints(n.attrs["shape"])], outs)


def _onnx_concatenate(ex: Any, n: Any, outs: list) -> None:
    dt = n.attrs["dtype"]
    ex.emit("Concat", [ex.operand(a, dt) for a in n.inputs], outs, axis=int(n.attrs["axis"]))


def _onnx_slice(ex: Any, n: Any, outs: list) -> None:
    """ONNX's ``Slice`` over the axes not taken whole, then a ``Reshape`` to ``shape``."""
    x = n.inputs[0]
    a = n.attrs
    starts, ends, axes, steps = [], [], [], []
    for k, (dim, s, st, c) in enumerate(zip(x.shape, a["start"], a["step"], a["count"])):
        if s == 0 and st == 1 and c == dim:
            continue
        e = s + c * st
        if c == 0:
            s = e = 0
        elif e < 0:
            e = _INT64_MIN
        starts.append(s)
        ends.append(e)
        axes.append(k)
        steps.append(st)
    y = ex.value(x)
    reshape = tuple(a["count"]) != tuple(a["shape"])
    if axes:
        y = ex.emit("Slice", [y, ex.ints(starts), ex.ints(ends), ex.ints(axes),
                              ex.ints(steps)], None if reshape else outs)
    if reshape:
        ex.emit("Reshape", [y, ex.ints(a["shape"])], outs)
    elif not axes:
        ex.emit("Identity", [y], outs)


@declare(reshape_op, onnx=_onnx_reshape, recalled=True)
def reshape(x: Any, shape: Any) -> Any:
    """A new array of ``shape`` (one ``-1`` allowed); works on any input. In a static
    graph a ``-1`` is resolved again when the graph is bound to new shapes."""
    out = reshape_op(x, shape=shape)
    if shape == -1 or type(shape) in (tuple, list) and -1 in shape:
        _F.recalled(out, _F.reshape, (x, shape), {})  # F's: the call a graph names
    return out


@declare(transpose_op, numpy="transpose", onnx=_onnx_transpose)
def transpose(x: Any, axes: Any = None) -> Any:
    """Permute axes (``None``: reverse them)."""
    return transpose_op(x, axes=axes)


@declare(broadcast_to_op, numpy="broadcast_to", params={"numpy": {"subok": False}},
         onnx=_onnx_broadcast_to)
def broadcast_to(x: Any, shape: Any) -> Any:
    """Broadcast to ``shape`` by numpy's rules."""
    return broadcast_to_op(x, shape=shape)


@declare(slice_op, macro=True)
def getitem(x: Any, key: Any) -> Any:
    """``x[key]`` as a new array: basic indices, boolean masks and integer arrays
    (the latter two through ``nnarray.ops.indexing``)."""
    require_array("getitem", "x", x)
    from .indexing import advanced_getitem, is_advanced
    if is_advanced(key):
        return advanced_getitem(x, key)
    return slice_op(x, **slice_plan("getitem", x.shape, key))


@declare(slice_op, onnx=_onnx_slice, macro=True)
def slice(x: Any, start: Any = None, stop: Any = None, step: Any = None) -> Any:
    """``x[start[0]:stop[0]:step[0], ...]`` (per-axis sequences; missing axes whole)."""
    require_array("slice", "x", x)
    seqs = [s if s is None or isinstance(s, (tuple, list)) else (s,) for s in (start, stop, step)]
    n = max(len(s) for s in seqs if s is not None) if any(s is not None for s in seqs) else 0
    if n > x.ndim:
        raise ValueError(f"slice: {n} axes given for an array of shape {x.shape}")
    key = tuple(_pyslice(*(None if s is None or i >= len(s) else s[i] for s in seqs))
                for i in range(n))
    return slice_op(x, **slice_plan("slice", x.shape, key))


@declare(concatenate_op, onnx=_onnx_concatenate)
def concatenate(xs: Any, axis: int = 0) -> Any:
    """Join arrays along an existing axis."""
    if not isinstance(xs, (list, tuple)):
        raise TypeError("concatenate: argument 'xs' must be a list or tuple of arrays")
    return concatenate_op(*xs, axis=axis)


@declare(concatenate_op, macro=True)
def stack(xs: Any, axis: int = 0) -> Any:
    """Join arrays along a new axis (all shapes equal)."""
    if not isinstance(xs, (list, tuple)) or not xs:
        raise ValueError("stack: argument 'xs' must be a non-empty list or tuple of arrays")
    for i, x in enumerate(xs):
        require_array("stack", f"xs[{i}]", x)
        if x.shape != xs[0].shape:
            raise ShapeError(f"stack: xs[{i}] has shape {x.shape}, xs[0] has {xs[0].shape}")
    a = norm_axis("stack", axis, xs[0].ndim + 1)
    shape = xs[0].shape[:a] + (1,) + xs[0].shape[a:]
    return concatenate_op(*[reshape_op(x, shape=shape) for x in xs], axis=a)


@declare(slice_op, numpy="split", macro=True)
def split(x: Any, indices_or_sections: Any, axis: int = 0) -> list:
    """numpy.split: ``n`` equal sections, or cut points along ``axis``."""
    require_array("split", "x", x)
    a = norm_axis("split", axis, x.ndim)
    dim = x.shape[a]
    if isinstance(indices_or_sections, (int, np.integer)):
        n = int(indices_or_sections)
        if n <= 0 or dim % n:
            raise ValueError(f"split: axis {a} of shape {x.shape} cannot be split into {n} "
                             "equal sections")
        cuts = [dim // n * i for i in range(1, n)]
    else:
        cuts = [operator.index(i) for i in indices_or_sections]
    bounds = [0, *[min(max(c if c >= 0 else c + dim, 0), dim) for c in cuts], dim]
    out = []
    for b, e in zip(bounds[:-1], bounds[1:]):
        key = (_pyslice(None),) * a + (_pyslice(b, max(b, e)),)
        out.append(slice_op(x, **slice_plan("split", x.shape, key)))
    return out

__all__ = ["reshape", "transpose", "broadcast_to", "concatenate", "stack", "split", "slice",
           "getitem", "take", "dtypes"]


# -- backward rules -------------------------------------------------------------------
from .backward import backward as _backward  # noqa: E402
from .backward import fit as _fit  # noqa: E402
from .backward import sum_to as _sum_to  # noqa: E402

_backward(reshape_op)(lambda c, g: (reshape_op(g, shape=c.in_meta[0][0]),))
_backward(broadcast_to_op)(lambda c, g: (_sum_to(g, c.in_meta[0][0]),))


@_backward(transpose_op)
def _transpose_grad(c, g):
    return (transpose_op(g, axes=tuple(int(i) for i in np.argsort(c.attrs["axes"]))),)


def _cut(g: Any, axis: int, begin: int, end: int) -> Any:
    key = (_pyslice(None),) * axis + (_pyslice(begin, end),)
    return slice_op(g, **slice_plan("slice", g.shape, key))


@_backward(concatenate_op)
def _concatenate_grad(c, g):
    axis, out, off = c.attrs["axis"], [], 0
    for i, (shape, _) in enumerate(c.in_meta):
        n = shape[axis]
        out.append(_fit(c, i, _cut(g, axis, off, off + n)) if c.need[i] else None)
        off += n
    return tuple(out)


def _zeros(shape: tuple[int, ...], dtype: Any) -> Any:
    from ..ndarray import zeros
    return zeros(shape, dtype)


def _spread(g: Any, axis: int, step: int) -> Any:
    """Insert ``step - 1`` zeros after each element along ``axis`` (trimmed at the end)."""
    shape = g.shape
    n = shape[axis]
    g = reshape_op(g, shape=shape[:axis + 1] + (1,) + shape[axis + 1:])
    z = _zeros(shape[:axis + 1] + (step - 1,) + shape[axis + 1:], g.dtype)
    g = reshape_op(concatenate_op(g, z, axis=axis + 1), shape=shape[:axis] + (n * step,) +
                shape[axis + 1:])
    return _cut(g, axis, 0, (n - 1) * step + 1)


@_backward(slice_op)
def _slice_grad(c, g):
    """The adjoint of a strided gather: undo negative steps, spread by the step, pad."""
    xshape, dtype = c.in_meta[0]
    count = c.attrs["count"]
    if 0 in count:
        return (_zeros(xshape, dtype),)
    if g.shape != count:
        g = reshape_op(g, shape=count)
    for k, (size, s, st, n) in enumerate(zip(xshape, c.attrs["start"], c.attrs["step"], count)):
        if st < 0:
            key = (_pyslice(None),) * k + (_pyslice(None, None, -1),)
            g = slice_op(g, **slice_plan("slice", g.shape, key))
            s, st = s + (n - 1) * st, -st
        if st > 1 and n > 1:
            g = _spread(g, k, st)
        after = size - s - g.shape[k]
        if s or after:
            parts = [g]
            if s:
                parts.insert(0, _zeros(g.shape[:k] + (s,) + g.shape[k + 1:], dtype))
            if after:
                parts.append(_zeros(g.shape[:k] + (after,) + g.shape[k + 1:], dtype))
            g = concatenate_op(*parts, axis=k)
    return (g,)



_F: Any = late.bind(__name__, "_F", "nnarray.functions")


# -- take ---------------------------------------------------------------------------------
def _infer_take(inputs, attrs):
    x, idx = inputs
    require_array("take", "x", x)
    require_array("take", "indices", idx)
    if idx.dtype.kind not in "iu" or idx.ndim != 1:
        raise ShapeError(f"take: argument 'indices' must be a 1-D integer array, got "
                         f"{idx.dtype} of shape {idx.shape}")
    axis = attrs.get("axis")
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"take: argument 'axis' is required for shape {x.shape}")
        axis = 0
    a = attrs["axis"] = norm_axis("take", axis, x.ndim)
    if x.shape[a] == 0 and idx.shape[0]:
        raise IndexError(f"take: cannot take from an empty axis {a} of shape {x.shape}")
    check_indices("take", idx, x.shape[a], a, x.shape)
    return ((x.shape[:a] + idx.shape + x.shape[a + 1:], x.dtype),)


#: ``x``'s elements at ``indices`` (negative from the end) along ``axis``; kernel
#: contract ``take(x, indices, axis)``. An index out of range is an ``IndexError`` here,
#: before any kernel runs, on every backend (``common.check_indices``): ``cupy.take``
#: would wrap it and the OpenCL kernel writes 0 there rather than read outside ``x``.
take_op = Op("take", _infer_take)



@declare(take_op)
def take(x: Any, indices: Any, axis: Any = None) -> Any:
    """Elements of ``x`` at integer ``indices`` (1-D; negative count from the end) along
    ``axis`` (optional for 1-D ``x``)."""
    return take_op(x, indices, axis=axis)

@_backward(take_op, inputs=(1,))
def _take_grad(c, g):  # the scatter-add of g, as g @ one_hot(indices)
    shape = c.in_meta[0][0]
    a = c.attrs["axis"]
    n = shape[a]
    idx = _F.cast(_F.remainder(c.inputs[1], n), np.int64)
    oh = _F.one_hot(idx, n, axis=-1, dtype=g.dtype)  # (k, n)
    nd = len(shape)
    perm = tuple(i for i in range(nd) if i != a) + (a,)
    gm = _F.transpose(g, perm)  # (..., k)
    r = _F.matmul(gm, oh)  # (..., n)
    inv = tuple(int(i) for i in np.argsort(perm))
    return (_fit(c, 0, _F.transpose(r, inv)), None)

late.provide(__name__)  # bind the lower layers' slots (nnarray.late)
