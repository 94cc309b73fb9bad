"""``fused_elementwise`` on numpy: the program (``widened``: 16-bit floats computed in
float32) run instruction by instruction with the backend's own elementwise kernels (so
each value is exactly what the unfused op gives),
every instruction writing with ``out=`` into a buffer freed by an earlier one where
shape and dtype match. numpy cannot keep intermediates in registers; what fusion saves
here is allocations: as few temporaries live at once as the program's data flow allows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...ops.fused import (
    BROADCAST,
    CAST,
    CONST,
    REDUCTIONS,
    WHERE,
    Meta,
    Program,
    const_value,
    evaluate_types,
    widened,
)
from ...registry import backend_kernels, register_kernel
from . import elementwise as _own  # noqa: F401  (registers the kernels this one calls)
from .device import DEVICE as _device

_empty = _device.pool.empty
#: (program, input metas) -> the step list (see ``_plan``).
_plans: dict[tuple, list] = {}


def _plan(p: Program, metas: tuple) -> tuple[list, tuple]:
    """Per instruction of ``widened(p)`` ``(op, arg refs, attr or constant, meta, buffer)``:
    ``buffer`` is ``None`` (a new one), ``-1`` (a view, no buffer), ``-2`` (the kernel's own
    result) or the reference whose buffer, dead by then, it writes into; and the references
    it returns."""
    p = widened(p, metas)
    vals = evaluate_types(p, metas)
    n = p.n_inputs
    outs, live = set(p.outputs), p.live()
    last: dict[int, int] = {}
    for j, i in enumerate(p.instrs):
        if n + j in live:
            for a in i.args:
                last[a] = j
    free: dict[Meta, list[int]] = {}
    steps = []
    for j, i in enumerate(p.instrs):
        ref = n + j
        if i.op == CONST or ref not in live:  # a dead one is never read
            steps.append((CONST, (), const_value(i) if i.op == CONST else None, None, -1))
            continue
        # operands read for the last time here may be overwritten by this result: numpy's
        # elementwise loops allow an output that is an input of the same shape
        for a in dict.fromkeys(i.args):
            if a >= n and last.get(a) == j and a not in outs and isinstance(vals[a], Meta) \
                    and p.instrs[a - n].op != BROADCAST:
                free.setdefault(vals[a], []).append(a)
        meta = vals[ref]
        if i.op == BROADCAST and ref not in outs:
            buf: int | None = -1
        elif i.op == WHERE or i.op in REDUCTIONS:  # kernels without out=: a new array
            buf = -2
        elif ref not in outs and free.get(meta):
            buf = free[meta].pop()
        else:
            buf = None
        attr = () if i.op == WHERE else i.attr
        steps.append((i.op, i.args, attr, meta, buf))
    return steps, p.outputs


def _run(steps: list, outputs: tuple, xs: tuple, kernels: dict) -> Any:
    vals: list = list(xs)
    for op, args, attr, meta, buf in steps:
        if op == CONST:
            vals.append(attr)
            continue
        a = [vals[k] for k in args]
        if buf == -1:
            vals.append(np.broadcast_to(a[0], meta.shape))
            continue
        if buf == -2:  # where, a reduction (attr: axes, keepdims)
            vals.append(kernels[op](*a, *attr))
            continue
        out = _empty(meta.shape, meta.dtype) if buf is None else vals[buf]
        if op == CAST:
            kernels["cast"](a[0], meta.dtype, out=out)
        elif op == BROADCAST:
            np.copyto(out, np.broadcast_to(a[0], meta.shape))
        else:
            kernels[op](*a, out=out)
        vals.append(out)
    if len(outputs) == 1:
        return vals[outputs[0]]
    return tuple(vals[r] for r in outputs)


@register_kernel("fused_elementwise", "numpy")
def fused_elementwise(*xs: np.ndarray, program: Program) -> Any:
    key = (program, tuple((x.shape, x.dtype) for x in xs))
    plan = _plans.get(key)
    if plan is None:
        plan = _plans[key] = _plan(program, tuple(Meta(x.shape, x.dtype) for x in xs))
    return _run(*plan, xs, _kernels[0] or _load())


_kernels: list = [None]


def _load() -> dict[str, Callable]:
    """The backend's kernels, read once every module has registered its own."""
    _kernels[0] = backend_kernels("numpy")
    return _kernels[0]
