"""Compiling and launching the backend's own CUDA C kernels (``cupy.RawKernel``).

Sources are written once with the placeholders ``T`` (the element type), ``A`` (the
accumulation type) and the math functions ``EXP LOG SQRT COSPI NAN``; ``kernel(src, name,
dtype)`` substitutes the C types of ``dtype`` and compiles on first use (CuPy caches the
binary on disk). Every kernel loops grid-stride over ``long long`` indices, so any size
works with any grid.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np

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


def source(src: str, dtype: np.dtype) -> str:
    """``src`` specialized for a float dtype in ``CTYPES``."""
    return specialize(src, *CTYPES[np.dtype(dtype)])


@functools.cache
def _compiled(code: str, name: str) -> Any:
    import cupy
    return cupy.RawKernel(code, name)


def kernel(src: str, name: str, dtype: np.dtype) -> Any:
    """The ``cupy.RawKernel`` for ``name`` in ``src`` specialized for ``dtype``."""
    return _compiled(source(src, dtype), name)


def kernel_plain(src: str, name: str) -> Any:
    """The kernel ``name`` of ``src``, which has no placeholders."""
    return _compiled(src, name)


def kernel_bytes(src: str, name: str, itemsize: int) -> Any:
    """The kernel with ``T`` the unsigned integer type of ``itemsize`` bytes."""
    return _compiled(specialize(src, UTYPES[itemsize][0], UTYPES[itemsize][0], ""), name)


def launch(kern: Any, n: int, args: tuple) -> None:
    """Run ``kern`` over ``n`` work items (grid-stride), on the current device."""
    if n > 0:
        grid = min((n + BLOCK - 1) // BLOCK, _MAX_GRID)
        kern((grid,), (BLOCK,), args)


def i64(v: int) -> np.int64:
    return np.int64(v)
