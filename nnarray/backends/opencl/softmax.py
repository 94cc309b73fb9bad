"""softmax, log_softmax, softmax_cross_entropy and one_hot (no pyopencl equivalent).

The input is viewed as ``(outer, A, inner)`` around the softmax axis; one work-item per
``(outer, inner)`` row makes three passes over its ``A`` elements (max, sum of exp,
write), in the dtype's compute type like numpy.
"""

from __future__ import annotations

import numpy as np

from ...registry import register_kernel
from .cltypes import CLType, cltype, convert, header
from .device import device_of
from .programs import launch

_ROW = """{hdr}__kernel void {name}(__global const {s}* restrict x, {extra}__global {o}* out,
                     const long rows, const long A, const long inner) {{
    const long g = get_global_id(0);
    if (g >= rows) return;
    const long q = g / inner;
    const long base = q * A * inner + (g - q * inner);
    {c} m = -INFINITY;
    for (long a = 0; a < A; ++a) {{
      const {c} v = {load};
      m = (v > m || isnan(v)) ? v : m;
    }}
    {c} s = 0;
    for (long a = 0; a < A; ++a) s += exp({load} - m);
    {tail}
}}
"""


def _row_source(name: str, t: CLType, out_t: CLType, tail: str, extra: str = "") -> str:
    return _ROW.format(hdr=header(t, out_t), name=name, s=t.storage, o=out_t.storage, c=t.calc,
                       extra=extra, load=t.load("x", "base + a * inner"), tail=tail)


def _rows(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
    return outer, shape[axis], inner


def _run(name: str, src: str, x, out, axis: int, extra: list) -> object:
    dev = device_of(x)
    dev.check_dtype(x.dtype, name)
    outer, A, inner = _rows(x.shape, axis)
    rows = outer * inner
    if rows and x.size:
        L = np.int64
        launch(dev.queue, dev.programs.kernel(src, name), rows,
               [x.base_data, *extra, out.base_data, L(rows), L(A), L(max(inner, 1))])
    return out


@register_kernel("softmax", "opencl")
def softmax(x, axis):
    t = cltype(x.dtype)
    tail = ("for (long a = 0; a < A; ++a) "
            + t.store("out", "base + a * inner", f"exp({t.load('x', 'base + a * inner')} - m) / s"))
    return _run("softmax", _row_source("softmax", t, t, tail), x,
                device_of(x).empty(x.shape, x.dtype), axis, [])


@register_kernel("log_softmax", "opencl")
def log_softmax(x, axis):
    t = cltype(x.dtype)
    tail = (f"const {t.calc} ls = log(s);\n    for (long a = 0; a < A; ++a) "
            + t.store("out", "base + a * inner", f"{t.load('x', 'base + a * inner')} - m - ls"))
    return _run("log_softmax", _row_source("log_softmax", t, t, tail), x,
                device_of(x).empty(x.shape, x.dtype), axis, [])


@register_kernel("softmax_cross_entropy", "opencl")
def softmax_cross_entropy(x, t, axis):
    xt, lt = cltype(x.dtype), cltype(t.dtype)
    # An out-of-range label writes NaN and reports itself in the device's error buffer,
    # raised at the next synchronization (labels with a current host copy were checked
    # before this kernel: ops/softmax.py).
    tail = ("const long k = (long)lab[g];\n    "
            "if (k < 0 || k >= A) { err[0] = 1; err[1] = k; err[2] = A; }\n    "
            + xt.store("out", "g", f"(k < 0 || k >= A) ? ({xt.calc})NAN : "
                       f"-({xt.load('x', 'base + k * inner')} - m - log(s))"))
    src = _row_source("sce", xt, xt, tail, f"__global const {lt.storage}* restrict lab, "
                      "__global long* err, ")
    dev = device_of(x)
    out = dev.empty(t.shape, x.dtype)
    return _run("sce", src, x, out, axis,
                [t.base_data, dev.error_buffer("softmax_cross_entropy")])


_ONE_HOT = """__kernel void one_hot(__global const {s}* restrict t, __global {o}* out,
                      const long n, const long classes, const long inner) {{
    const long i = get_global_id(0);
    if (i >= n) return;
    const long in = i % inner, q = i / inner, c = q % classes, o = q / classes;
    {store}
}}
"""


@register_kernel("one_hot", "opencl")
def one_hot(t, num_classes, axis, dtype):
    dev = device_of(t)
    dev.check_dtype(dtype, "one_hot")
    shape = t.shape[:axis] + (num_classes,) + t.shape[axis:]
    out = dev.empty(shape, dtype)
    tt, ot = cltype(t.dtype), cltype(dtype)
    inner = int(np.prod(t.shape[axis:], dtype=np.int64))
    hit = convert("(long)t[o * inner + in] == c", cltype(np.bool_), ot)
    src = header(ot) + _ONE_HOT.format(s=tt.storage, o=ot.storage,
                                       store=ot.store("out", "i", hit))
    if out.size:
        L = np.int64
        launch(dev.queue, dev.programs.kernel(src, "one_hot"), out.size,
               [t.base_data, out.base_data, L(out.size), L(num_classes), L(inner)])
    return out
