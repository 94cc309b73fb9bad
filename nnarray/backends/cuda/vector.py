"""Large elementwise work at the memory's speed: vectorized grid-stride kernels.

CuPy's elementwise kernels move one element per thread; on an H200 ``y = 2x`` over 2^26
float32 ran at 1.67 TB/s, 40% of a device copy (4.17 TB/s), where a kernel loading
``float4`` in a grid-stride loop ran at 3.82 TB/s (91%; ``benchmarks/cuda_bandwidth.py``).
So C-contiguous float32/float64 operands of at least ``MIN_SIZE`` elements, aligned for
16-byte loads, go through the kernels below: one per (function, operand layout, dtype),
generated from the C expressions of the functions' declarations (``ops/ufuncs.py``).
Everything else (other dtypes, broadcasting, strided views, small arrays) keeps CuPy's
kernels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops.ufuncs import BY_NAME, ROWS
from . import raw
from .cmath import math_names, overloads, render
from .elementwise import coerce
from .scope import register, registered

#: The declared functions (``ops/ufuncs.py``) that run here (``Hints.cuda_vector``); each
#: kernel computes the row's C expression, its math through the ``nna_<fn>`` float/double
#: overloads.
BINARY = tuple(r.name for r in ROWS if r.hints.cuda_vector and r.arity == 2)
UNARY = tuple(r.name for r in ROWS if r.hints.cuda_vector and r.arity == 1)
#: dtype -> (C type, vector type, lanes, name suffix).
TYPES = {np.dtype(np.float32): ("float", "float4", 4, "f32"),
         np.dtype(np.float64): ("double", "double2", 2, "f64")}
#: Fewer elements than this stay with CuPy (launch cost dominates there anyway).
MIN_SIZE = 1 << 18
def expression(op: str) -> str:
    """Row ``op``'s C expression (float) as CUDA C."""
    return render(BY_NAME[op].c_expr(np.dtype(np.float32)))


_HEAD = r"""
#ifndef __CUDACC__
struct float4 { float x, y, z, w; };
struct double2 { double x, y; };
#endif
""" + overloads(math_names(BINARY + UNARY)) + r"""
template <typename T, typename V, int W, typename F>
__device__ __forceinline__ void nna_map(const T* __restrict__ a, const T* __restrict__ b,
                                        T s, int mode, T* __restrict__ y, long long n, F f) {
    /* mode 0: f(a, b); 1: f(a, s); 2: f(s, a); 3: f(a) */
    const long long start = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long step = (long long)gridDim.x * blockDim.x, nv = n / W;
    const V* av = (const V*)a;
    const V* bv = (const V*)b;
    V* yv = (V*)y;
    for (long long i = start; i < nv; i += step) {
        V u = av[i], v;
        if (mode == 0) v = bv[i];
        T* p = (T*)&u;
        const T* q = (const T*)&v;
#pragma unroll
        for (int j = 0; j < W; ++j)
            p[j] = mode == 0 ? f(p[j], q[j]) : mode == 1 ? f(p[j], s) : mode == 2 ? f(s, p[j])
                                                                      : f(p[j], p[j]);
        yv[i] = u;
    }
    for (long long i = nv * W + start; i < n; i += step)
        y[i] = mode == 0 ? f(a[i], b[i]) : mode == 1 ? f(a[i], s) : mode == 2 ? f(s, a[i])
                                                                  : f(a[i], a[i]);
}
"""


def _functor(op: str, expr: str) -> str:
    return (f"struct nna_f_{op} {{ template <typename T> __device__ __forceinline__ "
            f"T operator()(T x, T y) const {{ return {expr}; }} }};\n")


def kernel_name(op: str, dtype: np.dtype) -> str:
    """The ``__global__`` function computing ``op`` on ``dtype``."""
    return f"nna_vec_{op}_{TYPES[np.dtype(dtype)][3]}"


def _source() -> str:
    parts = [_HEAD]
    for op in BINARY + UNARY:
        parts.append(_functor(op, expression(op)))
        for dt, (c, v, w, _) in TYPES.items():
            parts.append(
                f'extern "C" __global__ void {kernel_name(op, dt)}(const {c}* a, const {c}* b, '
                f"{c} s, int mode, {c}* y, long long n) {{ "
                f"nna_map<{c}, {v}, {w}>(a, b, s, mode, y, n, nna_f_{op}()); }}\n")
    return "".join(parts)


SOURCE = raw.Source(_source(), by="plain")


def _eligible(x: Any, cp: Any) -> bool:
    return type(x) is cp.ndarray and x.dtype in TYPES and x.size >= MIN_SIZE and \
        x.flags.c_contiguous and x.data.ptr % 16 == 0


def _launch(cp: Any, op: str, a: Any, b: Any, s: Any, mode: int, out: Any) -> Any:
    y = cp.empty_like(a) if out is None else out
    t = a.dtype.type
    lanes = TYPES[a.dtype][2]  # one work item per vector: no thread idles past the data
    raw.launch(raw.kernel_plain(SOURCE, kernel_name(op, a.dtype)), -(-a.size // lanes),
               (a, a if b is None else b, t(0 if s is None else s), np.int32(mode), y,
                np.int64(a.size)))
    return y


def _fits(out: Any, a: Any) -> bool:
    return out is None or (out.dtype == a.dtype and out.shape == a.shape and
                           out.flags.c_contiguous and out.data.ptr % 16 == 0)


def _binary(op: str, generic: Any, cp: Any) -> Any:
    def k(a, b, out=None):
        if type(a) is cp.ndarray and type(b) is cp.ndarray:
            if a.shape == b.shape and a.dtype == b.dtype and _eligible(a, cp) and \
                    _eligible(b, cp) and _fits(out, a):
                return _launch(cp, op, a, b, None, 0, out)
        elif type(a) is cp.ndarray or type(b) is cp.ndarray:
            arr, first = (a, False) if type(a) is cp.ndarray else (b, True)
            if _eligible(arr, cp) and _fits(out, arr):
                x, y = coerce(a, b)  # the scalar as a numpy scalar of the result dtype
                arr2, s = (y, x) if first else (x, y)
                if arr2 is arr and s.dtype == arr.dtype:
                    return _launch(cp, op, arr, None, s, 2 if first else 1, out)
        return generic(a, b, out=out)
    return k


def _unary(op: str, generic: Any, cp: Any) -> Any:
    def k(x, out=None):
        if _eligible(x, cp) and _fits(out, x):
            return _launch(cp, op, x, None, None, 3, out)
        return generic(x) if out is None else generic(x, out=out)
    small = getattr(generic, "small", None)
    if small is not None:  # below MIN_SIZE the fast path calls CuPy's ufunc itself
        k.small = (small[0], MIN_SIZE)  # type: ignore[attr-defined]
    return k


def register_vector(cp: Any) -> None:
    """Route large contiguous float work of ``BINARY``/``UNARY`` to the vector kernels."""
    kernels = registered()
    for op in BINARY:
        register(op)(_binary(op, kernels[op], cp))
    for op in UNARY:
        register(op)(_unary(op, kernels[op], cp))
