"""NdArray: a device-agnostic n-d array over synced per-device copies."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import discovery as backends
from . import dtypes, late, views
from .context import Context, as_context, context_scope, dispatch_into, get_current_context
from .errors import AttributeShapeError, DTypeError, InvalidValueError, ShapeError
from .operators import ArrayOperators
from .synced import SyncedArray
from .transfers import check_implicit_read
from .transfers import strict_reads as _strict_reads

# The layers above, called at run time (``nnarray.late``).
F: Any = late.bind(__name__, "F", "nnarray.functions")
_indexing: Any = late.bind(__name__, "_indexing", "nnarray.ops.indexing")
_shape_ops: Any = late.bind(__name__, "_shape_ops", "nnarray.ops.shape")
_registry: Any = late.bind(__name__, "_registry", "nnarray.registry")
_values: Any = late.bind(__name__, "_values", "nnarray.values")
_pickling: Any = late.bind(__name__, "_pickling", "nnarray.pickling")
_dlpack: Any = late.bind(__name__, "_dlpack", "nnarray.dlpack")
_package: Any = late.bind(__name__, "_package", "nnarray")


def normalize_shape(shape: Any, op: str = "NdArray", arg: str = "shape") -> tuple[int, ...]:
    """An int or a sequence of non-negative ints -> a tuple of ints."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        out = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise ShapeError(f"{op}: argument '{arg}' must be an int or a sequence of ints, "
                         f"got {shape!r}") from None
    if any(s < 0 for s in out):
        raise ShapeError(f"{op}: argument '{arg}' has a negative dimension: {out}")
    return out


def _device(ctx: Context | str | None):
    c = as_context(ctx)
    return backends.get_device(c.backend, c.device_id)


