"""Run every CUDA kernel on the device of its data (or of the context, for kernels
with no array input such as ``rand``), whatever CuPy's current device is.

With a single GPU the current device can only be that GPU, so kernels are registered
unwrapped and the hot path pays nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ... import context as _context
from ... import registry

BACKEND = "cuda"


@functools.lru_cache(maxsize=1)
def _multi_gpu() -> bool:
    import cupy
    return cupy.cuda.runtime.getDeviceCount() > 1


def _device_id(args: tuple, kwargs: dict) -> int:
    import cupy
    for a in args:
        if isinstance(a, cupy.ndarray):
            return a.data.device_id
    out = kwargs.get("out")
    if out is not None:
        return out.data.device_id
    ctx = _context.get_current_context()
    return ctx.device_id if ctx.backend == BACKEND else 0


def scoped(fn: Callable) -> Callable:
    """``fn`` run inside ``cupy.cuda.Device(<its device>)`` (``fn`` itself on one GPU)."""
    if not _multi_gpu():
        return fn
    import cupy
    Device = cupy.cuda.Device

    @functools.wraps(fn)
    def k(*args: Any, **kwargs: Any) -> Any:
        with Device(_device_id(args, kwargs)):
            return fn(*args, **kwargs)
    return k


def register(op: str) -> Callable[[Callable], Callable]:
    """``register_kernel(op, "cuda")`` for a device-scoped ``fn``."""
    def deco(fn: Callable) -> Callable:
        registry.register_kernel(op, BACKEND)(scoped(fn))
        return fn
    return deco


def registered() -> dict[str, Callable]:
    """The kernels registered for CUDA so far."""
    return registry.backend_kernels(BACKEND)


def scope_all(kernels: dict[str, Callable]) -> None:
    """Re-register ``kernels`` (op -> fn) device-scoped."""
    if _multi_gpu():
        for op, fn in kernels.items():
            register(op)(fn)
