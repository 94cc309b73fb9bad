"""Compiling and launching the backend's own CUDA C kernels (``cupy.RawKernel``).

Sources are written once with the placeholders ``T`` (the element type), ``A`` (the
accumulation type) and the math functions ``EXP LOG SQRT COSPI NAN``, as a ``Source``
specialised per float dtype of ``CTYPES`` or per item size of ``UTYPES``. ``kernel(src,
name, dtype)`` picks the specialisation of ``dtype`` and compiles it on first use (CuPy
caches the binary on disk). Every ``Source`` made is listed in ``table.SOURCES``, which
the NVRTC test compiles in full. Every kernel loops grid-stride over ``long long``
indices, so any size works with any grid.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np

from .table import SOURCES

BLOCK = 256
_MAX_GRID = 1 << 16

#: C types per numpy dtype: (element, accumulation, math-function suffix).
CTYPES = {np.dtype(np.float32): ("float", "float", "f"),
          np.dtype(np.float64): ("double", "double", "")}
#: Same-size unsigned C types, for kernels that only move bytes.
UTYPES = {1: ("unsigned char", np.uint8), 2: ("unsigned short", np.uint16),
          4: ("unsigned int", np.uint32), 8: ("unsigned long long", np.uint64)}


def specialize(src: str, ctype: str, acc: str, suffix: str) -> str:
    """``src`` with its placeholders replaced by C types and math functions."""
    src = re.sub(r"\bT\b", ctype, src)
    src = re.sub(r"\bA\b", acc, src)
    for fn in ("EXP", "LOG", "SQRT", "COSPI", "NAN"):
        src = re.sub(rf"\b{fn}\b", fn.lower() + suffix, src)
    return src


class Source:
    """A CUDA C source for ``cupy.RawKernel``, specialised per dtype of ``CTYPES``
    (``by="dtype"``) or per item size of ``UTYPES`` (``by="itemsize"``), or used as it is
    (``by="plain"``: no placeholders)."""

    def __init__(self, code: str, by: str = "dtype") -> None:
        if by not in ("dtype", "itemsize", "plain"):
            raise ValueError(f"Source: by must be 'dtype', 'itemsize' or 'plain', got {by!r}")
        self.code, self.by = code, by
        self.names = tuple(re.findall(r"__global__\s+void\s+(\w+)", code))
        SOURCES.append(self)

    @functools.cached_property
    def variants(self) -> dict:
        """Every specialisation the backend can compile: dtype (or item size) -> C code."""
        if self.by == "plain":
            return {"plain": self.code}
        if self.by == "itemsize":
            return {n: specialize(self.code, c, c, "") for n, (c, _) in UTYPES.items()}
        return {dt: specialize(self.code, *CTYPES[dt]) for dt in CTYPES}


@functools.cache
def _compiled(code: str, name: str) -> Any:
    import cupy
    return cupy.RawKernel(code, name)


def kernel(src: Source, name: str, dtype: np.dtype) -> Any:
    """The ``cupy.RawKernel`` for ``name`` in ``src`` specialized for ``dtype``."""
    return _compiled(src.variants[np.dtype(dtype)], name)


def kernel_plain(src: Source, name: str, key: str = "plain") -> Any:
    """The kernel ``name`` of ``src``, which has no placeholders (``by="plain"``)."""
    return _compiled(src.variants[key], name)


def kernel_bytes(src: Source, name: str, itemsize: int) -> Any:
    """The kernel with ``T`` the unsigned integer type of ``itemsize`` bytes."""
    return _compiled(src.variants[itemsize], name)


def launch(kern: Any, n: int, args: tuple) -> None:
    """Run ``kern`` over ``n`` work items (grid-stride), on the current device."""
    if n > 0:
        grid = min((n + BLOCK - 1) // BLOCK, _MAX_GRID)
        kern((grid,), (BLOCK,), args)


def i64(v: int) -> np.int64:
    return np.int64(v)
