"""The Array API standard's functions under their standard names and signatures
(API.md §7): elementwise aliases of the ``F`` ops, creation functions with ``dtype=`` and
``device=``, the statistical functions and the few shape functions built on ``F``.

Every function runs through the registry like its ``F`` counterpart and accepts
``grad.Variable``s where ``F`` does. Elementwise names are the ``F`` ops themselves (no
wrapper: the same tiny-op cost).
"""

from __future__ import annotations

import builtins
import operator
from typing import Any

import numpy as np

from . import dtypes as _dtypes
from . import functions as F
from . import late
from .context import as_context, context_scope, creation_context
from .dlpack import from_dlpack as _from_dlpack
from .errors import DTypeError
from .ndarray import NdArray, fill_value, normalize_shape
from .ndarray import _device as _device_of
from .ndarray import array as _array
from .ops import autocast as _autocast
from .ops import elementwise as _ew
from .ops import ufuncs as _ufuncs
from .ops.common import norm_axes
from .views import c_strides

#: Python floats and complexes default to ``default_float()``/``default_complex()``
#: (float32 and complex64 unless ``set_default_dtype`` says otherwise).
_DOUBLES = (np.dtype(np.float64), np.dtype(np.complex128))
_I64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)

# -- elementwise: the declared functions under the standard's names (``Ufunc.api``) ------
globals().update({api: _ew.functions[r.name] for r in _ufuncs.ROWS for api in r.api_names})


def reciprocal(x: Any, /) -> Any:
    """``1 / x`` (floating results, like ``divide``)."""
    return _ew.functions["div"](1.0, x)


def where(condition: Any, x1: Any, x2: Any, /) -> Any:
    """``x1`` where ``condition`` holds, else ``x2`` (broadcast, promoted)."""
    return _ew.where(condition, x1, x2)


def from_dlpack(x: Any, /, *, device: Any = None, copy: builtins.bool | None = None) -> Any:
    """An NdArray over a DLPack tensor (zero-copy when possible); ``device=`` moves it
    there (``copy=False`` then refuses), ``copy=True`` always copies."""
    # an NdArray stays where it is (its own device, no round trip through DLPack's host
    # export of device-only data); any other producer goes through the protocol
    y = x if isinstance(x, NdArray) else _from_dlpack(x)
    if device is not None and as_context(device) != y.device:
        if copy is False:
            raise ValueError("from_dlpack: copy=False, but the data is on another device")
        return y.to_device(device)
    return F.cast(y, y.dtype) if copy else y


def _require(op: str, x: Any) -> None:
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        raise TypeError(f"{op}: argument 'x' must be an NdArray or Variable, "
                        f"got {type(x).__name__}")


def clip(x: Any, /, min: Any = None, max: Any = None) -> Any:  # noqa: A002
    """``x`` limited to ``[min, max]`` (scalars or arrays; either may be ``None``); the
    result keeps ``x``'s dtype."""
    _require("clip", x)
    if min is None and max is None:
        return F.cast(x, x.dtype)
    if (min is None or _dtypes.is_scalar(min)) and (max is None or _dtypes.is_scalar(max)):
        if x.dtype.kind in "iu":  # out-of-range bounds: clamp them to the dtype first
            info = np.iinfo(x.dtype)
            min = None if min is None else builtins.max(builtins.min(min, info.max), info.min)
            max = None if max is None else builtins.max(builtins.min(max, info.max), info.min)
        y = _ew.clip(x, a_min=min, a_max=max)
    else:
        y = x
        if min is not None:
            y = _ew.where(_ew.less(y, min), min, y)
        if max is not None:
            y = _ew.where(_ew.greater(y, max), max, y)
    return y if y.dtype == x.dtype else F.cast(y, x.dtype)


def conj(x: Any, /) -> Any:
    """The complex conjugate: a copy for a real dtype."""
    _require("conj", x)
    return F.conj(x) if x.dtype.kind == "c" else F.cast(x, x.dtype)


def real(x: Any, /) -> Any:
    """The real part (of the real dtype of that precision): a copy for a real dtype."""
    _require("real", x)
    return F.real(x) if x.dtype.kind == "c" else F.cast(x, x.dtype)


def imag(x: Any, /) -> Any:
    """The imaginary part: zeros for a real dtype."""
    _require("imag", x)
    if x.dtype.kind == "c":
        return F.imag(x)
    return F.mul(x, 0) if x.dtype != _BOOL else F.logical_and(x, False)


