"""complex64 functions with a sine and cosine inside (``exp``, ``sin``, ``tanh``...) on CPU
devices: a fast kernel, then a fix-up launch that redoes exactly the rare elements out of
the fast path's range.

The exact ``sincos`` (``inline_math``) reduces every float by Payne-Hanek: about two thirds
of complex ``exp``'s time. ``sincos_fast`` reduces by Cody-Waite, exact only for
``|x| <= FAST_TRIG_BOUND``. So the plan's main kernel calls ``sincos_fast``, and a second
kernel (``fix``), one work-item per ``CHUNK`` elements, tests its chunk's inputs (a loop
that vectorizes: ~0.1 ms per 2^20) and, only where a part lies past the bound or is not
finite, recomputes those elements with the exact expression. No flag goes to the host,
nothing waits. Contiguous operands only (the others keep the exact kernel), and never in
place: an output that shares the input's buffer takes the exact kernel.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyopencl as cl

from .cltypes import CLType, header
from .inline_math import FAST_TRIG_BOUND, use_inline
from .programs import LOCAL, typed

#: The unary rows whose complex helpers call ``sincos``.
FAST = frozenset({"exp", "expm1", "sin", "cos", "tan", "sinh", "cosh", "tanh"})
#: Elements per work-item of the fix-up kernel.
CHUNK = 64
_SINCOS = re.compile(r"\bsincos\s*\(")

_FIX = """__kernel void fix(__global {out}* out, __global const {inp}* restrict a0, const int n) {{
    const int i0 = get_global_id(0) * {chunk};
    if (i0 >= n) return;
    const int m = n - i0 < {chunk} ? n - i0 : {chunk};
    int far = 0;
    for (int j = 0; j < m; j++) {{
        const float2 v0 = {load};
        far |= !((fabs(v0.x) <= {bound}) & (fabs(v0.y) <= {bound}));
    }}
    if (!far) return;
    for (int j = 0; j < m; j++) {{
        const float2 v0 = {load};
        if (!((fabs(v0.x) <= {bound}) & (fabs(v0.y) <= {bound}))) {store}
    }}
}}
"""


def eligible(dev: Any, op: str, operands: list, rank: int) -> bool:
    """Whether ``op``'s plan takes the fast kernel and the fix-up: a contiguous complex64
    operand of a row in ``FAST``, on a device with the inline math and fp64."""
    return (op in FAST and rank == 0 and len(operands) == 1 and operands[0][0]
            and operands[0][1].calc == operands[0][2].calc == "float2"
            and dev.fp64 and use_inline(dev.cl_device))


def fast(src: str) -> str:
    """Kernel source ``src`` with its ``sincos`` calls made ``sincos_fast``."""
    return _SINCOS.sub("sincos_fast(", src)


def fix_source(expr: str, t: CLType, out_t: CLType, helpers: str, pairs: bool) -> str:
    """The fix-up kernel: ``out[i] = expr(v0)`` for the elements of ``a0`` past the bound."""
    load = t.load("a0", "i0 + j", pairs)
    return header(t, out_t) + helpers + _FIX.format(
        out=out_t.storage, inp=t.storage, chunk=CHUNK, load=load,
        bound=f"{FAST_TRIG_BOUND:.1f}f", store=out_t.store("out", "i0 + j", expr, pairs))


class TrigPlan:
    """The fast plan, its fix-up kernel, and the exact plan for in-place calls."""

    __slots__ = ("fast", "exact", "fix", "n", "grid")

    def __init__(self, fast_plan: Any, exact: Any, fix: Any, n: int) -> None:
        self.fast, self.exact, self.fix, self.n = fast_plan, exact, fix, n
        items = -(-n // CHUNK)
        self.grid = (-(-items // LOCAL) * LOCAL,)
        typed(fix, [None, None, np.int32(0)])

    def run(self, dev: Any, xs: tuple, out: Any = None) -> Any:
        if out is not None and out.base_data.int_ptr == xs[0].base_data.int_ptr:
            return self.exact.run(dev, xs, out)
        out = self.fast.run(dev, xs, out)
        if self.n:
            dev.acquire()
            try:
                self.fix._set_arg_multi((0, out.base_data, 1, xs[0].base_data))
                self.fix._set_arg_buf_pack_multi((2, b"i", np.int32(self.n)))
                cl.enqueue_nd_range_kernel(dev.queue, self.fix, self.grid, (LOCAL,))
            finally:
                dev.release()
        return out
