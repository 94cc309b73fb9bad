"""DLPack: zero-copy exchange with numpy, CuPy, PyTorch, JAX, ...

Export (``NdArray.__dlpack__``) never changes the producer's device (API.md §7).
``__dlpack_device__`` names the array's device (where it was made or last written; a lazy
array's is the current context's). The consumer gets that device's own buffer, shared,
where the device has a DLPack form (host, CUDA); exporting then counts as a read-write
access there (other device copies become stale, since the consumer may write), which
leaves the array's device as it was; a host export is a tracked handle (``hand_out``), so
the consumer's later writes are seen by device reads too. Otherwise (``copy=True``, a
``dl_device`` other than the array's device, or an OpenCL array: pyopencl exports no
buffers) it hands over a private copy read on the target device (the host for OpenCL;
one explicit, counted transfer where that copy is not current), and ``copy=False``
raises ``BufferError``.

Import (``from_dlpack``): the backend whose ``DLPACK_TYPES`` list the tensor's device
type adopts it (``Device.import_dlpack``): without a copy where it is C-contiguous and
writable (both sides then see each other's writes), else copied into fresh C-contiguous
storage, because an NdArray's storage is always C-contiguous and owned.
"""

from __future__ import annotations

from typing import Any

from . import discovery as backends
from . import dlpack_bfloat16, dtypes, late
from .context import get_current_context
from .device import Device
from .errors import DTypeError
from .ndarray import NdArray

CPU = 1  # dlpack.h kDLCPU: what an array no device can export is exported as


def dlpack_device(a: NdArray) -> tuple[int, int]:
    """``(device_type, device_id)`` of the array's device."""
    dev = _home(a)
    kind = dev.dlpack_types[0] if dev.dlpack_types else (dev.dlpack_kind or CPU)
    return (kind, dev.device_id)


def export(a: NdArray, stream: Any = None, max_version: tuple[int, int] | None = None,
           dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    """The DLPack capsule of ``a`` (see the module docstring for what is shared)."""
    home = _home(a)
    dev = _requested_device(dl_device) if dl_device is not None else \
        home if home.dlpack_types else backends.host_device()
    if not dev.dlpack_types:
        raise BufferError(
            f"NdArray.__dlpack__: dl_device={dl_device} names {dev.key}, and {dev.backend} "
            f"buffers have no DLPack form; ask for dl_device=({CPU}, 0)")
    share = dev is home and not copy
    if copy is False and not share:
        raise BufferError(f"NdArray.__dlpack__: copy=False, but the array is on {home.key} "
                          f"and the export is on {dev.key}: only a copy can be handed over")
    x = a.native(dev, "rw" if share else "r", explicit=True)
    if not share:
        x = dev.bind(_copy)(x)  # made on dev (inside a CUDA GPU's scope)
    elif dev.is_host:  # the consumer's array keeps a tracked handle alive (host handles)
        x = a.hand_out(dev, x)
    if dtypes.is_bfloat16(a.dtype):  # numpy has no DLPack code for it: kDLBfloat by hand
        return dlpack_bfloat16.export(dev, x, stream, max_version)
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
    try:
        x = dev.import_dlpack(obj)
    except (RuntimeError, BufferError) as err:  # numpy: "Unsupported dtype in DLTensor"
        x = dlpack_bfloat16.import_bits(dev, obj) if dev.is_host else None
        if x is not None:
            return NdArray._wrap(x, dev, (tuple(x.shape), dtypes.bfloat16))
        raise DTypeError(f"from_dlpack: argument 'obj' ({type(obj).__name__}, dtype "
                         f"{getattr(obj, 'dtype', '?')}): {err}") from None
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


def _home(a: NdArray) -> Device:
    """The array's device: its head, else (never written) the current context's."""
    h = a.head_device
    if h is not None:
        return h
    ctx = get_current_context()
    return backends.get_device(ctx.backend, ctx.device_id)


def _requested_device(dl_device: tuple[int, int]) -> Device:
    kind, dev_id = (int(v) for v in dl_device)
    return _device_for(kind, dev_id, "NdArray.__dlpack__")

late.provide(__name__)  # bind the lower layers' slots (nnarray.late)
