"""The executor: running a static graph's forward pass and replaying traced programs.

Forward: the nodes behind an output run in topological order as compiled steps (each
node's ``forward_step``: its kernel resolved once per context, no re-validation, outputs
kept in the variables' NdArrays). ``clear_buffer`` drops each intermediate after its last
consumer ran. Replay: a traced backward program (``program.py``) runs on the graph it was
traced from, or any graph of the same signature: bind the saved forward data, run the
steps (as one generated function where every step is a plain kernel, ``codegen.py``),
deliver the gradients. Plans (orders, what to free, programs) are cached on the output
variable until some ``need_grad`` flag changes.
"""

from __future__ import annotations

import weakref
from typing import Any

from .. import context as _context
from .. import dtypes, late
from ..context import _current
from ..errors import GraphError
from ..ndarray import NdArray
from .codegen import generate, generate_forward
from .planner import forward_releases
from .variable import Variable

_FLOATS = dtypes.INEXACT
_generation = 0


def invalidate_plans() -> None:
    """Forget every cached plan (``need_grad`` changed somewhere)."""
    global _generation
    _generation += 1


class Plan:
    """Everything about one output's graph that does not change between iterations."""

    __slots__ = ("generation", "root", "order", "_release", "bwd", "program", "steps",
                 "leaves", "__weakref__")

    def __init__(self, root: Variable) -> None:
        self.generation = _generation
        self.root = weakref.ref(root)
        self.order = topological(root)
        self._release: Any = None
        self.bwd: Any = None
        self.program: Any = None
        self.steps: Any = None
        self.leaves: Any = None  # [(leaf, shape)] checked before each static forward

    @property
    def release(self) -> list:
        """Per node, the intermediates it is the last consumer of (``clear_buffer``);
        computed on first use: a define-by-run graph's plan seldom needs it."""
        if self._release is None:
            self._release = forward_releases(self.order, (self.root(),))
        return self._release

    def backward_order(self) -> list:
        """``[(node, need)]`` for the nodes a gradient flows through, by descending rank."""
        if self.bwd is None:
            self.bwd = backward_order(self.order, lambda v: v._need_grad)
        return self.bwd


def backward_order(order: list, leaf_needs: Any) -> list:
    """``[(node, need)]`` for the nodes of ``order`` a gradient flows through, by
    descending rank: from the floating leaves for which ``leaf_needs(v)`` holds, through
    intermediates that do not opt out (``need_grad=False`` set on them)."""
    req: dict[int, bool] = {}

    def requires(v: Any) -> bool:
        if not isinstance(v, Variable) or v.dtype not in _FLOATS:
            return False
        p = v._parent
        if p is None:
            return leaf_needs(v)
        return req.get(id(p), False) and (v._need_grad or not v._explicit)

    out = []
    for n in order:
        need = tuple([requires(a) for a in n.inputs])
        req[id(n)] = r = n.differentiable and any(need)
        if r:
            out.append((n, need))
    out.sort(key=lambda e: -e[0].rank)
    return out


def leaves(order: list, outputs: Any) -> list:
    """The leaf Variables the nodes of ``order`` read, in first-use order, then any of
    ``outputs`` that are leaves themselves (a graph's arguments)."""
    out: list = []
    seen: set = set()
    for n in order:
        for a in n.inputs:
            if isinstance(a, Variable) and a._parent is None and id(a) not in seen:
                seen.add(id(a))
                out.append(a)
    for v in outputs:
        if v._parent is None and id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


def topological(root: Variable) -> list:
    """The nodes behind ``root`` in an order where producers precede consumers."""
    return topological_many((root,))


def topological_many(roots: Any) -> list:
    """The nodes behind every root: producers precede consumers, and inputs are visited
    in order (so leaves appear in first-use order)."""
    order: list = []
    seen: set = set()
    for root in roots:
        start = root._parent
        if start is None or id(start) in seen:
            continue
        _visit(start, order, seen)
    return order


def _visit(start: Any, order: list, seen: set) -> None:
    stack = [(start, False)]
    while stack:
        n, done = stack.pop()
        if done:
            order.append(n)
            continue
        if id(n) in seen:
            continue
        seen.add(id(n))
        stack.append((n, True))
        for a in reversed(n.inputs):
            p = a._parent if isinstance(a, Variable) else None
            if p is not None and id(p) not in seen:
                stack.append((p, False))


def _checked_leaves(order: list) -> list:
    """The leaves with their shapes, after checking every node's inference still gives the
    shapes it was built with (an input's ``reset_shape`` since then raises, naming it)."""
    from ..errors import DTypeError, ShapeError
    leaves: dict[int, tuple] = {}
    for n in order:
        for a in n.inputs:
            if isinstance(a, Variable) and a._parent is None:
                leaves[id(a)] = (a, a.shape)
        if n.macro is not None or not hasattr(n.function, "infer"):
            continue
        try:
            metas = n.function.infer(n.inputs, dict(n.attrs))
        except (ShapeError, DTypeError, ValueError) as e:
            metas = e
        if metas != n.out_metas:
            shapes = ", ".join(str(getattr(a, "shape", a)) for a in n.inputs)
            raise GraphError(f"forward: node '{n.label}' ({n.name}) was built for other input "
                             f"shapes than its inputs' now ({shapes}; reset_shape?): build "
                             "the graph again, or bind the new shapes with "
                             f"grad.Graph(...).bind ({metas})")
    return list(leaves.values())


