"""The OpenCL backend: any OpenCL device through pyopencl (``pip install nnarray[opencl]``).

Importing this package does not import pyopencl; ``why_unavailable()`` does, once, and
probes every device (see ``device.py``). Every primitive op of ``docs/backends.md`` has a
kernel generated here per (op, dtypes, rank); see ``programs.py`` for the build caches.
"""

from __future__ import annotations

from typing import Any

from ...device import made_once

__all__ = ["build_stats", "describe_devices", "device_count", "get_device", "load_kernels",
           "skipped_devices", "why_unavailable"]

_discovery: dict[None, Any] = {}  # the one ``Discovery``, under the key ``None``
_devices: dict[int, Any] = {}


def _found() -> Any:
    d = _discovery.get(None)
    return d if d is not None else made_once(_discovery, None, _discover)


def _discover() -> Any:
    from .device import Discovery
    return Discovery()


def why_unavailable() -> str | None:
    """Why OpenCL cannot run here (cached; never raises), or ``None``."""
    return _found().reason


def device_count() -> int:
    """Usable devices (0 when the backend is unavailable)."""
    return len(_found().devices)


def get_device(device_id: int) -> Any:
    """The ``OpenCLDevice`` for ``opencl:device_id`` (one object per device)."""
    dev = _devices.get(device_id)
    return dev if dev is not None else made_once(_devices, device_id,
                                                 lambda: _make_device(device_id))


def _make_device(device_id: int) -> Any:
    from .device import OpenCLDevice
    cl_device, ctx = _found().devices[device_id]
    return OpenCLDevice(device_id, cl_device, ctx)


def describe_devices() -> list[str]:
    return [get_device(i).describe() for i in range(device_count())]


def skipped_devices() -> list[str]:
    """Devices a platform lists but that failed the probe, each with its reason."""
    return list(_found().skipped)


def build_stats() -> dict[str, int]:
    """Programs compiled from source and loaded from the disk cache, over all devices."""
    out = {"compiled": 0, "loaded": 0}
    for dev in _devices.values():
        for k, v in dev.programs.stats.items():
            out[k] += v
    return out


def load_kernels() -> None:
    from . import (  # noqa: F401  (each registers its kernels on import)
        complex,
        conv,
        elementwise,
        fft,
        fused,
        low,  # wraps the kernels without 16-bit code (imports what it wraps)
        matmul,
        random,
        reduction,
        scatter,
        scatter_add,
        setitem,
        shape,
        softmax,
        sort,
        unscale,
    )
