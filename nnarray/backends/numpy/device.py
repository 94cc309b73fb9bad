"""The host device."""

from __future__ import annotations

import numpy as np

from ...device import Device
from .pool import HostPool

_as_strided = np.lib.stride_tricks.as_strided


class NumpyDevice(Device):
    backend = "numpy"
    is_host = True
    dlpack_types = (1, 3)  # kDLCPU, kDLCUDAHost (pinned host memory)

    def __init__(self, device_id: int = 0) -> None:
        super().__init__(device_id)
        self.pool = HostPool()
        self.empty = self.pool.empty  # type: ignore[method-assign]

    def full(self, shape, dtype, value):
        a = self.pool.empty(shape, dtype)
        a.fill(value)
        return a

    def from_host(self, a, out=None):
        if out is None:
            out = self.pool.empty(a.shape, a.dtype)
        np.copyto(out, a)
        return out

    to_host = from_host

    def strided(self, x, offset, shape, strides):
        """A numpy view of ``x``'s elements ``offset + i . strides``."""
        if strides == (1,):  # a contiguous run (``alias``): a slice, no index array
            return x.reshape(-1)[offset:offset + shape[0]]
        it = x.itemsize
        return _as_strided(x.reshape(-1)[offset:], shape, tuple(s * it for s in strides))

    def import_dlpack(self, obj):
        x = np.from_dlpack(obj)
        if not (x.flags.c_contiguous and x.flags.writeable):
            x = np.array(x, order="C", copy=True)
        return x

    def empty_cache(self) -> None:
        self.pool.clear()

    def memory_stats(self) -> dict[str, int]:
        return self.pool.memory_stats()

    def reset_peak_memory(self) -> None:
        self.pool.reset_peak()

    def describe(self) -> str:
        return f"numpy:0 (host CPU, numpy {np.__version__})"


#: The one numpy device (the backend's package and its kernels' modules share it).
DEVICE = NumpyDevice(0)
