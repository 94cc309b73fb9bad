"""The CUDA devices, one object per GPU, made on first use (the package's ``get_device``;
kernels that need their array's device import it from here, not from the package)."""

from __future__ import annotations

from ...device import made_once
from .probe import device_count

_devices: dict = {}


def get_device(device_id: int):
    """The ``CudaDevice`` for ``device_id`` (one object per GPU)."""
    dev = _devices.get(device_id)
    return dev if dev is not None else made_once(_devices, device_id,
                                                 lambda: _make_device(device_id))


def _make_device(device_id: int):
    from .device import CudaDevice  # CuPy's import waits for the first device
    return CudaDevice(device_id)


def describe_devices() -> list[str]:
    return [get_device(i).describe() for i in range(device_count())]
