"""rand and randn from a counter-based generator (Philox4x32-10, Salmon et al. 2011),
the numbers of ``nnarray.philox`` (the numpy backend's), in its layout and formulas.

Element block ``g`` (4 float32 or 2 float64 values) is Philox of the counter ``(g_lo,
g_hi, stream, 0)`` under the key ``(seed_lo, seed_hi)``: the numbers depend only on the
seed and the position, never on the launch geometry or the call site. We write our own
kernel rather than use ``pyopencl.clrandom`` so that the stream is fixed by this file
(not by a library version) and every dtype, float16 included, comes from one kernel.
randn uses the Box-Muller transform on pairs of uniforms. ``FP_CONTRACT OFF`` keeps
``u * scale + shift`` two roundings (no fused multiply-add), as numpy computes it, and
float32 square roots are built correctly rounded where the device offers it.
"""

from __future__ import annotations

import numpy as np

from ...registry import register_kernel
from .cltypes import cltype, header
from .device import OpenCLDevice
from .programs import launch

_PHILOX = """
static uint4 philox(uint4 c, uint2 k) {
  for (int r = 0; r < 10; ++r) {
    const uint hi0 = mul_hi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
    const uint hi1 = mul_hi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
    c = (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    k += (uint2)(0x9E3779B9u, 0xBB67AE85u);
  }
  return c;
}
"""

_KERNEL = """{hdr}{philox}
#pragma OPENCL FP_CONTRACT OFF
#define U24(x) ((float)((x) >> 8) * 0x1.0p-24f)
#define U24P(x) ((float)(((x) >> 8) + 1) * 0x1.0p-24f)
#define U53(a, b) ((double)(((ulong)((a) >> 5) << 26) | ((b) >> 6)) * 0x1.0p-53)
#define U53P(a, b) ((double)((((ulong)((a) >> 5) << 26) | ((b) >> 6)) + 1) * 0x1.0p-53)
__kernel void {name}(__global {s}* out, const long n, const uint k0, const uint k1,
                     const {c} scale, const {c} shift) {{
    const long g = get_global_id(0);
    const long first = g * {per};
    if (first >= n) return;
    const uint4 w = philox((uint4)((uint)g, (uint)(g >> 32), {stream}u, 0u), (uint2)(k0, k1));
    {c} v[{per}];
    {body}
    for (int j = 0; j < {per}; ++j)
      if (first + j < n) {store}
}}
"""

_BODIES = {
    ("rand", 4): "v[0] = U24(w.x); v[1] = U24(w.y); v[2] = U24(w.z); v[3] = U24(w.w);",
    ("rand", 2): "v[0] = U53(w.x, w.y); v[1] = U53(w.z, w.w);",
    ("randn", 4): """const float r0 = sqrt(-2.0f * log(U24P(w.x))), t0 = 2.0f * M_PI_F * U24(w.y);
    const float r1 = sqrt(-2.0f * log(U24P(w.z))), t1 = 2.0f * M_PI_F * U24(w.w);
    v[0] = r0 * cos(t0); v[1] = r0 * sin(t0); v[2] = r1 * cos(t1); v[3] = r1 * sin(t1);""",
    ("randn", 2): """const double r = sqrt(-2.0 * log(U53P(w.x, w.y)));
    const double t = 2.0 * M_PI * U53(w.z, w.w);
    v[0] = r * cos(t); v[1] = r * sin(t);""",
}


def _device() -> OpenCLDevice:
    """The device of the current context (the first one when it is not an opencl one)."""
    from ... import backends
    from ...context import get_current_context
    ctx = get_current_context()
    return backends.get_device("opencl", ctx.device_id if ctx.backend == "opencl" else 0)


def _options(dev: OpenCLDevice) -> str:
    """Correctly rounded float32 sqrt (and division) where the device supports it."""
    import pyopencl as cl
    ok = dev.cl_device.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT
    return "-cl-fp32-correctly-rounded-divide-sqrt" if ok else ""


def _generate(name: str, shape, a: float, b: float, seed: int, dtype) -> object:
    dev = _device()
    dtype = np.dtype(dtype)
    dev.check_dtype(dtype, name)
    t = cltype(dtype)
    per = 2 if t.calc == "double" else 4
    out = dev.empty(tuple(shape), dtype)
    n = out.size
    if n:
        src = _KERNEL.format(hdr=header(t), philox=_PHILOX, name=name, s=t.storage, c=t.calc,
                             per=per, stream=0 if name == "rand" else 1,
                             body=_BODIES[(name, per)],
                             store=t.store("out", "first + j", "v[j] * scale + shift"))
        seed = int(seed) & (2**64 - 1)
        launch(dev.queue, dev.programs.kernel(src, name, _options(dev)), -(-n // per),
               [out.base_data, np.int64(n), np.uint32(seed & 0xFFFFFFFF), np.uint32(seed >> 32),
                t.scalar(a), t.scalar(b)])
    return out


@register_kernel("rand", "opencl")
def rand(shape, low, high, seed, dtype):
    return _generate("rand", shape, high - low, low, seed, dtype)


@register_kernel("randn", "opencl")
def randn(shape, mu, sigma, seed, dtype):
    return _generate("randn", shape, sigma, mu, seed, dtype)
