"""Elementwise overrides of the shared CuPy kernels.

Scalars: numpy 2 promotes Python scalars weakly (NEP 50: ``float32_array * 0.1`` stays
float32); CuPy versions differ on scalar promotion. So every scalar operand is first
turned into a numpy scalar of the result dtype the op specs use (``dtypes.promote``),
casting the array operand up where numpy would, which every CuPy version promotes the
same way. ``sigmoid`` is one fused
``ElementwiseKernel`` instead of four passes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ... import dtypes
from .._xp.elementwise import BINARY, in_result_dtype
from .scope import register


def coerce(a: Any, b: Any) -> tuple[Any, Any]:
    """``(a, b)`` with a scalar operand made a numpy scalar of the result dtype."""
    if dtypes.is_scalar(b):
        d = dtypes.promote("cuda", a, b)
        return (a if a.dtype == d else a.astype(d)), d.type(b)
    if dtypes.is_scalar(a):
        d = dtypes.promote("cuda", a, b)
        return d.type(a), (b if b.dtype == d else b.astype(d))
    return a, b


def _binary(uf: Callable) -> Callable:
    def k(a, b, out=None):
        a, b = coerce(a, b)
        if out is None:
            return uf(a, b)
        uf(a, b, out=out)
        return out
    return k


_SIGMOID_F = "y = (T)(0.5f * tanhf(0.5f * (float)x) + 0.5f)"
_SIGMOID_D = "y = (T)(0.5 * tanh(0.5 * (double)x) + 0.5)"


def register_elementwise(xp: Any) -> None:
    for name, uf in BINARY.items():
        register(name)(_binary(in_result_dtype(name, getattr(xp, uf))))

    sig_f = xp.ElementwiseKernel("T x", "T y", _SIGMOID_F, "nna_sigmoid_f")
    sig_d = xp.ElementwiseKernel("T x", "T y", _SIGMOID_D, "nna_sigmoid_d")

    @register("sigmoid")
    def sigmoid(x, out=None):
        if x.dtype.kind != "f":
            x = x.astype(np.float16 if x.dtype == np.bool_ else np.float64)
        kern = sig_d if x.dtype == np.float64 else sig_f
        if out is None:
            return kern(x)
        if out.dtype == x.dtype:
            kern(x, out)
        else:
            out[...] = kern(x)
        return out

    @register("leaky_relu")
    def leaky_relu(x, alpha):
        d = dtypes.promote("leaky_relu", x, float(alpha))
        x = x.astype(d, copy=False)
        return xp.where(x > 0, x, x * d.type(alpha))

    @register("clip")
    def clip(x, a_min, a_max):
        bounds = [v for v in (a_min, a_max) if v is not None]
        d = dtypes.promote("clip", x, *bounds)
        y = x.astype(d, copy=True)
        if a_min is not None:
            xp.maximum(y, d.type(a_min), out=y)
        if a_max is not None:
            xp.minimum(y, d.type(a_max), out=y)
        return y

    @register("where")
    def where(c, x, y):
        d = dtypes.promote("where", x, y)
        if dtypes.is_scalar(x) and dtypes.is_scalar(y):  # a 0-d array makes the dtype explicit
            return xp.where(c, xp.full((), x, d), d.type(y))
        x, y = (d.type(v) if dtypes.is_scalar(v) else v.astype(d, copy=False) for v in (x, y))
        return xp.where(c, x, y)
