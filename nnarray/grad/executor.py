"""The executor: what a graph's runs are made of, and running them as schedules.

A ``Plan`` (cached on the output variable until some ``need_grad`` flag changes) holds
the graph's topological order, what to free, the backward order and the traced backward
program. Forward: the order compiles to a ``schedule.Schedule`` per context (and
``clear_buffer``), run by the one interpreter or its generated code. Replay: a traced
backward program (``program.py``) runs, as its schedule for the context, on the graph it
was traced from or any graph of the same signature.
"""

from __future__ import annotations

import weakref
from typing import Any

from .. import context as _context
from .. import dtypes, late
from ..errors import GraphError
from ..ndarray import NdArray
from . import cuda_replay, fusion_adapter, recompute_pass, schedule
from .planner import forward_releasable
from .variable import Variable

_FLOATS = dtypes.INEXACT
_generation = 0


def invalidate_plans() -> None:
    """Forget every cached plan (``need_grad`` changed somewhere)."""
    global _generation
    _generation += 1


class Plan:
    """Everything about one output's graph that does not change between iterations."""

    __slots__ = ("generation", "root", "order", "bwd", "program", "schedules",
                 "leaves", "recompute", "__weakref__")

    def __init__(self, root: Variable) -> None:
        self.generation = _generation
        self.root = weakref.ref(root)
        self.order = topological(root)
        self.bwd: Any = None
        self.program: Any = None
        #: ``{(context, clear_buffer): forward Schedule}``
        self.schedules: dict = {}
        self.leaves: Any = None  # [(leaf, shape)] checked before each static forward
        #: What the last forward run left to backward to recompute (its schedule's
        #: ``recompute``): the replay derives its program for it.
        self.recompute: Any = None

    def backward_order(self) -> list:
        """``[(node, need)]`` for the nodes a gradient flows through, by descending rank."""
        if self.bwd is None:
            self.bwd = backward_order(self.order, lambda v: v._parent is None and v._need_grad)
        return self.bwd


def backward_order(order: list, source: Any) -> list:
    """``[(node, need)]`` for the nodes of ``order`` a gradient flows through, by
    descending rank: from the floating values for which ``source(v)`` holds (leaves, or
    ``grad.grad``'s targets, which may be intermediates), through intermediates that do
    not opt out (``need_grad=False`` set on them)."""
    req: dict[int, bool] = {}

    def requires(v: Any) -> bool:
        if not isinstance(v, Variable) or v.dtype not in _FLOATS:
            return False
        if source(v):
            return True
        p = v._parent
        return p is not None and req.get(id(p), False) and (v._need_grad or not v._explicit)

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
        old, p = p, Plan(root)
        root._plan = p
        if old is not None and len(old.order) == len(p.order) and \
                all(a is b for a, b in zip(old.order, p.order)):
            p.recompute = old.recompute  # what its nodes saved when it last ran
    return p


def recover(v: Variable) -> NdArray | None:
    """The values of an intermediate a fused forward did not write (``fusion_adapter.recover``),
    else ``None``; the plans are built again, so their schedules write it from now on."""
    try:
        d = fusion_adapter.recover(v)
    except GraphError:
        invalidate_plans()  # marked held all the same
        raise
    if d is not None:
        invalidate_plans()
    return d


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
    s = forward_schedule(plan, _context.get_current_context(), clear_buffer)
    cuda_replay.run(s, root, leaves)  # the CUDA-graph hook
    plan.recompute = s.recompute


def forward_schedule(plan: Plan, ctx: Any, clear_buffer: bool = False) -> schedule.Schedule:
    """The plan's forward schedule under ``ctx`` (keeping what backward needs; with
    ``clear_buffer``, each intermediate freed after its last consumer)."""
    key = (ctx, clear_buffer)
    s = plan.schedules.get(key)
    if s is None or s.fused != fusion_adapter.mode():
        s = plan.schedules[key] = schedule.forward(plan.order, ctx, True,
                                                    forward_releasable((plan.root(),))
                                                    if clear_buffer else None,
                                                    plan.root, (plan.root(),))
        s.fused = fusion_adapter.mode()
    return s


def replay(prog: Any, nodes: list, seed: NdArray, ctx: Any, clear_buffer: bool,
           more_seeds: Any = (), recomputed: Any = None) -> None:
    """Run a traced program, as its schedule for ``ctx``, on the graph whose forward
    order is ``nodes`` (``more_seeds``: the output gradients of a program traced from
    several roots, after the first; ``recomputed``: what the forward that ran left to
    backward to recompute, its ``Schedule.recompute``)."""
    if recomputed is not None:
        prog = recompute_pass.derive(prog, nodes, recomputed)
    s = prog.schedule
    if s is None or s.ctx is not ctx or s.fused != fusion_adapter.mode():
        s = prog.schedule = schedule.backward(prog, ctx)
        s.fused = fusion_adapter.mode()
    try:
        s.replay(nodes, seed, clear_buffer, more_seeds)
    except (IndexError, TypeError, AttributeError) as e:
        n = recompute_pass.unsaved(prog, nodes)
        if n is None:
            raise
        raise GraphError(f"backward: {n.label} ({n.name}) holds no saved data where this "
                         "graph's last forward saved it: a forward of a part of the graph "
                         "since left it to be recomputed; run forward() on this output "
                         "again") from e


def schedule_of(v: Variable, backward: bool = False) -> schedule.Schedule:
    """The forward schedule of the static graph behind ``v`` under the current context
    (built if need be), or with ``backward`` the schedule its traced backward program
    last replayed as."""
    plan = plan_of(v)
    if not backward:
        return forward_schedule(plan, _context.get_current_context())
    prog = plan.program
    if prog is not None and plan.recompute is not None:
        prog = prog.derived.get(plan.recompute)
    s = prog.schedule if prog is not None else None
    if s is None:
        raise GraphError("schedule_of: no backward program of this graph ran yet (call "
                         "backward() on it first)")
    return s


def saved_arrays(v: Variable) -> list[NdArray]:
    """The distinct arrays the graph behind ``v`` keeps for its backward pass now (what
    its nodes saved when it last ran forward; less where backward recomputes values)."""
    out: dict[int, NdArray] = {}
    for n in plan_of(v).order:
        for d in (*(n.saved_inputs or ()), *(n.saved_outputs or ())):
            if isinstance(d, NdArray):
                out.setdefault(id(d), d)
    return list(out.values())


def print_schedule(v: Variable, backward: bool = False, source: bool = False) -> None:
    """Print ``schedule_of(v, backward).describe()``: the steps a run of the graph behind
    ``v`` executes; with ``source``, each fused step's program and generated kernel
    source after it."""
    s = schedule_of(v, backward)
    print(s.describe())
    print(cuda_replay.describe(s))
    if source:
        print(s.sources())


late.provide(__name__)  # the engine's modules below (nnarray.late)
