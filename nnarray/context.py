"""Contexts: which backend and device run the work, and where to fall back."""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Callable, Iterator, Sequence

from . import late
from .errors import BackendError, DeviceMismatchError

#: (backend, device_id, fallback) -> its one Context
_interned: dict[tuple, Context] = {}


class Context:
    """Where work runs: ``backend:device_id``, plus the ordered fallback backends.

    Immutable and interned: equal specs give one object (``Context("numpy") is
    Context("numpy")``), so the caches keyed on a context (dispatch, compiled graph
    programs) hit for a new but equal one, e.g. a ``context_scope`` entered per step.
    """

    __slots__ = ("backend", "device_id", "fallback", "key", "_hash")

    def __new__(cls, backend: str = "numpy", device_id: int = 0,
                fallback: Sequence[str] = ("numpy",)) -> Context:
        if not isinstance(backend, str) or not backend:
            raise BackendError(f"Context: backend must be a non-empty string, got {backend!r}")
        if isinstance(fallback, str):
            fallback = (fallback,)
        device_id = int(device_id)
        if device_id < 0:
            raise ValueError(f"Context: device_id must be >= 0, got {device_id}")
        spec = (backend, device_id, tuple(fallback))
        ctx = _interned.get(spec)
        if ctx is None:
            ctx = object.__new__(cls)
            set_ = object.__setattr__
            set_(ctx, "backend", backend)
            set_(ctx, "device_id", device_id)
            set_(ctx, "fallback", spec[2])
            set_(ctx, "key", f"{backend}:{device_id}")
            set_(ctx, "_hash", hash(spec))
            ctx = _interned.setdefault(spec, ctx)  # a racing thread's one wins for both
        return ctx

    def __reduce__(self) -> tuple:
        """Unpickling (and copying) gives the interned context of the same spec."""
        return Context, (self.backend, self.device_id, self.fallback)

    def __setattr__(self, name, value):
        raise AttributeError("Context is immutable")

    @classmethod
    def parse(cls, spec: str | Context, fallback: Sequence[str] | None = None) -> Context:
        """``"cuda:1"`` -> ``Context("cuda", 1)``; a Context is returned unchanged."""
        if isinstance(spec, Context):
            return spec
        if not isinstance(spec, str):
            raise BackendError(f"Context.parse: expected 'backend[:device_id]', got {spec!r}")
        name, _, dev = spec.strip().partition(":")
        try:
            device_id = int(dev) if dev else 0
        except ValueError:
            raise BackendError(f"Context.parse: bad device id in {spec!r}") from None
        if fallback is None:
            return cls(name, device_id)
        return cls(name, device_id, fallback)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Context) and self.backend == other.backend
                and self.device_id == other.device_id and self.fallback == other.fallback)

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"Context({self.backend!r}, {self.device_id}, fallback={self.fallback!r})"

    def __str__(self) -> str:
        return self.key


def as_context(ctx: Context | str | None) -> Context:
    """Normalize ``None`` (the current context), a string or a Context."""
    if ctx is None:
        return get_current_context()
    return ctx if type(ctx) is Context else Context.parse(ctx)


def _from_environment() -> Context:
    """``NNARRAY_CONTEXT`` (e.g. ``opencl:1``) as the process default, else numpy. Its
    backend is checked on first use, like any context."""
    spec = os.environ.get("NNARRAY_CONTEXT", "").strip()
    return Context.parse(spec) if spec else Context()


_default = _from_environment()


def _device_from_environment() -> Context | None:
    """``NNARRAY_DEFAULT_DEVICE`` (e.g. ``opencl``): where creation functions make arrays
    (``set_default_device``); checked on first use, like any context."""
    spec = os.environ.get("NNARRAY_DEFAULT_DEVICE", "").strip()
    return Context.parse(spec) if spec else None


#: ``set_default_device``/``NNARRAY_DEFAULT_DEVICE``: the standard's default device, where
#: *new* arrays are made (ops still follow their inputs); ``None``: the default context.
_default_device: Context | None = _device_from_environment()
_current: contextvars.ContextVar[Context] = contextvars.ContextVar("nnarray_context")
#: ``scope_var.get(None)``: the innermost ``context_scope``'s Context, else ``None``; what
#: ``dispatch_context`` answers first (the elementwise fast paths read it inline).
scope_var = _current

#: Whether the user chose a default context (``NNARRAY_CONTEXT``, ``set_default_context``).
_chosen = bool(os.environ.get("NNARRAY_CONTEXT", "").strip())
#: Whether an op outside every ``context_scope`` runs where its inputs are (API.md §7: the
#: device follows the data): on while no default was chosen and a device other than the
#: host exists (until then all data is on the host, and the hot path skips the check).
follow_data = False
_follow_ctx: dict = {}  # (device, base context) -> its Context with the base's fallback


def get_current_context() -> Context:
    """The context in force: the innermost ``context_scope``, else the process default."""
    return _current.get(_default)


def creation_context(device: Context | str | None = None) -> Context:
    """Where a creation function makes its array: ``device`` when given, else the
    innermost ``context_scope``, else the default device (``set_default_device``), else
    the default context."""
    if device is not None:
        return as_context(device)
    c = _current.get(None)
    if c is not None:
        return c
    return _default if _default_device is None else _default_device


