"""A caching host allocator.

Fresh multi-megabyte numpy arrays come from mmap and page-fault on first touch, which
halves elementwise throughput (DESIGN.md: 26 ms vs 13.5 ms for the seed workload). The
pool keeps large buffers and hands one out again once nothing but the pool refers to it:
a buffer is free exactly when its reference count says only the pool holds it, so a
numpy view a user still keeps can never be recycled under them.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

_getrefcount = sys.getrefcount


class HostPool:
    """Large-buffer cache keyed by size; small arrays go straight to ``np.empty``."""

    def __init__(self, min_bytes: int = 1 << 20, max_cached: int = 4 << 30) -> None:
        self.min_bytes = min_bytes
        self.max_cached = max_cached
        self._bufs: dict[int, list[np.ndarray]] = {}
        self._total = 0
        self._lock = threading.Lock()

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
                self._trim(key)
                buf = np.empty(key, np.uint8)
                lst.append(buf)
                self._total += key
        return buf[:n].view(dtype).reshape(shape)

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
            self._trim(self.max_cached + 1)

    @property
    def cached_bytes(self) -> int:
        return self._total
