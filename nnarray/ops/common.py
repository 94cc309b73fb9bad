"""Validation helpers shared by the op specs: each error names op, argument and shapes."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .. import dtypes, late
from ..errors import DTypeError, InvalidValueError, ShapeError
from ..ndarray import NdArray
from .op import GraphValue

#: ``ops.indexing`` (above: it checks index arrays on the device)
_indexing: Any = late.bind(__name__, "_indexing", "nnarray.ops.indexing")


def shape_of(x: Any) -> tuple[int, ...]:
    """The shape of an array operand; ``()`` for a scalar."""
    return getattr(x, "shape", ())


def broadcast(op: str, xs: tuple, names: tuple[str, ...] = ("a", "b", "c")) -> tuple[int, ...]:
    """numpy broadcasting of the operands' shapes, else ``ShapeError``."""
    shapes = [shape_of(x) for x in xs]
    first = shapes[0]
    if all(s == first for s in shapes):
        return first
    nd = max(len(s) for s in shapes)
    out = [1] * nd
    for s in shapes:
        for i, d in enumerate(s, nd - len(s)):
            if d != 1:
                if out[i] != 1 and out[i] != d:
                    desc = ", ".join(f"'{n}' {s}" for n, s in zip(names, shapes))
                    raise ShapeError(f"{op}: operands cannot be broadcast together: {desc}")
                out[i] = d
    return tuple(out)


def broadcast_to_shape(op: str, src: tuple[int, ...], dst: tuple[int, ...]) -> None:
    """Raise unless ``src`` broadcasts to exactly ``dst``."""
    if len(src) > len(dst) or any(s != 1 and s != d for s, d in zip(src[::-1], dst[::-1])):
        raise ShapeError(f"{op}: cannot broadcast shape {src} to {dst}")


def require_array(op: str, arg: str, x: Any) -> None:
    if type(x) is NdArray or isinstance(x, GraphValue):  # the usual case, first
        return
    if not hasattr(x, "shape") or dtypes.is_scalar(x):
        raise TypeError(f"{op}: argument '{arg}' must be an NdArray or Variable, "
                        f"got {type(x).__name__}")


def require_float(op: str, arg: str, x: Any) -> None:
    require_array(op, arg, x)
    if x.dtype not in dtypes.FLOATS:
        raise DTypeError(f"{op}: argument '{arg}' must be floating point, got {x.dtype} "
                         f"(shape {x.shape})")


def require_ordered(op: str, inputs: tuple, names: tuple[str, ...] = ("x",)) -> None:
    """``DTypeError`` naming the first complex one of ``inputs`` (arrays or scalars, called
    ``names``) where ``op`` orders values: the standard leaves complex ordering unspecified."""
    for arg, x in zip(names, inputs):
        d = getattr(x, "dtype", None)
        if d is None and isinstance(x, complex):
            d = np.dtype(np.complex128)
        if d is not None and np.dtype(d).kind == "c":
            shapes = ", ".join(str(shape_of(v)) for v in inputs)
            raise DTypeError(f"{op}: argument '{arg}' is {d} (shape{'s' if len(inputs) > 1 else ''}"
                             f" {shapes}): complex numbers have no order (compare their real "
                             "parts or abs)")


_LABELS = frozenset(np.dtype(t) for t in (np.int32, np.int64))


def require_int(op: str, arg: str, x: Any) -> None:
    require_array(op, arg, x)
    if x.dtype not in _LABELS:
        raise DTypeError(f"{op}: argument '{arg}' must be int32 or int64, got {x.dtype} "
                         f"(shape {x.shape})")


def norm_axis(op: str, axis: Any, ndim: int, arg: str = "axis",
              shape: tuple[int, ...] | None = None) -> int:
    """One axis, negative allowed, checked against ``ndim`` (out of range: a
    ``ShapeError``, also numpy's ``ValueError``, naming ``shape`` where given)."""
    try:
        a = operator.index(axis)
    except TypeError:
        raise TypeError(f"{op}: argument '{arg}' must be an int, got {axis!r}") from None
    if not -ndim <= a < ndim:
        of = "" if shape is None else f" (shape {shape})"
        raise ShapeError(f"{op}: {arg} {a} is out of range for an array of {ndim} "
                         f"dimension(s){of}")
    return a % ndim


