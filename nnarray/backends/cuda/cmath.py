"""The declared functions' C expressions (``ops/ufuncs.py``) as CUDA C: each math call
``f(x)`` becomes ``nna_f(x)``, overloaded for float (calling ``ff``) and double, so one
expression serves both types (and ``isnan`` is ``x != x``, which needs no header)."""

from __future__ import annotations

import re

import numpy as np

from ...ops.ufuncs import BY_NAME

_CALL = re.compile(r"\b([a-z_][a-z0-9_]*)\(")


def render(expr: str) -> str:
    """A row's C expression as CUDA C: math calls made ``nna_<fn>`` overloads."""
    return _CALL.sub(r"nna_\1(", expr)


def math_names(ops: tuple[str, ...]) -> list[str]:
    """The math functions the C expressions of rows ``ops`` call."""
    return sorted({m for op in ops for m in _CALL.findall(BY_NAME[op].c_expr(
        np.dtype(np.float32)))})


def overloads(names: list[str]) -> str:
    """``nna_<fn>`` for float (``<fn>f``) and double, per math function name."""
    out = []
    for f in names:
        if f == "isnan":
            out.append("template <typename T> __device__ __forceinline__ bool nna_isnan(T x) "
                       "{ return x != x; }\n")
            continue
        out.append(f"__device__ __forceinline__ float nna_{f}(float x) {{ return {f}f(x); }}\n"
                   f"__device__ __forceinline__ double nna_{f}(double x) {{ return {f}(x); }}\n")
    return "".join(out)