class NdArray(SyncedArray, ArrayOperators):
    """An n-d array whose data may have current copies on several devices.

    No memory is allocated until first access. ``get_data(mode, ctx)`` gives the
    backend's native array; operators run eagerly on the current context through ``F``.
    """

    __slots__ = ()

    def __init__(self, shape: int | Sequence[int] = (), dtype: Any = None) -> None:
        if dtype is None:  # float32 unless set_default_dtype says otherwise
            dtype = dtypes.default_float()
        self._init_empty(normalize_shape(shape), dtypes.normalize(dtype, "NdArray"))

    # -- metadata (read as the slots are; assignments checked) -----------------------
    def _set_shape(self, shape: Any) -> None:
        """numpy's in-place reshape ``x.shape = s``: the same storage under ``s`` (``-1``
        accepted) where no copy is needed, else an error before anything changes: another
        size is a ``ShapeError``; a view whose layout needs a copy for ``s``, or an array
        a graph holds (``pin_shape``), an ``AttributeShapeError`` (also numpy's
        ``AttributeError``)."""
        old = self._shape
        try:
            ((new, _),) = _shape_ops.reshape_op.infer((self,), {"shape": shape})
        except (ShapeError, TypeError) as e:
            raise ShapeError(f"NdArray.shape: cannot set shape {shape!r} on an array of "
                             f"shape {old} ({e}); reshape() makes a new array") from None
        if new == old:
            return
        if self.shape_pinned:
            raise AttributeShapeError(
                f"NdArray.shape: cannot reshape an array of shape {old} to {new} in place: "
                f"a graph keeps its shape (a Variable's data or gradient, or a static "
                f"graph's constant); reset_shape() or reshape() the Variable, or reshape() "
                f"a copy")
        if views.of(self) is None:
            self.reshape_storage(new)
            return
        v = views.reshape(self, new)
        if v is None:
            raise AttributeShapeError(
                f"NdArray.shape: incompatible shape {new} for in-place modification of a "
                f"view of shape {old} (its layout needs a copy); use .reshape() to make one")
        self.take_view(v)

    def _set_dtype(self, dtype: Any) -> None:
        """``x.dtype = d``: only the array's own dtype (nnarray never reinterprets bits);
        any other is a ``DTypeError`` pointing to ``astype``."""
        d = dtypes.normalize(dtype, "NdArray.dtype")
        if d != self._dtype:
            raise DTypeError(f"NdArray.dtype: cannot reinterpret an array of {self._dtype} "
                             f"(shape {self._shape}) as {d} in place; astype({d}) converts "
                             f"to a new array")

    shape = property(operator.attrgetter("_shape"), _set_shape,
                     doc="The shape (a tuple of ints); assigning it reshapes in place "
                         "where no copy is needed (numpy's rule), else raises.")
    dtype = property(operator.attrgetter("_dtype"), _set_dtype,
                     doc="The numpy dtype; assigning another raises ``DTypeError``.")

    @classmethod
    def from_numpy_array(cls, a: Any) -> NdArray:
        """A copy of a numpy array (or array-like); the host copy is current."""
        a = np.asarray(a)
        dt = dtypes.normalize(a.dtype, "NdArray.from_numpy_array", "a")
        host = backends.host_device()
        return NdArray._wrap(host.from_host(np.asarray(a, order="C")), host, (a.shape, dt))

    # -- data access ---------------------------------------------------------------
    def get_data(self, mode: str = "rw", ctx: Context | str | None = None) -> Any:
        """The native array on ``ctx`` (default: current context) for ``mode``.

        ``'r'`` syncs and keeps other copies current (a numpy result is read-only);
        ``'w'`` transfers nothing and makes other copies stale; ``'rw'`` does both.
        An explicit call like this one is allowed inside ``strict_transfers()``.
        """
        dev = _device(ctx)
        x = self.native(dev, mode, explicit=True)
        if mode == "r" and dev.is_host:
            x = x.view()
            x.flags.writeable = False
        return x

    @property
    def data(self) -> np.ndarray:
        """A writable host numpy array (``get_data("rw", "numpy")``, so the host becomes
        the array's device), tracked while it lives (``SyncedArray.hand_out``): writes
        through it are seen by the next device read, or refused after a device write."""
        host = backends.host_device()
        return self.hand_out(host, self.native(host, "rw", explicit=True))

    def host_handle(self) -> np.ndarray:
        """A writable host numpy array that keeps the array's device (``Variable.d`` and
        ``.g``): a host read, then a tracked handle (``SyncedArray.hand_out``): other
        devices re-sync from the host while it lives, or refuse its writes after
        writing themselves."""
        host = backends.host_device()
        v = views.of(self)
        if v is not None and not v.contiguous:  # a strided view: alias, never a gathered copy
            root = v.base.native(host, "r", explicit=True)
            return self.hand_out(host, host.strided(root, v.offset, self.shape, v.strides))
        return self.hand_out(host, self.native(host, "r", explicit=True))

    @data.setter
    def data(self, value: Any) -> None:
        if dtypes.is_scalar(value):
            self.fill(value)
            return
        v = np.asarray(value)
        if v.shape != self.shape:
            try:
                v = np.broadcast_to(v, self.shape)
            except ValueError:
                raise ShapeError(f"NdArray.data: value of shape {v.shape} does not match "
                                 f"the array's shape {self.shape}") from None
        if v.dtype.kind not in "biufc" and not dtypes.is_bfloat16(v.dtype) or \
                (v.dtype.kind == "c" and self.dtype.kind != "c"):
            raise DTypeError(f"NdArray.data: cannot store values of dtype {v.dtype} in an "
                             f"array of {self.dtype}")
        self.native(backends.host_device(), "w", explicit=True)[...] = v

    def zero(self) -> None:
        """Lazily set every element to zero (no allocation, no transfer)."""
        self._set_fill(False if self.dtype.kind == "b" else 0)

    def fill(self, value: Any) -> None:
        """Lazily set every element to ``value``, exactly for every dtype; a value the
        dtype cannot hold (NaN, inf or out of range for an integer dtype) raises
        ``InvalidValueError``."""
        if not dtypes.is_scalar(value):
            raise DTypeError(f"NdArray.fill: value must be a scalar, got {type(value).__name__}")
        self._set_fill(fill_value(self.dtype, value, "NdArray.fill", self.shape))

    def copy_from(self, other: NdArray) -> None:
        """Copy ``other`` into this array on the current context (casting its dtype)."""
        if not isinstance(other, NdArray):
            raise TypeError(f"NdArray.copy_from: expected an NdArray, got {type(other).__name__}")
        if other.shape != self.shape:
            raise ShapeError(f"NdArray.copy_from: shape {other.shape} does not match "
                             f"{self.shape}")
        F.assign(self, other)

    def astype(self, dtype: Any, copy: bool = True, **numpy_kw: Any) -> NdArray:
        """A new array of ``dtype`` (``self`` when ``copy=False`` and it already is)."""
        if not copy and dtypes.normalize(dtype, "astype") == self.dtype:
            return self
        return F.cast(self, dtype)

    def __setitem__(self, key: Any, value: Any) -> None:
        """``x[key] = value`` in place where ``x`` is (``context.dispatch_into``), for
        basic indices (ints, slices, ``...``, ``None``) and a scalar or an NdArray
        broadcastable to ``x[key]``.
        Boolean masks and integer arrays are accepted too (``nnarray.ops.indexing``:
        a scatter; where an index repeats, numpy keeps the last write, CuPy and OpenCL an
        unspecified one). Everything is checked before anything is written. The
        ``setitem`` kernel gets ``key`` and ``view``, the target's ``(element offset,
        shape, strides)``; for a view ``key`` is ``None`` and ``view`` is the region of
        its root that the kernel writes."""
        device_context, flat_offsets = _indexing.device_context, _indexing.flat_offsets
        is_advanced = _indexing.is_advanced
        if not isinstance(value, NdArray) and not dtypes.is_scalar(value):
            value = _values.host_value(self, value)  # numpy arrays, sequences: uploaded once
        if is_advanced(key):
            flat = flat_offsets("setitem", self.shape, key,
                                device_context(dispatch_into(self, (self,), "setitem")))
            view, shape = None, flat.shape
        else:
            view = _view(self.shape, key)
            shape = view[1]
        if isinstance(value, NdArray):
            try:
                if np.broadcast_shapes(value.shape, shape) != shape:
                    raise ValueError
            except ValueError:
                raise ShapeError(f"setitem: value of shape {value.shape} does not broadcast "
                                 f"to the target x[{key!r}] of shape {shape} (x has shape "
                                 f"{self.shape})") from None
            if not np.can_cast(value.dtype, self.dtype, "same_kind"):
                raise DTypeError(f"setitem: cannot store {value.dtype} values in a "
                                 f"{self.dtype} array (shape {self.shape})")
        elif dtypes.is_scalar(value):
            if isinstance(value, float) and self.dtype.kind in "biu":
                raise DTypeError(f"setitem: cannot store the float {value!r} in a {self.dtype} "
                                 f"array (shape {self.shape})")
            value = fill_value(self.dtype, value, "setitem", self.shape)
        else:
            raise TypeError(f"setitem: value must be an NdArray or a scalar, got "
                            f"{type(value).__name__}")
        reg = _registry
        ctx = dispatch_into(self, (self,), "setitem")
        if view is None:
            if isinstance(value, NdArray):
                value = F.reshape(F.broadcast_to(value, shape), (-1,))
            reg.dispatch(reg.SCATTER, ctx).run(
                (F.reshape(flat, (-1,)), value), {}, out=self)
            return
        if views.of(self) is not None:  # a view: one kernel writing its root's region
            root, region = views.region(self, key)
            reg.dispatch(reg.SETITEM, ctx).run(
                (value,), {"key": None, "view": region}, out=root)
            return
        reg.dispatch(reg.SETITEM, ctx).run(
            (value,), {"key": key, "view": view}, out=self)

    # -- views -------------------------------------------------------------------
    def __getitem__(self, key: Any) -> NdArray:
        """``x[key]``: basic indices (ints, slices, ``...``, ``None``) give a view that
        shares ``x``'s storage (``nnarray.views``); boolean masks and integer arrays give
        a new array on ``x``'s device (``nnarray.ops.indexing``)."""
        if _indexing.is_advanced(key):
            return F.getitem(self, key)
        return views.getitem(self, key)

    def reshape(self, *shape: Any, copy: bool | None = None) -> NdArray:
        """``x`` with a new shape: a view where numpy's would be one (``copy=None``),
        else a new array; ``copy=True`` always copies, ``copy=False`` raises
        ``ValueError`` where a view is impossible."""
        op = _shape_ops.reshape_op
        shape = shape[0] if len(shape) == 1 else shape
        if copy:
            return F.reshape(self, shape)
        attrs = {"shape": shape}
        ((new, _),) = op.infer((self,), attrs)
        v = views.reshape(self, new)
        if v is not None:
            return v
        if copy is False:
            raise ValueError(f"reshape: cannot reshape a view of shape {self.shape} to "
                             f"{new} without copying (copy=False)")
        return F.reshape(self, new)

    def transpose(self, *axes: Any) -> NdArray:
        """``x`` with its axes permuted (``None``/none given: reversed), as a view."""
        op = _shape_ops.transpose_op
        attrs = {"axes": (axes[0] if len(axes) == 1 else axes) or None}
        op.infer((self,), attrs)
        return views.transpose(self, attrs["axes"])

    @property
    def base(self) -> NdArray | None:
        """The array whose storage this view shares (``None`` unless a view)."""
        v = views.of(self)
        return None if v is None else v.base

    def __reduce__(self) -> tuple:
        """``pickle``/``copy.deepcopy``: the data through the host, the device restored
        on load where it exists (``nnarray.pickling``)."""
        return _pickling.reduce_ndarray(self)

    # -- the Array API -------------------------------------------------------------
    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        """The ``nnarray`` module (Array API 2023.12)."""
        if api_version is not None and api_version not in ("2021.12", "2022.12", "2023.12",
                                                             "2024.12"):
            raise ValueError(f"__array_namespace__: unsupported api_version {api_version!r}")
        return _package

    @property
    def device(self) -> Context:
        """The context holding the newest copy, or the current context for a lazy array."""
        h = self.head_device
        if h is None:
            return get_current_context()
        return Context(h.backend, h.device_id)

    def to_device(self, device: Context | str, /, *, stream: Any = None) -> NdArray:
        """A new array current on ``device``: one explicit, counted transfer."""
        ctx = as_context(device)
        self.native(_device(ctx), "r", explicit=True)  # the transfer (none if current)
        with context_scope(ctx):
            return F.cast(self, self.dtype)  # a new array on ctx, copied there

    def to(self, device: Context | str | Any = None, dtype: Any = None, *,
           copy: bool = False) -> NdArray:
        """torch's ``to``: this array on ``device`` (``to_device``) with ``dtype``
        (``astype``); itself where it is already current there in that dtype (unless
        ``copy``). A first argument that is not a context or a string is the dtype."""
        if device is not None and not isinstance(device, (Context, str)):
            if dtype is not None:
                raise TypeError(f"NdArray.to: device must be a context or a string, got "
                                f"{type(device).__name__}")
            device, dtype = None, device
        out = self
        if device is not None and (copy or as_context(device).key != self.head):
            out = out.to_device(device)
        if dtype is not None and dtypes.normalize(dtype, "NdArray.to") != out.dtype:
            with context_scope(dispatch_into(out, (out,), "to")):
                out = out.astype(dtype)
        elif copy and out is self:
            out = out.copy()
        return out

    def detach(self) -> NdArray:
        """torch's ``detach``: an NdArray records no graph, so a view of the whole array
        (sharing its storage, as torch's result does)."""
        return views.getitem(self, ...)

    def view(self, *shape: Any) -> NdArray:
        """torch's ``view``: ``x`` with a new shape sharing its storage; ``ValueError``
        where that needs a copy (``reshape()`` copies there)."""
        try:
            return self.reshape(*shape, copy=False)
        except ValueError as e:
            raise ValueError(f"view: {e}; reshape() copies where a view is impossible") \
                from None

    def copy(self) -> NdArray:
        """A new array with the same contents."""
        return F.cast(self, self.dtype)

    def numpy(self) -> np.ndarray:
        """A host copy as a new numpy array."""
        return np.array(self.native(backends.host_device(), "r", explicit=True))

    def item(self) -> Any:
        if self.size != 1:
            raise ValueError(f"NdArray.item: only size-1 arrays convert, shape is {self.shape}")
        return self.native(backends.host_device(), "r", explicit=True).item()

    def _implicit_read(self, what: str) -> None:
        """``TransferError`` for a protocol read (``float()``, ...) that must transfer,
        inside ``strict_transfers(implicit_reads=True)``."""
        if _strict_reads.get():
            check_implicit_read(what, self.devices, self.shape,
                                self.current_copy(backends.host_device()) is not None)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """The host data, as numpy shares a CPU tensor's: for an array on the host (lazy
        fills, views and never-written arrays whose device is the host included) a
        writable handle (``hand_out``: writes through it are never lost), for one on
        another device a read-only view of its host copy (a read never moves the array,
        so it cannot be written through); a writable copy when ``copy`` or ``dtype``
        asks for one."""
        self._implicit_read("np.asarray()")
        h = self.head_device
        if h is None:
            h = _device(None)
        if h.is_host and dtype is None and not copy:
            return self.host_handle()
        return self._host_view(dtype, copy)

    def _host_view(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.native(backends.host_device(), "r", explicit=True)
        if dtype is not None or copy:
            return np.array(a, dtype=dtype)
        v = a.view()
        v.flags.writeable = False
        return v

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None,
                   dl_device: Any = None, copy: bool | None = None) -> Any:
        """A DLPack capsule sharing this array's buffer on one device (host or CUDA);
        see ``nnarray.dlpack`` for which copy is exported and what stays shared."""
        return _dlpack.export(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(device_type, device_id)`` of the buffer ``__dlpack__`` exports."""
        return _dlpack.dlpack_device(self)

    def __float__(self) -> float:
        self._implicit_read("float()")
        return float(self.item())

    def __complex__(self) -> complex:
        self._implicit_read("complex()")
        return complex(self.item())

    def __int__(self) -> int:
        self._implicit_read("int()")
        return int(self.item())

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(f"bool() of an NdArray of shape {self.shape} is ambiguous: use "
                             "x.any() or x.all()")
        self._implicit_read("bool()")
        return bool(self.item())

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":
            raise TypeError("only integer arrays can be used as an index")
        self._implicit_read("index()")
        return int(self.item())

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d NdArray")
        return self.shape[0]

    def __iter__(self):
        """The sub-arrays along the first axis; ``TypeError`` at once for a 0-d array, as
        numpy's (so ``np.iterable(x)`` is False)."""
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self) -> str:
        """Values (numpy's text, summarised when large), dtype and device (a host read)."""
        return _values.ndarray_repr(self)


