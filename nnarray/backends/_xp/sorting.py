"""Sorting, searching and compaction kernels for numpy and CuPy (``ops/sorting.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...registry import register_kernel


def register_sorting_kernels(backend: str, xp: Any, fresh: Callable) -> None:
    """Register ``sort``, ``argsort``, ``searchsorted`` and ``positions``."""

    def reg(name: str) -> Callable:
        return register_kernel(name, backend)

    @reg("sort")
    def sort(x, descending):
        if descending:  # stable descending: flip, stable sort, flip (NaNs come first)
            return fresh(xp.ascontiguousarray(xp.flip(xp.sort(xp.flip(x, -1), -1,
                                                                 kind="stable"), -1)))
        return fresh(xp.sort(x, -1, kind="stable"))

    @reg("argsort")
    def argsort(x, descending):
        if descending:
            n = x.shape[-1]
            r = xp.flip(xp.argsort(xp.flip(x, -1), -1, kind="stable"), -1)
            return fresh(xp.ascontiguousarray((n - 1) - r).astype(np.int64, copy=False))
        return fresh(xp.argsort(x, -1, kind="stable").astype(np.int64, copy=False))

    @reg("searchsorted")
    def searchsorted(x1, x2, side):
        return fresh(xp.asarray(xp.searchsorted(x1, x2, side=side)).astype(np.int64,
                                                                             copy=False))

    @reg("positions")
    def positions(mask, count):
        return fresh(xp.flatnonzero(mask).astype(np.int64, copy=False))
