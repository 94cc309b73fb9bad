"""Stable sort, argsort, searchsorted and index-compaction kernels (``ops/sorting.py``).

Sorting is a bottom-up merge sort along the last axis: keys (in the compute type) and
their original indices are first insertion-sorted in runs of 16 (one work-item per run),
then ping-pong between two buffers, one launch per run width ``w`` (log2(n / 16)
launches). Each work-item places its element at its rank in its own run plus the number
of elements of the other run that go before it: the lower bound of its key in the right
run (for a left element) or the upper bound in the left run (for a right one), so equal
keys keep their order. NaN compares greater than every number. ``descending`` reads each
row reversed, sorts ascending and writes the result reversed (numpy's stable
flip-sort-flip). ``positions`` scans a mask with ``cumulative_sum``'s kernel and scatters.
"""

from __future__ import annotations

import numpy as np

from ...registry import register_kernel
from .cltypes import cltype, header
from .device import device_of
from .programs import launch
from .reduction import cumulative_sum

_I64 = np.dtype(np.int64)
L = np.int64
#: Run length an insertion sort per work-item makes before the merge passes.
_BLOCK = 16

_SORT = """{hdr}#define LT(a, b) {lt}
typedef {k} K;
__kernel void init(__global const {s}* x, __global K* k, __global long* ix,
                   const long total, const long n, const int rev) {{
    const long g = get_global_id(0);
    if (g >= total) return;
    const long p = g % n, q = rev ? n - 1 - p : p;
    k[g] = {load};
    ix[g] = q;
}}
__kernel void block(__global K* k, __global long* ix, const long chunks, const long n,
                    const long per_row) {{
    const long g = get_global_id(0);
    if (g >= chunks) return;
    const long r = g / per_row, c = g % per_row;
    const long lo = r * n + c * {B}, hi = r * n + min((c + 1) * {B}, n);
    for (long i = lo + 1; i < hi; ++i) {{  /* stable insertion sort of one chunk */
        const K key = k[i];
        const long id = ix[i];
        long j = i;
        while (j > lo && LT(key, k[j - 1])) {{ k[j] = k[j - 1]; ix[j] = ix[j - 1]; --j; }}
        k[j] = key;
        ix[j] = id;
    }}
}}
__kernel void merge(__global const K* k, __global const long* ix, __global K* k2,
                    __global long* ix2, const long total, const long n, const long w) {{
    const long g = get_global_id(0);
    if (g >= total) return;
    const long p = g % n, base = g - p;
    const long lo = (p / (2 * w)) * (2 * w), mid = min(lo + w, n), hi = min(lo + 2 * w, n);
    const K key = k[g];
    long a, b, dest;
    if (p < mid) {{  /* left: right-run elements strictly less go first */
        a = mid; b = hi;
        while (a < b) {{
            const long m = (a + b) / 2;
            if (LT(k[base + m], key)) a = m + 1; else b = m;
        }}
        dest = p + (a - mid);
    }} else {{  /* right: left-run elements less or equal go first */
        a = lo; b = mid;
        while (a < b) {{
            const long m = (a + b) / 2;
            if (!LT(key, k[base + m])) a = m + 1; else b = m;
        }}
        dest = lo + (p - mid) + (a - lo);
    }}
    k2[base + dest] = key;
    ix2[base + dest] = ix[g];
}}
__kernel void finish(__global const K* k, __global const long* ix, __global {s}* out,
                     __global long* idx, const long total, const long n, const int rev,
                     const int want_keys) {{
    const long g = get_global_id(0);
    if (g >= total) return;
    const long p = g % n, src = g - p + (rev ? n - 1 - p : p);
    if (want_keys) {{ {store} }} else idx[g] = ix[src];
}}
__kernel void search(__global const {s}* x1, __global const {s}* x2, __global long* out,
                     const long total, const long m, const int right) {{
    const long g = get_global_id(0);
    if (g >= total) return;
    const K v = {load2};
    long a = 0, b = m;
    while (a < b) {{
        const long c = (a + b) / 2;
        const K e = {load1};
        if (right ? !LT(v, e) : LT(e, v)) a = c + 1; else b = c;
    }}
    out[g] = a;
}}
"""

