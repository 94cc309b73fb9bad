"""Reductions over one short middle axis, as a few elementwise ufunc calls; sums over
the first axis and others, the first one first; ``mean`` without numpy's Python layer.

numpy's ``ufunc.reduce`` over a middle axis of a few elements with a short inner block,
such as pooling's ``max`` over the window axis of ``(N*C, kh*kw, OH*OW)``, iterates with
an inner loop of a handful of elements, where folding the ``k`` slices ``x[:, i]`` into
one another with the elementwise ufunc streams whole slices. ``max``/``min`` are then
identical to numpy's; sums add the slices in order, within rounding of numpy's.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ...dtypes import LOW
from ...ops.upcast import widened
from ...registry import backend_kernels, register_kernel
from . import kernels as _shared  # noqa: F401  (registers the kernels wrapped here)

#: Longest reduced axis and inner block (elements after it), and fewest outer rows,
#: folded slice by slice: beyond these numpy's own reduce is as fast or faster (float32).
MAX_AXIS, MAX_INNER, MIN_OUTER = 16, 256, 64


def _foldable(shape: tuple[int, ...], axis: tuple[int, ...]) -> bool:
    if len(axis) != 1 or not 0 < axis[0] < len(shape) - 1:
        return False
    a = axis[0]
    if not 1 < shape[a] <= MAX_AXIS:
        return False
    inner = outer = 1
    for s in shape[a + 1:]:
        inner *= s
    for s in shape[:a]:
        outer *= s
    return inner <= MAX_INNER and outer >= MIN_OUTER


def _fold(name: str, uf: Any, dtypes: Callable[[np.dtype], bool]) -> None:
    generic: Callable = backend_kernels("numpy")[name]

    @register_kernel(name, "numpy")
    def k(x, axis, keepdims):
        if not dtypes(x.dtype) or not _foldable(x.shape, axis):
            return generic(x, axis, keepdims)
        a = axis[0]
        lead = (slice(None),) * a
        out = uf(x[lead + (0,)], x[lead + (1,)])
        for i in range(2, x.shape[a]):
            uf(out, x[lead + (i,)], out=out)
        return np.expand_dims(out, a) if keepdims else out


def _any(d: np.dtype) -> bool:
    return True


def _f32_f64(d: np.dtype) -> bool:
    """Sums that keep their dtype and accumulate in it: integers widen to 64 bits and
    float16 accumulates in float32 under numpy's reduce, so those take the generic kernel."""
    return d == np.float32 or d == np.float64


_mean: Callable = backend_kernels("numpy")["mean"]


@register_kernel("mean", "numpy")
def mean(x, axis, keepdims):
    """float32/float64: numpy's ``mean`` less its Python layer (most of its time on small
    vectors): the same sum divided by the same count."""
    if x.dtype != np.float32 and x.dtype != np.float64 or x.size == 0:
        if x.dtype in LOW:  # 16-bit: in float32, rounded once (``ops/upcast.py``)
            return widened("mean", "numpy", _mean, _astype, (x, axis, keepdims), {})
        return _mean(x, axis, keepdims)
    n = 1
    for a in axis:
        n *= x.shape[a]
    r = np.add.reduce(x, axis=axis, keepdims=keepdims)
    return np.true_divide(r, n, out=r) if type(r) is np.ndarray else np.asarray(r / n)


def _astype(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return x.astype(dtype)


_fold("max", np.maximum, _any)
_fold("min", np.minimum, _any)
_fold("sum", np.add, _f32_f64)
_sum: Callable = backend_kernels("numpy")["sum"]


@register_kernel("sum", "numpy")
def sum_first_axis_first(x, axis, keepdims):
    """float32/float64 over the first axis and others (a bias gradient's ``(0, 2, 3)``):
    the first axis alone first, adding whole rows (numpy's one reduce walks short inner
    loops), then the others."""
    if len(axis) < 2 or axis[0] != 0 or not _f32_f64(x.dtype):
        if x.dtype in LOW:  # 16-bit: accumulated in float32 (``ops/upcast.py``)
            return widened("sum", "numpy", _sum, _astype, (x, axis, keepdims), {})
        return _sum(x, axis, keepdims)
    r = _sum(np.add.reduce(x, axis=0), tuple(a - 1 for a in axis[1:]), False)
    if keepdims:
        r = r.reshape(tuple(1 if i in axis else n for i, n in enumerate(x.shape)))
    return r


def _specialize_sum(in_metas: list, attrs: dict) -> Any:
    """For generated code on fixed metas: numpy's reduce itself where the kernels above
    end in it (a float32/float64 sum of an array to an array, neither folded nor split;
    numpy's reduce gives a scalar for a 0-d result or a 0-d input)."""
    if len(in_metas) != 1 or in_metas[0] is None or set(attrs) != {"axis", "keepdims"}:
        return None
    (shape, dtype), = in_metas
    axis, keepdims = attrs["axis"], attrs["keepdims"]
    if not shape or not _f32_f64(dtype) or _foldable(shape, axis) or \
            (len(axis) > 1 and axis[0] == 0) or not keepdims and len(axis) == len(shape):
        return None
    return partial(np.add.reduce, axis=axis, keepdims=keepdims)


sum_first_axis_first.specialize = _specialize_sum  # type: ignore[attr-defined]
