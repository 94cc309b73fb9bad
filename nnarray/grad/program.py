"""The static backward program: a static graph's backward pass, traced once and replayed.

The first ``backward()`` of a static graph runs every backward rule on Variables instead
of NdArrays: the rules' ``F`` calls record nodes on a tape (they are ordinary graph nodes,
so the rules need nothing special). Retained forward data enter through proxy variables
bound to each node's saved arrays at replay; the output gradient enters through a seed
variable. Replaying the tape runs each step's kernel, resolved once, with no validation.
"""

from __future__ import annotations

import contextvars
from typing import Any

from .. import functions as F
from ..ndarray import NdArray
from ..ops.elementwise import BinaryOp
from . import engine as _engine
from . import modes
from .codegen import generate
from .node import Node
from .steps import compile_step
from .variable import Variable, _make

#: The tape the static recorder appends new nodes to while a program is traced.
tape: contextvars.ContextVar[list | None] = contextvars.ContextVar("nnarray_tape", default=None)


class _TraceCtx:
    """What a rule sees while traced: the node's attributes, proxies for its data."""

    __slots__ = ("node", "inputs", "outputs", "attrs", "need", "in_meta", "args")

    def __init__(self, n: Node, k: int, need: tuple, prog: Program) -> None:
        rule = n.op.backward
        self.node, self.attrs, self.need, self.args = n, n.attrs, need, n.args
        self.in_meta = n.in_meta
        self.inputs = [None] * len(n.args) if n.inputs else ()
        for i in rule.retained_inputs(n.attrs):
            a = n.args[i]
            self.inputs[i] = prog.proxy(k, i, a) if isinstance(a, (Variable, NdArray)) else a
        self.outputs = [None] * len(n.metas) if rule.outputs else ()
        for j in rule.outputs:
            self.outputs[j] = prog.proxy(k, -1 - j, n.outputs[j])


class PyGradStep:
    """A PythonFunction's ``backward_impl`` as one step of a program (accum=False)."""

    __slots__ = ("node", "gys", "need", "grads", "__weakref__")

    def __init__(self, n: Any, gys: list, need: tuple) -> None:
        self.node, self.gys, self.need = n, gys, need
        seen: set = set()
        self.grads = []  # one per distinct input (a repeated input's share is accumulated)
        for a, pd in zip(n.args, need):
            first = pd and id(a) not in seen
            seen.add(id(a))
            self.grads.append(_make(a.shape, a.dtype, None, None, False) if first else None)

    def run(self) -> None:
        n = self.node
        outs = n._outputs(n.outputs)
        for v, gv in zip(outs, self.gys):
            if gv is not None:
                v._grad = gv._data
            else:
                v._grad = NdArray(v.shape, v.dtype)
                v._grad.zero()
        ins = list(n.args)
        old = [a._grad for a in ins]
        for a, d in zip(ins, n.inputs):
            a._data = d
        accum, seen = [], set()
        for a, pd in zip(ins, self.need):
            if pd and id(a) not in seen:
                seen.add(id(a))
                a._grad = NdArray(a.shape, a.dtype)
                a._grad.zero()
                accum.append(False)
            else:
                accum.append(bool(pd))
        try:
            with modes.no_grad():
                n.op.backward_impl(ins, outs, list(self.need), accum)
            for a, gv in zip(ins, self.grads):
                if gv is not None:
                    gv._data = a._grad
        finally:
            for a, g in zip(ins, old):
                a._grad = g


class Program:
    """A traced backward pass of one output variable."""

    __slots__ = ("seed", "binds", "checks", "steps", "leaves", "inter", "release", "inv_proxies",
                 "inv_last", "inv_steps", "compiled", "relocatable", "__weakref__")

    def __init__(self, root: Variable) -> None:
        # Forward nodes are named by their index in the plan's order, variables by
        # (node index, argument index): a program replays on any graph of the same shape.
        self.seed = _make(root.shape, root.dtype, None, None, False)
        self.binds: list[tuple[Variable, int, int]] = []
        self.checks: list[int] = []
        self.steps: list[Any] = []
        self.leaves: list[tuple[int, int, Variable, bool]] = []
        self.inter: list[tuple[int, int, Variable]] = []
        self.relocatable = True
        self.release: list[list] = []
        self.inv_proxies: list[Variable] = []
        self.inv_last: list[Any] = []
        self.inv_steps: list[tuple[int, Variable, frozenset]] = []
        self.compiled: Any = None

    def proxy(self, k: int, i: int, like: Any) -> Variable:
        """A variable bound at replay to node ``k``'s saved input ``i`` (output ``-1-i``)."""
        v = _make(like.shape, like.dtype, None, None, False)
        self.binds.append((v, k, i))
        return v


