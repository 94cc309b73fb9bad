"""Transparent huge pages for big buffers of CPU devices.

numpy asks Linux for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on arrays of
4 MiB or more; pocl's buffers are plain ``malloc`` memory, so where the kernel's mode is
``madvise`` (the default of many distributions) they get 4 KiB pages, and a memory-bound
pass over them pays TLB misses that numpy's arrays do not (benchmarks/README.md). So a new
pool block of ``MIN_BYTES`` or more on a host-memory device is advised before its first
use: mapped (pocl allocates at first use; a CPU device maps its own memory, no copy),
its whole 2 MiB pages advised, and unmapped.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

import numpy as np

#: Blocks from this size are advised (numpy's threshold).
MIN_BYTES = 4 << 20
_PAGE = 1 << 21
_MADV_HUGEPAGE = 14  # Linux


def _madvise() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


_advise = _madvise()


def advise(queue: Any, buf: Any) -> None:
    """Ask for huge pages on the whole 2 MiB pages of ``buf`` (a new buffer of a CPU
    device, not used yet). Advice only: a refusal or a driver that maps a copy changes
    nothing but speed."""
    if _advise is None:
        return
    import pyopencl as cl
    try:
        m, _ = cl.enqueue_map_buffer(queue, buf, cl.map_flags.READ, 0, (buf.size,), np.uint8)
    except cl.Error:
        return
    try:
        addr = m.__array_interface__["data"][0]
        lo = -(-addr // _PAGE) * _PAGE
        hi = (addr + buf.size) // _PAGE * _PAGE
        if hi > lo:
            _advise(lo, hi - lo, _MADV_HUGEPAGE)
    finally:
        m.base.release(queue)
