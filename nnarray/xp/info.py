"""The standard's inspection: ``__array_namespace_info__()`` and the revision
``__array_api_version__`` this namespace implements (2023.12).
"""

from __future__ import annotations

from typing import Any

from .. import discovery as backends
from .. import dtypes as _dtypes
from ..context import Context, as_context, creation_context
from .data_type import isdtype
from .dtypes import (
    bool,
    complex64,
    complex128,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)

__array_api_version__ = "2023.12"


def _contexts() -> list[Context]:
    """Every available context: one per device of every usable backend."""
    out = []
    for name, descs in backends.available():
        out += [Context(name, i) for i in range(len(descs))]
    return out


class Info:
    """``nnarray.__array_namespace_info__()``: what this namespace supports, as revision
    ``api_version`` of the standard defines it (default: ``__array_api_version__``)."""

    def __init__(self, api_version: str | None = None) -> None:
        self.api_version = api_version or __array_api_version__

    def capabilities(self) -> dict:
        caps = {"boolean indexing": True, "data-dependent shapes": True}
        if self.api_version >= "2024.12":  # the key 2024.12 added (None: no limit)
            caps["max dimensions"] = None
        return caps

    def default_device(self) -> Context:
        """Where creation functions make arrays (``set_default_device``)."""
        return creation_context()

    def default_dtypes(self, *, device: Any = None) -> dict:
        if device is not None:
            as_context(device)
        real, cplx = _dtypes.defaults()
        return {"real floating": real, "complex floating": cplx, "integral": int64,
                "indexing": int64}

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict:
        if device is not None:
            as_context(device)
        ds = [bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32,
              float64, complex64, complex128]  # the standard's dtypes (float16 is a numpy extra)
        if kind is not None:
            ds = [d for d in ds if isdtype(d, kind)]
        return {d.name: d for d in ds}

    def devices(self) -> list[Context]:
        return _contexts()


def __array_namespace_info__(*, api_version: str | None = None) -> Info:
    """The inspection object of the standard (``capabilities``, ``default_device``,
    ``default_dtypes``, ``dtypes``, ``devices``) of revision ``api_version`` (an nnarray
    extension; default ``__array_api_version__``)."""
    return Info(api_version)


__all__ = ["__array_api_version__", "__array_namespace_info__"]