def trace(root: Variable, order: list, nodes: list) -> Program:
    """Run the rules of ``order`` (``[(node, need)]``, descending rank) on Variables;
    ``nodes`` is the plan's forward order (what node indices refer to)."""
    prog = Program(root)
    index = {id(n): k for k, n in enumerate(nodes)}
    grads: dict[int, Any] = {id(root): prog.seed}
    keep: dict[int, tuple[int, int, Variable]] = {}
    tokens = (tape.set(prog.steps), modes.mode.set(modes.STATIC))
    try:
        for n, need in order:
            if type(n) is Node:
                v = n.outs[0]()
                gy = grads.get(id(v)) if v is not None else None
                if gy is None:
                    continue
                rule = n.checked_rule()
                gxs = rule.fn(_TraceCtx(n, index[id(n)], need, prog), gy)
            else:
                gys = [grads.get(id(v)) if v is not None else None
                       for v in (r() for r in n.outs)]
                if all(g is None for g in gys):
                    continue
                n.check()
                step = PyGradStep(n, gys, need)
                prog.steps.append(step)
                prog.relocatable = False
                gxs = step.grads
            prog.checks.append(index[id(n)])
            for i, gx in enumerate(gxs):
                if gx is None or not need[i]:
                    continue
                if not isinstance(gx, Variable):
                    gx = _make(gx.shape, gx.dtype, gx, None, False)
                x = n.args[i]
                prev = grads.get(id(x))
                grads[id(x)] = gx if prev is None else F.add(prev, gx)
                if id(x) not in keep:
                    keep[id(x)] = (index[id(n)], i, x)
    finally:
        tape.reset(tokens[0])
        modes.mode.reset(tokens[1])
    outs = [(k, i, x, grads[key]) for key, (k, i, x) in keep.items()]
    uses: dict[int, int] = {}
    for *_, gv in outs:
        uses[id(gv)] = uses.get(id(gv), 0) + 1
    for k, i, x, gv in outs:
        if x._parent is None:
            shared = gv._parent is None or uses[id(gv)] > 1
            prog.leaves.append((k, i, gv, shared))
        else:
            prog.inter.append((k, i, gv))
    results = {id(o[3]) for o in outs}
    _elide_broadcasts(prog, results)
    _plan_release(prog, results)
    _plan_invariants(prog, nodes)
    return prog


def _elide_broadcasts(prog: Program, results: set) -> None:
    """Drop ``broadcast_to`` steps whose every reader is a broadcasting elementwise op
    against an operand of the full shape: the op broadcasts the source itself."""
    readers: dict[int, list] = {}
    for step in prog.steps:
        if type(step) is Node:
            for a in step.args:
                readers.setdefault(id(a), []).append(step)
        else:
            for g in step.gys:
                readers.setdefault(id(g), []).append(step)
    dead = set()
    for step in prog.steps:
        if type(step) is not Node or step.op.name != "broadcast_to":
            continue
        out = step.outs[0]()
        if out is None or id(out) in results:
            continue
        rs = readers.get(id(out), [])
        if not rs or not all(
                type(r) is Node and isinstance(r.op, BinaryOp) and len(r.args) == 2 and
                r.args[0] is not r.args[1] and
                getattr(r.args[1] if r.args[0] is out else r.args[0], "shape", None) ==
                out.shape for r in rs):
            continue
        src = step.args[0]
        for r in rs:
            r.args = tuple(src if a is out else a for a in r.args)
        dead.add(id(step))
    if dead:
        prog.steps = [st for st in prog.steps if id(st) not in dead]


