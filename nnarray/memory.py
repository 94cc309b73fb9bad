"""Memory pools: a byte bound on what they cache, ``empty_cache``, and the error an
allocation raises when it fails even after the pools gave their cached blocks back.

Each device's pool keeps freed blocks for reuse, at most ``cache_limit()`` bytes of them
(``NNARRAY_POOL_CACHE_BYTES``, default 1 GiB): beyond that the cached blocks are
released. A failed allocation releases every pool's cached blocks and retries once;
if that fails too it raises ``OutOfMemoryError`` naming the shape, the dtype and the
bytes; the Kernel running an op puts the op's name in front (``Kernel.run``). An array
library's own ``MemoryError`` from inside a kernel (CuPy's ``OutOfMemoryError`` for a
temporary or a result it allocates itself) gets the same release, retry and error, with
the op's output as the shape (``retry_kernel``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import OutOfMemoryError


def cache_limit() -> int:
    """Bytes of freed blocks a pool keeps (``NNARRAY_POOL_CACHE_BYTES``, default 1 GiB)."""
    v = os.environ.get("NNARRAY_POOL_CACHE_BYTES", "")
    try:
        return max(int(v), 0) if v else 1 << 30
    except ValueError:
        return 1 << 30


def empty_cache(ctx: Any = None) -> None:
    """Release the cached (free) blocks of ``ctx``'s device's memory pool, or of every
    device's pool when ``ctx`` is ``None``. Arrays in use keep their memory."""
    from . import discovery as backends
    if ctx is None:
        for dev in list(backends._devices.values()):
            dev.empty_cache()
        return
    from .context import as_context
    c = as_context(ctx)
    backends.get_device(c.backend, c.device_id).empty_cache()


def memory_stats(ctx: Any = None) -> dict:
    """``{"in_use": bytes, "peak": bytes}`` of ``ctx``'s device (``None``: the current
    context's), like ``torch.cuda.memory_stats``. Counted at the devices' pools, cheaply:
    the host counts its pooled arrays (1 MiB or more; smaller ones come straight from
    numpy), OpenCL every buffer of its pool, CUDA CuPy's pool. The peak is the most in
    use since the last ``reset_peak_memory``."""
    return _device_of(ctx).memory_stats()


def reset_peak_memory(ctx: Any = None) -> None:
    """Start ``ctx``'s device's (``None``: the current context's) peak again from the
    bytes in use now."""
    _device_of(ctx).reset_peak_memory()


def _device_of(ctx: Any) -> Any:
    from . import discovery as backends
    from .context import as_context, get_current_context
    c = get_current_context() if ctx is None else as_context(ctx)
    return backends.get_device(c.backend, c.device_id)


def release_all() -> None:
    """After a failed allocation: every instantiated device gives its cache back (an
    OpenCL CPU device's memory is the host's)."""
    from . import discovery as backends
    for dev in list(backends._devices.values()):
        try:
            dev.empty_cache()
        except Exception:  # a failing device must not hide the allocation error
            pass


def address_space_left() -> float:
    """Bytes the process may still map under its address-space limit (``RLIMIT_AS``,
    ``ulimit -v``): ``inf`` without a limit or where it cannot be read."""
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft == resource.RLIM_INFINITY:
            return math.inf
        with open("/proc/self/statm", "rb") as f:
            mapped = int(f.read().split(None, 1)[0]) * resource.getpagesize()
    except (ImportError, OSError, ValueError):
        return math.inf
    return soft - mapped + _malloc_free()


_mallinfo2: list = []  # glibc's ``mallinfo2`` (None where there is none), looked up once


def _malloc_free() -> int:
    """Bytes that glibc's malloc keeps mapped but free (reused by later allocations, so
    not lost to the limit); 0 without glibc 2.33+."""
    if not _mallinfo2:
        import ctypes

        class Info(ctypes.Structure):
            _fields_ = [(n, ctypes.c_size_t) for n in (
                "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                "uordblks", "fordblks", "keepcost")]
        try:
            fn = ctypes.CDLL(None).mallinfo2
            fn.restype = Info
        except (AttributeError, OSError):
            fn = None
        _mallinfo2.append(fn)
    fn = _mallinfo2[0]
    return 0 if fn is None else int(fn().fordblks)


def out_of_memory(device: str, shape: tuple[int, ...], dtype: Any, nbytes: int,
                  cause: BaseException | str) -> OutOfMemoryError:
    """The error for an allocation that failed (after the release and retry)."""
    why = cause if isinstance(cause, str) else f"{type(cause).__name__}: {cause}"
    return OutOfMemoryError(
        f"out of memory on {device}: an array of shape {tuple(shape)} "
        f"{np.dtype(dtype)} needs {nbytes} bytes ({nbytes / 2**30:.3g} GiB) ({why})")


def naming(op: str, e: OutOfMemoryError) -> OutOfMemoryError:
    """``e`` with ``op`` in front of its message (once)."""
    msg = str(e)
    return e if msg.startswith(f"{op}: ") else OutOfMemoryError(f"{op}: {msg}")


def retry_kernel(op: str, device: str, meta: tuple, cause: MemoryError,
                 again: Callable[[], Any]) -> Any:
    """After ``cause``, a ``MemoryError`` the array library raised inside ``op``'s kernel:
    every pool gives its cache back and ``again()`` runs once more; if it fails too,
    ``OutOfMemoryError`` naming ``op`` and its output ``meta`` ``(shape, dtype)``."""
    release_all()
    try:
        return again()
    except OutOfMemoryError as e:
        raise naming(op, e) from e
    except MemoryError as e:
        shape, dtype = meta
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        raise naming(op, out_of_memory(device, shape, dtype, nbytes, e)) from cause
