"""The loss scaler's kernel (``ops/unscale.py``): each gradient unscaled in one pass that
also flags a non-finite element in a shared one-element buffer (benign race: every writer
stores 1), so a step's check is one launch per gradient and no reduction."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...registry import register_kernel
from .cltypes import cltype, header, index_type
from .device import device_of
from .programs import launch

_SRC = """{hdr}__kernel void amp_unscale(__global {g}* g, __global float* found,
        const float inv, const {it} n, const {it} base, const long fbase) {{
    const {it} i = get_global_id(0);
    if (i >= n) return;
    const float v = (float)({load}) * inv;
    {store}
    if (!isfinite(v)) found[fbase] = 1.0f;
}}
"""


@register_kernel("amp_unscale", "opencl")
def amp_unscale(targets: Any, inputs: Any, inv_scale: float) -> None:
    *gs, found = targets
    inv = np.float32(inv_scale)
    for g in gs:
        n = g.size
        if n == 0:
            continue
        dev = device_of(g)
        t = cltype(g.dtype)
        it = index_type(n + g.offset // g.dtype.itemsize)
        src = _SRC.format(hdr=header(t), g=t.storage, it=it,
                          load=t.load("g", "base + i"),
                          store=t.store("g", "base + i", f"({t.calc})v"))
        scalar = np.int32 if it == "int" else np.int64
        if not g.flags.c_contiguous:
            raise ValueError("amp_unscale: gradients must be C-contiguous")
        args = [g.base_data, found.base_data, inv, scalar(n),
                scalar(g.offset // g.dtype.itemsize), np.int64(found.offset // 4)]
        launch(dev.queue, dev.programs.kernel(src, "amp_unscale"), n, args)
