"""im2col and col2im (pyopencl has neither): one work-item per output element.

col2im gathers instead of scattering: each image element sums the columns that read it,
so no atomics are needed and the result is deterministic.
"""

from __future__ import annotations

import numpy as np

from ...registry import register_kernel
from .cltypes import cltype, header
from .device import device_of
from .programs import launch

_GEOM = ("const long N, const long C, const long H, const long W, const long KH, "
         "const long KW, const long SH, const long SW, const long PH, const long PW, "
         "const long DH, const long DW, const long OH, const long OW")

_IM2COL = """{hdr}__kernel void im2col(__global const {s}* restrict x, __global {s}* out,
                     const {c} pad_value, {geom}) {{
    const long g = get_global_id(0);
    if (g >= N * C * KH * KW * OH * OW) return;
    long q = g;
    const long ow = q % OW; q /= OW;
    const long oh = q % OH; q /= OH;
    const long j = q % KW; q /= KW;
    const long i = q % KH; q /= KH;
    const long c = q % C; const long n = q / C;
    const long h = oh * SH - PH + i * DH, w = ow * SW - PW + j * DW;
    const {c} v = (h >= 0 && h < H && w >= 0 && w < W)
        ? {load} : pad_value;
    {store}
}}
"""

_COL2IM = """{hdr}__kernel void col2im(__global const {s}* restrict cols, __global {s}* out,
                     {geom}) {{
    const long g = get_global_id(0);
    if (g >= N * C * H * W) return;
    long q = g;
    const long w = q % W; q /= W;
    const long h = q % H; q /= H;
    const long c = q % C; const long n = q / C;
    {acc} acc = 0;
    for (long i = 0; i < KH; ++i) {{
      const long hh = h + PH - i * DH;
      if (hh < 0 || hh % SH) continue;
      const long oh = hh / SH;
      if (oh >= OH) continue;
      for (long j = 0; j < KW; ++j) {{
        const long ww = w + PW - j * DW;
        if (ww < 0 || ww % SW) continue;
        const long ow = ww / SW;
        if (ow >= OW) continue;
        acc += {load};
      }}
    }}
    {store}
}}
"""


def _geometry(n, c, h, w, kernel, stride, pad, dilation) -> tuple[list, int, int]:
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, pad, dilation
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    g = [n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow]
    return [np.int64(v) for v in g], oh, ow


@register_kernel("im2col", "opencl")
def im2col(x, kernel, stride, pad, dilation, pad_value):
    dev = device_of(x)
    dev.check_dtype(x.dtype, "im2col")
    n, c, h, w = x.shape
    geom, oh, ow = _geometry(n, c, h, w, kernel, stride, pad, dilation)
    out = dev.empty((n, c * kernel[0] * kernel[1], oh * ow), x.dtype)
    t = cltype(x.dtype)
    src = _IM2COL.format(hdr=header(t), s=t.storage, c=t.calc, geom=_GEOM,
                         load=t.load("x", "((n * C + c) * H + h) * W + w"),
                         store=t.store("out", "g", "v"))
    if out.size:
        launch(dev.queue, dev.programs.kernel(src, "im2col"), out.size,
               [x.base_data, out.base_data, t.scalar(pad_value), *geom])
    return out


@register_kernel("col2im", "opencl")
def col2im(cols, size, kernel, stride, pad, dilation):
    dev = device_of(cols)
    dev.check_dtype(cols.dtype, "col2im")
    c, h, w = size
    n = cols.shape[0]
    geom, oh, ow = _geometry(n, c, h, w, kernel, stride, pad, dilation)
    out = dev.empty((n, c, h, w), cols.dtype)
    t = cltype(cols.dtype)
    load = t.load("cols", "((n * C + c) * KH * KW + i * KW + j) * OH * OW + oh * OW + ow")
    src = _COL2IM.format(hdr=header(t), s=t.storage, acc=t.calc, geom=_GEOM, load=load,
                         store=t.store("out", "g", "acc"))
    if out.size:
        launch(dev.queue, dev.programs.kernel(src, "col2im"), out.size,
               [cols.base_data, out.base_data, *geom])
    return out
