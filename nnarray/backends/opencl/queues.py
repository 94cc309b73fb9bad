"""What OpenCL kernels and program builds look up by queue, apart from the device class:
the device that owns a queue, its lock, and the address space a build needs. ``device``,
``programs`` and the kernels all import this module, so none of them imports another in
a cycle."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .device import OpenCLDevice

#: Bytes of the process's address space that allocations leave free and that a program
#: build needs (under ``RLIMIT_AS``): pocl crashed compiling and linking with 384 MiB left.
HEADROOM = 512 << 20

#: Devices by ``id()`` of their queue: kernels find the device of an input array here.
_by_queue: dict[int, OpenCLDevice] = {}
#: Each device's ``lock`` by ``id()`` of its queue (``programs.launch`` takes a queue).
_locks: dict[int, Any] = {}


def device_of(x: Any) -> OpenCLDevice:
    """The device that owns native array ``x``."""
    return _by_queue[id(x.queue)]