def _plan_invariants(prog: Program, nodes: list) -> None:
    """Steps that read only constant leaf data (and scalars), directly or through other
    such steps, e.g. the transpose of a fixed input in ``x @ W``'s backward: replay skips
    them while that data is the same array at the same version (loop-invariant code)."""
    leaf = {}
    for v, k, i in prog.binds:
        a = nodes[k].args[i] if i >= 0 else None
        if isinstance(a, Variable) and a._parent is None:
            leaf[id(v)] = v
    deps: dict[int, frozenset] = {}
    for s, step in enumerate(prog.steps):
        if type(step) is not Node or len(step.outs) != 1:
            continue
        d: set = set()
        ok = True
        for a in step.args:
            if isinstance(a, Variable):
                if id(a) in leaf:
                    d.add(id(a))
                elif id(a) in deps:
                    d |= deps[id(a)]
                else:
                    ok = False
            elif isinstance(a, NdArray):
                ok = False
        out = step.outs[0]()
        if ok and d and out is not None:
            deps[id(out)] = frozenset(d)
            prog.inv_steps.append((s, out, frozenset(d)))
    used = set().union(*[d for _, _, d in prog.inv_steps]) if prog.inv_steps else set()
    prog.inv_proxies = [leaf[k] for k in used]
    prog.inv_last = [None] * len(prog.inv_proxies)


def _skipped(prog: Program) -> set:
    """Invariant steps whose inputs are unchanged since the last replay."""
    changed = set()
    for j, v in enumerate(prog.inv_proxies):
        d, last = v._data, prog.inv_last[j]
        if last is None or last[0] is not d or last[1] != d.version:
            changed.add(id(v))
            prog.inv_last[j] = (d, d.version)
    return {s for s, out, d in prog.inv_steps if out._data is not None and not (d & changed)}


def _plan_release(prog: Program, results: set) -> None:
    """Per step, the program variables (and bound nodes) whose last reader it is."""
    last: dict[int, tuple[int, Any]] = {}
    bound = {id(v): k for v, k, _ in prog.binds}
    for s, step in enumerate(prog.steps):
        args = step.args if type(step) is Node else [g for g in step.gys if g is not None]
        for a in args:
            if isinstance(a, Variable) and id(a) not in results:
                last[id(a)] = (s, a)
    rel: list[list] = [[] for _ in prog.steps]
    for s, a in last.values():
        rel[s].append(a)
        n = bound.get(id(a))
        if n is not None:
            rel[s].append(n)
    prog.release = rel


def _compile(prog: Program, ctx: Any, run: Any) -> tuple:
    """``(ctx, per-step closures, generated function or None)`` for replaying ``prog``."""
    steps = [compile_step(st, ctx, False, run) for st in prog.steps]
    results = {id(o[2]) for o in prog.leaves} | {id(o[2]) for o in prog.inter}
    fused = generate(prog.steps, {s for s, _, _ in prog.inv_steps}, results, ctx)
    return ctx, steps, fused


def replay(prog: Program, nodes: list, seed: NdArray, ctx: Any, run: Any,
           clear_buffer: bool) -> None:
    """Run a traced program on the graph whose forward order is ``nodes``: check and bind
    its saved data, run the steps, deliver the gradients."""
    for k in prog.checks:
        nodes[k].check()
    for v, k, i in prog.binds:
        n = nodes[k]
        v._data = n.inputs[i] if i >= 0 else n.outputs[-1 - i]
    prog.seed._data = seed
    skip = _skipped(prog) if prog.inv_steps else ()
    compiled = prog.compiled
    if compiled is None or compiled[0] is not ctx:
        compiled = prog.compiled = _compile(prog, ctx, run)
    _, steps, fused = compiled
    if fused is not None:
        for s, _, _ in prog.inv_steps:
            if s not in skip:
                steps[s]()
        fused()
        if clear_buffer:
            for k in prog.checks:
                nodes[k].release()
    else:
        release = prog.release if clear_buffer else None
        for s, step in enumerate(steps):
            if s not in skip:
                step()
            if release is not None:
                for a in release[s]:
                    if type(a) is Variable:
                        a._data = None
                    else:
                        nodes[a].release()
    for k, i, gv, shared in prog.leaves:
        _engine._accumulate_leaf(nodes[k].args[i], gv._data, shared)
    for k, i, gv in prog.inter:
        nodes[k].args[i]._grad = None if clear_buffer else gv._data
    for _, _, gv in prog.inter:
        gv._data = None
    for _, _, gv, _ in prog.leaves:
        gv._data = None
    for v, _, _ in prog.binds:
        v._data = None
    prog.seed._data = None
