"""Process-wide transfer accounting and the strict-transfer mode."""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator

from .errors import TransferError

_lock = threading.Lock()
_count = 0
_bytes = 0
_by_route: dict[tuple[str, str], tuple[int, int]] = {}
_strict: contextvars.ContextVar[bool] = contextvars.ContextVar("nnarray_strict", default=False)
#: ``strict_transfers(implicit_reads=True)``: float()/bool()/repr()/np.asarray() of an
#: array whose host copy is not current raise too (NdArray checks it).
strict_reads: contextvars.ContextVar[bool] = contextvars.ContextVar("nnarray_strict_reads",
                                                                    default=False)


def record(src: str, dst: str, nbytes: int) -> None:
    """Count one transfer of ``nbytes`` from device ``src`` to ``dst``."""
    global _count, _bytes
    with _lock:
        _count += 1
        _bytes += nbytes
        n, b = _by_route.get((src, dst), (0, 0))
        _by_route[(src, dst)] = (n + 1, b + nbytes)


def check_allowed(src: str, dst: str, shape: tuple, explicit: bool) -> None:
    """Raise ``TransferError`` for an implicit transfer inside ``strict_transfers()``."""
    if not explicit and _strict.get():
        raise TransferError(
            f"implicit transfer {src} -> {dst} of an array of shape {shape} inside "
            "strict_transfers(); read it explicitly with get_data(mode, ctx) or keep the "
            "work on one device")


def transfer_stats() -> dict:
    """``{"count": n, "bytes": n, "by_route": {(src, dst): (n, bytes)}}`` since the last reset."""
    with _lock:
        return {"count": _count, "bytes": _bytes, "by_route": dict(_by_route)}


def reset_transfer_stats() -> None:
    """Zero every transfer counter."""
    global _count, _bytes
    with _lock:
        _count = 0
        _bytes = 0
        _by_route.clear()


@contextlib.contextmanager
def strict_transfers(enabled: bool = True, implicit_reads: bool = False) -> Iterator[None]:
    """Inside the block an implicit device-to-device transfer raises ``TransferError``.

    With ``implicit_reads=True``, so do the hidden reads to the host that Python's
    protocols make: ``float()``, ``int()``, ``bool()`` (an ``if loss < x:``),
    ``format()``, ``round()``, ``repr()`` and ``np.asarray()`` of an array whose host copy
    is not current. Explicit reads
    (``item()``, ``numpy()``, ``get_data(mode, "numpy")``, ``.data``) stay allowed."""
    token = _strict.set(enabled)
    token_reads = strict_reads.set(enabled and implicit_reads)
    try:
        yield
    finally:
        strict_reads.reset(token_reads)
        _strict.reset(token)


def check_implicit_read(what: str, devices: list[str], shape: tuple, host: bool) -> None:
    """Raise ``TransferError`` for ``what`` (``"float()"``, ...) reading an array whose
    host copy is not current (``host`` False) inside ``strict_transfers(implicit_reads=
    True)``; callers test ``strict_reads.get()`` first."""
    if devices and not host:
        raise TransferError(
            f"{what} of an array of shape {shape} on {', '.join(devices)} reads it to the "
            "host implicitly inside strict_transfers(implicit_reads=True); read it "
            "explicitly with item(), numpy() or get_data('r', 'numpy')")
