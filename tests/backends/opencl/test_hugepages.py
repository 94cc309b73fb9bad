"""Huge pages for big OpenCL buffers of CPU devices (``backends/opencl/hugepages.py``):
a new pool block of 4 MiB or more is advised ``MADV_HUGEPAGE`` (Linux shows ``hg`` in its
mapping's ``VmFlags``), small ones are not, and the values stay exact."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from conftest import needs

import nnarray as nna
from nnarray.backends.opencl import hugepages


@pytest.fixture(autouse=True)
def _opencl():
    needs("opencl")


def _address(dev, x) -> int:
    import pyopencl as cl
    with dev.lock:
        m, _ = cl.enqueue_map_buffer(dev.queue, x.base_data, cl.map_flags.READ, 0,
                                     (x.nbytes,), np.uint8)
        try:
            return m.__array_interface__["data"][0]
        finally:
            m.base.release(dev.queue)


def _vm_flags(addr: int) -> set[str]:
    """The ``VmFlags`` of the mapping of this process that holds ``addr``."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split(maxsplit=1)[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(v, 16) for v in head.split("-"))
                inside = lo <= addr < hi
            elif inside and head == "VmFlags:":
                return set(line.split()[1:])
    return set()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise is Linux's")
@pytest.mark.parametrize("nbytes, advised", [(8 << 20, True), (64 << 10, False)])
def test_big_buffers_advised(nbytes, advised, monkeypatch):
    dev = nna.backends.get_device("opencl", 0)
    if not dev.host_memory:
        pytest.skip(f"{dev.key} is not a CPU device")
    from nnarray.backends.opencl import device as cl_device
    calls = []
    real = cl_device.advise
    monkeypatch.setattr(cl_device, "advise",
                        lambda queue, buf: calls.append(buf.size) or real(queue, buf))
    dev.empty_cache()  # a new block, not one the pool held
    n = nbytes // 4
    host = np.arange(n, dtype=np.float32)
    with nna.context_scope("opencl:0"):
        x = nna.NdArray.from_numpy_array(host)
        y = x * 2.0
        np.testing.assert_array_equal(y.numpy(), host * 2)
    assert any(n >= nbytes for n in calls) == advised, calls
    addr = _address(dev, y.native(dev))
    if advised:  # Linux took the advice. (A small block's mapping may show "hg" all the
        # same: the allocator can place it inside heap memory a big block advised before.)
        flags = _vm_flags(addr + hugepages._PAGE)
        assert "hg" in flags, flags


def test_advise_without_madvise_is_harmless(monkeypatch):
    dev = nna.backends.get_device("opencl", 0)
    monkeypatch.setattr(hugepages, "_advise", None)
    with nna.context_scope("opencl:0"):
        x = nna.NdArray.from_numpy_array(np.ones(2 << 20, np.float32))
        np.testing.assert_array_equal((x + x).numpy(), np.full(2 << 20, 2, np.float32))
    assert dev.pool.active_bytes >= 8 << 20
