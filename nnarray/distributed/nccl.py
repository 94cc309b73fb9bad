"""CUDA arrays reduced on the device with NCCL (``cupy.cuda.nccl.NcclCommunicator``).

The NCCL communicator is made on first use, on every rank at once (its first CUDA bucket):
rank 0 draws the unique id and the host transport broadcasts it. Each rank's NCCL
communicator is bound to its GPU (``comm.ctx``); arrays on another GPU are refused. The
collectives run on CuPy's current stream, the one nnarray's CUDA kernels use, so they
are ordered after the kernels that produced the data with no synchronization.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DTypeError
from .errors import DistributedError


def _dtypes(nccl: Any) -> dict[np.dtype, int]:
    names = {"float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64",
             "int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
             "uint32": "NCCL_UINT32", "int64": "NCCL_INT64", "uint64": "NCCL_UINT64",
             "bool": "NCCL_UINT8"}  # bools travel as bytes (max = or, min = and)
    return {np.dtype(k): getattr(nccl, v) for k, v in names.items() if hasattr(nccl, v)}


class NcclTransport:
    """Device collectives for one rank's GPU."""

    def __init__(self, host: Any, device_id: int) -> None:
        from cupy.cuda import Device, nccl
        self._cupy_device = Device(device_id)
        self.device_id = device_id
        self.rank, self.size = host.rank, host.size
        uid = host.bcast_obj(nccl.get_unique_id() if host.rank == 0 else None, root=0)
        with self._cupy_device:
            self.comm = nccl.NcclCommunicator(host.size, uid, host.rank)
        self._types = _dtypes(nccl)
        self._ops = {"sum": nccl.NCCL_SUM, "max": nccl.NCCL_MAX, "min": nccl.NCCL_MIN}

    def _args(self, x: Any) -> tuple[int, int]:
        if x.data.device_id != self.device_id:
            raise DistributedError(
                f"NCCL: this rank's communicator is bound to cuda:{self.device_id}, the "
                f"array lives on cuda:{x.data.device_id}")
        t = self._types.get(np.dtype(x.dtype))
        if t is None:
            raise DTypeError(f"NCCL: no NCCL type for dtype {x.dtype}")
        return x.data.ptr, t

    @staticmethod
    def _stream() -> int:
        import cupy
        return cupy.cuda.get_current_stream().ptr

    def allreduce(self, x: Any, op: str, size: int | None = None) -> None:
        """``op`` in sum, mean, max, min; mean divides by ``size`` (default: the ranks of
        this communicator) on this GPU's stream, ordered after the reduction (outside the
        device scope it ran on GPU 0's)."""
        ptr, t = self._args(x)
        with self._cupy_device:
            self.comm.allReduce(ptr, ptr, x.size, t, self._ops["sum" if op == "mean" else op],
                                self._stream())
            if op == "mean":
                x *= x.dtype.type(1.0 / (size or self.size))

    def bcast(self, x: Any, root: int) -> None:
        ptr, t = self._args(x)
        with self._cupy_device:
            self.comm.bcast(ptr, x.size, t, root, self._stream())

    def allgather(self, send: Any, recv: Any) -> None:
        sptr, t = self._args(send)
        rptr, _ = self._args(recv)
        with self._cupy_device:
            self.comm.allGather(sptr, rptr, send.size, t, self._stream())
