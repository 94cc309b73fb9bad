"""Compiled replay steps: one closure per node and context, the static graphs' hot path.

A step calls the node's plain ``Kernel`` (resolved once) on its inputs' current native
copies, with no validation (shapes and dtypes were inferred when the graph was built),
hands the result to ``Kernel.emit`` (debug check, adopted by the output variable's
persistent NdArray) and, for forward nodes, records what the backward rule retains with
its version. Composite and fallback kernels and several outputs take ``Node.run``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import late
from ..ndarray import NdArray
from .variable import Variable


def compile_step(n: Any, ctx: Any, save: bool) -> Callable[[], None]:
    """A zero-argument callable running node ``n`` under ``ctx``."""
    k = n.kernel_for(ctx)
    if not k.plain or len(n.out_metas) != 1:
        return lambda: n.run(ctx, save)
    fn, dev, emit = k.fn, k.device, k.emit
    args, attrs, meta, ref = n.inputs, n.attrs, n.out_metas[0], n.outputs[0]
    rule = n.function.backward
    keep = save and rule is not None
    ri = rule.retained_inputs(attrs) if keep else ()
    ro = tuple(rule.outputs) if keep else ()

    def finish(r: Any, ds: tuple) -> None:
        v = ref()
        nd = emit(r, meta, v._data if v is not None else None)
        if v is not None:
            v._data = nd
        if keep:
            n.retain(ds, (nd,), ri, ro)
        elif save:
            n.saved_inputs = n.saved_outputs = n.versions = ()

    kinds = tuple(1 if isinstance(a, Variable) else 2 if type(a) is NdArray else 0
                  for a in args)
    if kinds == (1, 1):
        a, b = args

        def step2() -> None:
            da, db = a._data, b._data
            if da is None:
                da = a.data
            if db is None:
                db = b.data
            finish(fn(da.native(dev), db.native(dev), **attrs), (da, db))
        return step2
    if kinds == (1,) or kinds == (1, 0):
        a = args[0]
        rest = args[1:]

        def step1() -> None:
            da = a._data
            if da is None:
                da = a.data
            finish(fn(da.native(dev), *rest, **attrs), (da, *rest))
        return step1

    def step() -> None:
        ds = [x if k == 0 or k == 2 else x.data for x, k in zip(args, kinds)]
        xs = [d if k == 0 else d.native(dev) for d, k in zip(ds, kinds)]
        finish(fn(*xs, **attrs), tuple(ds))
    return step


late.provide(__name__)  # the engine's modules below (nnarray.late)