def angle(x: Any, /) -> Any:
    """The argument of each element (``atan2(imag, real)``), of the real dtype."""
    _require("angle", x)
    if x.dtype.kind == "c":
        return F.angle(x)
    xf = x if _dtypes.is_floating(x.dtype) else F.cast(x, _dtypes.default_float())
    return F.atan2(F.mul(F.abs(xf), 0.0), xf)  # +0 imaginary parts, as numpy


def astype(x: Any, dtype: Any, /, *, copy: builtins.bool = True, device: Any = None) -> Any:
    """``x`` as ``dtype`` (``x`` itself when ``copy=False`` and nothing changes)."""
    _require("astype", x)
    d = _dtypes.normalize(dtype, "astype")
    if device is not None and type(x) is NdArray and as_context(device) != x.device:
        x = x.to_device(device)
        if d == x.dtype:
            return x
    if not copy and d == x.dtype:
        return x
    return F.cast(x, d)


# -- creation -----------------------------------------------------------------------------
def _on(arr: NdArray, device: Any) -> NdArray:
    """``arr`` on ``device``, else on the default device (``context_scope``, else
    ``set_default_device``, else ``set_default_context``, ``NNARRAY_CONTEXT``): a lazy
    fill is only placed there (nothing allocated), host data moves there in one counted
    transfer."""
    ctx = creation_context(device)
    dev = _device_of(ctx)
    if arr.lazy_fill is not None:
        arr.place_on(dev)
        return arr
    return arr if arr.head_device is dev else arr.to_device(ctx)


def _default_dtype(value: Any) -> np.dtype:
    if isinstance(value, (builtins.bool, np.bool_)):
        return _BOOL
    if isinstance(value, (int, np.integer)):
        return _I64 if not isinstance(value, np.integer) else np.dtype(value.dtype)
    if isinstance(value, (complex, np.complexfloating)):
        return np.dtype(value.dtype) if isinstance(value, np.complexfloating) else \
            _dtypes.default_complex()
    return np.dtype(value.dtype) if isinstance(value, np.floating) else _dtypes.default_float()


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None,
            copy: builtins.bool | None = None) -> Any:
    """An NdArray from an NdArray (shared unless ``copy`` or a new dtype/device asks for a
    copy), a numpy array, a buffer, a Python scalar or nested sequences (floats become
    float32, ints int64: the default dtypes), or a DLPack tensor on a device (a CuPy
    array: wrapped on its GPU like ``from_dlpack``, shared unless a copy is asked for)."""
    d = None if dtype is None else _dtypes.normalize(dtype, "asarray")
    if isinstance(obj, NdArray) or (hasattr(obj, "_record") and hasattr(obj, "dtype")):
        same = (d is None or d == obj.dtype) and (
            device is None or type(obj) is not NdArray or as_context(device) == obj.device)
        if same and not copy:
            return obj
        if copy is False:
            raise ValueError("asarray: copy=False, but a new dtype or device needs a copy")
        y = obj if device is None or type(obj) is not NdArray else obj.to_device(device)
        if y is obj or (d is not None and d != obj.dtype):
            y = F.cast(y, d if d is not None else obj.dtype)
        return y
    if _on_a_device(obj):  # CuPy, a CUDA torch tensor: np.asarray would refuse or copy
        from .dlpack import from_dlpack
        return asarray(from_dlpack(obj), dtype=dtype, device=device, copy=copy)
    if copy is False and not isinstance(obj, np.ndarray):
        raise ValueError(f"asarray: copy=False, but a {type(obj).__name__} needs a copy")
    if type(obj) in (builtins.bool, int, float, complex):
        d = d if d is not None else _default_dtype(obj)
        if d.kind in "iu" and type(obj) is float:
            raise TypeError(f"asarray: cannot make a {d} array of the float {obj!r}")
        return _on(_array(np.asarray(fill_value(d, obj, "asarray", ()), dtype=d)), device)
    if isinstance(obj, (list, tuple)):
        a = np.asarray(obj)
        if a.dtype == object:
            a = np.asarray(_native_nested(obj))
        if d is None and a.dtype in _DOUBLES:
            a = a.astype(_dtypes.default_float() if a.dtype.kind == "f" else
                         _dtypes.default_complex(), copy=False)
    else:
        a = np.asarray(obj)
    if d is not None and a.dtype != d:
        a = a.astype(d)
    return _on(_array(a), device)


