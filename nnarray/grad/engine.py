"""The graph engine: recording (the ops' graph hook), forward replay and backward.

Recording: an op called with a Variable reaches ``record``, which (static mode) adds a
node whose outputs have inferred shapes, or (``auto_forward``) runs the op now and adds a
node only where a gradient can flow, or (``no_grad``) runs it and records nothing.

Forward: the nodes run in topological order as compiled steps (``steps``): each node's
kernel resolved once per context, no re-validation, outputs kept in the variables'
NdArrays. Backward walks nodes by descending rank; each input gets ``propagate_down``
(``need``); an intermediate's gradient is written on first visit and accumulated after;
a leaf's accumulates into its ``.grad`` across calls. A static graph's backward is traced
once into a program (``program``) and replayed; a define-by-run graph runs its rules
eagerly, or replays the program of an identical earlier graph (same ``signature``).
Plans (orders, what to free, programs) are cached on the output variable until some
``need_grad`` flag changes.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

import numpy as np

from .. import context as _context
from .. import dtypes
from .. import functions as F
from ..context import _current
from ..errors import GraphError
from ..ndarray import NdArray, full
from ..ops import op as _op
from ..ops.op import DEBUG, _check, execute
from ..registry import _cache as _dispatch_cache
from ..registry import _fallbacks, resolve
from ..synced import _NO_FILL
from . import modes
from .node import Node
from .program import replay, tape, trace
from .steps import compile_step
from .variable import Variable, _make

_mode = modes.mode
_tape = tape
_FLOATS = dtypes.FLOATS
_stamps = itertools.count(1)
_generation = 0
_wref = __import__("weakref").ref


def invalidate_plans() -> None:
    """Forget every cached plan (``need_grad`` changed somewhere)."""
    global _generation
    _generation += 1


# -- recording -----------------------------------------------------------------------
def record(op: Any, inputs: tuple, attrs: dict, metas: tuple) -> Any:
    """The ops' graph hook: see the module docstring."""
    m = _mode.get()
    need = False
    rank = 0
    if m == modes.STATIC:
        args = []
        for x in inputs:
            if isinstance(x, Variable):
                if x._need_grad:
                    need = True
                p = x._parent
                if p is not None and p.rank >= rank:
                    rank = p.rank + 1
            elif type(x) is np.ndarray:  # a numpy operand is a constant
                x = NdArray.from_numpy_array(x)
            args.append(x)
        need = need and op.differentiable
        node = Node(op, tuple(args), attrs, metas, rank)
        outs = [_make(s, d, None, None, need, node) for s, d in metas]
        node.outs = tuple([_wref(v) for v in outs])
        t = _tape.get()
        if t is not None:
            t.append(node)
        return outs[0] if len(outs) == 1 else tuple(outs)
    datas = []
    np_seen = False
    for x in inputs:
        if isinstance(x, Variable):
            if x._need_grad:
                need = True
                p = x._parent
                if p is not None and p.rank >= rank:
                    rank = p.rank + 1
            d = x._data
            datas.append(d if d is not None else x.data)
        elif type(x) is np.ndarray:  # a numpy operand is a constant
            np_seen = True
            datas.append(NdArray.from_numpy_array(x))
        else:
            datas.append(x)
    res = execute(op.name, datas, attrs, metas)
    single = len(metas) == 1
    outs = (res,) if single else res
    if m == modes.NO_GRAD or not need or not op.differentiable:
        vs = [_make(o.shape, o.dtype, o, None, False) for o in outs]
    else:
        args = tuple([d if type(x) is np.ndarray else x for x, d in zip(inputs, datas)]) \
            if np_seen else tuple(inputs)
        node = Node(op, args, attrs, metas, rank)
        node.dynamic = True
        node.save(datas, outs)
        vs = [_make(o.shape, o.dtype, o, None, True, node) for o in outs]
        node.outs = tuple([_wref(v) for v in vs])
    return vs[0] if single else tuple(vs)


_binary_metas: dict[tuple, tuple] = {}


