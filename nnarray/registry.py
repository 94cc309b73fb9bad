"""The op registry: kernels per (op, backend), dispatch with fallback, fallback stats.

``dispatch(op, ctx)`` is the one dispatch function (eager calls, recording, schedules):
the op's memo of its previous dispatch, else ``lookup(name, ctx)``, two dict lookups on a
hit, returning the ``Kernel`` that runs the op under ``ctx``. The slow path builds it once
per (context, op); the cache is cleared (and its Kernels marked invalid) when kernels
change.
"""

from __future__ import annotations

from collections.abc import Callable

from . import discovery as backends
from . import late
from .context import Context
from .errors import BackendUnavailableError, KernelNotFoundError
from .kernel import Kernel, fallback_counts

_kernels: dict[str, dict[str, Callable]] = {}
_composites: dict[str, Callable] = {}
#: ``{context: {op: Kernel}}``: what ``lookup`` resolved so far.
cache: dict[Context, dict[str, Kernel]] = {}


def register_kernel(op: str, backend: str) -> Callable[[Callable], Callable]:
    """Decorator: ``fn`` implements ``op`` on ``backend`` (native arrays in and out)."""
    def deco(fn: Callable) -> Callable:
        _kernels.setdefault(op, {})[backend] = fn
        invalidate()
        return fn
    return deco


def invalidate() -> None:
    """Forget every resolved Kernel (kernels changed): those still held somewhere are
    marked invalid so that their holders resolve again."""
    for t in cache.values():
        for k in t.values():
            k.valid = False
    cache.clear()


def register_composite(op: str, fn: Callable) -> None:
    """A backend-independent implementation of ``op`` written with ``F`` on NdArrays,
    used where the context's backend registers no kernel for ``op``."""
    _composites[op] = fn
    invalidate()


def composite(op: str) -> Callable | None:
    """The backend-independent implementation of ``op``, if one is registered."""
    return _composites.get(op)


def ops() -> list[str]:
    """Every op name with a kernel or a composite implementation."""
    backends.load_all()
    return sorted(set(_kernels) | set(_composites))


def kernels(op: str) -> list[str]:
    """Backends that register a kernel for ``op``."""
    backends.load_all()
    return sorted(_kernels.get(op, {}), key=lambda n: (n != "numpy", n))


def backend_kernels(backend: str) -> dict[str, Callable]:
    """``{op: kernel}`` registered so far for ``backend`` (without loading anything)."""
    return {op: impls[backend] for op, impls in _kernels.items() if backend in impls}


def fallback_stats() -> dict[tuple[str, str, str], int]:
    """``{(op, from_backend, to_backend): count}`` of dispatches that fell back."""
    return dict(fallback_counts)


def reset_fallback_stats() -> None:
    fallback_counts.clear()


class Entry:
    """What ``dispatch`` needs of an op: its ``name`` and ``last``, the memo of its previous
    dispatch. Every ``ops.Op`` is one; kernels run without an Op (in-place writes:
    ``setitem``, ``scatter`` here, ``sgd_update`` in ``ops.update``) have an Entry."""

    __slots__ = ("name", "last")

    def __init__(self, name: str) -> None:
        self.name = name
        #: ``[(context, Kernel)]`` of the previous dispatch: one tuple, replaced whole, so
        #: threads with different contexts never see a mixed pair (check ``Kernel.valid``)
        self.last: list = [(None, None)]


#: ``x[key] = v``'s kernels (``NdArray.__setitem__``): basic indices, and a scatter.
SETITEM, SCATTER = Entry("setitem"), Entry("scatter")


def dispatch(op: Entry, ctx: Context) -> Kernel:
    """The one dispatch function: the ``Kernel`` running ``op`` (an ``Op`` or ``Entry``)
    under ``ctx``.
    Eager calls (``Op.kernel``), recording and the schedules all ask it. One cache: the
    op's memo of its previous dispatch (``op.last``, one ``(context, Kernel)`` tuple,
    replaced whole), else ``lookup``'s
    table, filled once per (context, op)."""
    p = op.last[0]
    if p[0] is ctx and p[1].valid:
        return p[1]
    k = lookup(op.name, ctx)
    op.last[0] = (ctx, k)
    return k


def lookup(op: str, ctx: Context) -> Kernel:
    """The ``Kernel`` that runs ``op`` under ``ctx`` (``KernelNotFoundError`` if none)."""
    t = cache.get(ctx)
    if t is not None:
        k = t.get(op)
        if k is not None:
            return k
    k = _resolve(op, ctx)
    cache.setdefault(ctx, {})[op] = k
    return k


def _resolve(op: str, ctx: Context) -> Kernel:
    dev = backends.get_device(ctx.backend, ctx.device_id)
    backends.ensure_loaded(ctx.backend)
    fn = _kernels.get(op, {}).get(ctx.backend)
    if fn is not None:
        return Kernel(op, fn, dev)
    comp = _composites.get(op)
    if comp is not None:
        return Kernel(op, comp, dev, composite=True)
    tried = [ctx.backend]
    for name in ctx.fallback:
        if name in tried:
            continue
        tried.append(name)
        try:
            fdev = backends.get_device(name, 0)
        except BackendUnavailableError:
            continue
        backends.ensure_loaded(name)
        fn = _kernels.get(op, {}).get(name)
        if fn is not None:
            return Kernel(op, fn, fdev, fallback=(op, ctx.backend, name))
    have = sorted(_kernels.get(op, {}))
    raise KernelNotFoundError(
        f"no kernel for op {op!r}: tried {tried} (context {ctx.key}, fallback "
        f"{list(ctx.fallback) or 'off'}); backends with a kernel: {have or 'none'}")

late.provide(__name__)  # bind the lower layers' slots (nnarray.late)
