"""Recording: how an op called on Variables builds the graph (``GraphValue._record``).

Static mode (the default) adds a node whose outputs have the inferred shapes and runs
nothing; ``auto_forward`` runs the op now and adds a node only where a gradient can
flow; ``no_grad`` runs it and records nothing. While a backward pass is traced into a
program, static nodes are also appended to the ``tape``.
"""

from __future__ import annotations

import contextvars
import weakref
from typing import Any

import numpy as np

from .. import context as _context
from .. import late
from ..ndarray import NdArray
from ..registry import dispatch
from . import modes
from .naming import auto_name
from .node import Node
from .variable import NO_ATTRS, Variable, _make

_mode = modes.mode
_wref = weakref.ref

#: The list new static nodes are appended to while a backward program is traced.
tape: contextvars.ContextVar[list | None] = contextvars.ContextVar("nnarray_tape", default=None)


def _rank_after(rank: int, x: Variable) -> int:
    p = x._parent
    return p.rank + 1 if p is not None and p.rank >= rank else rank


def record(op: Any, inputs: tuple, attrs: dict, metas: tuple) -> Any:
    """The graph hook of ``op`` called with Variable inputs (see the module docstring)."""
    m = _mode.get()
    need = False
    rank = 0
    if m == modes.STATIC:
        args = []
        for x in inputs:
            if isinstance(x, Variable):
                need = need or x._need_grad
                rank = _rank_after(rank, x)
            elif type(x) is np.ndarray:  # a numpy operand is a constant
                x = NdArray.from_numpy_array(x)
            elif isinstance(x, NdArray):  # a constant the graph reads at each forward
                x.pin_shape()
            args.append(x)
        node = Node(op, tuple(args), attrs, metas, rank)
        node._label = auto_name(op.name, None, node)
        need = need and op.differentiable
        outs = [_make(s, d, None, None, need, node) for s, d in metas]
        node.outputs = tuple([_wref(v) for v in outs])
        t = tape.get()
        if t is not None:
            t.append(node)
        return outs[0] if len(outs) == 1 else tuple(outs)
    datas = []
    np_seen = False
    for x in inputs:  # (calls inlined: this loop runs for every op of a define-by-run step)
        if isinstance(x, Variable):
            d = x._data
            datas.append(d if d is not None else computed(x))
            if x._need_grad:
                need = True
                p = x._parent
                if p is not None and p.rank >= rank:
                    rank = p.rank + 1
        elif type(x) is np.ndarray:  # a numpy operand is a constant
            np_seen = True
            datas.append(NdArray.from_numpy_array(x))
        else:
            datas.append(x)
    res = op.kernel(datas).run(datas, attrs, metas)
    if len(metas) != 1:
        if m == modes.NO_GRAD or not need or not op.differentiable:
            return tuple([_make(o.shape, o.dtype, o, None, False) for o in res])
        return tuple(_dynamic_node(op, _args(inputs, datas) if np_seen else tuple(inputs),
                                   attrs, metas, rank, datas, res))
    if m == modes.NO_GRAD or not need or not op.differentiable:
        return _make(res.shape, res.dtype, res, None, False)
    node = Node(op, _args(inputs, datas) if np_seen else tuple(inputs), attrs, metas, rank,
                True)
    node.save(datas, (res,))
    v = _make(res.shape, res.dtype, res, None, True, node)
    node.outputs = (_wref(v),)
    return v


def _args(inputs: tuple, datas: list) -> tuple:
    """A node's graph inputs: numpy operands as the NdArray constants they became."""
    return tuple([d if type(x) is np.ndarray else x for x, d in zip(inputs, datas)])


def computed(x: Variable) -> Any:
    """``x``'s data for a function run now: a static graph's value not computed yet is
    computed first (its graph's forward), never read as zeros."""
    if x._data is None:
        p = x._parent
        if p is not None and not p.dynamic:
            from .executor import forward
            forward(x)
    return x.data


def _dynamic_node(op: Any, inputs: tuple, attrs: dict, metas: tuple, rank: int, datas: Any,
                  outs: Any) -> list:
    """Record an already computed application (``auto_forward``): its outputs."""
    node = Node(op, inputs, attrs, metas, rank, True)
    node.save(datas, outs)
    vs = [_make(o.shape, o.dtype, o, None, True, node) for o in outs]
    node.outputs = tuple([_wref(v) for v in vs])
    return vs


_AUTO = modes.AUTO


def record_binary(op: Any, a: Any, b: Any) -> Any:
    """``record`` for a two-operand elementwise op, its inference from the op's meta
    cache (``op.out_metas``: what the hot path in ``variable._binary_recorder`` reads);
    under ``auto_forward`` the context's plain Kernel runs directly where both operands
    are Variables or one is a Python float or int."""
    ta, tb = type(a), type(b)
    metas = op.out_metas((a, b), {})
    direct = (ta is Variable and (tb is Variable or tb is float or tb is int)) or \
        (tb is Variable and (ta is float or ta is int))
    if not direct or _mode.get() != _AUTO:
        return record(op, (a, b), {}, metas)
    ctx = _context.dispatch_context((a._data if ta is Variable else a,
                                     b._data if tb is Variable else b), op.name)
    k = dispatch(op, ctx)
    if not k.plain:
        return record(op, (a, b), {}, metas)
    if ta is Variable:
        da = a._data if a._data is not None else computed(a)
        db = b if tb is not Variable else b._data if b._data is not None else computed(b)
        out = k.fast(da, db, metas[0])
    else:
        da, db = a, b._data if b._data is not None else computed(b)
        out = k.run((da, db), {}, metas)
    if not ((ta is Variable and a._need_grad) or (tb is Variable and b._need_grad)) or \
            not op.differentiable:
        return _make(out.shape, out.dtype, out, None, False)
    rank = 0
    for x in (a, b):
        if type(x) is Variable:
            rank = _rank_after(rank, x)
    return _dynamic_node(op, (a, b), NO_ATTRS, metas, rank, (da, db), (out,))[0]


late.provide(__name__)  # the engine's modules below (nnarray.late)
