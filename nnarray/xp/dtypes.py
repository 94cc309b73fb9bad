"""The standard's data types as numpy dtypes (``bool``, ``int8`` ... ``complex128``) and
``bfloat16``, an extension like ``float16``. Promotion follows numpy 2 (NEP 50), which is
the standard's table wherever the standard defines one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dtypes

bool = np.dtype(np.bool_)  # noqa: A001  (the standard's name)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32,
                                                       np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

#: Names whose values import on first use (``__getattr__``): ``from . import *`` skips them.
LAZY = ("bfloat16",)

__all__ = [
    "bool", "complex128", "complex64", "float16", "float32", "float64", "int16",
    "int32", "int64", "int8", "uint16", "uint32", "uint64", "uint8",
]


def __getattr__(name: str) -> Any:
    """``bfloat16``, an extension (``ml_dtypes``' numpy dtype) like float16: imports
    ``ml_dtypes`` on first use."""
    if name in LAZY:
        return getattr(_dtypes, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
