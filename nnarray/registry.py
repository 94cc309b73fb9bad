"""The op registry: kernels per (op, backend), dispatch with fallback, fallback stats.

``resolve(op, ctx)`` is on every F call's hot path: two dict lookups on a hit. The
slow path builds the entry once per (context, op) and is cleared when kernels change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import backends
from .context import Context
from .device import Device
from .errors import BackendUnavailableError, KernelNotFoundError

_kernels: dict[str, dict[str, Callable]] = {}
_composites: dict[str, Callable] = {}
_cache: dict[Context, dict[str, tuple]] = {}
_fallbacks: dict[tuple[str, str, str], int] = {}


def register_kernel(op: str, backend: str) -> Callable[[Callable], Callable]:
    """Decorator: ``fn`` implements ``op`` on ``backend`` (native arrays in and out)."""
    def deco(fn: Callable) -> Callable:
        _kernels.setdefault(op, {})[backend] = fn
        _cache.clear()
        return fn
    return deco


def register_composite(op: str, fn: Callable) -> None:
    """A backend-independent implementation of ``op`` written with ``F`` on NdArrays,
    used where the context's backend registers no kernel for ``op``."""
    _composites[op] = fn
    _cache.clear()


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
    return dict(_fallbacks)


def reset_fallback_stats() -> None:
    _fallbacks.clear()


def resolve(op: str, ctx: Context) -> tuple[Callable, Device, Any, bool]:
    """``(fn, device, fallback_key, composite)`` that runs ``op`` under ``ctx``."""
    t = _cache.get(ctx)
    if t is not None:
        e = t.get(op)
        if e is not None:
            if e[2] is not None:
                _fallbacks[e[2]] = _fallbacks.get(e[2], 0) + 1
            return e
    e = _resolve_slow(op, ctx)
    _cache.setdefault(ctx, {})[op] = e
    if e[2] is not None:
        _fallbacks[e[2]] = _fallbacks.get(e[2], 0) + 1
    return e


def _resolve_slow(op: str, ctx: Context) -> tuple:
    dev = backends.get_device(ctx.backend, ctx.device_id)
    backends.ensure_loaded(ctx.backend)
    fn = _kernels.get(op, {}).get(ctx.backend)
    if fn is not None:
        return (fn, dev, None, False)
    comp = _composites.get(op)
    if comp is not None:
        return (comp, dev, None, True)
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
            return (fn, fdev, (op, ctx.backend, name), False)
    have = sorted(_kernels.get(op, {}))
    raise KernelNotFoundError(
        f"no kernel for op {op!r}: tried {tried} (context {ctx.key}, fallback "
        f"{list(ctx.fallback) or 'off'}); backends with a kernel: {have or 'none'}")
