"""The CUDA backend: NVIDIA GPUs through CuPy (``pip install nnarray[cuda]``).

Importing this package does not import CuPy; ``why_unavailable()`` does, once.
"""

from __future__ import annotations

from ...device import made_once
from .probe import why_unavailable

#: DLPack device types whose tensors this backend adopts (``CudaDevice.dlpack_types``).
DLPACK_TYPES = (2, 13)
_devices: dict = {}
_count: list[int] = []

__all__ = ["describe_devices", "device_count", "get_device", "load_kernels",
           "why_unavailable"]


def device_count() -> int:
    """GPUs visible to CuPy (0 when the backend is unavailable)."""
    if not _count:
        if why_unavailable() is not None:
            return 0
        import cupy
        _count.append(cupy.cuda.runtime.getDeviceCount())
    return _count[0]


def get_device(device_id: int):
    """The ``CudaDevice`` for ``device_id`` (one object per GPU)."""
    dev = _devices.get(device_id)
    return dev if dev is not None else made_once(_devices, device_id,
                                                 lambda: _make_device(device_id))


def _make_device(device_id: int):
    from .device import CudaDevice
    return CudaDevice(device_id)


def describe_devices() -> list[str]:
    return [get_device(i).describe() for i in range(device_count())]


def load_kernels() -> None:
    from . import kernels  # noqa: F401  (registers on import)
