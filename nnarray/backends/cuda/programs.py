"""Every CUDA C program of the backend: ``load()`` imports each module that declares one,
which fills ``table``'s lists (the NVRTC test compiles them all)."""

from __future__ import annotations

from .table import ELEMENTWISE, SOURCES, Elementwise


def load() -> tuple[list, list[Elementwise]]:
    """``(SOURCES, ELEMENTWISE)`` once every module holding CUDA C is imported."""
    # the modules fill the table as they are imported
    from . import conv, device, divmod, elementwise, fused, nextafter, random, softmax, vector  # noqa: F401, I001
    return SOURCES, ELEMENTWISE
