"""DLPack: zero-copy exchange with numpy, CuPy, PyTorch, JAX, ...

Export (``NdArray.__dlpack__``): the consumer gets the NdArray's own buffer on one
device (shared, not copied; ``copy=True`` asks for a private copy). The device is the
one asked for with ``dl_device``, else the head (the latest write), else any current
copy that DLPack can describe (host or CUDA). Exporting counts as a read-write access
on that device: other device copies become stale, since the consumer may write. OpenCL
buffers have no DLPack form (pyopencl cannot export them): exporting an array whose
only current copy is on OpenCL raises ``BufferError``.

Import (``from_dlpack``): a C-contiguous, writable CPU or CUDA tensor of a supported
dtype is adopted without a copy (both sides then see each other's writes); anything
else (strided, read-only) is copied into fresh C-contiguous storage, because an
NdArray's storage is always C-contiguous and owned.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import backends, dtypes
from .context import get_current_context
from .device import Device
from .ndarray import NdArray

# DLPack device types (dlpack.h, DLDeviceType).
CPU, CUDA, CUDA_HOST, OPENCL, CUDA_MANAGED = 1, 2, 3, 4, 13
_TYPE_OF = {"numpy": CPU, "cuda": CUDA, "opencl": OPENCL}
_EXPORTABLE = ("numpy", "cuda")


def dlpack_device(a: NdArray) -> tuple[int, int]:
    """``(device_type, device_id)`` of the buffer ``a.__dlpack__()`` exports."""
    dev = _export_device(a)
    return (_TYPE_OF.get(dev.backend, CPU), dev.device_id)


def export(a: NdArray, stream: Any = None, max_version: tuple[int, int] | None = None,
           dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    """The DLPack capsule of ``a`` (see the module docstring for what is shared)."""
    dev = _requested_device(dl_device) if dl_device is not None else _export_device(a)
    if dev.backend not in _EXPORTABLE:
        raise BufferError(
            f"NdArray.__dlpack__: the array's data is on {dev.key}, and {dev.backend} "
            f"buffers have no DLPack form; move it first, e.g. "
            f"a.get_data('r', 'numpy') or pass dl_device=(1, 0)")
    if copy is False and a._copies and dev not in a._copies:
        raise BufferError(f"NdArray.__dlpack__: copy=False, but the data is not on "
                          f"{dev.key} (current on {a.devices})")
    x = a._access("r" if copy else "rw", dev, explicit=True)
    if copy:
        x = x.copy()
    kwargs = {} if stream is None else {"stream": stream}
    if max_version is not None:
        try:
            return x.__dlpack__(max_version=max_version, **kwargs)
        except TypeError:  # an older array library: unversioned capsule
            pass
    return x.__dlpack__(**kwargs)


def from_dlpack(obj: Any) -> NdArray:
    """An NdArray over the DLPack tensor ``obj`` (numpy, CuPy, torch, ... on CPU or
    CUDA): zero-copy when it is C-contiguous and writable, otherwise a copy."""
    if not hasattr(obj, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__, got "
                        f"{type(obj).__name__}")
    kind, dev_id = obj.__dlpack_device__()
    kind, dev_id = int(kind), int(dev_id)
    if kind in (CPU, CUDA_HOST):
        dev = backends.host_device()
        x = np.from_dlpack(obj)
        if not (x.flags.c_contiguous and x.flags.writeable):
            x = np.array(x, order="C", copy=True)
    elif kind in (CUDA, CUDA_MANAGED):
        dev = backends.get_device("cuda", dev_id)
        import cupy
        with cupy.cuda.Device(dev_id):
            x = cupy.from_dlpack(obj)
            if not x.flags.c_contiguous:
                x = cupy.ascontiguousarray(x)
    else:
        raise BufferError(f"from_dlpack: DLPack device type {kind} is not supported "
                          f"(nnarray imports CPU ({CPU}) and CUDA ({CUDA}) tensors)")
    dt = dtypes.normalize(x.dtype, "from_dlpack", "obj")
    return NdArray._wrap(x, dev, (tuple(x.shape), dt))


def _export_device(a: NdArray) -> Device:
    copies = a._copies
    if not copies:  # lazily filled or never written: materialize where work runs
        ctx = get_current_context()
        if ctx.backend in _EXPORTABLE:
            return backends.get_device(ctx.backend, ctx.device_id)
        return backends.host_device()
    head = a._head
    if head in copies and head.backend in _EXPORTABLE:
        return head
    for d in copies:
        if d.backend in _EXPORTABLE:
            return d
    return head if head in copies else next(iter(copies))


def _requested_device(dl_device: tuple[int, int]) -> Device:
    kind, dev_id = (int(v) for v in dl_device)
    if kind == CPU:
        return backends.host_device()
    if kind == CUDA:
        return backends.get_device("cuda", dev_id)
    raise BufferError(f"NdArray.__dlpack__: cannot export to DLPack device type {kind} "
                      f"(nnarray exports to CPU ({CPU}) and CUDA ({CUDA}))")