def _on_a_device(obj: Any) -> bool:
    """Whether ``obj`` is a DLPack tensor outside host memory (kDLCPU is 1)."""
    if isinstance(obj, np.ndarray) or not hasattr(obj, "__dlpack_device__"):
        return False
    try:
        return int(obj.__dlpack_device__()[0]) != 1
    except Exception:  # not a usable DLPack object: the generic path decides
        return False


def _native_nested(obj: Any) -> Any:
    """Nested sequences holding NdArrays -> nested numpy data."""
    if isinstance(obj, (list, tuple)):
        return [_native_nested(o) for o in obj]
    if isinstance(obj, NdArray):
        return obj.numpy()
    return obj


def empty(shape: Any, *, dtype: Any = None, device: Any = None) -> NdArray:
    """An uninitialized array (zeros here: the allocation is lazy)."""
    return zeros(shape, dtype=dtype, device=device)


def zeros(shape: Any, dtype: Any = None, *, device: Any = None) -> NdArray:
    """A lazily zero-filled array (the default float dtype by default); on ``device`` when given."""
    a = NdArray(normalize_shape(shape, "zeros"),
                _dtypes.default_float() if dtype is None else dtype)
    a.zero()
    return _on(a, device)


def ones(shape: Any, dtype: Any = None, *, device: Any = None) -> NdArray:
    """A lazily one-filled array (the default float dtype by default)."""
    return full(shape, 1, _dtypes.default_float() if dtype is None else dtype, device=device)


def full(shape: Any, fill_value: Any, dtype: Any = None, *, device: Any = None) -> NdArray:
    """A lazily filled array; ``dtype=None`` takes the default dtype of ``fill_value``'s
    kind (bool, int64, the default float dtype)."""
    if isinstance(fill_value, NdArray):
        fill_value = fill_value.item()
    a = NdArray(normalize_shape(shape, "full"),
                _default_dtype(fill_value) if dtype is None else dtype)
    a.fill(fill_value)
    return _on(a, device)


def _like(x: Any, dtype: Any, device: Any) -> tuple:
    _require("like", x)
    return x.shape, (x.dtype if dtype is None else dtype), (
        device if device is not None else (x.device if type(x) is NdArray else None))


def empty_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> NdArray:
    s, d, dev = _like(x, dtype, device)
    return zeros(s, d, device=dev)


def zeros_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> NdArray:
    s, d, dev = _like(x, dtype, device)
    return zeros(s, d, device=dev)


def ones_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> NdArray:
    s, d, dev = _like(x, dtype, device)
    return ones(s, d, device=dev)


def full_like(x: Any, /, fill_value: Any, *, dtype: Any = None, device: Any = None) -> NdArray:
    s, d, dev = _like(x, dtype, device)
    return full(s, fill_value, d, device=dev)


def _iota(n: int, d: np.dtype, ctx: Any) -> NdArray:
    """``0, 1, ..., n-1`` as ``d`` (float64 for a float ``d``, else int64) made by device
    kernels on ``ctx`` (a lazy fill of ones summed up): nothing built on the host."""
    ones_ = NdArray((n,), _I64)
    ones_.fill(1)
    with context_scope(ctx):
        i = F.sub(F.cumulative_sum(ones_, 0), 1)
        return F.cast(i, np.float64) if d.kind == "f" else i


def arange(start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None,
           device: Any = None) -> NdArray:
    """Evenly spaced values in ``[start, stop)`` (int64 for ints, float32 otherwise),
    computed on the device (``start + step * i``)."""
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        ints = builtins.all(isinstance(v, (int, np.integer)) and not isinstance(v, builtins.bool)
                            for v in (start, stop, step))
        d = _I64 if ints else _dtypes.default_float()
    else:
        d = _dtypes.normalize(dtype, "arange")
    if step == 0:
        raise ValueError("arange: argument 'step' must not be 0")
    n = builtins.max(0, int(np.ceil((stop - start) / step)))
    ctx = creation_context(device)
    with context_scope(ctx):
        y = F.add(F.mul(_iota(n, d, ctx), step), start)
        return y if y.dtype == d else F.cast(y, d)


