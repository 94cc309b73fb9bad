"""The per-device copy state machine (after nnabla's SyncedArray).

An array's data may have copies on several devices. ``_copies`` maps each device whose
copy is current to that copy; ``_stale`` keeps buffers of out-of-date copies for reuse.
``_head`` is the array's device: of the latest write (a lazy fill keeps it, and creation
functions place a fill with ``place_on``); reads never change it. A lazy ``fill``
stores the value only; any device that reads it materializes the value itself, so
filling never transfers.

Access modes: ``'r'`` syncs the copy and leaves others current; ``'w'`` transfers
nothing and makes every other copy stale; ``'rw'`` syncs, then makes others stale.
Every write bumps ``version`` (autograd checks it for in-place modification).

A view (``nnarray.views``) holds no copies: its ``_fill`` is a ``views.View`` and every
access misses the (empty) ``_copies`` and goes to its root's copies there.

Writable host handles (``hand_out``) are registered in ``host_handles``; a copy with
live handles stays current on the host only (see ``hand_out``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import host_handles as _host_handles
from . import transfers
from . import views as _views
from .device import Device
from .views import View

_NO_FILL = object()
_new = object.__new__

#: The live host handles (``host_handles``), read as one truth test where none exist
_handles = _host_handles.registry


class SyncedArray:
    """Shape, dtype and the device copies of one array.

    The rest of nnarray reaches the copies only through the public methods below
    (``native`` to read or write one device's copy, ``adopt``/``_wrap`` to take a fresh
    kernel result); nothing outside this file touches the private fields.
    """

    __slots__ = ("_shape", "_dtype", "_copies", "_stale", "_head", "_fill", "_version",
                 "_snap", "_pinned", "__weakref__")

    @classmethod
    def _wrap(cls, x: Any, dev: Device, meta: tuple) -> Any:
        """A new array adopting ``x``, a fresh native array of ``dev`` with ``meta``
        ``(shape, dtype)`` (the kernels' hot path: no validation)."""
        a = _new(cls)
        a._shape, a._dtype = meta
        a._copies = {dev: x}
        a._stale = None
        a._head = dev
        a._fill = _NO_FILL
        a._version = 0
        a._snap = None
        return a

    def _init_empty(self, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self._shape = shape
        self._dtype = dtype
        self._copies: dict[Device, Any] = {}
        self._stale: dict[Device, Any] | None = None
        self._head: Device | None = None
        self._fill: Any = _NO_FILL
        self._version = 0
        #: Set by the autograd engine while the array is saved for a backward pass, and to
        #: a host snapshot once it was handed out for writing (``Variable.d``).
        self._snap: Any = None

    @property
    def version(self) -> int:
        """The write counter (a view's is its root's: they share it)."""
        f = self._fill
        return f.base._version if f.__class__ is View else self._version

    def mark_modified(self) -> None:
        """Count a write nnarray did not make (through a host view) in ``version``."""
        f = self._fill
        if f.__class__ is View:
            f.base._version += 1
        else:
            self._version += 1

    # -- in-place reshapes (``NdArray.shape = s``; the caller checked ``shape``) ---------
    def reshape_storage(self, shape: tuple[int, ...]) -> None:
        """Give a root array ``shape`` (of its size) over its own storage: every current
        copy re-described on its device (``Device.reshaped``, no copy), stale buffers
        dropped, ``version`` bumped (data saved for a backward pass under the old shape is
        refused). Views of it keep their elements (their layout is in flat elements)."""
        self._copies = {d: d.reshaped(x, shape) for d, x in self._copies.items()}
        self._stale = None
        self._shape = shape
        self._version += 1

    def pin_shape(self) -> Any:
        """Refuse in-place reshapes from now on (``shape_pinned``): a graph holds the
        array with its shape (a Variable's data or gradient, a bound executor's
        argument, a static graph's constant). Returns the array."""
        self._pinned = True
        return self

    @property
    def shape_pinned(self) -> bool:
        """Whether ``pin_shape`` was called (the slot is set only then: no cost to
        arrays that never meet a Variable)."""
        return getattr(self, "_pinned", False)

    def take_view(self, other: Any) -> None:
        """Make this view ``other``'s layout (a view of the same root and size, from
        ``views.reshape``); the root's ``version`` is bumped, as for a root."""
        f = other._fill
        self._fill = f
        self._shape = other._shape
        f.base._version += 1

    # -- the public accessors ---------------------------------------------------------
    def native(self, dev: Device, mode: str = "r", explicit: bool = False) -> Any:
        """The native array on ``dev`` for ``mode`` (``'r'``, ``'w'`` or ``'rw'``); a read
        of a current copy is one dict lookup. ``explicit`` marks a transfer the user asked
        for (allowed under ``strict_transfers``)."""
        c = self._copies
        if mode == "r":
            x = c.get(dev)
            if x is not None:
                return x
            return self._sync(dev, explicit)
        if mode == "rw" and len(c) == 1:  # in-place updates: the sole copy is current here
            x = c.get(dev)
            if x is not None:
                self._head = dev
                self._fill = _NO_FILL
                self._version += 1
                return x
        return self._access(mode, dev, explicit)

    @staticmethod
    def natives(arrays: Any, dev: Device, mode: str = "r") -> list:
        """``[a.native(dev, mode) for a in arrays]``, a current copy's read inline (a fused
        update reads every gradient of a model in one call)."""
        if mode != "r":
            return [a.native(dev, mode) for a in arrays]
        out = []
        for a in arrays:
            x = a._copies.get(dev)
            out.append(x if x is not None else a._sync(dev, False))
        return out

    def adopt(self, dev: Device, x: Any) -> None:
        """Adopt ``x`` (a fresh C-contiguous native array) as the only current copy (on
        the host, with live handles: copied into the buffer they share; a view copies it
        into its root's storage instead)."""
        if self._fill.__class__ is View:
            _views.write(self, dev, x)
            return
        if _handles and _host_handles.live(self):
            if dev.is_host and self._copies.get(dev) is not None:
                self._copies[dev][...] = x
                x = self._copies[dev]
            else:
                _host_handles.revoke(self)
        self._copies = {dev: x}
        self._stale = None
        self._head = dev
        self._fill = _NO_FILL
        self._version += 1

    # -- host handles (API.md §7; the registry is host_handles.py) --------------------
    def hand_out(self, host: Device, x: np.ndarray) -> np.ndarray:
        """A writable handle on ``x``, the current copy on ``host`` (``.data``,
        ``Variable.d``, ``np.asarray``, DLPack), tracked while it or any view of it lives:
        the host copy may then be written behind nnarray's back, so other devices'
        copies become stale and every device read re-syncs from the host (counted)
        instead of keeping its copy. The array's device is unchanged (a never-placed
        array's becomes the host), and it is no longer a lazy fill. A write on another
        device (or a fill) makes the handle read-only: a later write through it is
        refused, not lost. A view's handle is its root's (an alias of the root's copy)."""
        f = self._fill
        if f.__class__ is View:
            return f.base.hand_out(host, x)
        self._fill = _NO_FILL
        if self._head is None:
            self._head = host
        h = _host_handles.track(self, x)
        c = self._copies
        if len(c) > 1:
            stale = self._stale if self._stale is not None else {}
            for d in [d for d in c if d is not host]:
                stale[d] = c.pop(d)
            self._stale = stale
        return h

    def holds_fill(self, value: Any) -> bool:
        """Whether the array still holds the lazy fill ``value`` (materialized copies of
        it included): nothing was written since ``fill(value)``."""
        return self._fill is not _NO_FILL and self._fill == value

    @property
    def lazy_fill(self) -> Any:
        """The value of a lazy ``fill`` the array still holds, else ``None``."""
        f = self._fill
        return None if f is _NO_FILL or f.__class__ is View else f

    def current_copy(self, dev: Device) -> Any:
        """The native copy on ``dev`` if it is current, else ``None`` (never transfers;
        a view's is read from its root's copy)."""
        f = self._fill
        if f.__class__ is View:
            return None if f.base.current_copy(dev) is None else _views.read(self, dev, False)
        return self._copies.get(dev)

    def reads_as_zero(self) -> bool:
        """Whether the array holds no copy and reads as zeros (never written, or a lazy
        zero fill)."""
        return not self._copies and (self._fill is _NO_FILL or self._fill == 0)

    def sole_copy(self) -> tuple[Device, Any] | None:
        """``(device, native)`` when exactly one copy is current and the array is not
        lazily filled, else ``None``."""
        c = self._copies
        if len(c) == 1 and self._fill is _NO_FILL:
            for item in c.items():
                return item
        return None

    @property
    def head_device(self) -> Device | None:
        """The array's device: of the latest write, or where a lazy fill was placed
        (``None`` for an array never written nor placed; a view's is its root's)."""
        f = self._fill
        return f.base._head if f.__class__ is View else self._head

    def place_on(self, dev: Device) -> None:
        """Make ``dev`` the array's device without moving anything: a lazy fill made by
        a creation function (nothing allocated), an unpickled array whose device is
        missing (its data stays on the host)."""
        self._head = dev

    @property
    def current_devices(self) -> list[Device]:
        """Devices whose copies are current."""
        f = self._fill
        return list(f.base._copies if f.__class__ is View else self._copies)

    # -- reading and writing -------------------------------------------------------
    def _read(self, dev: Device, explicit: bool = False) -> Any:
        """The current native copy on ``dev`` (hot path: one dict lookup on a hit)."""
        x = self._copies.get(dev)
        if x is not None:
            return x
        return self._sync(dev, explicit)

    def _access(self, mode: str, dev: Device, explicit: bool = False) -> Any:
        """The native copy on ``dev`` for ``mode`` in ``'r'``, ``'w'``, ``'rw'``."""
        with _views.root_lock(self):
            return self._access_locked(mode, dev, explicit)

    def _access_locked(self, mode: str, dev: Device, explicit: bool) -> Any:
        if self._fill.__class__ is View and mode != "r":
            return _views.access(self, dev, mode, explicit)
        if mode == "r":
            return self._read(dev, explicit)
        if mode == "w":
            x = self._copies.get(dev)
            if x is None:
                x = self._take_buffer(dev)
                if self._fill is not _NO_FILL:
                    x = self._materialize(dev, x)
        elif mode == "rw":
            x = self._read(dev, explicit)
        else:
            raise ValueError(f"get_data: mode must be 'r', 'w' or 'rw', got {mode!r}")
        self._become_head(dev, x)
        return x

    def _become_head(self, dev: Device, x: Any) -> None:
        if _handles and not dev.is_host and _host_handles.live(self):
            _host_handles.revoke(self)
        copies = self._copies
        if len(copies) > 1 or dev not in copies:
            stale = self._stale
            if stale is None:
                stale = self._stale = {}
            for d, y in copies.items():
                if d is not dev:
                    stale[d] = y
            stale.pop(dev, None)
            self._copies = {dev: x}
        self._head = dev
        self._fill = _NO_FILL
        self._version += 1

    def _set_fill(self, value: Any) -> None:
        """Lazy fill: no allocation, no transfer; every copy becomes stale. The array
        keeps its device (``_head``): a fill is a write where the array is (a view
        writes the value into its root's storage)."""
        if self._fill.__class__ is View:
            _views.fill(self, value)
            return
        if _handles and _host_handles.live(self):
            _host_handles.revoke(self)
        if self._copies:
            stale = self._stale if self._stale is not None else {}
            stale.update(self._copies)
            self._stale = stale
            self._copies = {}
        self._fill = value
        self._version += 1

    # -- synchronization -----------------------------------------------------------
    def _take_buffer(self, dev: Device) -> Any:
        stale = self._stale
        if stale:
            x = stale.pop(dev, None)
            if x is not None:
                return x
        return dev.empty(self._shape, self._dtype)

    def _materialize(self, dev: Device, buf: Any = None) -> Any:
        if buf is None:
            return dev.full(self._shape, self._dtype, self._fill)
        if dev.is_host:
            buf[...] = self._fill
            return buf
        return dev.full(self._shape, self._dtype, self._fill)

    def _sync(self, dev: Device, explicit: bool) -> Any:
        with _views.root_lock(self):  # never between another thread's copy-in and -out
            return self._sync_locked(dev, explicit)

    def _sync_locked(self, dev: Device, explicit: bool) -> Any:
        copies = self._copies
        if self._fill is not _NO_FILL or not copies:
            if self._fill.__class__ is View:
                return _views.read(self, dev, explicit)
            # Lazily filled (or never written: reads as zeros): materialize here, no transfer.
            if self._fill is _NO_FILL:
                self._fill = 0
            x = self._materialize(dev, self._stale.pop(dev, None) if self._stale else None)
            # setdefault: threads materializing at once (handles of views of one lazy
            # fill) all get the first copy, so no thread writes into a dropped buffer
            return copies.setdefault(dev, x)
        src, sx = self._pick_source(dev)
        nbytes = self.nbytes
        out = self._stale.pop(dev, None) if self._stale else None
        if src.is_host or dev.is_host:
            transfers.check_allowed(src.key, dev.key, self._shape, explicit)
            x = dev.from_host(sx, out) if src.is_host else src.to_host(sx, out)
            transfers.record(src.key, dev.key, nbytes)
        else:
            transfers.check_allowed(src.key, dev.key, self._shape, explicit)
            if dev.can_copy_from(src):
                x = dev.copy_from(src, sx, out)
                transfers.record(src.key, dev.key, nbytes)
            else:
                x = self._via_host(src, sx, dev, out)
        if _handles and src.is_host and _host_handles.live(self):
            if self._stale is None:  # the host may be written again: re-sync next time
                self._stale = {}
            self._stale[dev] = x
            return x
        copies[dev] = x
        return x

    def _pick_source(self, dev: Device) -> tuple[Device, Any]:
        copies = self._copies
        if dev.is_host:
            h = self._head
            return (h, copies[h]) if h in copies else next(iter(copies.items()))
        for d, x in copies.items():
            if d.is_host or dev.can_copy_from(d):
                return d, x
        h = self._head
        return (h, copies[h]) if h in copies else next(iter(copies.items()))

    def _via_host(self, src: Device, sx: Any, dev: Device, out: Any) -> Any:
        """No direct route: src -> host -> dev, counted as two transfers; the host copy
        it leaves behind is current too."""
        from .backends import host_device
        host = host_device()
        hout = self._stale.pop(host, None) if self._stale else None
        h = src.to_host(sx, hout)
        transfers.record(src.key, host.key, self.nbytes)
        self._copies[host] = h
        x = dev.from_host(h, out)
        transfers.record(host.key, dev.key, self.nbytes)
        return x

    # -- metadata --------------------------------------------------------------------
    @property
    def nbytes(self) -> int:
        n = self._dtype.itemsize
        for s in self._shape:
            n *= s
        return n

    @property
    def head(self) -> str | None:
        """The context string of the array's device (``head_device``), or ``None``."""
        h = self.head_device
        return None if h is None else h.key

    @property
    def devices(self) -> list[str]:
        """Context strings whose copies are current."""
        return [d.key for d in self.current_devices]

