"""Indexing kernels. ``x[key] = value`` for basic indices: one kernel writing through
the view's strides. ``take``: a gather along one axis.

The core resolves the key to a view of ``x`` (element offset, shape, strides, possibly
negative); the value is a native array broadcast to the view's shape, or a scalar.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl.array as cla

from ...registry import register_kernel
from .cltypes import cltype, convert, header
from .device import device_of
from .indexing import broadcast_strides, coalesce, index_params, offsets_code
from .programs import launch


def value_types(op: str, out: Any, value: Any) -> tuple:
    """``(device, target's cltype, value's cltype, whether the value is an array, the
    value's kernel parameter)`` for a kernel writing ``value`` (an array or a scalar) into
    ``out``; both dtypes checked against the device."""
    dev = device_of(out)
    xt = cltype(out.dtype)
    is_arr = isinstance(value, cla.Array)
    vt = cltype(value.dtype) if is_arr else xt
    for t in (xt.dtype, vt.dtype):
        dev.check_dtype(t, op)
    vparam = f"__global const {vt.storage}* restrict v" if is_arr else f"const {xt.calc} v"
    return dev, xt, vt, is_arr, vparam


@register_kernel("setitem", "opencl")
def setitem(value: Any, key: Any, view: tuple, out: Any) -> Any:
    offset, shape, strides = view
    n = int(np.prod(shape, dtype=np.int64))
    if n == 0:
        return out
    dev, xt, vt, is_arr, vparam = value_types("setitem", out, value)
    vst = broadcast_strides(value.shape, shape) if is_arr else (0,) * len(shape)
    dims, sts = coalesce(shape, [strides, vst])
    if not dims:
        dims, sts = (1,), [(0,), (0,)]
    rank = len(dims)
    params = [f"__global {xt.storage}* x",
              vparam,
              "const long n", "const long base", index_params(rank, 2, "long")]
    load = convert(vt.load("v", "o1"), vt, xt) if is_arr else "v"
    src = (header(xt, vt) + "__kernel void setitem(" + ", ".join(params) + ") {\n    "
           "const long i = get_global_id(0);\n    if (i >= n) return;\n    "
           + offsets_code(rank, 2, "long") + "\n    " + xt.store("x", "base + o0", load)
           + "\n}\n")
    L = np.int64
    base = offset + out.offset // out.dtype.itemsize
    args = [out.base_data, value.base_data if is_arr else xt.scalar(value), L(n), L(base)]
    args += [L(d) for d in dims[1:]] + [L(s) for st in sts for s in st]
    launch(dev.queue, dev.programs.kernel(src, "setitem"), n, args)
    return out


_TAKE = """{hdr}__kernel void take(__global {s}* out, __global const {s}* restrict x,
                   __global const {i}* restrict idx, const long n, const long k,
                   const long len, const long inner) {{
    const long g = get_global_id(0);
    if (g >= n) return;
    const long o = g / (k * inner), r = g - o * k * inner, j = r / inner, e = r - j * inner;
    long t = (long)idx[j];
    if (t < 0) t += len;
    if (t < 0 || t >= len) {{ {zero} return; }}
    {copy}
}}
"""


@register_kernel("take", "opencl")
def take(x: Any, indices: Any, axis: int) -> Any:
    """One work-item per output element; an index out of range writes 0 (never reads
    outside ``x``)."""
    dev = device_of(x)
    t = cltype(x.dtype)
    it = cltype(indices.dtype)
    k = indices.shape[0]
    shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
    out = dev.empty(shape, x.dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if n == 0:
        return out
    inner = int(np.prod(x.shape[axis + 1:], dtype=np.int64))
    length = x.shape[axis]
    src = _TAKE.format(hdr=header(t), s=t.storage, i=it.storage,
                       zero=t.store("out", "g", f"({t.calc})0"),
                       copy=t.store("out", "g", t.load("x", "(o * len + t) * inner + e")))
    L = np.int64
    launch(dev.queue, dev.programs.kernel(src, "take"), n,
           [out.base_data, x.base_data, indices.base_data, L(n), L(k), L(length), L(inner)])
    return out
