"""The small interface every device implements (after tinygrad's device classes).

Storage invariant: every native array a device holds for an NdArray is C-contiguous with
exactly the NdArray's shape and dtype, so kernels may reshape natively for free. Views
(``nnarray.views``) keep it: kernels get a C-contiguous alias of a view's elements or a
gathered copy, through ``alias``/``strided``/``gather``/``scatter`` below.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np


class Device:
    """One device of one backend. Subclasses override the allocation and copy methods."""

    backend: str = ""
    #: True for the host (numpy) device: the hub every other device copies through.
    is_host: bool = False
    #: DLPack device types (dlpack.h ``DLDeviceType``) this backend's buffers have and
    #: imports; empty where its buffers have no DLPack form.
    dlpack_types: tuple[int, ...] = ()
    #: The DLPack device type naming this device in ``__dlpack_device__`` where its
    #: buffers have no DLPack form (``None``: ``dlpack_types[0]``, else kDLCPU).
    dlpack_kind: int | None = None
    #: Its buffers are host memory (a CPU device): its elementwise kernels are bound by
    #: compute rather than memory (what a fused backward recomputes follows it).
    host_memory: bool = False

    def __init__(self, device_id: int = 0) -> None:
        self.device_id = device_id
        self.key = f"{self.backend}:{device_id}"

    def bind(self, fn: Callable) -> Callable:
        """Kernel ``fn`` of this backend as it must run here. ``Kernel`` calls only what
        this returns, its fast paths included; devices whose kernels follow their data
        (every one but a CUDA GPU among several) return ``fn`` itself."""
        return fn

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """An uninitialized C-contiguous native array."""
        raise NotImplementedError

    def full(self, shape: tuple[int, ...], dtype: np.dtype, value: Any) -> Any:
        """A native array filled with ``value`` (exact for every dtype)."""
        raise NotImplementedError

    def from_host(self, a: np.ndarray, out: Any = None) -> Any:
        """Copy a C-contiguous host array to this device (into ``out`` when given)."""
        raise NotImplementedError

    def to_host(self, x: Any, out: np.ndarray | None = None) -> np.ndarray:
        """Copy a native array of this device to the host (into ``out`` when given)."""
        raise NotImplementedError

    def can_copy_from(self, src: Device) -> bool:
        """Whether ``copy_from(src, ...)`` has a direct route (else the core goes through
        the host and counts two transfers)."""
        return False

    def copy_from(self, src: Device, x: Any, out: Any = None) -> Any:
        """Direct copy from ``src`` (only called where ``can_copy_from(src)``)."""
        raise NotImplementedError

    # -- views (``nnarray.views``): element offsets and strides into a C-contiguous ``x``
    def strided(self, x: Any, offset: int, shape: tuple[int, ...],
                strides: tuple[int, ...]) -> Any:
        """A native array aliasing the elements ``offset + i . strides`` of ``x`` (any
        sign), or ``None`` where the backend has no such arrays."""
        return None

    def reshaped(self, x: Any, shape: tuple[int, ...]) -> Any:
        """The C-contiguous native array ``x`` under ``shape`` (of its size), sharing its
        buffer (an in-place ``NdArray.shape`` assignment)."""
        return x.reshape(shape)

    def alias(self, x: Any, offset: int, shape: tuple[int, ...], write: bool) -> Any:
        """A C-contiguous native array of ``shape`` aliasing ``x`` from element
        ``offset``, that kernels may read (and write, for ``write``), or ``None``."""
        n = 1
        for s in shape:
            n *= s
        y = self.strided(x, offset, (n,), (1,))
        return None if y is None else y.reshape(shape)

    def gather(self, x: Any, offset: int, shape: tuple[int, ...],
               strides: tuple[int, ...]) -> Any:
        """A new C-contiguous native array with the elements of a strided region."""
        return self.strided(x, offset, shape, strides).copy()

    def scatter(self, x: Any, offset: int, shape: tuple[int, ...], strides: tuple[int, ...],
                src: Any) -> None:
        """Write ``src`` (a native array of ``shape``) into a strided region of ``x``."""
        if src.size:
            self.strided(x, offset, shape, strides)[...] = src

    def export_dlpack(self, x: Any, stream: Any = None,
                      max_version: tuple[int, int] | None = None) -> Any:
        """A DLPack capsule sharing the native array ``x`` (where ``dlpack_types``)."""
        kwargs = {} if stream is None else {"stream": stream}
        if max_version is not None:
            try:
                return x.__dlpack__(max_version=max_version, **kwargs)
            except TypeError:  # an older array library: unversioned capsule
                pass
        return x.__dlpack__(**kwargs)

    def import_dlpack(self, obj: Any) -> Any:
        """A C-contiguous native array of this device over the DLPack tensor ``obj``:
        shared where it is C-contiguous and writable, else a copy."""
        raise BufferError(f"{self.key}: this backend imports no DLPack tensors")

    def synchronize(self) -> None:
        """Wait for queued work on this device."""

    def memory_stats(self) -> dict[str, int]:
        """``{"in_use": bytes, "peak": bytes}`` of this device's arrays (0 where the
        backend does not count them)."""
        return {"in_use": 0, "peak": 0}

    def reset_peak_memory(self) -> None:
        """Start the peak again from the bytes in use now."""

    def empty_cache(self) -> None:
        """Release the memory pool's cached (free) blocks (``nna.empty_cache``)."""

    def describe(self) -> str:
        """One line naming the hardware."""
        return self.key

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.key}>"


#: Held while a backend makes a device or probes its platform (``made_once``); re-entrant:
#: making an OpenCL device probes the platform first.
_making = threading.RLock()


def made_once(cache: dict, key: Any, make: Callable[[], Any]) -> Any:
    """``cache[key]``, made by ``make()`` on a miss once across threads (the hit is one
    lookup). Threads that touch a device first at the same time must get one object: each
    made its own ``OpenCLDevice`` of ``opencl:1`` (its own queue, lock and pool on the one
    context), one thread's ops ran on several of them, and a copy between two raced the
    reuse of a freed temporary's buffer: wrong results on pocl's pthread driver."""
    v = cache.get(key)
    if v is None:
        with _making:
            v = cache.get(key)
            if v is None:
                v = cache[key] = make()
    return v
