"""complex64 functions with a fast path on CPU devices: one kernel computes each chunk of
elements by a formula exact only within a range, and redoes with the exact expression the
rare elements outside it.

Two fast paths (``FLAVORS``):

- ``trig`` (``exp``, ``expm1``, ``sin``, ``cos``, ``tan``, ``sinh``, ``cosh``, ``tanh``):
  a copy of the complex helpers (``complex_math``) with ``sincos_fast`` for ``sincos``.
  The exact ``sincos`` (``inline_math``) reduces every float by Payne-Hanek, about two
  thirds of complex ``exp``'s time; Cody-Waite's reduction is exact for parts up to
  ``FAST_TRIG_BOUND``.
- ``near`` (``sign``, ``sqrt``): no scaling. The exact helpers scale x and y by a power of
  two so that x^2 + y^2 neither overflows nor rounds away, and test for NaN and infinity.
  Unscaled (``c_sign_near``, ``c_sqrt_near``), both are exact while x^2 + y^2 lies in
  [2^-124, 2^127], i.e. for |z| from about 2e-19 to 9e18; z = 0 gets its value written
  over theirs (``_ZERO_FIX``).

One work-item per ``CHUNK`` elements: a first loop computes the fast expression and ORs the
range test over the chunk (LLVM's loop vectorizer takes both); only a chunk with an
element out of range, or the last partial chunk, runs a second loop, the exact expression
for the whole chunk (a test per element there would not vectorize, and a separate fix-up
launch cost a pass over memory more). A chunk whose first element is out of range skips
the first loop: on data all out of range (|z| < 2e-19, say), the fast formulas would stall
on subnormal results. One launch and one pass over memory (figures: benchmarks/README.md,
"Figures that sat in code comments").
Contiguous operands only (the others keep the exact kernel), and never in place: the second
loop reads the input after the first wrote the output, so an output in the input's buffer
takes the exact kernel.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ...ops.ufuncs import ROWS
from .cltypes import CLType, header
from .inline_math import FAST_TRIG_BOUND, use_inline

#: Elements per work-item.
CHUNK = 128
#: The complex64 helpers' names (and their guard), which ``_trig``'s copy renames.
_NAMES = re.compile(r"\b(NNA_COMPLEX_float2|[cr]_\w+_float2)\b")


def _trig(helpers: str, expr: str) -> tuple[str, str]:
    """A copy of the helpers with ``sincos_fast`` for ``sincos``, without the scaling past
    e^88 (``Row.also`` keeps such parts out) nor the special cases of zero, infinite and NaN
    parts (the range test admits finite parts; the formulas give a zero part's values),
    under names ending ``_fast``, and ``expr`` calling it."""
    copy = re.sub(r"\bsincos\s*\(", "sincos_fast(", helpers)
    copy = copy.replace("NNA_HUGE(", "NNA_NOT_HUGE(").replace("NNA_SPECIAL(", "NNA_NOT_SPECIAL(")
    return _NAMES.sub(r"\1_fast", copy), _NAMES.sub(r"\1_fast", expr)


def _near(helpers: str, expr: str) -> tuple[str, str]:
    """``expr`` calling the unscaled ``c_sign_near``/``c_sqrt_near`` (``complex_math``),
    which need none of the other helpers."""
    return "", re.sub(r"\bc_(sign|sqrt)_float2\(", r"c_\1_near_float2(", expr)


def _abs_at_most(part: str, bound: float) -> str:
    """|v0.part| <= ``bound`` as integers on the bits (false for NaN)."""
    bits = int(np.float32(bound).view(np.uint32))
    return f"((as_uint(v0.{part}) & 0x7fffffffu) <= {bits:#x}u)"


class Flavor(NamedTuple):
    """A fast path: its helpers and expression from the exact ones (``make``) and the range
    test on ``v0`` within which they are exact (``ok``)."""

    make: Callable[[str, str], tuple[str, str]]
    ok: str


FLAVORS = {
    "trig": Flavor(_trig, f"{_abs_at_most('x', FAST_TRIG_BOUND)}"
                          f" & {_abs_at_most('y', FAST_TRIG_BOUND)}"),
    # x^2 + y^2 as the helpers compute it (one value): finite, and normal enough that a
    # subnormal part's square is negligible. z = 0 fails it (see _ZERO_FIX)
    "near": Flavor(_near, "((v0.x * v0.x + v0.y * v0.y) <= 0x1p127f)"
                          " & ((v0.x * v0.x + v0.y * v0.y) >= 0x1p-124f)"),
}


class Row(NamedTuple):
    """A unary row's fast path: its flavor; ``also``, a further range test (the part whose
    e^|x| the trigonometric copy must not overflow, ``NNA_NOT_HUGE``: at most 88); ``zero``,
    z = 0's value where the fast expression gets it wrong (0 / 0), written over its result
    (``_ZERO_FIX``: zero as a clause of the range test, and handled in the helpers, cost
    ``sign`` 15% and ``sqrt`` 8% on every element)."""

    flavor: str
    also: str = ""
    zero: str = ""


_PART = {"re": "x", "im": "y"}
_BOUND = re.compile(r"(\|?)(re|im)\|? <= (\d+)")


def _bound(text: str) -> str:
    """A row's bound (``ComplexFast.bound``: "re <= 88", "|im| <= 88") as a test on
    ``v0`` (e^x: no bigger than 88; small ones underflow to 0 as they should)."""
    m = _BOUND.fullmatch(text)
    if m is None:
        raise ValueError(f"complex_fast: bound {text!r} is not 're <= B' or '|re| <= B'")
    part, bound = _PART[m[2]], float(m[3])
    return _abs_at_most(part, bound) if m[1] else f"(v0.{part} <= {bound}f)"


def _zero_value(text: str) -> str:
    """A row's value at z = 0 (``ComplexFast.zero``: "(0, 0)", "(0, im)") as a float2."""
    parts = [p.strip() for p in text.strip("()").split(",")]
    return "(float2)(" + ", ".join(f"v0.{_PART[p]}" if p in _PART else f"{float(p)}f"
                                   for p in parts) + ")"


