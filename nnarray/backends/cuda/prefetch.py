"""Batch uploads for ``data.DataLoader(device=...)`` on CUDA: a side stream copies the
next batch while the step's kernels run on the current stream, with an event per batch.

Before a batch's copies the side stream waits for an event recorded on the current
stream: CuPy's pool may hand the batch a block that a freed array's pending kernels
still use. When the batch is handed over, the current stream waits for the batch's
event, so no kernel reads it before it has arrived. With ``pin_memory`` the host rows
are gathered into page-locked buffers (CuPy's pinned pool), which makes the copy truly
asynchronous; such a buffer is kept until its batch's event has completed (the pinned
pool would otherwise hand it out again while the copy still reads it). Only imported
with CuPy present (``DataLoader`` finds it by the device's backend name).
"""

from __future__ import annotations

from typing import Any

import numpy as np


class Uploader:
    """Host batches to ``dev`` (a ``CudaDevice``) through a side stream."""

    def __init__(self, dev: Any, pin_memory: bool) -> None:
        import cupyx
        self.dev, self.cp, self.pin = dev, dev._cp, pin_memory
        self._pinned = cupyx.empty_pinned
        with dev.scope:
            self.stream = self.cp.cuda.Stream(non_blocking=True)
        #: ``(event, host buffers)`` of batches whose copies may still run.
        self.inflight: list[tuple[Any, list]] = []
        self.events: dict[int, Any] = {}  # id(native) -> its batch's event

    def stage(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """A host buffer for one array of a batch: pinned with ``pin_memory``."""
        if self.pin:
            try:
                return self._pinned(shape, dtype)
            except Exception:  # pinned memory exhausted: pageable still works
                pass
        return np.empty(shape, dtype)

    def start(self, hosts: list[np.ndarray]) -> list:
        """Enqueue the copies of ``hosts`` on the side stream; their device arrays."""
        cp, side = self.cp, self.stream
        with self.dev.scope:
            side.wait_event(cp.cuda.get_current_stream().record())
            with side:
                outs = [self.dev.empty(h.shape, h.dtype) for h in hosts]
                for o, h in zip(outs, hosts):
                    if h.size:
                        o.set(h, stream=side)
            event = side.record()
        self.inflight = [(e, b) for e, b in self.inflight if not e.done] + [(event, hosts)]
        for o in outs:
            self.events[id(o)] = event
        return outs

    def finish(self, natives: list) -> None:
        """Make the current stream wait for the batch of ``natives``."""
        events = {id(e): e for e in (self.events.pop(id(x), None) for x in natives) if e}
        with self.dev.scope:
            stream = self.cp.cuda.get_current_stream()
            for e in events.values():
                stream.wait_event(e)

    def close(self) -> None:
        """Wait for every copy still in flight; the host buffers are then free."""
        for e, _ in self.inflight:
            e.synchronize()
        self.inflight, self.events = [], {}
