"""A caching host allocator.

Fresh multi-megabyte numpy arrays come from mmap and page-fault on first touch, which
halves elementwise throughput (the seed workload; benchmarks/README.md). The
pool keeps large buffers and hands one out again once nothing but the pool refers to it:
a buffer is free exactly when its reference count says only the pool holds it, so a
numpy view a user still keeps can never be recycled under them.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

from ...memory import cache_limit, out_of_memory, release_all

_getrefcount = sys.getrefcount


class HostPool:
    """Large-buffer cache keyed by size; small arrays go straight to ``np.empty``.

    At most ``max_cached`` bytes (``memory.cache_limit()``, 1 GiB by default) are held
    beyond the buffers in use; an allocation that fails releases every pool's cache and
    retries once, then raises ``OutOfMemoryError``."""

    def __init__(self, min_bytes: int = 1 << 20, max_cached: int | None = None) -> None:
        self.min_bytes = min_bytes
        self.max_cached = cache_limit() if max_cached is None else max_cached
        self._bufs: dict[int, list[np.ndarray]] = {}
        self._total = 0
        self._lock = threading.RLock()  # a failed allocation clears this pool too
        self._peak = 0  # bytes of pool buffers in use, at most, since the last reset

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        n = dtype.itemsize
        for s in shape:
            n *= s
        if n < self.min_bytes:
            return np.empty(shape, dtype)
        key = (n + 4095) & ~4095
        with self._lock:
            lst = self._bufs.setdefault(key, [])
            buf = None
            for i in range(len(lst)):
                if _getrefcount(lst[i]) == 2:  # refs: the list and the call's argument
                    buf = lst[i]
                    break
            if buf is None:
                keep = key <= self.max_cached  # a bigger buffer is not cached at all
                if keep:
                    self._trim(key)
                buf = self._allocate(key, shape, dtype)
                if keep:
                    lst.append(buf)
                    self._total += key
            out = buf[:n].view(dtype).reshape(shape)
            used = self._in_use()
            if used > self._peak:
                self._peak = used
        return out

    def _in_use(self) -> int:
        """Bytes of the pool's buffers some array refers to (a scan of the cached buffers:
        a handful, on allocations of 1 MiB or more only)."""
        n = 0
        for k, lst in self._bufs.items():
            for i in range(len(lst)):
                if _getrefcount(lst[i]) > 2:  # refs: the list and the call's argument
                    n += k
        return n

    def memory_stats(self) -> dict[str, int]:
        """``{"in_use", "peak"}`` bytes of the pool's buffers (arrays of ``min_bytes``
        or more; smaller ones come straight from numpy and are not counted)."""
        with self._lock:
            used = self._in_use()
            self._peak = max(self._peak, used)
            return {"in_use": used, "peak": self._peak}

    def reset_peak(self) -> None:
        with self._lock:
            self._peak = self._in_use()

    def _allocate(self, key: int, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        try:
            return np.empty(key, np.uint8)
        except MemoryError:
            pass
        self._trim(self.max_cached + 1)  # every free buffer here, then the other pools
        release_all()
        try:
            return np.empty(key, np.uint8)
        except MemoryError as e:
            raise out_of_memory("numpy:0", shape, dtype, key, e) from None

    def _trim(self, need: int) -> None:
        """Drop free buffers while the cache would exceed ``max_cached``."""
        if self._total + need <= self.max_cached:
            return
        for key, lst in self._bufs.items():
            keep = [lst[i] for i in range(len(lst)) if _getrefcount(lst[i]) > 2]
            self._total -= key * (len(lst) - len(keep))
            lst[:] = keep

    def clear(self) -> None:
        """Forget every free buffer (buffers in use stay with their arrays)."""
        with self._lock:
            self._trim(1 << 62)

    @property
    def cached_bytes(self) -> int:
        """Bytes of every buffer the pool holds, in use or free."""
        return self._total

    @property
    def held_bytes(self) -> int:
        """Bytes of the free buffers (what ``clear`` releases)."""
        with self._lock:
            return sum(k for k, lst in self._bufs.items() for i in range(len(lst))
                       if _getrefcount(lst[i]) == 2)