def record_binary(op: Any, a: Any, b: Any) -> Any:
    """``graph_binary``: ``record`` with the op's inference cached by shapes and dtypes
    (Python scalars by type), which is all a two-operand elementwise op depends on."""
    ta, tb = type(a), type(b)
    if ta is Variable:
        kb = (b.shape, b.dtype) if tb is Variable else tb if tb is float or tb is int else None
        key = (op, a.shape, a.dtype, kb) if kb is not None else None
    else:
        key = (op, ta, b.shape, b.dtype) if tb is Variable and (ta is float or ta is int) \
            else None
    metas = _binary_metas.get(key) if key is not None else None
    if metas is None:
        metas = op.infer((a, b), {})
        if key is not None and len(_binary_metas) < 4096:
            _binary_metas[key] = metas
    if key is None or _mode.get() != modes.AUTO:
        return record(op, (a, b), {}, metas)
    # define-by-run hot path: the cached kernel on the inputs' current copies
    da = (a._data if a._data is not None else a.data) if ta is Variable else a
    db = (b._data if b._data is not None else b.data) if tb is Variable else b
    t = _dispatch_cache.get(_current.get(_context._default))
    e = t.get(op.name) if t is not None else None
    if e is None or e[2] is not None or e[3]:
        return record(op, (a, b), {}, metas)
    dev = e[1]
    xa = da._copies.get(dev) if ta is Variable else a
    xb = db._copies.get(dev) if tb is Variable else b
    if xa is None or xb is None:
        return record(op, (a, b), {}, metas)
    out = NdArray._wrap(e[0](xa, xb), dev, metas[0])
    if not ((ta is Variable and a._need_grad) or (tb is Variable and b._need_grad)) or \
            not op.differentiable:
        return _make(out.shape, out.dtype, out, None, False)
    rank = 0
    if ta is Variable and a._parent is not None:
        rank = a._parent.rank + 1
    if tb is Variable and b._parent is not None and b._parent.rank >= rank:
        rank = b._parent.rank + 1
    node = Node(op, (a, b), {}, metas, rank)
    node.dynamic = True
    node.save((da, db), (out,))
    v = _make(out.shape, out.dtype, out, None, True, node)
    node.outs = (_wref(v),)
    return v


# -- plans -----------------------------------------------------------------------------
class Plan:
    """Everything about one output's graph that does not change between iterations."""

    __slots__ = ("generation", "order", "release", "bwd", "program", "steps")

    def __init__(self, root: Variable) -> None:
        self.generation = _generation
        self.order = _topological(root)
        self.release = _forward_release(self.order, root)
        self.bwd: Any = None
        self.program: Any = None
        self.steps: Any = None

    def backward_order(self) -> list:
        """``[(node, need)]`` for the nodes a gradient flows through, by descending rank."""
        if self.bwd is None:
            req: dict[int, bool] = {}

            def requires(v: Any) -> bool:
                if not isinstance(v, Variable) or v.dtype not in _FLOATS:
                    return False
                p = v._parent
                if p is None:
                    return v._need_grad
                return req.get(id(p), False) and (v._need_grad or not v._explicit)

            out = []
            for n in self.order:
                need = tuple([requires(a) for a in n.args])
                diff = n.op.differentiable if type(n) is Node else True
                req[id(n)] = r = diff and any(need)
                if r:
                    out.append((n, need))
            out.sort(key=lambda e: -e[0].rank)
            self.bwd = out
        return self.bwd


def _topological(root: Variable) -> list:
    """The nodes behind ``root`` in an order where producers precede consumers."""
    start = root._parent
    if start is None:
        return []
    order, seen, stack = [], set(), [(start, False)]
    while stack:
        n, done = stack.pop()
        if done:
            order.append(n)
            continue
        if id(n) in seen:
            continue
        seen.add(id(n))
        stack.append((n, True))
        for a in reversed(n.args):
            p = a._parent if isinstance(a, Variable) else None
            if p is not None and id(p) not in seen:
                stack.append((p, False))
    return order


def _forward_release(order: list, root: Variable) -> list:
    """Per node: the intermediate variables whose last consumer it is (clear_buffer)."""
    last: dict[int, tuple[int, Variable]] = {}
    for i, n in enumerate(order):
        for a in n.args:
            if isinstance(a, Variable) and a._parent is not None and a is not root:
                last[id(a)] = (i, a)
    rel: list[list] = [[] for _ in order]
    for i, a in last.values():
        rel[i].append(a)
    return rel


def plan_of(root: Variable) -> Plan:
    p = root._plan
    if p is None or p.generation != _generation:
        p = root._plan = Plan(root)
    return p


