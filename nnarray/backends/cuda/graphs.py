"""CUDA graphs through CuPy: a sequence of launches captured once and replayed with one
launch (issue 39 item 1, the device side; ``nnarray.grad.cuda_replay`` decides when).

``Captured(dev, fn)`` runs ``fn`` once on a capture stream (``Stream.begin_capture`` /
``end_capture``): nothing executes, every launch and copy ``fn`` makes on the current
stream is recorded into a graph over the buffers it touched. ``launch()`` replays it on
the current stream (``Graph.launch``). The graph reads and writes those buffers by
address, so they must stay alive and keep their addresses while it is used: new input
values are copied into them (``copy_in``), results read from them. ``fn`` must not
allocate from an empty pool, synchronize or read to the host (the capture fails with
CUDA's error); a run before capture leaves the pool warm. Only imported with CuPy present.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Captured:
    """The launches ``fn`` makes on ``dev`` (a ``CudaDevice``), captured as one graph."""

    def __init__(self, dev: Any, fn: Callable[[], Any]) -> None:
        cp = dev._cp
        self.dev, self.cp = dev, cp
        with dev.scope:
            self.stream = cp.cuda.Stream(non_blocking=True)
            # the capture stream sees the work queued before it (inputs being written)
            self.stream.wait_event(cp.cuda.get_current_stream().record())
            with self.stream:
                self.stream.begin_capture()
                try:
                    self.result = fn()
                finally:
                    self.graph = self.stream.end_capture()

    def launch(self) -> None:
        """Replay the captured launches on the current stream (one launch)."""
        with self.dev.scope:
            self.graph.launch(stream=self.cp.cuda.get_current_stream())

    def copy_in(self, dst: Any, src: Any) -> None:
        """Copy device array ``src`` into ``dst``, a buffer the graph reads, on the
        current stream (ordered before the next ``launch``); the same shape and dtype."""
        if dst.shape != src.shape or dst.dtype != src.dtype:
            from ...errors import ShapeError
            raise ShapeError(f"cuda graph copy_in: the captured buffer is {dst.shape} "
                             f"{dst.dtype}, the new value {src.shape} {src.dtype}: capture "
                             "again (the key changed)")
        if dst.data.ptr != src.data.ptr and src.nbytes:
            with self.dev.scope:
                dst.data.copy_from_device_async(src.data, src.nbytes,
                                                self.cp.cuda.get_current_stream())
