"""Compiled replay steps: one closure per node and context, the static graphs' hot path.

A step calls the node's kernel (resolved once) on its inputs' current native copies, with
no validation (shapes and dtypes were inferred when the graph was built), stores the
result in the output variable's persistent NdArray and, for forward nodes, records what
the backward rule retains with its version.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ndarray import NdArray
from ..ops.op import DEBUG, _check
from ..registry import resolve
from .node import Node
from .variable import Variable

_wrap = NdArray._wrap


def compile_step(n: Any, ctx: Any, save: bool, run: Callable) -> Callable[[], None]:
    """A zero-argument callable running ``n`` under ``ctx`` (``run(n, ctx, save)`` where
    no specialization applies: composites, fallbacks, several outputs, debug checks)."""
    if type(n) is not Node:
        return n.run
    fn, dev, fallback, composite = resolve(n.op.name, ctx)
    if composite or fallback is not None or len(n.metas) != 1:
        return lambda: run(n, ctx, save)
    args, attrs, meta, ref = n.args, n.attrs, n.metas[0], n.outs[0]
    rule = n.op.backward
    keep = save and rule is not None
    ri = rule.retained_inputs(attrs) if keep else ()
    ro = tuple(rule.outputs) if keep else ()

    def finish(r: Any, ds: tuple) -> None:
        if DEBUG:
            _check(n.op.name, dev, r, meta)
        v = ref()
        nd = v._data if v is not None else None
        if nd is None:
            nd = _wrap(r, dev, meta)
            if v is not None:
                v._data = nd
        else:
            nd._set_native(dev, r)
        if keep:
            n.retain(ds, (nd,), ri, ro)
        elif save:
            n.inputs = n.outputs = n.versions = ()

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
            xa, xb = da._copies.get(dev), db._copies.get(dev)
            if xa is None:
                xa = da._read(dev)
            if xb is None:
                xb = db._read(dev)
            finish(fn(xa, xb, **attrs), (da, db))
        return step2
    if kinds == (1,) or kinds == (1, 0):
        a = args[0]
        rest = args[1:]

        def step1() -> None:
            da = a._data
            if da is None:
                da = a.data
            xa = da._copies.get(dev)
            if xa is None:
                xa = da._read(dev)
            finish(fn(xa, *rest, **attrs), (da, *rest))
        return step1

    def step() -> None:
        ds = []
        xs = []
        for x, k in zip(args, kinds):
            if k == 0:
                ds.append(x)
                xs.append(x)
                continue
            d = x if k == 2 else x._data if x._data is not None else x.data
            ds.append(d)
            c = d._copies.get(dev)
            xs.append(c if c is not None else d._read(dev))
        finish(fn(*xs, **attrs), tuple(ds))
    return step
