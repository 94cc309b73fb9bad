"""Scatter: ``x.flat[indices] = value`` (advanced-index assignment).

One work-item per index; the core has validated and normalized every index (in range,
non-negative) and broadcast the value to the indices' length. Where an index repeats,
which write lands is unspecified (any-wins, as the Array API allows).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...registry import register_kernel
from .cltypes import convert, header
from .programs import launch
from .setitem import value_types

_SRC = """{hdr}__kernel void scatter(__global {x}* x, __global const long* restrict idx,
        {vparam}, const long n, const long base) {{
    const long i = get_global_id(0);
    if (i >= n) return;
    {store}
}}
"""


@register_kernel("scatter", "opencl")
def scatter(indices: Any, value: Any, out: Any) -> Any:
    n = indices.shape[0]
    if n == 0:
        return out
    dev, xt, vt, is_arr, vparam = value_types("scatter", out, value)
    load = convert(vt.load("v", "i"), vt, xt) if is_arr else "v"
    src = _SRC.format(hdr=header(xt, vt), x=xt.storage, vparam=vparam,
                      store=xt.store("x", "base + idx[i]", load))
    base = out.offset // out.dtype.itemsize
    args = [out.base_data, indices.base_data,
            value.base_data if is_arr else xt.scalar(value), np.int64(n), np.int64(base)]
    launch(dev.queue, dev.programs.kernel(src, "scatter"), n, args)
    return out