_BASIC = (int, np.integer, slice, type(Ellipsis), type(None))


def _view(shape: tuple[int, ...], key: Any) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """(element offset, shape, element strides) of ``x[key]`` for a C-contiguous ``x`` of
    ``shape`` and a basic index (numpy's rules; ``IndexError`` out of range)."""
    k = key if isinstance(key, tuple) else (key,)
    for i in k:
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, _BASIC):
            if isinstance(i, NdArray) and i.ndim == 0 and i.dtype.kind in "iu":
                continue
            raise IndexError(f"setitem: only basic indices (ints, slices, ..., None) are "
                             f"supported yet, got {type(i).__name__} in {key!r}")
    k = tuple(int(i) if isinstance(i, NdArray) else i for i in k)
    st, n = [], 1
    for s in reversed(shape):
        st.append(n)
        n *= s
    if not any(i is Ellipsis for i in k):
        k = k + (Ellipsis,)  # a view even when every axis gets an int (not a scalar)
    base = np.zeros(1, np.uint8)
    probe = np.lib.stride_tricks.as_strided(base, shape, tuple(reversed(st)))
    v = probe[k]
    off = v.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    if v.size and not 0 <= off < n:  # never hand a kernel a view outside the array
        raise IndexError(f"setitem: index {key!r} is out of bounds for shape {shape}")
    return off, tuple(v.shape), tuple(v.strides)


