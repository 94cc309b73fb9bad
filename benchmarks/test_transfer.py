"""Host -> device -> host round trip of 64 MB."""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna

from .conftest import Reference, expect, measure, small

GROUP = "transfer round trip host->device->host 64 MB"


def _host(benchmark) -> np.ndarray:
    mb = 1 if small(benchmark) else 64
    return np.random.default_rng(0).random(mb << 18, dtype=np.float32)  # mb MiB of float32


@pytest.mark.benchmark(group=GROUP)
def test_transfer_nnarray(benchmark, backend):
    if backend.name == "numpy":
        pytest.skip("the numpy backend is the host: nothing to transfer")
    want = _host(benchmark)
    a = nna.NdArray.from_numpy_array(want)
    ctx = nna.get_current_context()

    def round_trip():
        a.get_data("rw", "numpy")  # the host copy becomes the head: the device copy is stale
        a.get_data("rw", ctx)      # host -> device; the host copy is stale
        return a.get_data("r", "numpy")  # device -> host

    round_trip()
    nna.reset_transfer_stats()
    round_trip()
    stats = nna.transfer_stats()
    assert stats["count"] == 2 and stats["bytes"] == 2 * a.nbytes, stats
    measure(benchmark, backend, round_trip, transfers=2, check=expect(want, rtol=0, atol=0))


@pytest.mark.benchmark(group=GROUP)
def test_transfer_reference(benchmark, ref: Reference):
    """Each round trip lands in a fresh-filled ``out`` (not back in ``host``), so a copy
    that did nothing fails the check."""
    host = _host(benchmark)
    out = np.empty_like(host)
    if ref.name == "numpy":  # the baseline: two host memcpys of the same size
        dev = np.empty_like(host)

        def round_trip():
            np.copyto(dev, host)
            np.copyto(out, dev)
    elif ref.name == "cupy":
        dev = ref.xp.empty_like(host)

        def round_trip():
            dev.set(host)
            dev.get(out=out)
    elif ref.name == "torch-cuda":
        h, o = ref.xp.from_numpy(host), ref.xp.from_numpy(out)
        dev = ref.xp.empty_like(h, device="cuda")

        def round_trip():
            dev.copy_(h)
            o.copy_(dev)
    else:
        pytest.skip(f"{ref.name} has no device to transfer to")

    def run():
        out.fill(-1)
        round_trip()
        return out

    measure(benchmark, ref, run, baseline=ref.name == "numpy",
            check=expect(host, rtol=0, atol=0))


@pytest.mark.benchmark(group=GROUP)
def test_transfer_pyopencl(benchmark):
    """Raw pyopencl enqueue_copy both ways on the first OpenCL device: the floor for the
    opencl backend."""
    cl = pytest.importorskip("pyopencl", reason="pyopencl not installed")
    try:
        ctx = cl.Context([cl.get_platforms()[0].get_devices()[0]])
    except Exception as e:  # noqa: BLE001  (no platform, no device, ICD errors)
        pytest.skip(f"no OpenCL device: {e}")
    queue = cl.CommandQueue(ctx)
    host = _host(benchmark)
    out = np.full_like(host, -1)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, host.nbytes)
    ref = Reference("numpy")
    ref.sync = queue.finish

    def round_trip():
        cl.enqueue_copy(queue, buf, host)
        cl.enqueue_copy(queue, out, buf)
        return out

    measure(benchmark, ref, round_trip, label="pyopencl raw",
            check=expect(host, rtol=0, atol=0))
