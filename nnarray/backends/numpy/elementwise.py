"""``where`` and ``relu`` without numpy's slow paths.

- ``np.where`` branches per element: on a mask without a pattern (max pooling's hits, a
  quarter set) it mispredicts. Selecting the bits through an all-ones / all-zeros mask
  (``y ^ ((x ^ y) & mask)``, or ``x & mask`` where y is +0) is branch-free and exact
  (signed zeros and NaN payloads included).
- ``np.maximum`` against a scalar is not vectorized; against an array of zeros it is, the
  fill included. Generated code on fixed shapes reads a shared read-only zeros array
  instead (``relu.specialize``). Figures: benchmarks/README.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...dtypes import promote
from ...registry import backend_kernels, register_kernel
from . import kernels as _shared  # noqa: F401  (registers the kernels wrapped here)
from .device import DEVICE as _device

_empty = _device.pool.empty
#: Elements (of the condition; of x for relu) from which these beat numpy (below them
#: the extra calls cost more than they save).
MIN_SELECT = 4096
_INT = {2: np.dtype(np.int16), 4: np.dtype(np.int32), 8: np.dtype(np.int64)}

_where: Callable = backend_kernels("numpy")["where"]
_relu: Callable = backend_kernels("numpy")["relu"]


def _bits(v, d: np.dtype, u: np.dtype):
    """``v`` (an array of dtype ``d``, or a scalar, cast to ``d`` as ``np.where`` casts
    it) viewed as integers ``u`` of its size; ``None`` for an array of another dtype."""
    if isinstance(v, np.ndarray):
        return v.view(u) if v.dtype == d else None
    try:
        return np.asarray(v, d).view(u)
    except (OverflowError, ValueError, TypeError):  # np.where raises its own error
        return None


def _plus_zero(v) -> bool:
    """``v`` is a Python ``0`` or ``0.0`` (not ``-0.0``): no bits set in any dtype."""
    t = type(v)
    return (t is int or t is float) and v == 0 and math.copysign(1.0, v) > 0


@register_kernel("where", "numpy")
def where(c, x, y):
    d = promote("where", x, y)
    s = _INT.get(d.itemsize)
    if s is None or d.kind not in "fiu" or c.size < MIN_SELECT:
        return _where(c, x, y)
    zero = _plus_zero(y)
    xb, yb = _bits(x, d, s), None if zero else _bits(y, d, s)
    if xb is None or (yb is None and not zero):
        return _where(c, x, y)
    # Every buffer from the pool: numpy's own temporaries (the mask, x ^ y), freshly
    # mapped per call, cost page faults where each result was dropped before the next
    # call.
    shape = np.broadcast_shapes(c.shape, np.shape(x), np.shape(y))
    out = _empty(shape, s)
    np.negative(c.view(np.int8), out=out)  # True -> -1 (all ones), False -> 0
    if zero:  # the bits of x where c, else none
        return np.bitwise_and(out, xb, out=out).view(d)
    t = _empty(shape, s)
    np.bitwise_and(np.bitwise_xor(xb, yb, out=t), out, out=out)
    return np.bitwise_xor(out, yb, out=out).view(d)


@register_kernel("relu", "numpy")
def relu(x, out=None):
    if out is not None or x.dtype == np.bool_ or x.size < MIN_SELECT:  # out may be x
        return _relu(x, out)
    out = _empty(x.shape, x.dtype)
    out.fill(0)
    return np.maximum(x, out, out=out)


#: Largest zeros array ``relu.specialize`` keeps (bytes), and how many it keeps: a
#: static graph's activations up to this size run against a constant instead of a fill.
ZEROS_MAX_BYTES, ZEROS_MAX_COUNT = 1 << 20, 32
_zeros: dict[tuple, np.ndarray] = {}


def _specialize_relu(in_metas: list, attrs: dict) -> Callable | None:
    """For generated code on fixed metas: ``np.maximum`` against a shared read-only zeros
    array of the input's shape (numeric dtypes up to ``ZEROS_MAX_BYTES``, not 0-d)."""
    if attrs or len(in_metas) != 1 or in_metas[0] is None:
        return None
    shape, dtype = in_metas[0]
    if not shape:
        return None  # a ufunc gives a scalar for 0-d arrays
    key = (shape, dtype)
    z = _zeros.get(key)
    if z is None:
        if dtype.kind not in "fiu" or math.prod(shape) * dtype.itemsize > ZEROS_MAX_BYTES \
                or len(_zeros) >= ZEROS_MAX_COUNT:
            return None
        z = _zeros[key] = np.zeros(shape, dtype)
        z.flags.writeable = False
    mx = np.maximum
    return lambda x: mx(x, z)


relu.specialize = _specialize_relu  # type: ignore[attr-defined]  # see Kernel.callee