#: The unary rows with a fast path (``Hints.complex_fast``).
FAST = {r.name: Row(f.flavor, _bound(f.bound) if f.bound else "",
                    _zero_value(f.zero) if f.zero else "")
        for r in ROWS if (f := r.hints.complex_fast) is not None}
_ZERO = "((v0.x == 0) & (v0.y == 0))"


def range_test(op: str) -> str:
    """The test on ``v0`` within which ``op``'s fast expression is exact."""
    row = FAST[op]
    ok = FLAVORS[row.flavor].ok
    return f"({ok}) & {row.also}" if row.also else ok


_KERNEL = """__kernel void map(__global {out}* out, __global const {inp}* restrict a0,
                  const int n) {{
    const int i0 = get_global_id(0) * {chunk};
    if (i0 >= n) return;
    const int m = n - i0 < {chunk} ? n - i0 : {chunk};
    int far = m < {chunk};
    if (!far) {{  // the first element out of range: the whole chunk likely is (see above)
        const int j = 0;
        const float2 v0 = {load};
        far = !(({ok}) | {zero});
    }}
    if (!far) {{
        for (int j = 0; j < {chunk}; j++) {{
            const float2 v0 = {load};
            far |= !({ok});
            {fast}
        }}
        if (!far) return;
{fix}    }}
    for (int j = 0; j < m; j++) {{
        const float2 v0 = {load};
        {exact}
    }}
}}
"""


#: Zero's value over the fast results, one vectorized loop (read back, merge, write); the
#: exact loop runs only where an element out of range is not zero. Masked or zero-padded
#: data: ``sign`` 1.3x the exact kernel's time where every chunk holds a zero, not 2.3x.
_ZERO_FIX = """        int hard = 0;
        for (int j = 0; j < {chunk}; j++) {{
            const float2 v0 = {load}, r0 = {reload}, z0 = {value};
            const int zero = {zero};
            hard |= !(({ok}) | zero);
            const uint k = zero ? 0u : ~0u;  // r_pick: a select of the pair would not vectorize
            {store}
        }}
        if (!hard) return;
"""


def eligible(dev: Any, op: str, operands: list, rank: int) -> bool:
    """Whether ``op``'s plan takes the fast path: a contiguous complex64 operand of a row in
    ``FAST``, on a device with the inline math (CPU devices: a work-item's loop over its
    chunk would not coalesce on a GPU) and fp64 (the exact ``sincos``)."""
    return (op in FAST and rank == 0 and len(operands) == 1 and operands[0][0]
            and operands[0][1].calc == operands[0][2].calc == "float2"
            and dev.fp64 and use_inline(dev.cl_device))


def source(op: str, expr: str, t: CLType, out_t: CLType, helpers: str, pairs: bool) -> str:
    """The chunked kernel ``map(out, a0, n)`` of ``op`` (``expr`` on ``v0``, calling
    ``helpers``)."""
    row = FAST[op]
    fast_helpers, fast_expr = FLAVORS[row.flavor].make(helpers, expr)
    ok = range_test(op)
    idx = "i0 + j"
    load = t.load("a0", idx, pairs)
    zero, fix = _ZERO if row.zero else "0", ""
    if row.zero:
        merged = "(float2)(r_pick_float2(k, r0.x, z0.x), r_pick_float2(k, r0.y, z0.y))"
        fix = _ZERO_FIX.format(chunk=CHUNK, load=load, reload=out_t.load("out", idx, pairs),
                               value=row.zero, zero=zero, ok=ok,
                               store=out_t.store("out", idx, merged, pairs))
    return header(t, out_t) + helpers + fast_helpers + _KERNEL.format(
        out=out_t.storage, inp=t.storage, chunk=CHUNK, load=load, ok=ok, zero=zero,
        fast=out_t.store("out", idx, fast_expr, pairs), fix=fix,
        exact=out_t.store("out", idx, expr, pairs))


def items(n: int) -> int:
    """Work-items for ``n`` elements."""
    return -(-n // CHUNK)


class FastPlan:
    """The chunked kernel's plan (one work-item per chunk) and the exact plan, for calls
    in place."""

    __slots__ = ("fast", "exact")

    def __init__(self, fast_plan: Any, exact: Any) -> None:
        self.fast, self.exact = fast_plan, exact

    def run(self, dev: Any, xs: tuple, out: Any = None) -> Any:
        if out is not None and out.base_data.int_ptr == xs[0].base_data.int_ptr:
            return self.exact.run(dev, xs, out)
        return self.fast.run(dev, xs, out)