def linspace(start: Any, stop: Any, /, num: int, *, dtype: Any = None, device: Any = None,
             endpoint: builtins.bool = True) -> NdArray:
    """``num`` evenly spaced values from ``start`` to ``stop``, computed on the device
    (numpy's formula: ``start + i * step``, the last one exactly ``stop``)."""
    d = _dtypes.default_float() if dtype is None else _dtypes.normalize(dtype, "linspace")
    if num < 0:
        raise ValueError(f"linspace: argument 'num' must be >= 0, got {num}")
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else 0.0
    ctx = creation_context(device)
    with context_scope(ctx):
        y = F.add(F.mul(_iota(num, np.dtype(np.float64), ctx), float(step)), float(start))
        if endpoint and num > 1:
            y[num - 1] = float(stop)
        return F.cast(y, d)


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None,
        device: Any = None) -> NdArray:
    """Ones on diagonal ``k``, zeros elsewhere (``col - row == k``, on the device)."""
    d = _dtypes.default_float() if dtype is None else _dtypes.normalize(dtype, "eye")
    m = n_rows if n_cols is None else n_cols
    ctx = creation_context(device)
    with context_scope(ctx):
        rows = F.reshape(_iota(n_rows, _I64, ctx), (n_rows, 1))
        diag = F.equal(F.sub(_iota(m, _I64, ctx), rows), k)
        return F.cast(diag, d)


def _tri(op: str, x: Any, k: int, lower: builtins.bool) -> Any:
    _require(op, x)
    if x.ndim < 2:
        raise ValueError(f"{op}: argument 'x' needs at least 2 dimensions, shape {x.shape}")
    n, m = x.shape[-2:]
    mask = np.tri(n, m, k, dtype=bool) if lower else ~np.tri(n, m, k - 1, dtype=bool)
    return F.where(_on(_array(mask), x.device if type(x) is NdArray else None), x,
                   x.dtype.type(0))


def tril(x: Any, /, *, k: int = 0) -> Any:
    """The lower triangle of the last two axes (below diagonal ``k``), zeros above."""
    return _tri("tril", x, k, True)


def triu(x: Any, /, *, k: int = 0) -> Any:
    """The upper triangle of the last two axes (above diagonal ``k``), zeros below."""
    return _tri("triu", x, k, False)