def fill_value(dtype: np.dtype, value: Any, op: str, shape: tuple[int, ...]) -> Any:
    """``value`` as a Python scalar of ``dtype``, or ``InvalidValueError`` naming ``op``
    where an integer dtype cannot hold it (numpy raised its own errors, or wrapped)."""
    if dtype.kind in "iu" and not isinstance(value, (bool, np.bool_)):
        info = np.iinfo(dtype)
        v = value.item() if isinstance(value, np.generic) else value
        if isinstance(v, float) and not math.isfinite(v):
            why = "is not finite"
        elif not info.min <= v <= info.max:
            why = f"is out of range [{info.min}, {info.max}]"
        else:
            why = None
        if why is not None:
            raise InvalidValueError(f"{op}: value {value!r} {why} for an array of {dtype} "
                                    f"(shape {shape})")
    if dtype.kind != "c" and isinstance(value, (complex, np.complexfloating)):
        raise DTypeError(f"{op}: cannot store the complex value {value!r} in an array of "
                         f"{dtype} (shape {shape})")
    return dtype.type(value).item()


def zeros(shape: Any, dtype: Any = None) -> NdArray:
    """A lazily zero-filled array (nothing allocated until first access)."""
    a = NdArray(shape, dtype)
    a.zero()
    return a


