"""Shape ops as one strided copy kernel: reshape, transpose, broadcast_to, slice,
concatenate (pyopencl.array's copies ignore strides, so we write our own).

``copy(dev, src, src_off, src_strides, dst, dst_off, dst_strides, shape)`` walks
``shape`` in C order and writes ``dst[dst_off + c.dst_strides] = src[src_off +
c.src_strides]`` (strides in elements, any sign, 0 broadcasts), converting dtypes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...registry import register_kernel
from .cltypes import cltype, convert, header, index_type
from .indexing import (
    broadcast_strides,
    c_strides,
    coalesce,
    index_args,
    index_params,
    offsets_code,
    span,
)
from .programs import launch
from .queues import device_of

if TYPE_CHECKING:
    from .device import OpenCLDevice


def _source(st: Any, dt: Any, rank: int, idx: str) -> str:
    return (header(st, dt) + "__kernel void copy(__global const " + st.storage
            + "* restrict src, __global " + dt.storage + "* restrict dst, const " + idx
            + " n, const " + idx + " src_off, const " + idx + " dst_off, "
            + index_params(rank, 2, idx) + ") {\n    const " + idx + " i = get_global_id(0);\n"
            "    if (i >= n) return;\n    " + offsets_code(rank, 2, idx) + "\n    "
            + dt.store("dst", "dst_off + o1", convert(st.load("src", "src_off + o0"), st, dt))
            + "\n}\n")


def copy(dev: OpenCLDevice, src: Any, src_off: int, src_strides: tuple[int, ...], dst: Any,
         dst_off: int, dst_strides: tuple[int, ...], shape: tuple[int, ...]) -> Any:
    """Strided copy (see module doc); returns ``dst``."""
    n = 1
    for s in shape:
        n *= s
    if n == 0:
        return dst
    dims, (ss, ds) = coalesce(shape, [src_strides, dst_strides])
    if not dims:
        dims, ss, ds = (1,), (0,), (0,)
    idx = index_type(span(dims, [ss], src_off), span(dims, [ds], dst_off))
    st, dt = cltype(src.dtype), cltype(dst.dtype)
    dev.check_dtype(src.dtype, "copy")
    dev.check_dtype(dst.dtype, "copy")
    kernel = dev.programs.kernel(_source(st, dt, len(dims), idx), "copy")
    t = np.int32 if idx == "int" else np.int64
    launch(dev.queue, kernel, n, [src.base_data, dst.base_data, t(n), t(src_off), t(dst_off),
                                  *index_args(dims, [ss, ds], idx)])
    return dst


def gather(src: Any, src_off: int, src_strides: tuple[int, ...], shape: tuple[int, ...],
           dtype: Any = None) -> Any:
    """A new C-contiguous array of ``shape`` read from ``src`` with the given strides."""
    dev = device_of(src)
    out = dev.empty(shape, src.dtype if dtype is None else np.dtype(dtype))
    return copy(dev, src, src_off, src_strides, out, 0, c_strides(shape), shape)


@register_kernel("reshape", "opencl")
def reshape(x, shape):
    dev = device_of(x)
    out = dev.empty(tuple(shape), x.dtype)
    if x.size:
        with dev.lock:
            dev._copy(dev.queue, out.base_data, x.base_data, byte_count=x.nbytes)
    return out


@register_kernel("transpose", "opencl")
def transpose(x, axes):
    st = c_strides(x.shape)
    return gather(x, 0, tuple(st[a] for a in axes), tuple(x.shape[a] for a in axes))


@register_kernel("broadcast_to", "opencl")
def broadcast_to(x, shape):
    return gather(x, 0, broadcast_strides(x.shape, tuple(shape)), tuple(shape))


@register_kernel("slice", "opencl")
def slice_(x, start, step, count, shape):
    st = c_strides(x.shape)
    off = sum(b * s for b, s in zip(start, st))
    dev = device_of(x)
    out = dev.empty(tuple(shape), x.dtype)  # same size as ``count``: both C-contiguous
    return copy(dev, x, off, tuple(k * s for k, s in zip(step, st)), out, 0,
                c_strides(tuple(count)), tuple(count))


@register_kernel("concatenate", "opencl")
def concatenate(*xs, axis, dtype):
    dev = device_of(xs[0])
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    out = dev.empty(tuple(shape), dtype)
    ost = c_strides(out.shape)
    pos = 0
    for x in xs:
        copy(dev, x, 0, c_strides(x.shape), out, pos * ost[axis], ost, x.shape)
        pos += x.shape[axis]
    return out
