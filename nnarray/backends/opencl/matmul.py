"""matmul with numpy's rules, reduced to one batched GEMM call.

1-D operands are promoted (and the added axis dropped from the result's shape, which is
free for a C-contiguous result); batch dimensions broadcast. An operand whose batch is
all ones is passed with batch stride 0; one broadcast only partly is materialized first.
Floats go to ``gemm.Gemm`` (float16 through float32); int and bool products use a
simple kernel of ours, one work-item per output element.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...dtypes import promote
from ...registry import backend_kernels, register_kernel
from .cltypes import CLType, cltype, header
from .complex import part
from .device import OpenCLDevice, device_of
from .elementwise import cast
from .gemm import Gemm
from .programs import launch
from .shape import broadcast_to, transpose

_F32 = np.dtype(np.float32)

_INT = """{hdr}__kernel void imatmul(__global const {s}* restrict A, __global const {s}* restrict B,
                      __global {s}* C, const long m, const long n, const long k,
                      const long sa, const long sb, const long total) {{
    const long g = get_global_id(0);
    if (g >= total) return;
    const long j = g % n, q = g / n, i = q % m, bt = q / m;
    {s} acc = 0;
    for (long p = 0; p < k; ++p) {{
      const {s} x = A[bt * sa + i * k + p], y = B[bt * sb + p * n + j];
      {step}
    }}
    C[g] = acc;
}}
"""


def _gemm(dev: OpenCLDevice) -> Gemm:
    g = dev.plans.get("gemm")
    if g is None:
        g = dev.plans["gemm"] = Gemm(dev.context, dev.cl_device, dev.programs.build)
    return g


def _batched(x: Any, lead: tuple[int, ...], batch: tuple[int, ...], mat: tuple[int, int]
             ) -> tuple[Any, int]:
    """``x`` laid out for a batch of ``batch`` and its batch stride in elements."""
    if int(np.prod(lead, dtype=np.int64)) == 1:
        return x, 0
    full = (1,) * (len(batch) - len(lead)) + lead
    if full != batch:
        x = broadcast_to(x.reshape(full + mat), batch + mat)
    return x, mat[0] * mat[1]


def _int_matmul(dev: OpenCLDevice, t: CLType, a, b, out, batch, m, n, k, sa, sb) -> None:
    step = "acc |= x & y;" if t.is_bool else "acc += x * y;"
    src = _INT.format(hdr=header(t), s=t.storage, step=step)
    L = np.int64
    launch(dev.queue, dev.programs.kernel(src, "imatmul"), out.size,
           [a.base_data, b.base_data, out.base_data, L(m), L(n), L(k), L(sa), L(sb),
            L(out.size)])


def _swap_last(x: Any) -> Any:
    """A C-contiguous copy with the last two axes swapped (the GEMM kernels take
    contiguous operands)."""
    n = x.ndim
    return transpose(x, tuple(range(n - 2)) + (n - 1, n - 2))


def _in_place(dev: OpenCLDevice, a: Any, b: Any, transpose_a: bool, transpose_b: bool
              ) -> tuple[bool, bool]:
    """Which transposed operands the float GEMM reads in place: A always (2-D or batched),
    B where ``Gemm.reads_transposed_b`` says so for this product (then A is copied)."""
    if np.dtype(a.dtype).kind != "f" or np.dtype(b.dtype).kind != "f":
        return False, False
    ta = bool(transpose_a) and a.ndim >= 2
    if not transpose_b or b.ndim < 2:
        return ta, False
    m = 1 if a.ndim == 1 else a.shape[-1 if transpose_a else -2]
    n, k = b.shape[-2], b.shape[-1]
    name = "double" if np.result_type(a.dtype, b.dtype) == np.float64 else "float"
    tb = name != "double" or _gemm(dev).fp64
    tb = tb and _gemm(dev).reads_transposed_b(name, m, n, k)
    return (False, True) if tb else (ta, False)


@register_kernel("matmul", "opencl")
def matmul(a, b, transpose_a=False, transpose_b=False):
    dev = device_of(a)
    key = ("matmul", a.dtype, a.shape, b.dtype, b.shape, transpose_a, transpose_b)
    plan = dev.plans.get(key)
    if plan is not None:  # a float product whose operands go to the GEMM as they are
        shape, args = plan
        out = dev.empty(shape, a.dtype)
        with dev.lock:  # see device.py: one thread enqueues at a time
            _gemm(dev)(dev.queue, a, b, out, *args)
        return out
    return _matmul(dev, key, a, b, transpose_a, transpose_b)


def _matmul(dev: OpenCLDevice, key: tuple, a: Any, b: Any, transpose_a: bool,
            transpose_b: bool) -> Any:
    """``matmul`` on its first call for these operand dtypes, shapes and flags; where
    both operands go to the float GEMM unchanged, it stores the call's arguments under
    ``key`` (this preparation's Python outweighs a small product's GEMM)."""
    a0, b0 = a, b
    ta, tb = _in_place(dev, a, b, transpose_a, transpose_b)
    if transpose_a and not ta:
        a = _swap_last(a)
    if transpose_b and not tb:
        b = _swap_last(b)
    d = promote("matmul", a, b)
    dev.check_dtype(d, "matmul")
    sa = (1,) + a.shape if a.ndim == 1 else a.shape
    if ta:
        sa = sa[:-2] + (sa[-1], sa[-2])
    sb = b.shape + (1,) if b.ndim == 1 else b.shape
    if tb:
        sb = sb[:-2] + (sb[-1], sb[-2])
    m, k, n = sa[-2], sa[-1], sb[-1]
    batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
    shape = batch + (m,) * (a.ndim > 1) + (n,) * (b.ndim > 1)
    out = dev.empty(shape, d)
    if out.size == 0:
        return out
    if k == 0:
        return dev.full(shape, d, 0)
    if d.kind == "c":
        return _complex_matmul(a, b, d, out)
    t = cltype(d)
    work = d if d.kind != "f" or d.itemsize >= 4 else _F32  # float16 runs as float32
    if a.dtype != work:
        a = cast(a, work)
    if b.dtype != work:
        b = cast(b, work)
    a, stride_a = _batched(a, sa[:-2], batch, (k, m) if ta else (m, k))
    b, stride_b = _batched(b, sb[:-2], batch, (n, k) if tb else (k, n))
    nb = int(np.prod(batch, dtype=np.int64))
    if d.kind != "f":
        _int_matmul(dev, t, a, b, out, nb, m, n, k, stride_a, stride_b)
        return out
    gemm = _gemm(dev)
    if work == d:
        args = (nb, m, n, k, stride_a, stride_b, ta, tb)
        if a is a0 and b is b0 and a.dtype == b.dtype == d:
            dev.plans[key] = (shape, args)
        with dev.lock:  # see device.py: one thread enqueues at a time
            gemm(dev.queue, a, b, out, *args)
        return out
    tmp = dev.empty(shape, work)
    with dev.lock:
        gemm(dev.queue, a, b, tmp, nb, m, n, k, stride_a, stride_b, ta, tb)
    return cast(tmp, d, out)



def _complex_matmul(a, b, d: np.dtype, out):
    """``a @ b`` of complex ``d`` as four real GEMMs of the parts (the real GEMM kernels
    at full speed; no complex GEMM kernel): ``(ar br - ai bi) + i (ar bi + ai br)``."""
    k = backend_kernels("opencl")
    if a.dtype != d:
        a = cast(a, d)
    if b.dtype != d:
        b = cast(b, d)
    ar, ai, br, bi = part("real", a), part("imag", a), part("real", b), part("imag", b)
    re = k["sub"](matmul(ar, br), matmul(ai, bi))
    im = k["add"](matmul(ar, bi), matmul(ai, br))
    return cast(k["make_complex"](re, im), d, out)
