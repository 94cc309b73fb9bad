"""Recording: how an op called on Variables builds the graph (``GraphValue._record``).

Static mode (the default) adds a node whose outputs have the inferred shapes and runs
nothing; ``auto_forward`` runs the op now and adds a node only where a gradient can
flow; ``no_grad`` runs it and records nothing. While a backward pass is traced into a
program, static nodes are also appended to the ``tape``; traced while it runs
(``modes.TRACE``), each function runs now and its node goes to the ``tape``.
"""

from __future__ import annotations

import contextvars
import weakref
from typing import Any

import numpy as np

from .. import functions as F
from .. import late
from ..context import dispatch_context
from ..ndarray import NdArray
from ..ops.autocast import operator
from ..registry import dispatch
from . import modes
from .naming import auto_name
from .node import Node
from .variable import Variable, _make

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
    if m == _TRACE:
        return _taped(op, _args(inputs, datas) if np_seen else tuple(inputs), attrs, metas,
                      res)
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


def _taped(op: Any, inputs: tuple, attrs: dict, metas: tuple, res: Any) -> Any:
    """A program step run now (``modes.TRACE``): its node on the tape, the outputs with
    their values (what the traced backward computes; ``Program.clear`` drops them)."""
    node = Node(op, inputs, attrs, metas, 0)
    outs = [_make(o.shape, o.dtype, o, None, False, node)
            for o in ((res,) if len(metas) == 1 else res)]
    node.outputs = tuple([_wref(v) for v in outs])
    tape.get().append(node)
    return outs[0] if len(outs) == 1 else tuple(outs)


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
_TRACE = modes.TRACE

#: What a node of a two-operand elementwise op has as attributes (none; shared, read-only).
NO_ATTRS: dict = {}


def binary(op: Any) -> Any:
    """``record`` for two-operand elementwise ``op``, as ``record(a, b)``: the
    Variable's Python operator (``v + w``) and ``F.add(v, w)`` on Variables
    (``record_binary``). Under ``auto_forward`` (or traced as it runs), where the result
    has ``a``'s shape and
    its dtype is in the op's meta cache under the short key (``elementwise._short_key``:
    two Variables of one shape, or a Variable and a Python float or int) and the
    context's Kernel is plain, the kernel runs through ``Kernel.fast`` and the node is
    recorded as ``record`` records it; every other case is ``record`` itself."""
    metas, name = op.metas, op.name

    def record_op(a: Any, b: Any) -> Any:
        m = _mode.get()
        if m == _AUTO or m == _TRACE:
            ta, tb = type(a), type(b)
            if ta is Variable:
                da = a._data
                if tb is Variable:
                    db = b._data
                    d = None if a._shape != b._shape else metas.get(
                        a._dtype if a._dtype is b._dtype else (a._dtype, b._dtype))
                elif tb is float or tb is int:
                    db = b
                    d = metas.get((a._dtype, tb))
                else:
                    d = None
                if d is not None and da is not None and (tb is not Variable or
                                                         db is not None):
                    k = dispatch(op, dispatch_context((da, db), name))
                    if k.plain:
                        meta = (a._shape, d)
                        out = k.fast(da, db, meta)
                        if m == _TRACE:
                            return _taped(op, (a, b), NO_ATTRS, (meta,), out)
                        if not op.differentiable or not (
                                a._need_grad or (tb is Variable and b._need_grad)):
                            return _make(meta[0], d, out, None, False)
                        p = a._parent
                        rank = 0 if p is None else p.rank + 1
                        if tb is Variable:
                            p = b._parent
                            if p is not None and p.rank >= rank:
                                rank = p.rank + 1
                        node = Node(op, (a, b), NO_ATTRS, (meta,), rank, True)
                        node.save((da, db), (out,))
                        v = _make(meta[0], d, out, None, True, node)
                        node.outputs = (_wref(v),)
                        return v
        return record(op, (a, b), {}, op.out_metas((a, b), {}))
    return record_op


#: ``{op: binary(op)}`` of the two-operand ops recorded so far.
_binaries: dict = {}


def record_binary(op: Any, a: Any, b: Any) -> Any:
    """``binary(op)(a, b)`` (``Variable._record_binary``: ``F.add(v, w)``)."""
    r = _binaries.get(op)
    if r is None:
        r = _binaries[op] = binary(op)
    return r(a, b)


def _reflected(op: Any) -> Any:
    def operator(self: Variable, o: Any) -> Any:
        return record_binary(op, o, self)
    return operator


# The Variable's Python operators are the recorders (set here: ``recording`` imports
# ``variable``, so ``variable`` cannot call it at import).
for _name, _fn in (("add", F.add), ("sub", F.sub), ("mul", F.mul), ("truediv", F.div),
                   ("pow", F.pow), ("floordiv", F.floor_divide), ("mod", F.remainder)):
    setattr(Variable, f"__{_name}__", operator(_fn.op.name, _binaries.setdefault(
        _fn.op, binary(_fn.op))))  # operator(): autocast's casts (v ** p runs in float32)
    setattr(Variable, f"__r{_name}__", operator(_fn.op.name, _reflected(_fn.op)))


late.provide(__name__)  # the engine's modules below (nnarray.late)