# -- forward -----------------------------------------------------------------------------
def forward(root: Variable, clear_buffer: bool = False) -> None:
    """Run the graph behind ``root`` (kernels resolved once per node and context)."""
    plan = plan_of(root)
    ctx = _current.get(_context._default)
    steps = plan.steps
    if steps is None or steps[0] is not ctx:
        steps = plan.steps = (ctx, [compile_step(n, ctx, True, _run) for n in plan.order])
    if not clear_buffer:
        for step in steps[1]:
            step()
        return
    for step, rel in zip(steps[1], plan.release):
        step()
        for v in rel:
            v._data = None


def _run(n: Node, ctx: Any, save: bool = True) -> None:
    """Run one node's kernel (resolved once per context) and store its outputs."""
    k = n._kern
    if k is None or k[0] is not ctx:
        k = n._kern = (ctx, *resolve(n.op.name, ctx))
    elif k[3] is not None:
        _fallbacks[k[3]] = _fallbacks.get(k[3], 0) + 1
    fn, dev = k[1], k[2]
    datas = []
    for a in n.args:
        if type(a) is Variable or isinstance(a, Variable):
            d = a._data
            datas.append(d if d is not None else a.data)
        else:
            datas.append(a)
    metas = n.metas
    if k[4]:
        res = fn(*datas, **n.attrs)
        outs = (res,) if len(metas) == 1 else res
        for ref, o in zip(n.outs, outs):
            v = ref()
            if v is not None:
                v._data = o
        if save:
            n.save(datas, outs)
        return
    xs = []
    for d in datas:
        if type(d) is NdArray:
            x = d._copies.get(dev)
            xs.append(x if x is not None else d._read(dev))
        else:
            xs.append(d)
    r = fn(*xs, **n.attrs)
    if len(metas) == 1:
        if DEBUG:
            _check(n.op.name, dev, r, metas[0])
        v = n.outs[0]()
        nd = v._data if v is not None else None
        if nd is None:
            nd = NdArray._wrap(r, dev, metas[0])
            if v is not None:
                v._data = nd
        else:
            nd._set_native(dev, r)
        if save:
            n.save(datas, (nd,))
        return
    outs = []
    for ref, x, m in zip(n.outs, r, metas):
        if DEBUG:
            _check(n.op.name, dev, x, m)
        v = ref()
        nd = v._data if v is not None else None
        if nd is None:
            nd = NdArray._wrap(x, dev, m)
            if v is not None:
                v._data = nd
        else:
            nd._set_native(dev, x)
        outs.append(nd)
    if save:
        n.save(datas, outs)


# -- backward ----------------------------------------------------------------------------
def backward(root: Variable, grad: Any = 1, clear_buffer: bool = False) -> None:
    """Accumulate d(root)/d(leaf) (times ``grad``) into every ``need_grad`` leaf."""
    g = _seed(root, grad)
    if root._parent is None:
        if root._need_grad and root.dtype in _FLOATS:
            _accumulate_leaf(root, g, True)
        return
    plan = plan_of(root)
    prog = plan.program
    if prog is None:
        if not root._parent.dynamic:
            prog = plan.program = trace(root, plan.backward_order(), plan.order)
        else:
            prog = _cached_program(root, plan)
    if prog is not None:
        replay(prog, plan.order, g, _current.get(_context._default), _run, clear_buffer)
        root._grad = g
        if clear_buffer:
            for n in plan.order:
                _after(n, root, True)
        return
    stamp = next(_stamps)
    root._grad = g
    root._gstamp = stamp
    for n, need in plan.backward_order():
        if type(n) is not Node:
            n.run_backward(stamp, need)
            _after(n, root, clear_buffer)
            continue
        v = n.outs[0]()
        gy = v._grad if v is not None and v._gstamp == stamp else None
        if gy is None:
            continue
        rule = n.checked_rule()
        n.need = need
        gxs = rule.fn(n, gy)
        for i, gx in enumerate(gxs):
            if gx is None or not need[i]:
                continue
            x = n.args[i]
            if x._parent is None:
                _accumulate_leaf(x, gx, _shared(gx, i, gy, gxs, n))
            elif x._gstamp != stamp:
                x._grad = gx
                x._gstamp = stamp
            else:
                x._grad = F.add(x._grad, gx)
        _after(n, root, clear_buffer)


