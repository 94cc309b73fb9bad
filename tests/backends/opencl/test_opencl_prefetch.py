"""``DataLoader(device="opencl")``'s uploads (``backends/opencl/prefetch.py``): a second
queue of the device's context, events ordering the copies after the work queued before
them and before the batch's first use. The loader's behaviour on every backend:
tests/nn/test_data.py."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import needs

import nnarray as nna


@pytest.fixture
def dev():
    needs("opencl")
    return nna.backends.get_device("opencl", 0)


def test_the_side_queue_is_a_second_queue_of_the_devices_context(dev):
    from nnarray.backends.opencl.prefetch import side_queue
    q = side_queue(dev)
    assert q is side_queue(dev)  # made once per device
    assert q is not dev.queue and q.context == dev.context and q.device == dev.cl_device


def test_a_batch_carries_its_copy_events_until_handed_over(dev):
    import pyopencl as cl

    from nnarray.backends.opencl.prefetch import Uploader
    up = Uploader(dev, pin_memory=False)
    hosts = [np.arange(12, dtype=np.float32).reshape(3, 4), np.zeros(0, np.int64),
             np.arange(5, dtype=np.int64)]
    outs = up.start(hosts)
    assert [len(o.events) for o in outs] == [1, 0, 1]  # no copy for an empty array
    events = [e for o in outs for e in o.events]
    assert len(up.inflight) == 2
    up.finish(outs)
    assert all(o.events == [] for o in outs)
    up.close()  # waits for every copy in flight
    assert up.inflight == []
    done = cl.command_execution_status.COMPLETE
    assert [e.command_execution_status for e in events] == [done, done]
    for o, h in zip(outs, hosts):
        np.testing.assert_array_equal(dev.to_host(o), h)


def test_no_second_queue_falls_back_to_the_devices_own(dev, monkeypatch):
    """Where the context gives no second queue, the device's queue carries the copies
    (in order with the step: no events needed)."""
    import pyopencl as cl

    from nnarray.backends.opencl import prefetch

    def refuse(*args, **kwargs):
        raise cl.Error("no second queue here")
    monkeypatch.setattr(prefetch, "_side", {})
    monkeypatch.setattr(cl, "CommandQueue", refuse)
    assert prefetch.side_queue(dev) is dev.queue
    up = prefetch.Uploader(dev, pin_memory=False)
    h = np.arange(6, dtype=np.float32)
    (o,) = up.start([h])
    up.finish([o])
    up.close()
    np.testing.assert_array_equal(dev.to_host(o), h)