def norm_axes(op: str, axis: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    """``None`` (all), an int or a sequence -> a sorted tuple of distinct axes."""
    nd = len(shape)
    if axis is None:
        return tuple(range(nd))
    if not isinstance(axis, (tuple, list)):
        axis = (axis,)  # an int, or a bad value that norm_axis reports naming the op
    axes = tuple(sorted(norm_axis(op, a, nd, shape=shape) for a in axis))
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: repeated axis in {tuple(axis)} for shape {shape}")
    return axes


def pair(op: str, arg: str, v: Any, minimum: int = 0) -> tuple[int, int]:
    """An int or a pair of ints -> a pair, each at least ``minimum``."""
    t = type(v)
    if t is tuple and len(v) == 2 and type(v[0]) is int and type(v[1]) is int \
            and v[0] >= minimum and v[1] >= minimum:  # fast path: already a pair
        return v  # type: ignore[return-value]
    if t is int and v >= minimum:
        return (v, v)
    if isinstance(v, (int, np.integer)):
        v = (v, v)
    try:
        p = tuple(operator.index(i) for i in v)
    except TypeError:
        raise TypeError(f"{op}: argument '{arg}' must be an int or a pair of ints, "
                        f"got {v!r}") from None
    if len(p) != 2 or any(i < minimum for i in p):
        raise ValueError(f"{op}: argument '{arg}' must be {'an int' if minimum else 'ints'} "
                         f">= {minimum} (one or a pair), got {v!r}")
    return p  # type: ignore[return-value]


def _integral(x: Any) -> bool:
    if dtypes.is_scalar(x):
        return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))
    return np.dtype(x.dtype).kind in "iu"


def _boolean(x: Any) -> bool:
    return isinstance(x, (bool, np.bool_)) or getattr(x, "dtype", None) == np.bool_


def check_int_pow(a: Any, b: Any, min_of: Any = None) -> None:
    """``InvalidValueError`` naming ``pow`` for an integer to a negative integer power
    (numpy refuses it; OpenCL computed 0). ``a`` and ``b`` are arrays (NdArray or native)
    or scalars. A scalar exponent is checked here; an array exponent only when
    ``min_of(b)`` (its smallest element, a device read) is given: backends call it from
    their pow kernel before launching, so the check costs nothing for float powers."""
    if not ((_integral(a) or _boolean(a)) and _integral(b)):
        return  # a bool base with an integer exponent is an integer power too
    if dtypes.is_scalar(b):
        bad = b < 0
    else:
        bad = min_of is not None and b.size > 0 and min_of(b) < 0
    if bad:
        what = f"exponent {b}" if dtypes.is_scalar(b) else (
            f"exponent of shape {tuple(b.shape)} has negative elements")
        base = f"base {a}" if dtypes.is_scalar(a) else f"base {a.dtype} {tuple(a.shape)}"
        raise InvalidValueError(f"pow: integers to negative integer powers are not allowed "
                                f"({what}; {base})")


def check_labels(op: str, t: np.ndarray, n: int, arg: str = "t") -> None:
    """``InvalidValueError`` naming ``op`` when a label of host array ``t`` is outside
    ``[0, n)`` (numpy picked the last class for -1, OpenCL gave NaN)."""
    if t.size == 0:
        return
    lo, hi = t.min(), t.max()
    if lo >= 0 and hi < n:
        return
    bad = (t < 0) | (t >= n)
    at = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), t.shape))
    raise InvalidValueError(f"{op}: label {t[at]} at index {at} of '{arg}' (shape {t.shape}) "
                            f"is out of range for {n} classes (0..{n - 1})")


def host_values(t: Any) -> np.ndarray | None:
    """The values of NdArray (or Variable) ``t`` where reading them costs no transfer:
    its current host copy, or its lazy fill as one element; else ``None`` (only a
    device holds them: the backend's kernel checks them)."""
    from .. import discovery as backends
    a = t if type(t) is NdArray else getattr(t, "_data", None)  # an un-run Variable: None
    if type(a) is not NdArray:
        return None
    if a.lazy_fill is not None:
        return np.full((1,), a.lazy_fill)
    return a.current_copy(backends.host_device())


def check_indices(op: str, idx: Any, n: int, axis: int, shape: tuple) -> None:
    """``IndexError`` naming ``op`` when an index of ``idx`` (an NdArray, or a Variable's
    data) lies outside ``[-n, n)``, as numpy raises (CuPy's take wrapped it, OpenCL's
    wrote 0): checked on the host where its values are there, else by a device-side
    reduction whose one flag is read back (counted), as advanced indexing does."""
    h = host_values(idx)
    if h is not None:
        if h.size and (h.min() < -n or h.max() >= n):
            bad = int(h.min()) if h.min() < -n else int(h.max())
            raise IndexError(f"{op}: index {bad} is out of bounds for axis {axis} with size "
                             f"{n} (shape {shape})")
        return
    a = idx if type(idx) is NdArray else getattr(idx, "_data", None)
    if type(a) is NdArray:
        _indexing.check_bounds(op, a, n, axis, shape)
