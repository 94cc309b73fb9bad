"""rand and randn on the host: ``nnarray.philox``'s numbers, which the OpenCL and CUDA
kernels reproduce (float16 is drawn as float32 and rounded, as they do)."""

from __future__ import annotations

import math

import numpy as np

from ... import philox
from ...registry import register_kernel


def _draw(fn, shape, scale: float, shift: float, seed: int, dtype) -> np.ndarray:
    """``fn(seed, n) * scale + shift``, two roundings in the generating dtype."""
    dtype = np.dtype(dtype)
    g = dtype if dtype == np.float64 else np.dtype(np.float32)
    v = fn(seed, math.prod(shape), g)
    v *= g.type(scale)
    v += g.type(shift)
    return v.reshape(shape).astype(dtype, copy=False)


@register_kernel("rand", "numpy")
def rand(shape, low, high, seed, dtype):
    return _draw(philox.uniform, shape, high - low, low, seed, dtype)


@register_kernel("randn", "numpy")
def randn(shape, mu, sigma, seed, dtype):
    return _draw(philox.normal, shape, sigma, mu, seed, dtype)