def meshgrid(*arrays: Any, indexing: str = "xy") -> list:
    """Coordinate arrays from 1-D arrays (``"xy"``: the first two axes swapped)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    for i, a in enumerate(arrays):
        if a.ndim != 1:
            raise ValueError(f"meshgrid: arrays[{i}] must be 1-D, shape {a.shape}")
    n = len(arrays)
    sizes = [a.shape[0] for a in arrays]
    if indexing == "xy" and n > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, a in enumerate(arrays):
        ax = i
        if indexing == "xy" and n > 1 and i < 2:
            ax = 1 - i
        shape = [1] * n
        shape[ax] = a.shape[0]
        out.append(F.broadcast_to(F.reshape(a, tuple(shape)), tuple(sizes)))
    return out


# -- statistics ---------------------------------------------------------------------------
def _axes(op: str, x: Any, axis: Any) -> Any:
    """``axis`` as ``None``, an int or a tuple; on a 0-D ``x`` only ``None`` and ``()``
    (numpy's rule: any axis is out of range there, as past a 1-D array's last)."""
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        axis = tuple(operator.index(a) for a in axis)
    else:
        axis = operator.index(axis)
    if x.ndim == 0 and axis != ():
        norm_axes(op, axis, x.shape)  # raises, naming op, axis and shape
    return axis


def _sum_dtype(x: Any) -> np.dtype:
    d = x.dtype
    if d.kind in "bi":
        return _I64
    if d.kind == "u":
        return np.dtype(np.uint64)
    return d


def _reduce(op: str, fn: Any, x: Any, axis: Any, keepdims: builtins.bool, dtype: Any) -> Any:
    _require(op, x)
    axis = _axes(op, x, axis)
    want = _autocast.result_dtype(op, _sum_dtype(x)) if dtype is None else \
        _dtypes.normalize(dtype, op)
    if axis == () or x.ndim == 0:
        return F.cast(x, want)
    if dtype is not None and want != x.dtype:
        x = F.cast(x, want)
    y = fn(x, axis, keepdims)
    return y if y.dtype == want else F.cast(y, want)


def sum(x: Any, /, *, axis: Any = None, dtype: Any = None,
        keepdims: builtins.bool = False) -> Any:
    """The sum over ``axis`` (an int, a tuple or ``None``); integers sum in int64
    (unsigned in uint64) unless ``dtype`` says otherwise."""
    return _reduce("sum", F.sum, x, axis, keepdims, dtype)


def prod(x: Any, /, *, axis: Any = None, dtype: Any = None,
         keepdims: builtins.bool = False) -> Any:
    """The product over ``axis``."""
    return _reduce("prod", F.prod, x, axis, keepdims, dtype)


def _cumulative(op: str, fn: Any, init: int, x: Any, axis: int | None, dtype: Any,
                include_initial: builtins.bool) -> Any:
    _require(op, x)
    if dtype is not None:
        d = _dtypes.normalize(dtype, op)
        if d != x.dtype:
            x = F.cast(x, d)
    y = fn(x, axis)
    if dtype is not None and y.dtype != x.dtype:
        y = F.cast(y, x.dtype)
    if include_initial:
        a = (0 if axis is None else axis) % x.ndim
        z = full(x.shape[:a] + (1,) + x.shape[a + 1:], init, y.dtype,
                 device=x.device if type(x) is NdArray else None)
        y = F.concatenate([z, y], a)
    return y


def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: builtins.bool = False) -> Any:
    """The running sum along ``axis`` (needed unless ``x`` is 1-D); ``include_initial``
    prepends the zero."""
    return _cumulative("cumulative_sum", F.cumulative_sum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: builtins.bool = False) -> Any:
    """The running product along ``axis`` (needed unless ``x`` is 1-D);
    ``include_initial`` prepends the one."""
    return _cumulative("cumulative_prod", F.cumulative_prod, 1, x, axis, dtype,
                       include_initial)


def count_nonzero(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    """The number of nonzero elements over ``axis`` (int64)."""
    _require("count_nonzero", x)
    axis = _axes("count_nonzero", x, axis)
    hits = F.cast(F.not_equal(x, 0), _I64)
    return hits if axis == () else F.sum(hits, axis, keepdims)


def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None,
         append: Any = None) -> Any:
    """The ``n``-th forward difference along ``axis`` (``prepend``/``append`` joined
    first); bool arrays give ``x[i+1] != x[i]``, as numpy does."""
    _require("diff", x)
    if x.ndim == 0:
        raise ValueError("diff: argument 'x' must have at least one dimension")
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"diff: argument 'n' must be >= 0, got {n}")
    a = norm_axes("diff", axis, x.shape)[0]
    parts = [v for v in (prepend, x, append) if v is not None]
    y = F.concatenate(parts, a) if len(parts) > 1 else x
    head = [builtins.slice(None)] * x.ndim
    tail = [builtins.slice(None)] * x.ndim
    head[a], tail[a] = builtins.slice(1, None), builtins.slice(None, -1)
    for _ in range(n):
        hi, lo = F.getitem(y, tuple(head)), F.getitem(y, tuple(tail))
        y = F.not_equal(hi, lo) if y.dtype == _BOOL else F.sub(hi, lo)
    return y


def take_along_axis(x: Any, indices: Any, /, *, axis: int = -1) -> Any:
    """``x``'s elements at ``indices`` along ``axis`` (negative count from the end); the
    other axes of ``x`` and ``indices`` broadcast. Runs where ``x`` is: one gather."""
    from .ops.indexing import check_bounds, gather
    _require("take_along_axis", x)
    _require("take_along_axis", indices)
    if x.ndim == 0 or indices.ndim != x.ndim:
        raise ValueError(f"take_along_axis: x {x.shape} and indices {indices.shape} must "
                         f"have the same number (>= 1) of dimensions")
    if indices.dtype.kind not in "iu":
        raise DTypeError(f"take_along_axis: argument 'indices' must be integer, got "
                         f"{indices.dtype}")
    a = norm_axes("take_along_axis", axis, x.shape)[0]
    try:
        out = np.broadcast_shapes(x.shape[:a] + (1,) + x.shape[a + 1:],
                                  indices.shape[:a] + (1,) + indices.shape[a + 1:])
    except ValueError:
        raise ValueError(f"take_along_axis: x {x.shape} and indices {indices.shape} do not "
                         f"broadcast outside axis {a}") from None
    out = out[:a] + (indices.shape[a],) + out[a + 1:]
    dim = x.shape[a]
    i = F.cast(indices, _I64) if indices.dtype != _I64 else indices
    check_bounds("take_along_axis", i, dim, a, x.shape)
    i = F.remainder(i, dim) if dim else i
    # the element strides, 0 along broadcast axes
    st = [s if n > 1 else 0 for s, n in zip(c_strides(x.shape), x.shape)]
    base = np.zeros([1 if d == a else out[d] for d in range(x.ndim)], np.int64)
    for d in range(x.ndim):
        if d != a:
            base = base + (np.arange(out[d], dtype=np.int64) * st[d]).reshape(
                [-1 if e == d else 1 for e in range(x.ndim)])
    offs = F.broadcast_to(F.mul(i, int(st[a])), out)
    if base.any():
        host = NdArray.from_numpy_array(np.ascontiguousarray(base))
        dev = getattr(offs, "device", None)
        if dev is not None and dev != host.device:  # the offsets go where x is, explicitly
            host = host.to_device(dev)
        offs = F.add(offs, host)
    return F.reshape(gather(F.reshape(x, (-1,)), F.reshape(offs, (-1,))), out)


def _same(op: str, fn: Any, x: Any, axis: Any, keepdims: builtins.bool) -> Any:
    _require(op, x)
    axis = _axes(op, x, axis)
    if axis == ():
        return F.cast(x, x.dtype)
    return fn(x, axis, keepdims)


def max(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    """The maximum over ``axis`` (NaN propagates)."""
    return _same("max", F.max, x, axis, keepdims)


def min(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    """The minimum over ``axis`` (NaN propagates)."""
    return _same("min", F.min, x, axis, keepdims)


def mean(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    """The arithmetic mean over ``axis`` (real or complex floating inputs)."""
    _require("mean", x)
    if x.dtype not in _dtypes.INEXACT:
        raise DTypeError(f"mean: argument 'x' must be floating, got {x.dtype} "
                         f"(shape {x.shape})")
    return _same("mean", F.mean, x, axis, keepdims)


def _recalled(fn: Any) -> Any:
    """``fn`` builds its graph from its inputs' shapes (``F.recalled``): binding a static
    graph to new shapes calls it again."""
    import functools

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        return F.recalled(fn(*args, **kwargs), fn, args, kwargs)
    return F.recalls(call)


@_recalled
def var(x: Any, /, *, axis: Any = None, correction: float = 0.0,
        keepdims: builtins.bool = False) -> Any:
    """The variance over ``axis`` with ``correction`` degrees of freedom removed."""
    _require("var", x)
    if not _dtypes.is_floating(x.dtype):
        raise DTypeError(f"var: argument 'x' must be floating, got {x.dtype} (shape {x.shape})")
    if x.dtype in _dtypes.LOW:  # in float32, rounded once (not at each of its steps)
        return F.cast(var(F.cast(x, np.float32), axis=axis, correction=correction,
                          keepdims=keepdims), x.dtype)
    axes = norm_axes("var", _axes("var", x, axis), x.shape)
    n = 1
    for a in axes:
        n *= x.shape[a]
    if not axes:
        return F.mul(x, 0.0) if n - correction > 0 else F.mul(x, float("nan"))
    c = F.sub(x, F.mean(x, axes, True))
    s = F.sum(F.square(c), axes, keepdims)
    dof = n - correction
    return F.mul(s, (1.0 / dof) if dof > 0 else float("nan"))


@_recalled
def std(x: Any, /, *, axis: Any = None, correction: float = 0.0,
        keepdims: builtins.bool = False) -> Any:
    """The standard deviation over ``axis`` (``sqrt(var)``; 16-bit: in float32, rounded
    once)."""
    _require("std", x)
    low = x.dtype if x.dtype in _dtypes.LOW else None
    if low is not None:
        x = F.cast(x, np.float32)
    s = F.sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))
    return s if low is None else F.cast(s, low)


def argmax(x: Any, /, *, axis: int | None = None, keepdims: builtins.bool = False) -> Any:
    """The index of the first maximum (int64)."""
    return F.argmax(x, axis, keepdims)


def argmin(x: Any, /, *, axis: int | None = None, keepdims: builtins.bool = False) -> Any:
    """The index of the first minimum (int64)."""
    return F.argmin(x, axis, keepdims)


def _count(op: str, x: Any, axis: Any, keepdims: builtins.bool, truth: builtins.bool) -> Any:
    _require(op, x)
    axis = _axes(op, x, axis)
    hits = F.not_equal(x, 0) if truth else F.equal(x, 0)
    if axis == () or x.ndim == 0:
        return hits if truth else F.logical_not(hits)
    n = F.sum(F.cast(hits, _I64), axis, keepdims)
    return F.greater(n, 0) if truth else F.equal(n, 0)


def all(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    """Whether every element along ``axis`` is nonzero (True for none)."""
    return _count("all", x, axis, keepdims, False)


def any(x: Any, /, *, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    """Whether some element along ``axis`` is nonzero."""
    return _count("any", x, axis, keepdims, True)


# -- shapes ------------------------------------------------------------------------------
def matmul(x1: Any, x2: Any, /) -> Any:
    return F.matmul(x1, x2)


def reshape(x: Any, /, shape: Any, *, copy: builtins.bool | None = None) -> Any:
    """A view of an NdArray where numpy's would be one (``copy=None``; ``copy=False``
    raises where it cannot), else a new array."""
    if type(x) is NdArray:
        return x.reshape(shape, copy=copy)
    return F.reshape(x, shape)


def permute_dims(x: Any, /, axes: Any) -> Any:
    """A view of an NdArray (a graph value records a transpose)."""
    if type(x) is NdArray:
        return x.transpose(tuple(axes))
    return F.transpose(x, tuple(axes))


def matrix_transpose(x: Any, /) -> Any:
    return x.mT


def broadcast_to(x: Any, /, shape: Any) -> Any:
    return F.broadcast_to(x, tuple(shape))


@_recalled
def broadcast_arrays(*arrays: Any) -> list:
    """The arrays broadcast against each other."""
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    return [a if a.shape == shape else F.broadcast_to(a, shape) for a in arrays]


def concat(arrays: Any, /, *, axis: int | None = 0) -> Any:
    if axis is None:
        return F.concatenate([F.reshape(a, (-1,)) for a in arrays], 0)
    return F.concatenate(list(arrays), axis)


def stack(arrays: Any, /, *, axis: int = 0) -> Any:
    return F.stack(list(arrays), axis)


def expand_dims(x: Any, /, axis: int = 0) -> Any:
    nd = x.ndim + 1
    if not -nd <= axis < nd:
        raise IndexError(f"expand_dims: axis {axis} is out of range for {nd} dimensions")
    a = axis % nd
    return reshape(x, x.shape[:a] + (1,) + x.shape[a:])


def moveaxis(x: Any, source: Any, destination: Any, /) -> Any:
    """Axes ``source`` moved to ``destination`` (ints or sequences), others in order."""
    nd = x.ndim

    def axes(v: Any, arg: str) -> tuple:
        out = tuple(operator.index(a) for a in (v if isinstance(v, (tuple, list)) else (v,)))
        for a in out:
            if not -nd <= a < nd:
                raise ValueError(f"moveaxis: {arg} axis {a} is out of range for {nd} dims")
        return out

    src = tuple(a % nd for a in axes(source, "source"))
    dst = axes(destination, "destination")
    if len(src) != len(dst) or len(set(src)) != len(src):
        raise ValueError(f"moveaxis: source {source} and destination {destination} must be "
                         "distinct axes of equal number")
    dst = tuple(a % nd for a in dst)
    order = [a for a in range(nd) if a not in src]
    for d, s_ in sorted(zip(dst, src)):
        order.insert(d, s_)
    return permute_dims(x, tuple(order))


def flip(x: Any, /, *, axis: Any = None) -> Any:
    """``x`` with the order of elements along ``axis`` (default: every axis) reversed."""
    axes = norm_axes("flip", axis, x.shape)
    key = tuple(builtins.slice(None, None, -1) if i in axes else builtins.slice(None)
                for i in range(x.ndim))
    return F.getitem(x, key) if axes else F.cast(x, x.dtype)


def roll(x: Any, /, shift: Any, *, axis: Any = None) -> Any:
    """Elements shifted along ``axis`` (flattened when ``None``), wrapping around."""
    if axis is None:
        return F.reshape(roll(F.reshape(x, (-1,)), shift, axis=0), x.shape)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift {shift} and axis {axis} differ in length")
    y = x
    for s_, a in zip(shifts, axes):
        a = operator.index(a) % x.ndim
        n = x.shape[a]
        if n == 0:
            continue
        k = operator.index(s_) % n
        if k:
            head = [builtins.slice(None)] * x.ndim
            tail = [builtins.slice(None)] * x.ndim
            head[a], tail[a] = builtins.slice(n - k, None), builtins.slice(0, n - k)
            y = F.concatenate([F.getitem(y, tuple(head)), F.getitem(y, tuple(tail))], a)
    return y if y is not x else F.cast(x, x.dtype)


def tile(x: Any, repetitions: Any, /) -> Any:
    """``x`` repeated ``repetitions[i]`` times along each axis."""
    reps = tuple(operator.index(r) for r in repetitions)
    nd = builtins.max(len(reps), x.ndim)
    reps = (1,) * (nd - len(reps)) + reps
    shape = (1,) * (nd - x.ndim) + tuple(x.shape)
    y = F.reshape(x, tuple(v for s_ in shape for v in (1, s_)))
    y = F.broadcast_to(y, tuple(v for r, s_ in zip(reps, shape) for v in (r, s_)))
    return F.reshape(y, tuple(r * s_ for r, s_ in zip(reps, shape)))


def repeat(x: Any, repeats: Any, /, *, axis: int | None = None) -> Any:
    """Each element repeated ``repeats`` times (an int, or one count per element, read
    on the host) along ``axis`` (the flattened array when ``None``)."""
    if axis is None:
        x, axis = F.reshape(x, (-1,)), 0
    a = operator.index(axis) % x.ndim
    n = x.shape[a]
    if isinstance(repeats, int) or (hasattr(repeats, "ndim") and repeats.ndim == 0):
        r = int(repeats)
        y = expand_dims(x, axis=a + 1)
        shape = x.shape[:a + 1] + (r,) + x.shape[a + 1:]
        return F.reshape(F.broadcast_to(y, shape), x.shape[:a] + (n * r,) + x.shape[a + 1:])
    counts = np.asarray(repeats).astype(np.int64).reshape(-1)
    if counts.shape[0] not in (1, n):
        raise ValueError(f"repeat: {counts.shape[0]} repeats for an axis of length {n}")
    if counts.shape[0] == 1:
        return repeat(x, int(counts[0]), axis=a)
    parts = [F.getitem(x, (builtins.slice(None),) * a + (builtins.slice(i, i + 1),))
             for i in range(n)]
    parts = [repeat(p, int(c), axis=a) for p, c in zip(parts, counts) if c]
    if not parts:
        return zeros(x.shape[:a] + (0,) + x.shape[a + 1:], x.dtype)
    return F.concatenate(parts, a)


def unstack(x: Any, /, *, axis: int = 0) -> tuple:
    """The slices of ``x`` along ``axis``."""
    a = operator.index(axis)
    if not -x.ndim <= a < x.ndim:
        raise IndexError(f"unstack: axis {axis} is out of range for shape {x.shape}")
    a %= x.ndim
    return tuple(F.getitem(x, (builtins.slice(None),) * a + (i,)) for i in range(x.shape[a]))


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
            if k else zeros((m, n), result(p, q))
    else:
        r = F.matmul(p, q)
    d = result(x1, x2)
    if r.dtype != d:
        r = F.cast(r, d)
    return F.reshape(r, tuple(x1.shape[i] for i in k1) + tuple(x2.shape[j] for j in k2))


def result(*xs: Any) -> np.dtype:
    from .namespace import result_type
    return result_type(*xs)


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
    return sum(F.mul(x1, x2), axis=axis, dtype=result(x1, x2))


def take(x: Any, indices: Any, /, *, axis: int | None = None) -> Any:
    """Elements of ``x`` at the 1-D integer ``indices`` along ``axis``."""
    return F.take(x, indices, axis)


def squeeze(x: Any, /, axis: Any) -> Any:
    axes = norm_axes("squeeze", axis, x.shape)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} has size {x.shape[a]}, not 1 "
                             f"(shape {x.shape})")
    return reshape(x, tuple(s for i, s in enumerate(x.shape) if i not in axes))


__all__ = sorted(n for n, v in list(globals().items())
                 if not n.startswith("_") and n not in (
                     "annotations", "builtins", "operator", "np", "F", "Any", "DTypeError",
                     "NdArray", "as_context", "fill_value", "normalize_shape", "norm_axes",
                     "result", "late"))

late.provide(__name__)  # bind the lower layers' slots (nnarray.late)