def plan_of(root: Variable) -> Plan:
    p = root._plan
    if p is None or p.generation != _generation:
        p = root._plan = Plan(root)
    return p


def forward(root: Variable, clear_buffer: bool = False) -> None:
    """Run the graph behind ``root`` (kernels resolved once per node and context)."""
    plan = plan_of(root)
    leaves = plan.leaves
    if leaves is None:
        leaves = plan.leaves = _checked_leaves(plan.order)
    for v, shape in leaves:
        if v.shape != shape:
            raise GraphError(f"forward: an input of the graph changed shape from {shape} to "
                             f"{v.shape} (reset_shape) after the graph was built; build the "
                             "graph again, or bind the new shape with grad.Graph(...).bind")
    ctx = _current.get(_context._default)
    steps = plan.steps
    if steps is None or steps[0] is not ctx:
        steps = plan.steps = (ctx, *compile_forward(plan.order, ctx))
    if clear_buffer:
        run_forward(steps[1], None, root, plan.release)
    else:
        run_forward(steps[1], steps[2], root)


def compile_forward(order: list, ctx: Any, save: bool = True,
                    release: list | None = None) -> tuple[list, Any]:
    """``(steps, program)`` of a forward ``order`` under ``ctx``: a compiled step per node
    (``save``: keeping what backward needs) and, where every node is a plain kernel call,
    the generated program (``release``, the memory plan, written in), else ``None``."""
    steps = [n.forward_step(ctx, save) for n in order]
    return steps, generate_forward(order, ctx, save, release) if order else None


def run_forward(steps: list, program: Any, root: Any, release: list | None = None) -> None:
    """Run a compiled forward: the generated ``program`` (of the output ``root``) if any,
    else the steps, each followed by dropping the data of its ``release`` entries."""
    if program is not None:
        program(root)
    elif release is None:
        for step in steps:
            step()
    else:
        for step, rel in zip(steps, release):
            step()
            for v in rel:
                v._data = None


# -- replaying traced programs ---------------------------------------------------------
def _skipped(prog: Any) -> set:
    """Invariant steps whose inputs are unchanged since the last replay."""
    changed = set()
    for j, v in enumerate(prog.inv_proxies):
        d, last = v._data, prog.inv_last[j]
        if last is None or last[0] is not d or last[1] != d.version:
            changed.add(id(v))
            prog.inv_last[j] = (d, d.version)
    return {s for s, out, d in prog.inv_steps if out._data is not None and not (d & changed)}


def _compile(prog: Any, ctx: Any) -> tuple:
    """``(ctx, per-step closures, generated function or None)`` for replaying ``prog``."""
    steps = [st.forward_step(ctx, False) for st in prog.steps]
    return ctx, steps, generate(prog, {s for s, _, _ in prog.inv_steps}, ctx)


def replay(prog: Any, nodes: list, seed: NdArray, ctx: Any, clear_buffer: bool,
           more_seeds: Any = ()) -> None:
    """Run a traced program on the graph whose forward order is ``nodes``: check its
    saved data, run the steps, deliver the gradients (``more_seeds``: the output
    gradients of a program traced from several roots, after the first)."""
    compiled = prog.compiled
    if compiled is None or compiled[0] is not ctx:
        compiled = prog.compiled = _compile(prog, ctx)
    _, steps, fused = compiled
    if fused is not None and not prog.inv_steps:
        fused.fn(nodes, seed, more_seeds, clear_buffer)  # checks and reads the saved data
    else:
        for k in prog.checks:
            nodes[k].check()
        _bind(prog, nodes, seed, more_seeds)
        try:
            _run_steps(prog, nodes, steps, fused, seed, more_seeds, clear_buffer)
        finally:
            _unbind(prog)
    if clear_buffer:
        for k in prog.checks:
            nodes[k].release()


def _bind(prog: Any, nodes: list, seed: NdArray, more_seeds: Any) -> None:
    """Point the program's proxies at the saved forward data and the output gradients."""
    for v, k, i in prog.binds:
        n = nodes[k]
        v._data = n.saved_inputs[i] if i >= 0 else n.saved_outputs[-1 - i]
    prog.seed._data = seed
    for sv, g in zip(prog.more_seeds, more_seeds):
        sv._data = g


def _unbind(prog: Any) -> None:
    for v, _, _ in prog.binds:
        v._data = None
    prog.seed._data = None
    for sv in prog.more_seeds:
        sv._data = None


def _run_steps(prog: Any, nodes: list, steps: list, fused: Any, seed: NdArray,
               more_seeds: Any, clear_buffer: bool) -> None:
    """The steps one closure at a time (the invariant ones only when their inputs
    changed), then the generated function if there is one, else the gradients' delivery."""
    skip = _skipped(prog) if prog.inv_steps else ()
    if fused is not None:
        for s, _, _ in prog.inv_steps:
            if s not in skip:
                steps[s]()
        fused.fn(nodes, seed, more_seeds, clear_buffer)
        return
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
        nodes[k].inputs[i]._accumulate(gv._data, shared)
    for k, i, gv in prog.inter:
        nodes[k].inputs[i]._grad = None if clear_buffer else gv._data
    for _, _, gv in prog.inter:
        gv._data = None
    for _, _, gv, _ in prog.leaves:
        gv._data = None


late.provide(__name__)  # the engine's modules below (nnarray.late)
