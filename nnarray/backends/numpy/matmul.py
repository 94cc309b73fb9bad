"""numpy's matmul, with a long inner dimension split where that is measured faster.

Why not numpy's alone: OpenBLAS's Haswell SGEMM (what numpy's wheel runs on AVX2 CPUs,
AMD's included) computes a 64x1000 @ 1000x100 product at half the rate it reaches on the
same work as 1000x64 @ 64x100, or as three products over 384-long slices of the inner
dimension summed (benchmarks/README.md; torch's BLAS runs it at the fast rate). That product is
the MLP's first layer. Which shapes suffer depends on the BLAS build, the CPU and even the
process's history (measured: once a product of 512^3 or more has run, the same 64x1000
product runs at full rate unsplit), so a 2-D product with a long inner dimension is
timed both ways on its first calls, and the way measured faster (by 10%) is kept for
that shape (per process; never worse than numpy's by more than the few trial calls).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ...dtypes import LOW, LOW_CODES
from ...ops.upcast import widened
from ...registry import register_kernel

#: The inner-dimension slice of a split product (OpenBLAS's own K block on AVX2 cores).
SLICE = 384
#: Timed calls of each way before a shape's choice is fixed.
TRIALS = 3
#: A split must be this much faster to be chosen (it adds one pass over the output).
MARGIN = 0.9
_MAX_SHAPES = 1024

_choice: dict[tuple, bool] = {}  # (shape key) -> split?
_trials: dict[tuple, tuple[list, list]] = {}  # (shape key) -> (plain times, split times)


@register_kernel("matmul", "numpy")
def matmul(a: np.ndarray, b: np.ndarray, transpose_a: bool = False,
           transpose_b: bool = False) -> np.ndarray:
    """``a @ b`` (either transposed: a view, which BLAS takes as a flag, not a copy)."""
    if a.dtype.char in LOW_CODES or b.dtype.char in LOW_CODES:  # 16-bit: float32 BLAS, rounded once
        return widened("matmul", "numpy", matmul, _astype, (a, b, transpose_a, transpose_b),
                       {})
    if transpose_a:
        a = a.swapaxes(-1, -2)
    if transpose_b:
        b = b.swapaxes(-1, -2)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] < 2 * SLICE or a.dtype.kind != "f" or \
            a.dtype != b.dtype:
        r = np.matmul(a, b)
        return r if type(r) is np.ndarray else np.asarray(r)
    key = (a.shape, b.shape[1], a.dtype.char, a.flags.c_contiguous, b.flags.c_contiguous)
    split = _choice.get(key)
    if split is None:
        return _trial(key, a, b)
    return split_product(a, b) if split else np.matmul(a, b)


def _specialize(in_metas: list, attrs: dict) -> Any:
    """For generated code on fixed metas: numpy's matmul itself (the transposes as
    views) where the kernel would run it unsplit: 2-D products of one floating dtype with
    a short inner dimension; ``None`` (the kernel) otherwise."""
    if len(in_metas) != 2 or None in in_metas or set(attrs) - {"transpose_a", "transpose_b"}:
        return None
    (sa, da), (sb, db) = in_metas
    ta, tb = attrs.get("transpose_a", False), attrs.get("transpose_b", False)
    if len(sa) != 2 or len(sb) != 2 or da != db or da.kind != "f" or da in LOW or \
            (sa[0] if ta else sa[1]) >= 2 * SLICE:
        return None
    mm = np.matmul
    if ta and tb:
        return lambda a, b: mm(a.T, b.T)
    if ta:
        return lambda a, b: mm(a.T, b)
    return (lambda a, b: mm(a, b.T)) if tb else mm


matmul.specialize = _specialize  # type: ignore[attr-defined]  # see Kernel.callee


def _astype(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return x.astype(dtype)


def split_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` as the sum of products over ``SLICE``-long slices of the inner dimension."""
    out = np.matmul(a[:, :SLICE], b[:SLICE])
    part = np.empty_like(out)
    for k in range(SLICE, a.shape[1], SLICE):
        np.matmul(a[:, k:k + SLICE], b[k:k + SLICE], out=part)
        out += part
    return out


def _trial(key: tuple, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One timed call, alternating the ways; the last one fixes the shape's choice."""
    plain, split = _trials.setdefault(key, ([], []))
    way = len(plain) > len(split)
    t = time.perf_counter()
    r = split_product(a, b) if way else np.matmul(a, b)
    (split if way else plain).append(time.perf_counter() - t)
    if len(split) == TRIALS:
        del _trials[key]
        if len(_choice) < _MAX_SHAPES:
            _choice[key] = min(split) < MARGIN * min(plain)
    return r
