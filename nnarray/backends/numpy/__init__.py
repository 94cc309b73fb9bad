"""The numpy backend: always available; the host every other device copies through."""

from __future__ import annotations

from .device import DEVICE as _device
from .device import NumpyDevice

#: DLPack device types whose tensors this backend adopts.
DLPACK_TYPES = NumpyDevice.dlpack_types


def why_unavailable() -> str | None:
    return None


def device_count() -> int:
    return 1


def get_device(device_id: int) -> NumpyDevice:
    return _device


def describe_devices() -> list[str]:
    return [_device.describe()]


def load_kernels() -> None:
    # each registers on import (elementwise and reduction wrap kernels' shared set)
    from . import (  # noqa: F401
        conv,
        elementwise,
        fused,
        kernels,
        low,  # wraps the accumulating kernels for 16-bit inputs (imports what it wraps)
        matmul,
        random,
        reduction,
    )
