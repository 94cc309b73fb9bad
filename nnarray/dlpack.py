"""DLPack: zero-copy exchange with numpy, CuPy, PyTorch, JAX, ...

Export (``NdArray.__dlpack__``): the consumer gets the NdArray's own buffer on one
device (shared, not copied; ``copy=True`` asks for a private copy). The device is the
one asked for with ``dl_device``, else the head (the latest write), else any current
copy that DLPack can describe, else the host. Exporting counts as a read-write access on
that device: other device copies become stale, since the consumer may write. Which buffers
have a DLPack form is each backend's answer (``Device.dlpack_types``): host and CUDA do,
OpenCL does not (pyopencl cannot export buffers), so an array whose only current copy is
on OpenCL is exported from the host (one explicit, counted transfer).

Import (``from_dlpack``): the backend whose ``DLPACK_TYPES`` list the tensor's device
type adopts it (``Device.import_dlpack``): without a copy where it is C-contiguous and
writable (both sides then see each other's writes), else copied into fresh C-contiguous
storage, because an NdArray's storage is always C-contiguous and owned.
"""

from __future__ import annotations

from typing import Any

from . import backends, dtypes
from .context import get_current_context
from .device import Device
from .ndarray import NdArray

CPU = 1  # dlpack.h kDLCPU: what an array no device can export is exported as


def dlpack_device(a: NdArray) -> tuple[int, int]:
    """``(device_type, device_id)`` of the buffer ``a.__dlpack__()`` exports."""
    dev = _export_device(a)
    return (dev.dlpack_types[0] if dev.dlpack_types else CPU, dev.device_id)


def export(a: NdArray, stream: Any = None, max_version: tuple[int, int] | None = None,
           dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    """The DLPack capsule of ``a`` (see the module docstring for what is shared)."""
    dev = _requested_device(dl_device) if dl_device is not None else _export_device(a)
    if not dev.dlpack_types:
        raise BufferError(
            f"NdArray.__dlpack__: the array's data is on {dev.key}, and {dev.backend} "
            f"buffers have no DLPack form; move it first, e.g. "
            f"a.get_data('r', 'numpy') or pass dl_device=({CPU}, 0)")
    if copy is False and a.current_devices and dev not in a.current_devices:
        raise BufferError(f"NdArray.__dlpack__: copy=False, but the data is not on "
                          f"{dev.key} (current on {a.devices})")
    x = a.native(dev, "r" if copy else "rw", explicit=True)
    if copy:
        x = dev.bind(_copy)(x)  # made on dev (inside a CUDA GPU's scope)
    return dev.export_dlpack(x, stream, max_version)


def _copy(x: Any) -> Any:
    return x.copy()


def from_dlpack(obj: Any) -> NdArray:
    """An NdArray over the DLPack tensor ``obj`` (numpy, CuPy, torch, ... on a device
    some backend imports): zero-copy when it is C-contiguous and writable, else a copy."""
    if not hasattr(obj, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__, got "
                        f"{type(obj).__name__}")
    kind, dev_id = (int(v) for v in obj.__dlpack_device__())
    dev = _device_for(kind, dev_id, "from_dlpack")
    x = dev.import_dlpack(obj)
    dt = dtypes.normalize(x.dtype, "from_dlpack", "obj")
    return NdArray._wrap(x, dev, (tuple(x.shape), dt))


def _device_for(kind: int, dev_id: int, what: str) -> Device:
    """The device of the backend whose buffers have DLPack device type ``kind``."""
    for name in backends.registered():
        if kind in getattr(backends.module(name), "DLPACK_TYPES", ()):
            return backends.host_device() if name == "numpy" else \
                backends.get_device(name, dev_id)
    have = {n: getattr(backends.module(n), "DLPACK_TYPES", ()) for n in backends.registered()}
    raise BufferError(f"{what}: DLPack device type {kind} is not supported (device types "
                      f"per backend: {have})")


def _export_device(a: NdArray) -> Device:
    copies = a.current_devices
    if not copies:  # lazily filled or never written: materialize where work runs
        ctx = get_current_context()
        dev = backends.get_device(ctx.backend, ctx.device_id)
        return dev if dev.dlpack_types else backends.host_device()
    head = a.head_device
    if head in copies and head.dlpack_types:
        return head
    for d in copies:
        if d.dlpack_types:
            return d
    return backends.host_device()  # no copy has a DLPack form: read it to the host


def _requested_device(dl_device: tuple[int, int]) -> Device:
    kind, dev_id = (int(v) for v in dl_device)
    return _device_for(kind, dev_id, "NdArray.__dlpack__")
