"""Scatter-add: ``out = zeros(size); out[indices] += values`` (the gradient of a gather).

One work-item per value, adding with a compare-and-swap loop on the float's bits
(32-bit: core ``atomic_cmpxchg``; 64-bit: ``cl_khr_int64_base_atomics``), so repeated
indices accumulate. The core hands float32 or float64 values (float16 is widened there)
and indices it checked; an index outside ``[0, size)`` is skipped all the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import DTypeError
from ...registry import register_kernel
from .device import device_of
from .programs import launch

_SRC = """{ext}__kernel void scatter_add(__global {t}* out, __global const {t}* restrict v,
        __global const long* restrict idx, const long n, const long size) {{
    const long i = get_global_id(0);
    if (i >= n) return;
    const long j = idx[i];
    if (j < 0 || j >= size) return;  /* the core checked; never write outside out */
    __global volatile {u}* p = (__global volatile {u}*)(out + j);
    union {{ {t} f; {u} u; }} old, nw;
    do {{
        old.f = out[j];
        nw.f = old.f + v[i];
    }} while ({cas}(p, old.u, nw.u) != old.u);
}}
"""

_TYPES = {np.dtype(np.float32): ("float", "uint", "atomic_cmpxchg", ""),
          np.dtype(np.float64): ("double", "ulong", "atom_cmpxchg",
                                 "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
                                 "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n")}


@register_kernel("scatter_add", "opencl")
def scatter_add(values: Any, indices: Any, size: int) -> Any:
    dev = device_of(values)
    if values.dtype not in _TYPES:
        raise DTypeError(f"scatter_add: OpenCL kernel takes float32 or float64, got "
                         f"{values.dtype}")
    dev.check_dtype(values.dtype, "scatter_add")
    out = dev.empty((size,), values.dtype)
    if size:
        out.fill(0, queue=dev.queue)
    n = indices.shape[0]
    if n == 0 or size == 0:
        return out
    t, u, cas, ext = _TYPES[values.dtype]
    src = _SRC.format(ext=ext, t=t, u=u, cas=cas)
    launch(dev.queue, dev.programs.kernel(src, "scatter_add"), n,
           [out.base_data, values.base_data, indices.base_data, np.int64(n),
            np.int64(size)])
    return out


@register_kernel("gather", "opencl")
def gather(x: Any, indices: Any) -> Any:
    """``x[indices]`` of a 1-D ``x`` (the ``take`` kernel along axis 0)."""
    from .setitem import take
    return take(x, indices, 0)