def ones(shape: Any, dtype: Any = None) -> NdArray:
    """A lazily one-filled array."""
    return full(shape, 1, dtypes.default_float() if dtype is None else dtype)


def full(shape: Any, value: Any, dtype: Any = None) -> NdArray:
    """A lazily filled array; ``dtype=None`` infers the default float/int64/bool from
    ``value``."""
    if dtype is None:
        dtype = {bool: np.bool_, int: np.int64, complex: dtypes.default_complex()}.get(
            type(value), dtypes.default_float())
        if isinstance(value, np.generic):
            dtype = value.dtype
    a = NdArray(shape, dtype)
    a.fill(value)
    return a


def array(obj: Any, dtype: Any = None) -> NdArray:
    """An NdArray from a numpy array (dtype kept), an NdArray (copied) or Python data
    (floats become the default float dtype, float32 unless set, ints int64, bools bool)."""
    if isinstance(obj, NdArray):
        return obj.astype(dtype if dtype is not None else obj.dtype)
    a = np.asarray(obj, dtype=dtype)
    if dtype is None and not isinstance(obj, (np.ndarray, np.generic)) and a.dtype.kind in "fc" \
            and a.itemsize in (8, 16):
        a = a.astype(dtypes.default_float() if a.dtype.kind == "f" else
                     dtypes.default_complex())
    return NdArray.from_numpy_array(a)
