"""``x[key] = value`` for basic indices: one kernel writing through the view's strides.

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


@register_kernel("setitem", "opencl")
def setitem(value: Any, key: Any, view: tuple, out: Any) -> Any:
    offset, shape, strides = view
    n = int(np.prod(shape, dtype=np.int64))
    if n == 0:
        return out
    dev = device_of(out)
    xt = cltype(out.dtype)
    is_arr = type(value) is cla.Array
    vt = cltype(value.dtype) if is_arr else xt
    for t in (xt.dtype, vt.dtype):
        dev.check_dtype(t, "setitem")
    vst = broadcast_strides(value.shape, shape) if is_arr else (0,) * len(shape)
    dims, sts = coalesce(shape, [strides, vst])
    if not dims:
        dims, sts = (1,), [(0,), (0,)]
    rank = len(dims)
    params = [f"__global {xt.storage}* x",
              f"__global const {vt.storage}* restrict v" if is_arr else f"const {xt.calc} v",
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
