"""The CUDA backend: NVIDIA GPUs through CuPy (``pip install nnarray[cuda]``).

Importing this package does not import CuPy; ``why_unavailable()`` does, once.
"""

from __future__ import annotations

from .devices import describe_devices, get_device
from .probe import device_count, why_unavailable

#: DLPack device types whose tensors this backend adopts (``CudaDevice.dlpack_types``).
DLPACK_TYPES = (2, 13)

__all__ = ["describe_devices", "device_count", "get_device", "load_kernels",
           "why_unavailable"]


def load_kernels() -> None:
    from . import kernels  # noqa: F401  (registers on import)