_SCATTER = """__kernel void scatter(__global const uchar* m, __global const long* pos,
                      __global long* out, const long total, const long count) {
    const long g = get_global_id(0);
    if (g < total && m[g] && pos[g] <= count) out[pos[g] - 1] = g;
}
"""


def _program(dev, dtype: np.dtype):
    t = cltype(dtype)
    dev.check_dtype(dtype, "sort")
    lt = ("((a) < (b) || (isnan(b) && !isnan(a)))" if t.is_float else "((a) < (b))")
    src = _SORT.format(hdr=header(t), lt=lt, B=_BLOCK, k=t.calc, s=t.storage,
                       load=t.load("x", "g - p + q"), store=t.store("out", "g", "k[src]"),
                       load1=t.load("x1", "c"), load2=t.load("x2", "g"))
    return dev.programs, src


def _sorted(x, descending: bool, want_keys: bool):
    dev = device_of(x)
    progs, src = _program(dev, x.dtype)
    out = dev.empty(x.shape, x.dtype if want_keys else _I64)
    total, n = x.size, x.shape[-1]
    if total == 0:
        return out
    kd = np.dtype(np.float32) if x.dtype == np.float16 else \
        np.dtype(np.uint8) if x.dtype == np.bool_ else x.dtype
    k, k2 = dev.empty((total,), kd), dev.empty((total,), kd)
    ix, ix2 = dev.empty((total,), _I64), dev.empty((total,), _I64)
    rev = np.int32(descending)
    launch(dev.queue, progs.kernel(src, "init"), total,
           [x.base_data, k.base_data, ix.base_data, L(total), L(n), rev])
    per_row = -(-n // _BLOCK)
    launch(dev.queue, progs.kernel(src, "block"), total // n * per_row,
           [k.base_data, ix.base_data, L(total // n * per_row), L(n), L(per_row)])
    merge = progs.kernel(src, "merge")
    w = _BLOCK
    while w < n:
        launch(dev.queue, merge, total, [k.base_data, ix.base_data, k2.base_data,
                                         ix2.base_data, L(total), L(n), L(w)])
        k, k2, ix, ix2 = k2, k, ix2, ix
        w *= 2
    launch(dev.queue, progs.kernel(src, "finish"), total,
           [k.base_data, ix.base_data, out.base_data if want_keys else x.base_data,
            ix.base_data if want_keys else out.base_data, L(total), L(n), rev,
            np.int32(want_keys)])
    return out


@register_kernel("sort", "opencl")
def sort(x, descending):
    """Stable merge sort of the last axis (log2(n) launches)."""
    return _sorted(x, descending, True)


@register_kernel("argsort", "opencl")
def argsort(x, descending):
    """The stable merge sort's permutation of the last axis (int64)."""
    return _sorted(x, descending, False)


@register_kernel("searchsorted", "opencl")
def searchsorted(x1, x2, side):
    """One binary search per element of ``x2`` in sorted ``x1`` (int64)."""
    dev = device_of(x2)
    progs, src = _program(dev, x2.dtype)
    out = dev.empty(x2.shape, _I64)
    if out.size:
        launch(dev.queue, progs.kernel(src, "search"), out.size,
               [x1.base_data, x2.base_data, out.base_data, L(out.size), L(x1.shape[0]),
                np.int32(side == "right")])
    return out


@register_kernel("positions", "opencl")
def positions(mask, count):
    """The indices where ``mask`` holds: scan (``cumulative_sum``'s kernel), scatter.
    ``count`` comes from the core (a graph node keeps the one it was recorded with): the
    output is zeroed first and true values past ``count`` are dropped, so a mask of
    another count never writes outside it nor shows stale memory."""
    dev = device_of(mask)
    out = dev.empty((count,), _I64)
    if count:
        out.fill(0, queue=dev.queue)
        pos = cumulative_sum(mask, 0)
        launch(dev.queue, dev.programs.kernel(_SCATTER, "scatter"), mask.size,
               [mask.base_data, pos.base_data, out.base_data, L(mask.size), L(count)])
    return out
