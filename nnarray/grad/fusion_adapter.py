"""Fusion wired into the schedules: runs of elementwise steps become one generated kernel.

The pass (``fuse``, appended to ``schedule.passes``, so static forward, executors and
every traced backward replay get it) hands a schedule's steps to the pure grouping pass
(``fusion_pass.groups``) and replaces each group by one step of a ``FusedNode``: the op
``fused_elementwise`` (``ops/fused.py``) on the group's external inputs, returning the
values that must be written (``materialize``: the graph's outputs, what a backward rule
retains, what a step outside the group reads, a backward program's gradients, an
intermediate Variable the user holds). The rest stay in registers and their Variables get
no data. Which Variables the user holds is known, not guessed: the graph's outputs (an
executor's several) are given to the schedule, and an intermediate is marked held
(``Variable._held``) when the user first reads its values. That read finds it fused away
(``fused_away``) and computes it from the fused step's inputs as they were when the step
last ran (``recover``); the graph's schedules are built again, writing it from then on.
A forward that saves for backward first leaves to backward the retained values
it can recompute (``recompute_pass.py``): those are no longer written either, and backward's
first group computes them again from what is saved instead. Only devices whose backend
generates kernels fuse (``fusion_pass.FUSING_BACKENDS``): on numpy the schedule is left as it
is.

``fusion_enabled(False)`` (``modes.py``: per thread; ``NNARRAY_FUSION=0`` in the environment)
builds schedules without it, for comparisons. What backward recomputes follows
``fusion_enabled(recompute=...)`` (``NNARRAY_RECOMPUTE``): ``"auto"`` (the default) any
cheap value on a device whose memory is not the host's (a GPU: memory bounds its
elementwise kernels), only values computed by arithmetic on one whose memory is (a CPU:
there ``tanh`` or ``exp`` computed again costs more than the memory traffic it saves);
``"all"`` any cheap value everywhere; ``"off"`` none.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np

from ..errors import GraphError
from ..ndarray import NdArray
from ..ops.fused import Meta, evaluate_types, fused_elementwise, reduction
from ..registry import dispatch
from . import fusion_pass, modes, recompute_pass, schedule
from .node import Node
from .variable import ByIdentity, Variable

_PY_SCALARS = (bool, int, float)
_fusion = modes.fusion


def enabled() -> bool:
    """Whether schedules built now (in this thread) fuse."""
    return _fusion.get()[0]


def mode() -> tuple[bool, str]:
    """What schedules built now depend on: whether they fuse, what backward recomputes
    (a schedule built under another mode is built again)."""
    return _fusion.get()


def _recomputable(step: fusion_pass.Step) -> bool:
    """Whether backward may compute ``step`` again (``fusion_enabled(recompute=...)``)."""
    how = _fusion.get()[1]
    if not fusion_pass.fusable(step) or how == "off":
        return False
    return how == "all" or fusion_pass.arithmetic(step) or \
        not getattr(step.device, "host_memory", False)


class FusedNode:
    """The node of a fused step: ``fused_elementwise(*inputs, program=...)`` writing
    ``outputs`` (weak references to the members' Variables), standing for the ``members``
    it replaced: what their backward rules retain is kept on them (``retain``)."""

    fusable = True
    relocatable = True
    differentiable = False
    #: The interpreter's run is the one of every node (``Node.run``; ``save`` below).
    run = Node.run
    __slots__ = ("function", "inputs", "attrs", "out_metas", "outputs", "members", "ctx",
                 "saved_inputs", "saved_outputs", "versions", "ran", "recoverable",
                 "__weakref__")

    def __init__(self, inputs: tuple, program: Any, outputs: tuple, metas: tuple,
                 members: list, ctx: Any) -> None:
        self.function, self.ctx = fused_elementwise, ctx
        self.inputs, self.attrs = inputs, {"program": program}
        self.outputs, self.out_metas = outputs, metas
        #: ``[(node, retain, input sources, output sources)]``: a source is ``(0, k)``
        #: the fused step's input ``k``, ``(1, k)`` its output ``k``, ``(2, value)`` a
        #: scalar, ``None`` a value not written (retained by nothing).
        self.members = members
        self.saved_inputs = self.saved_outputs = self.versions = None
        #: The input arrays of its last run (weakly) with their versions: what
        #: ``recover`` computes a value it did not write from.
        self.ran: Any = None
        #: Whether what it leaves unwritten may be read afterwards (a forward that frees
        #: its intermediates, ``clear_buffer``, leaves nothing to read: not).
        self.recoverable = False

    @property
    def name(self) -> str:
        return "fused_elementwise"

    label = name

    @property
    def program(self) -> Any:
        return self.attrs["program"]

    def source(self) -> str:
        """The generated kernel source of the device it runs on, else the program."""
        fn = getattr(dispatch(self.function, self.ctx), "fn", None)
        src = getattr(fn, "source", None)
        metas = [(getattr(a, "shape", ()), getattr(a, "dtype", None)) for a in self.inputs]
        return src(self.program, metas) if src is not None else str(self.program)

    def retain(self, datas: Any, outs: Any, ri: tuple = (), ro: tuple = ()) -> None:
        """Each member keeps what its rule retains, taken from the fused step's input
        arrays ``datas`` and results ``outs`` (``ran`` records the inputs; the first run
        records what it leaves unwritten, ``fused_away``)."""
        if self.ran is None and self.recoverable:
            _away(self)
        self.ran = tuple((weakref.ref(d), d.version) if isinstance(d, NdArray) else None
                         for d in datas)
        srcs = (datas, outs)
        for node, keep, ins, os_ in self.members:
            if keep is None or not (keep[0] or keep[1]):
                node.saved_inputs = node.saved_outputs = node.versions = ()
                continue
            di = [None if s is None else s[1] if s[0] == 2 else srcs[s[0]][s[1]] for s in ins]
            do = [None if s is None else srcs[s[0]][s[1]] for s in os_]
            node.retain(di, do, keep[0], keep[1])

    def save(self, datas: Any, outs: Any) -> None:
        """What ``Node.run`` calls after a run: the members keep what they retain."""
        self.retain(datas, outs)

    def release(self) -> None:
        self.saved_inputs = self.saved_outputs = self.versions = None

    def check(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<FusedNode {len(self.members)} steps>"


# -- the pass -------------------------------------------------------------------------------
def fuse(sched: Any) -> None:
    """Replace each fusable group of ``sched``'s steps by one fused step (nothing on a
    backend that does not fuse, or while ``fusion_enabled(False)``); a forward that saves
    for backward leaves to backward what it can recompute (``recompute_pass.plan``)."""
    if not enabled() or sched.ctx.backend not in fusion_pass.FUSING_BACKENDS:
        return
    steps = sched.steps
    vals: dict[int, Any] = {}
    desc = [_describe(st, sched.ctx, vals) for st in steps]
    if sched.kind == "backward":
        groups = fusion_pass.groups(desc, _results(sched), can_reduce=_reduces)
    else:
        written = _written(sched)
        retained = _retained(steps)
        groups = fusion_pass.groups(desc, written | retained, can_reduce=_reduces)
        if sched.save and groups and _fusion.get()[1] != "off":
            sched.recompute = recompute_pass.plan(steps, desc, groups, retained, written,
                                                  _recomputable)
            if sched.recompute is not None:
                groups = fusion_pass.groups(desc, written | _retained(steps), can_reduce=_reduces)
    if not groups:
        return
    made = {}
    for g in groups:
        st = _step(sched, g, vals)
        if st is not None:
            made[g.position] = (g, st)
    if not made:
        return
    member = {j for g, _ in made.values() for j in g.steps}
    sched.steps = [made[s][1] if s in made else st for s, st in enumerate(steps)
                   if s in made or s not in member]


#: ``{Variable: weak reference to its FusedNode}``: the values a fused forward step
#: computes without writing them (reading one calls ``recover``).
fused_away = ByIdentity()


def _away(node: FusedNode) -> None:
    """Record the member outputs ``node`` does not write (at its first run); data an
    earlier (unfused) run left on them is dropped, so that it is not read as this graph's
    values."""
    written = {id(v) for v in (r() for r in node.outputs) if v is not None}
    ref = weakref.ref(node)
    for m in node.members:
        for r in m[0].outputs:
            v = r()
            if v is not None and id(v) not in written:
                v._data = None
                fused_away[v] = ref


def recover(v: Variable) -> NdArray | None:
    """The values of ``v``, which a fused forward step computed without writing them,
    computed again by its group's member kernels from the step's inputs as they were when
    it last ran, and kept on ``v``; ``None`` when ``v`` was not fused away (or its step
    never ran). Marks ``v`` held: schedules built from now on write it. ``GraphError``
    (``v`` marked all the same) when an input was freed or modified since the step ran."""
    ref = fused_away.get(v)
    node = ref() if ref is not None else None
    if node is None or node.ran is None:
        return None
    v._held = True
    fused_away.pop(v)
    for a, rec in zip(node.inputs, node.ran):
        d = a._data if isinstance(a, Variable) else a
        if rec is not None and (d is None or d is not rec[0]() or d.version != rec[1]):
            raise GraphError(
                f"Variable {v.name} (shape {v.shape}) was computed in registers by a fused "
                f"forward step and not written, and an input of that step was freed or "
                f"modified since it ran: run forward() again (the graph writes the "
                f"variable from then on, now that it was read)")
    vals: dict[int, Any] = {}
    for m in node.members:
        n = m[0]
        datas = [vals.get(id(a), a._data) if isinstance(a, Variable) else a
                 for a in n.inputs]
        res = dispatch(n.function, node.ctx).run(datas, n.attrs, n.out_metas,
                                                 [None] * len(n.out_metas))
        for r, o in zip(n.outputs, (res,) if len(n.out_metas) == 1 else res):
            if r() is not None:
                vals[id(r())] = o
        if id(v) in vals:
            break
    d = v._data = vals[id(v)]
    return d


#: Fewest elements a reduction's operand has for the reduction to join its group: below
#: it the backend's own reduction kernels run faster than the fused one (the MLP step's
#: bias gradients, 64x100: 2-5% slower per step joined on pocl).
REDUCE_MIN = 1 << 16


def _reduces(step: fusion_pass.Step) -> bool:
    """``fusion_pass.reducible``, for operands of ``REDUCE_MIN`` elements or more."""
    return fusion_pass.reducible(step) and math.prod(step.in_metas[0][0]) >= REDUCE_MIN


def _describe(st: Any, ctx: Any, vals: dict) -> fusion_pass.Step:
    """Schedule step ``st`` as the grouping pass sees it (values by id; an opaque,
    invariant or dead-output step gets no op name, so it never fuses)."""
    ins, metas = [], []
    ok = st.kernel is not None and not st.invariant
    for a in st.inputs:
        if isinstance(a, (Variable, NdArray)):
            vals[id(a)] = a
            ins.append(id(a))
            metas.append((a.shape, a.dtype))
        elif type(a) in _PY_SCALARS:
            ins.append(fusion_pass.Const(a))
            metas.append(None)
        else:
            ok = False
            ins.append(fusion_pass.Const(0))
            metas.append(None)
    outs = []
    for j, r in enumerate(st.outs):
        v = r()
        if v is None:
            ok = False
            outs.append(("dead", id(st), j))
        else:
            vals[id(v)] = v
            outs.append(id(v))
    dev = st.kernel.device if st.kernel is not None else ctx
    return fusion_pass.Step(st.op if ok else "", tuple(ins), tuple(outs), tuple(metas),
                       tuple(st.metas), dev, dict(st.attrs or {}))


def _results(sched: Any) -> set:
    """The value ids a backward schedule's fused steps must write: its gradients."""
    prog = sched.prog
    return {id(o[2]) for o in prog.leaves} | {id(o[2]) for o in prog.inter}


