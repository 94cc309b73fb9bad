"""Run every CUDA kernel inside ``cupy.cuda.Device(i)`` of the device it runs for,
whatever CuPy's current device is.

``CudaDevice.bind`` wraps each kernel when a ``Kernel`` is resolved for that device
(``scoped``). ``Kernel.fast``, ``Kernel.callee`` and generated code also call the fast
paths a kernel offers directly (``fn.small``'s ufunc, ``fn.move``, what
``fn.specialize`` returns), so the wrapper carries scoped versions of each; a kernel
attribute not named in ``FAST_PATHS`` is refused, so a new fast path cannot slip past
the scope. With a single GPU the current device can only be that GPU, so kernels run
unwrapped and the hot path pays nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ... import registry

BACKEND = "cuda"

#: Kernel attributes that the dispatch layer calls instead of the kernel itself.
FAST_PATHS = ("small", "move", "specialize")
#: Kernel attributes copied as they are: they run nothing on the device (``source``: the
#: generated code of a fused program).
PURE = ("source",)


def scoped(fn: Callable, enter: Callable[[], AbstractContextManager]) -> Callable:
    """``fn`` run inside ``enter()`` (a fresh ``cupy.cuda.Device(i)`` per call: the
    context manager keeps a stack, so one instance is not shared between threads), with
    every fast path in ``FAST_PATHS`` scoped the same way."""
    def k(*args: Any, **kwargs: Any) -> Any:
        with enter():
            return fn(*args, **kwargs)
    k.__name__ = getattr(fn, "__name__", "kernel")
    k.__qualname__ = getattr(fn, "__qualname__", k.__name__)
    k.__doc__ = fn.__doc__
    k.scoped_from = fn  # type: ignore[attr-defined]  # what is_scoped checks
    for name, value in getattr(fn, "__dict__", {}).items():
        if name.startswith("_") or name == "scoped_from":
            continue
        if name == "small":
            uf, limit = value
            k.small = (scoped(uf, enter), limit)  # type: ignore[attr-defined]
        elif name == "move":
            k.move = scoped(value, enter)  # type: ignore[attr-defined]
        elif name == "specialize":
            k.specialize = _scoped_specialize(value, enter)  # type: ignore[attr-defined]
        elif name in PURE:
            setattr(k, name, value)
        else:
            raise TypeError(f"CUDA scope: kernel {k.__qualname__} has attribute {name!r}, "
                            f"not one of {FAST_PATHS}: if the dispatch layer calls it, "
                            "scope it in nnarray/backends/cuda/scope.py")
    return k


def _scoped_specialize(spec: Callable, enter: Callable) -> Callable:
    def specialize(in_metas: Any, attrs: Any) -> Any:
        got = spec(in_metas, attrs)
        return None if got is None else scoped(got, enter)
    return specialize


def is_scoped(fn: Any) -> bool:
    """Whether ``fn`` came from ``scoped`` (the inspection tests' check)."""
    return callable(fn) and getattr(fn, "scoped_from", None) is not None


def register(op: str) -> Callable[[Callable], Callable]:
    """``register_kernel(op, "cuda")`` (scoping happens per device, in ``bind``)."""
    def deco(fn: Callable) -> Callable:
        registry.register_kernel(op, BACKEND)(fn)
        return fn
    return deco


def registered() -> dict[str, Callable]:
    """The kernels registered for CUDA so far."""
    return registry.backend_kernels(BACKEND)
