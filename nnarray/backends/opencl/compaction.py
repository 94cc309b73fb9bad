"""Stream compaction: the flat positions of a mask's true elements.

The core has already run the (existing) ``cumulative_sum`` scan of the mask and read its
total to the host (one counted transfer); this kernel writes each true element's
position to the slot its inclusive prefix sum names, one work-item per mask element.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...registry import register_kernel
from .cltypes import cltype, header
from .device import device_of
from .programs import launch

_SRC = """{hdr}__kernel void mask_positions(__global const {m}* restrict mask,
        __global const long* restrict cs, __global long* out, const long n) {{
    const long i = get_global_id(0);
    if (i >= n) return;
    if ({load}) out[cs[i] - 1] = i;
}}
"""


@register_kernel("mask_positions", "opencl")
def mask_positions(mask: Any, cs: Any, count: int) -> Any:
    dev = device_of(mask)
    out = dev.empty((count,), np.dtype(np.int64))
    n = mask.shape[0]
    if count == 0 or n == 0:
        return out
    mt = cltype(mask.dtype)
    src = _SRC.format(hdr=header(mt), m=mt.storage, load=mt.load("mask", "i"))
    launch(dev.queue, dev.programs.kernel(src, "mask_positions"), n,
           [mask.base_data, cs.base_data, out.base_data, np.int64(n)])
    return out