def _retained(steps: list) -> set:
    """The ids of the values (arrays) a forward's steps retain for backward."""
    keep: set = set()
    for st in steps:
        if st.retain is not None:
            ri, ro = st.retain
            keep.update(id(st.inputs[i]) for i in ri
                        if isinstance(st.inputs[i], (Variable, NdArray)))
            keep.update(id(st.outs[j]()) for j in ro if st.outs[j]() is not None)
    return keep


def _written(sched: Any) -> set:
    """The value ids a forward's fused steps must write whatever reads them: the graph's
    outputs and the intermediate Variables the user holds (``Variable._held``: marked when
    the user first read one, ``recover``)."""
    root = sched.root() if sched.root is not None else None
    out = set(sched.outputs) | ({id(root)} if root is not None else set())
    for st in sched.steps:
        for r in st.outs:
            v = r()
            if v is not None and getattr(v, "_held", False):
                out.add(id(v))
    return out


def _step(sched: Any, g: fusion_pass.Group, vals: dict) -> Any:
    """The schedule step running group ``g``, or ``None`` where the op's inference
    disagrees with the group's values (left unfused)."""
    steps = sched.steps
    inputs = tuple(vals[i] for i in g.inputs)
    refs, metas = {}, {}
    for j in g.steps:
        st = steps[j]
        for r, m in zip(st.outs, st.metas):
            v = r()
            if v is not None:
                refs[id(v)], metas[id(v)] = r, m
    outs = tuple(refs[v] for v in g.outputs)
    out_metas = tuple(metas[v] for v in g.outputs)
    try:
        inferred = fused_elementwise.infer(inputs, {"program": g.program})
    except Exception:  # noqa: BLE001 - a group the op refuses runs unfused
        return None
    if tuple((tuple(s), d) for s, d in inferred) != tuple((tuple(s), d) for s, d in out_metas):
        return None
    if not _spans(g.program, inputs):
        return None
    k = dispatch(fused_elementwise, sched.ctx)
    if not k.plain:
        return None
    pos = {v: ("i", n) for n, v in enumerate(g.inputs)}
    pos.update({v: ("o", n) for n, v in enumerate(g.outputs)})
    members = [_member(steps[j], pos) for j in g.steps]
    node = FusedNode(inputs, g.program, outs, out_metas, members, sched.ctx)
    node.recoverable = sched.kind == "forward" and sched.releasable is None
    st = schedule.Step(node, k, False)
    if sched.save:
        st.retain = (tuple(range(len(inputs))), tuple(range(len(outs))))
    return st


def _spans(p: Any, inputs: tuple) -> bool:
    """Whether ``p``'s inputs broadcast to the shape it computes over (a kernel launches
    over the inputs' shape: a ``broadcast_to`` beyond all of them is left unfused)."""
    vals = evaluate_types(p, inputs)
    red = p.n_inputs + len(p.instrs) - 1 if reduction(p) is not None else -1
    shapes = [v.shape for k, v in enumerate(vals) if isinstance(v, Meta) and k != red]
    return np.broadcast_shapes(*shapes[:p.n_inputs]) == np.broadcast_shapes(*shapes)


def _member(st: Any, pos: dict) -> tuple:
    """A member step's node, what it retains and where the fused step finds its inputs
    and outputs (``FusedNode.members``)."""
    def src(a: Any) -> Any:
        if not isinstance(a, (Variable, NdArray)):
            return (2, a)
        p = pos.get(id(a))
        return None if p is None else (0 if p[0] == "i" else 1, p[1])
    ins = tuple(src(a) for a in st.inputs)
    outs = tuple(None if r() is None else src(r()) for r in st.outs)
    return (st.node, st.retain, ins, outs)


schedule.passes.append(fuse)