def set_default_device(device: Context | str | None) -> None:
    """The array API standard's default device (``torch.set_default_device``): creation
    functions (``asarray``, ``zeros``, ``arange``, ...) make new arrays on ``device``
    (validated; ``None`` resets it), while every op runs where its inputs are (unlike
    ``set_default_context``, nnabla's rule, under which the context decides where ops
    run, which this leaves as it was)."""
    global _default_device
    if device is None:
        _default_device = None
        return
    ctx = as_context(device)
    _check(ctx)
    _default_device = ctx


def device_created(backend: str) -> None:
    """Called by ``backends.get_device`` for each new device: a device besides the host
    turns on the device-follows-data rule unless the user chose a default."""
    global follow_data
    if backend != "numpy" and not _chosen:
        follow_data = True


def follow(arrays: Sequence, op: str = "op") -> Context:
    """The context an op outside every scope runs under when ``follow_data`` is on: its
    inputs' device (API.md §7). An array's device is its ``_head``, where it was made or
    last written: reads (host copies, DLPack export, printing) never change it. Inputs
    that are lazily filled or 0-D (like scalars) only decide where no other input does,
    and a 0-D or lazy host array never pulls work back. A non-host device and the host
    together run on the non-host device (the host operand uploaded once, counted: a model
    moved to a device takes host batches); two different non-host devices raise
    ``DeviceMismatchError``."""
    dev = weak = host = None
    for x in arrays:
        h = getattr(x, "_head", None)
        if h is None:
            continue
        if x.shape == () or x.lazy_fill is not None:
            if weak is None and not h.is_host:
                weak = h
        elif h.is_host:
            host = x
        elif dev is None:
            dev = h
        elif h is not dev:
            _mismatch(op, arrays, dev, h)
    if dev is None:
        if weak is None or host is not None:
            return _default
        dev = weak
    return context_of(dev)


def context_of(dev, base: Context | None = None) -> Context:
    """The Context of device ``dev`` with ``base``'s fallback (default: the default
    context's), cached."""
    base = _default if base is None else base
    ctx = _follow_ctx.get((dev, base))
    if ctx is None:
        ctx = _follow_ctx[(dev, base)] = Context(dev.backend, dev.device_id, base.fallback)
    return ctx


def _mismatch(op: str, arrays: Sequence, a, b) -> None:
    shapes = [tuple(x.shape) for x in arrays if hasattr(x, "shape")]
    raise DeviceMismatchError(
        f"{op}: inputs are on two devices, {a.key} and {b.key} (input shapes {shapes}); "
        f"move one with x.to_device(...) or run the op inside context_scope(...)")


def dispatch_context(arrays: Sequence, op: str = "op") -> Context:
    """Where an op on ``arrays`` runs: the innermost ``context_scope``, else the data's
    device (``follow``), else the process default."""
    c = _current.get(None)
    if c is not None:
        return c
    return follow(arrays, op) if follow_data else _default


def dispatch_into(dst, arrays: Sequence, op: str = "op") -> Context:
    """Where an op writing into ``dst`` runs (in-place operators, ``assign``,
    ``x[key] = v``): the innermost ``context_scope``, else ``dst``'s device (a write
    never moves an array), else (``dst`` never written) as ``dispatch_context``."""
    c = _current.get(None)
    if c is not None:
        return c
    if not follow_data:
        return _default
    h = dst._head
    if h is None:
        return follow(arrays, op)
    return _default if h.is_host else context_of(h)


def _check(ctx: Context) -> None:
    from . import discovery as backends
    backends.get_device(ctx.backend, ctx.device_id)


def set_default_context(ctx: Context | str) -> None:
    """Set the process-wide default context (validated: the backend must be usable)."""
    global _default, _chosen, follow_data
    ctx = as_context(ctx)
    _check(ctx)
    _default = ctx
    _chosen, follow_data = True, False


@contextlib.contextmanager
def context_scope(ctx: Context | str) -> Iterator[Context]:
    """Make ``ctx`` current inside the block (thread-local, nests, restored on errors).

    An unknown backend raises ``BackendError``; a known but unusable one raises
    ``BackendUnavailableError``; either way the context stack is unchanged.
    """
    ctx = as_context(ctx)
    _check(ctx)
    token = _current.set(ctx)
    try:
        yield ctx
    finally:
        _current.reset(token)


#: ``id(context) -> its device's bound synchronize``, for ``device_synchronize`` (a
#: benchmark loop calls it per step: the import, the device lookup and the context's
#: Python ``__hash__`` were a visible part of a tiny add; contexts are interned, so ids
#: stay theirs)
_sync_fns: dict[int, Callable[[], None]] = {}


def device_synchronize(ctx: Context | str | None = None) -> None:
    """Wait for all queued work on the context's device."""
    ctx = _current.get(_default) if ctx is None else as_context(ctx)
    sync = _sync_fns.get(id(ctx))
    if sync is None:
        from . import discovery as backends
        sync = _sync_fns[id(ctx)] = backends.get_device(ctx.backend, ctx.device_id).synchronize
    sync()


late.provide(__name__)  # bind the lower layers' slots (nnarray.late)
