"""The static backward program: a static graph's backward pass, traced once and replayed.

The first ``backward()`` of a static graph runs every backward rule on Variables instead
of NdArrays: the rules' ``F`` calls record nodes on a tape (they are ordinary graph nodes,
so the rules need nothing special). Retained forward data enter through proxy variables
bound to each node's saved arrays at replay; the output gradient enters through a seed
variable. Replaying the tape runs each step's kernel, resolved once, with no validation.
"""

from __future__ import annotations

from typing import Any

from .. import functions as F
from ..ndarray import NdArray
from ..ops.elementwise import BinaryOp
from . import modes
from .recording import tape
from .variable import Variable, _make


class Program:
    """A traced backward pass of one output variable."""

    __slots__ = ("seed", "more_seeds", "binds", "checks", "steps", "leaves", "inter",
                 "inv_proxies", "inv_last", "inv_steps", "schedule", "relocatable",
                 "derived", "held", "__weakref__")

    def __init__(self, root: Variable, more_roots: Any = ()) -> None:
        # Forward nodes are named by their index in the plan's order, variables by
        # (node index, argument index): a program replays on any graph of the same shape.
        self.seed = _make(root.shape, root.dtype, None, None, False)
        self.more_seeds = [_make(r.shape, r.dtype, None, None, False) for r in more_roots]
        self.binds: list[tuple[Variable, int, int]] = []
        self.checks: list[int] = []
        self.steps: list[Any] = []
        self.leaves: list[tuple[int, int, Variable, bool]] = []
        self.inter: list[tuple[int, int, Variable]] = []
        self.relocatable = True
        self.inv_proxies: list[Variable] = []
        self.inv_last: list[Any] = []
        self.inv_steps: list[tuple[int, Variable, frozenset]] = []
        self.schedule: Any = None  # its Schedule for the context it last replayed in
        #: ``{recompute_pass.RecomputeRecord: Program}``: this program for forwards that
        #: saved less (``recompute_pass.derive``); ``held``: the Variables a derived
        #: program made.
        self.derived: dict = {}
        self.held: list = []

    def proxy(self, k: int, i: int, like: Any) -> Variable:
        """A variable bound at replay to node ``k``'s saved input ``i`` (output ``-1-i``)."""
        v = _make(like.shape, like.dtype, None, None, False)
        self.binds.append((v, k, i))
        return v


def trace(root: Variable, order: list, nodes: list, more_roots: Any = ()) -> Program:
    """Run the rules of ``order`` (``[(node, need)]``, descending rank) on Variables;
    ``nodes`` is the plan's forward order (what node indices refer to); ``more_roots``:
    further outputs seeded with their own gradients (a Group's backward)."""
    prog = Program(root, more_roots)
    index = {id(n): k for k, n in enumerate(nodes)}
    grads: dict[int, Any] = {id(root): prog.seed}
    for r, sv in zip(more_roots, prog.more_seeds):
        prev = grads.get(id(r))
        grads[id(r)] = sv if prev is None else F.add(prev, sv)
    keep: dict[int, tuple[int, int, Variable]] = {}
    tokens = (tape.set(prog.steps), modes.mode.set(modes.STATIC))
    try:
        for n, need in order:
            gys = [grads.get(id(v)) if v is not None else None
                   for v in (r() for r in n.outputs)]
            gxs = n.trace_backward(index[id(n)], need, gys, prog)
            if gxs is None:
                continue
            prog.checks.append(index[id(n)])
            for i, gx in enumerate(gxs):
                if gx is None or not need[i]:
                    continue
                if not isinstance(gx, Variable):
                    gx = _make(gx.shape, gx.dtype, gx, None, False)
                x = n.inputs[i]
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
    _plan_invariants(prog, nodes)
    return prog


def _elide_broadcasts(prog: Program, results: set) -> None:
    """Drop ``broadcast_to`` steps whose every reader is a broadcasting elementwise op
    against an operand of the full shape: the op broadcasts the source itself."""
    readers: dict[int, list] = {}
    for step in prog.steps:
        for a in step.inputs:
            readers.setdefault(id(a), []).append(step)
    dead = set()
    for step in prog.steps:
        if not step.fusable or step.function.name != "broadcast_to":
            continue
        out = step.outputs[0]()
        if out is None or id(out) in results:
            continue
        rs = readers.get(id(out), [])
        if not rs or not all(
                r.fusable and isinstance(r.function, BinaryOp) and len(r.inputs) == 2 and
                r.inputs[0] is not r.inputs[1] and
                getattr(r.inputs[1] if r.inputs[0] is out else r.inputs[0], "shape", None) ==
                out.shape for r in rs):
            continue
        src = step.inputs[0]
        for r in rs:
            r.inputs = tuple(src if a is out else a for a in r.inputs)
        dead.add(id(step))
    if dead:
        prog.steps = [st for st in prog.steps if id(st) not in dead]


def _plan_invariants(prog: Program, nodes: list) -> None:
    """Steps that read only constant leaf data (and scalars), directly or through other
    such steps, e.g. the transpose of a fixed input in ``x @ W``'s backward: replay skips
    them while that data is the same array at the same version (loop-invariant code)."""
    leaf = {}
    for v, k, i in prog.binds:
        a = nodes[k].inputs[i] if i >= 0 else None
        if isinstance(a, Variable) and a._parent is None:
            leaf[id(v)] = v
    deps: dict[int, frozenset] = {}
    for s, step in enumerate(prog.steps):
        if not step.fusable or len(step.outputs) != 1:
            continue
        d: set = set()
        ok = True
        for a in step.inputs:
            if isinstance(a, Variable):
                if id(a) in leaf:
                    d.add(id(a))
                elif id(a) in deps:
                    d |= deps[id(a)]
                else:
                    ok = False
            elif isinstance(a, NdArray):
                ok = False
        out = step.outputs[0]()
        if ok and d and out is not None:
            deps[id(out)] = frozenset(d)
            prog.inv_steps.append((s, out, frozenset(d)))
    used = set().union(*[d for _, _, d in prog.inv_steps]) if prog.inv_steps else set()
    prog.inv_proxies = [leaf[k] for k in used]
    prog.inv_last = [None] * len(prog.inv_proxies)



