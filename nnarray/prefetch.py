"""Uploading a batch one step ahead: ``Prefetcher`` gathers a batch's rows and starts
their upload to a device through the backend's ``prefetch.Uploader`` (OpenCL: a second
queue; CUDA: a side stream with pinned buffers), or blocking uploads where a backend has
none, and hands the batch over as NdArrays ordered before later work there."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from . import dtypes, transfers
from .context import context_of, context_scope, get_current_context
from .device import Device
from .discovery import host_device
from .ndarray import NdArray
from .nn.parameter import place


class Prefetcher:
    """Starts a batch's upload to ``dev`` (``start``) and hands it over (``finish``),
    through the backend's ``prefetch.Uploader`` where it has one (OpenCL, CUDA), else
    blocking uploads (``BlockingUploader``). Each upload is an explicit, counted
    transfer; NdArray inputs are gathered where they live and placed on ``dev``."""

    def __init__(self, dev: Device, pin_memory: bool) -> None:
        self.dev = dev
        self.up = None if dev.is_host else _uploader(dev, pin_memory)

    def start(self, arrays: tuple, idx: Any) -> list:
        """Batch ``idx`` of ``arrays`` on its way: NdArrays gathered, host rows gathered
        into the uploader's buffers and their uploads enqueued (``Staged``)."""
        out: list = []
        for a in arrays:
            if isinstance(a, NdArray):
                out.append(_gathered(a, idx))
                continue
            rows = a[idx]
            dt = dtypes.normalize(rows.dtype, "DataLoader", "arrays")
            if self.up is None:
                out.append(NdArray.from_numpy_array(np.ascontiguousarray(rows, dt)))
                continue
            host = self.up.stage(rows.shape, dt)
            host[...] = rows
            out.append(Staged(host))
        staged = [s for s in out if type(s) is Staged]
        if staged:
            natives = self.up.start([s.host for s in staged])
            src = host_device().key
            for s, x in zip(staged, natives):
                s.native = x
                transfers.record(src, self.dev.key, s.host.nbytes)
        return out

    def finish(self, pending: list) -> tuple[NdArray, ...]:
        """The batch as NdArrays on ``dev``, its uploads ordered before any later work
        there."""
        staged = [s for s in pending if type(s) is Staged]
        if staged:
            self.up.finish([s.native for s in staged])
        return tuple(s.array(self.dev) if type(s) is Staged else place(s, self.dev.key)
                     for s in pending)

    def close(self) -> None:
        """Wait for the uploads still in flight and free the uploader's buffers."""
        if self.up is not None:
            self.up.close()


class Staged:
    """One host array of a batch (``host``) and its upload's native array."""

    __slots__ = ("host", "native")

    def __init__(self, host: np.ndarray) -> None:
        self.host, self.native = host, None

    def array(self, dev: Device) -> NdArray:
        a = NdArray(self.host.shape, self.host.dtype)
        a.adopt(dev, self.native)
        return a


class BlockingUploader:
    """A backend without its own ``prefetch`` module: each upload is done when
    ``start`` returns (the batches are still one ahead)."""

    def __init__(self, dev: Device, pin_memory: bool) -> None:
        self.dev = dev

    def stage(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return np.empty(shape, dtype)

    def start(self, hosts: list[np.ndarray]) -> list:
        return [self.dev.from_host(h) for h in hosts]

    def finish(self, natives: list) -> None:
        pass

    def close(self) -> None:
        pass


def _uploader(dev: Device, pin_memory: bool) -> Any:
    try:
        m = importlib.import_module(f"nnarray.backends.{dev.backend}.prefetch")
    except ImportError:
        return BlockingUploader(dev, pin_memory)
    return m.Uploader(dev, pin_memory)


def _gathered(a: NdArray, idx: Any) -> NdArray:
    """Rows ``idx`` of ``a`` as a new array, gathered on the device that holds it."""
    dev = a.head_device
    with context_scope(context_of(dev) if dev is not None else get_current_context()):
        return a[idx].copy()