#: Traced programs of define-by-run graphs, by graph signature (a training loop builds the
#: same graph every iteration; from its second occurrence on, its backward is replayed).
_local = threading.local()  # per thread: a program's proxies are bound while it replays
_PROGRAMS_MAX = 32


def _cached_program(root: Variable, plan: Plan) -> Any:
    """The program for a define-by-run graph seen before, tracing it on its second
    occurrence; ``None``: run the rules eagerly."""
    sig = signature(root, plan.order)
    if sig is None:
        return None
    _programs = getattr(_local, "programs", None)
    if _programs is None:
        _programs = _local.programs = {}
    prog = _programs.get(sig)
    if prog is None:
        if sig not in _programs:
            if len(_programs) >= _PROGRAMS_MAX:
                _programs.pop(next(iter(_programs)))
            _programs[sig] = None  # seen once
            return None
        prog = trace(root, plan.backward_order(), plan.order)
        if not prog.relocatable:
            return None
        _programs[sig] = prog
    return prog


def signature(root: Variable, order: list) -> tuple | None:
    """What a traced backward depends on: ops, attributes, shapes and dtypes, the wiring,
    and which leaves need gradients (leaves numbered by first use, not by identity)."""
    pos: dict[int, int] = {}
    leaves: dict[int, int] = {}
    parts: list = [root.shape, root.dtype]
    try:
        for k, n in enumerate(order):
            if type(n) is not Node:
                return None
            pos[id(n)] = k
            args: list = []
            for a in n.args:
                if isinstance(a, Variable):
                    p = a._parent
                    if p is None:
                        args.append((leaves.setdefault(id(a), len(leaves)), a.shape, a.dtype,
                                     a._need_grad))
                    else:
                        j = 0 if len(p.outs) == 1 else \
                            next(q for q, r in enumerate(p.outs) if r() is a)
                        args.append((pos[id(p)], j, a._explicit, a._need_grad))
                elif isinstance(a, NdArray):
                    args.append((a.shape, a.dtype))
                else:
                    args.append((type(a), a))
            attrs = n.attrs
            parts.append((n.op, tuple(args), n.metas,
                          tuple(sorted(attrs.items())) if attrs else ()))
        sig = tuple(parts)
        hash(sig)
    except TypeError:
        return None
    return sig


def _after(n: Any, root: Variable, clear_buffer: bool) -> None:
    if clear_buffer:
        n.release()
        for r in n.outs:
            v = r()
            if v is not None and v is not root:
                v._grad = None
                v._data = None


def _seed(root: Variable, grad: Any) -> NdArray:
    if grad is None:
        return root.grad
    if isinstance(grad, NdArray):
        g = grad
    elif dtypes.is_scalar(grad):
        g = root._grad  # reuse the previous seed while it still holds this value
        if g is None or g._fill != grad or g.shape != root.shape:
            g = full(root.shape, grad, root.dtype)
        return g
    else:
        g = NdArray.from_numpy_array(grad)
    if g.shape != root.shape:
        raise GraphError(f"backward: grad has shape {g.shape}, the output has {root.shape}")
    return g if g.dtype == root.dtype else g.astype(root.dtype)


def _shared(gx: NdArray, i: int, gy: Any, gxs: tuple, n: Node) -> bool:
    """Whether ``gx`` may be referenced elsewhere (then a leaf copies it)."""
    if gx is gy:
        return True
    for j, o in enumerate(gxs):
        if o is gx and j != i:
            return True
    for d in n.inputs or ():
        if d is gx:
            return True
    for d in n.outputs or ():
        if d is gx:
            return True
    return False


def _accumulate_leaf(x: Variable, gx: NdArray, shared: bool) -> None:
    """``x.grad += gx``; a lazily zero (or absent) gradient adopts or copies ``gx``."""
    gl = x._grad
    if gl is None:
        x._grad = F.cast(gx, x.dtype) if shared else gx
        return
    if not gl._copies and (gl._fill is _NO_FILL or gl._fill == 0):
        c = gx._copies
        if not shared and len(c) == 1 and gx._fill is _NO_FILL:
            for dev, arr in c.items():
                gl._set_native(dev, arr)
        else:
            F.assign(gl, gx)
        return
    F.inplace(F.add, gl, gx)


_op.graph_hook = record
_op.graph_binary = record_binary
