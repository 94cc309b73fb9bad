"""The standard's creation functions, with ``dtype=`` and ``device=``: ``asarray``,
``from_dlpack``, the filled arrays (lazy fills, placed on the device), ``arange``,
``linspace``, ``eye`` (computed there), ``tril``/``triu`` and ``meshgrid``.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import dtypes as _dtypes
from .. import functions as F
from ..context import as_context, context_scope, creation_context
from ..dlpack import from_dlpack as _from_dlpack
from ..ndarray import NdArray, fill_value, normalize_shape
from ..ndarray import _device as _device_of
from ..ndarray import array as _array
from ._common import _require

#: Python floats and complexes default to ``default_float()``/``default_complex()``
#: (float32 and complex64 unless ``set_default_dtype`` says otherwise).
_DOUBLES = (np.dtype(np.float64), np.dtype(np.complex128))
_I64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)


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
        from ..dlpack import from_dlpack
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


__all__ = [
    "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
    "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like"
]
