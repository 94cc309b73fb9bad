"""Batch uploads for ``data.DataLoader(device=...)``: a second command queue of the
device's context (the side queue) copies the next batch while the step's kernels run on
the device's own queue.

Two events order the queues. Before a batch's copies the side queue waits for a marker
of everything enqueued on the device queue so far: the memory pool may hand the batch
a buffer that a freed array's pending kernels still use. When the batch is handed over,
the device queue waits (a barrier) for the copies' events, so no kernel reads the batch
before it has arrived. All enqueues run from the loader's thread under the device's
lock (``device.py``'s module doc). Where the context gives no second queue, the device's
own queue is used: the copies are still non-blocking, in order with the step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Side queues by ``id()`` of their device's queue (one per device, made once).
_side: dict[int, Any] = {}


def side_queue(dev: Any) -> Any:
    """``dev``'s side queue (its own queue where a second one cannot be made)."""
    q = _side.get(id(dev.queue))
    if q is None:
        import pyopencl as cl
        try:
            q = cl.CommandQueue(dev.context, dev.cl_device)
        except cl.Error:
            q = dev.queue
        q = _side.setdefault(id(dev.queue), q)
    return q


class Uploader:
    """Host batches to ``dev`` through its side queue (``pin_memory`` changes nothing:
    OpenCL's host buffers are the runtime's own)."""

    def __init__(self, dev: Any, pin_memory: bool) -> None:
        import pyopencl as cl
        self.cl, self.dev, self.queue = cl, dev, side_queue(dev)
        #: The copies' events not yet waited for by ``close`` (their host arrays live
        #: in pyopencl's events until the copy is done).
        self.inflight: list[Any] = []

    def stage(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """A host buffer for one array of a batch."""
        return np.empty(shape, dtype)

    def start(self, hosts: list[np.ndarray]) -> list:
        """Enqueue the copies of ``hosts`` on the side queue; their device arrays."""
        cl, dev = self.cl, self.dev
        with dev.lock:
            outs = [dev.empty(h.shape, h.dtype) for h in hosts]
            ready = [cl.enqueue_marker(dev.queue)] if self.queue is not dev.queue else None
            events = [cl.enqueue_copy(self.queue, o.base_data, h, is_blocking=False,
                                      wait_for=ready) for o, h in zip(outs, hosts) if h.size]
        self.queue.flush()
        self.inflight = [e for e in self.inflight if not _done(cl, e)] + events
        for o, e in zip((o for o, h in zip(outs, hosts) if h.size), events):
            o.events = [e]
        return outs

    def finish(self, natives: list) -> None:
        """Make the device's queue wait for the copies of ``natives``."""
        events = [e for x in natives for e in x.events]
        for x in natives:
            x.events = []
        if events and self.queue is not self.dev.queue:
            with self.dev.lock:
                self.cl.enqueue_barrier(self.dev.queue, wait_for=events)

    def close(self) -> None:
        """Wait for every copy still in flight."""
        if self.inflight:
            self.cl.wait_for_events(self.inflight)
            self.inflight = []


def _done(cl: Any, e: Any) -> bool:
    return e.command_execution_status == cl.command_execution_status.COMPLETE
