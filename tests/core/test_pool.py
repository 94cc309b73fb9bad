"""The host caching allocator: reuse only when nothing else refers to a buffer."""

from __future__ import annotations

import numpy as np

import nnarray as nna
import nnarray.functions as F
from nnarray.backends.numpy.pool import HostPool


def test_small_arrays_bypass_the_pool():
    p = HostPool(min_bytes=1 << 20)
    a = p.empty((10,), np.float32)
    assert a.base is None and p.cached_bytes == 0


def test_buffer_reused_after_release_but_not_while_a_view_lives():
    p = HostPool(min_bytes=1024)
    a = p.empty((512, 512), np.float32)
    base = id(a.base)
    view = a[1:]
    del a
    b = p.empty((512, 512), np.float32)
    assert id(b.base) != base  # the user's view still holds the first buffer
    del view, b
    c = p.empty((512, 512), np.float32)
    assert id(c.base) == base


def test_cap_trims_free_buffers():
    p = HostPool(min_bytes=1024, max_cached=3 << 20)
    for _ in range(5):
        p.empty((1 << 20,), np.uint8)
    a = p.empty((2 << 20,), np.uint8)
    assert p.cached_bytes <= (3 << 20) + a.nbytes
    p.clear()
    assert p.cached_bytes == a.nbytes + (4096 - a.nbytes % 4096) % 4096


def test_large_results_recycle_across_iterations():
    """The seed workload's outputs come back to the pool instead of fresh mmaps."""
    x = nna.array(np.ones((512, 1024), np.float32))
    ids = set()
    for _ in range(4):
        y = F.mul(x, 2.0)
        ids.add(id(y.get_data("rw", "numpy").base))
        del y
    assert len(ids) == 1
