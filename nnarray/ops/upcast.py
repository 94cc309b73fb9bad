"""The 16-bit upcast path: a backend's kernel that has no float16/bfloat16 code of its
own runs on float32 copies of its 16-bit inputs, and its floating results are rounded
back (to nearest even) into the dtype numpy's promotion gives the floating inputs.

Nothing is silent: every such call is counted per ``(op, backend, dtype)`` in
``stats()`` (``nna.upcast_stats()``), beside ``fallback_stats()``. A backend wraps its
kernels with ``wrap`` at registration (``backends/*/low.py``); kernels that load and store
16-bit values themselves (OpenCL's generated elementwise and reduction kernels, through
``cltypes``) need no wrapper and are not counted.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..dtypes import LOW, DTypeSet
from ..registry import backend_kernels, register_kernel

_F32 = np.dtype(np.float32)
#: ``{(op, backend, dtype name): calls}`` that ran through float32 copies.
counts: dict[tuple[str, str, str], int] = {}


def stats() -> dict[tuple[str, str, str], int]:
    """``{(op, backend, dtype): calls}`` of 16-bit calls computed in float32 copies."""
    return dict(counts)


def reset_stats() -> None:
    counts.clear()


def count(op: str, backend: str, dtype: np.dtype) -> None:
    """Count one call of ``op`` on ``backend`` computed in float32 for ``dtype``."""
    key = (op, backend, dtype.name)
    counts[key] = counts.get(key, 0) + 1


def wrap_kernels(backend: str, ops: Iterable[str], cast: Callable[[Any, np.dtype], Any],
                 low: DTypeSet = LOW) -> None:
    """Re-register ``backend``'s kernels of ``ops`` (those it has) so that calls with an
    input of a dtype in ``low`` run through float32 copies (``cast(native, dtype)`` makes
    a copy on the device). A kernel's ``specialize`` hook (generated code on fixed
    metas) is kept for metas with no ``low`` dtype."""
    have = backend_kernels(backend)
    for op in ops:
        fn = have.get(op)
        if fn is not None and not getattr(fn, "upcasts", False):
            register_kernel(op, backend)(_wrapped(fn, op, backend, cast, low))


def widened(op: str, backend: str, fn: Callable, cast: Callable, args: tuple,
            attrs: dict, low: DTypeSet = LOW) -> Any:
    """``fn(*args, **attrs)`` on float32 copies of the ``low`` arrays among ``args``, the
    float32 results rounded back (counted): for kernels that test their dtypes inline."""
    floats = [a.dtype for a in args if getattr(a, "dtype", None) is not None and
              (a.dtype.kind == "f" or a.dtype in low)]
    back = np.result_type(*floats)
    count(op, backend, next(d for d in floats if d in low))
    wide = tuple(cast(a, _F32) if getattr(a, "dtype", None) in low else a for a in args)
    return _round(fn(*wide, **attrs), back, cast)


def _wrapped(fn: Callable, op: str, backend: str, cast: Callable, low: DTypeSet) -> Callable:
    @functools.wraps(fn)  # its signature, which callers check attributes against
    def k(*args: Any, **attrs: Any) -> Any:
        for a in args:
            if getattr(a, "dtype", None) in low:
                return widened(op, backend, fn, cast, args, attrs, low)
        return fn(*args, **attrs)

    k.upcasts = True  # type: ignore[attr-defined]
    spec = getattr(fn, "specialize", None)
    if spec is not None:
        def specialize(in_metas: list, attrs: dict) -> Any:
            if any(m is not None and m[1] in low for m in in_metas):
                return None
            return spec(in_metas, attrs)
        k.specialize = specialize  # type: ignore[attr-defined]
    return k


def _round(out: Any, dtype: np.dtype, cast: Callable) -> Any:
    """``out`` (a native array or a tuple of them) with float32 arrays cast to ``dtype``."""
    if isinstance(out, tuple):
        return tuple(_round(o, dtype, cast) for o in out)
    if dtype != _F32 and getattr(out, "dtype", None) == _F32:
        return cast(out, dtype)
    return out
