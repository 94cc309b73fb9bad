"""The backward program: a graph's backward pass, traced and replayed.

Tracing runs every backward rule on Variables instead of NdArrays: the rules' ``F`` calls
record nodes on a tape (they are ordinary graph nodes, so the rules need nothing
special). Retained forward data enter through proxy variables bound to each node's saved
arrays at replay; the output gradient enters through a seed variable. Replaying the tape
runs each step's kernel, resolved once, with no validation. A static graph's first
``backward()`` traces (nothing runs) and replays; a define-by-run graph's backward is
traced while it runs (``trace(run=...)``: each step computed as it is recorded) at its
signature's second sighting, and later graphs of that signature replay the program. A
graph seen once runs the same rules untaped (``run_untaped``).
"""

from __future__ import annotations

from typing import Any

from .. import functions as F
from ..ndarray import NdArray
from ..ops.elementwise import BinaryOp
from . import modes
from .node import UNTAPED
from .recording import tape
from .variable import Variable, _make


class Program:
    """A traced backward pass of one output variable."""

    __slots__ = ("seed", "more_seeds", "binds", "checks", "steps", "leaves", "inter",
                 "inv_proxies", "inv_last", "inv_steps", "schedule", "relocatable",
                 "derived", "held", "live", "__weakref__")
    #: Its rules record steps (``node.RuleValues``: how else they may run).
    taped = True

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
        #: While traced as it runs: the forward order whose saved data proxies bind to.
        self.live: Any = None

    def proxy(self, k: int, i: int, like: Any) -> Variable:
        """A variable bound at replay to node ``k``'s saved input ``i`` (output ``-1-i``)."""
        v = _make(like.shape, like.dtype, None, None, False)
        self.binds.append((v, k, i))
        if self.live is not None:
            n = self.live[k]
            v._data = n.saved_inputs[i] if i >= 0 else n.saved_outputs[-1 - i]
        return v

    def clear(self) -> None:
        """Drop the values a run while tracing left on the program's variables (its
        proxies, seeds and step results): it keeps no data of the graph it ran on."""
        self.live = None
        for v, _, _ in self.binds:
            v._data = None
        self.seed._data = None
        for sv in self.more_seeds:
            sv._data = None
        for st in self.steps:
            for r in st.outputs:
                v = r()
                if v is not None:
                    v._data = None


def trace(root: Variable, order: list, nodes: list, more_roots: Any = (),
          run: NdArray | None = None) -> Program:
    """Run the rules of ``order`` (``[(node, need)]``, descending rank) on Variables;
    ``nodes`` is the plan's forward order (what node indices refer to); ``more_roots``:
    further outputs seeded with their own gradients (a Group's backward). With ``run``
    (the output gradient) the backward pass runs as it is traced (``modes.TRACE``: the
    seed and proxies bound to the data, each step computed as it is recorded): the
    gradients are on the program's results until ``Program.clear``."""
    prog = Program(root, more_roots)
    if run is not None:
        prog.live = nodes
        prog.seed._data = run
    index = {id(n): k for k, n in enumerate(nodes)}
    grads: dict[int, Any] = {id(root): prog.seed}
    for r, sv in zip(more_roots, prog.more_seeds):
        prev = grads.get(id(r))
        grads[id(r)] = sv if prev is None else F.add(prev, sv)
    keep: dict[int, tuple[int, int, Variable]] = {}
    tokens = (tape.set(prog.steps),
              modes.mode.set(modes.STATIC if run is None else modes.TRACE))
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
    if run is None:
        finish(prog, nodes)
    return prog


def run_untaped(root: Variable, order: list, g: NdArray, clear_buffer: bool) -> None:
    """The rules of ``order`` run as ``trace`` runs them, recording nothing: on the saved
    NdArrays, each leaf's gradient added into its ``.grad`` as it comes, each
    intermediate's summed and left on its ``.grad`` (unless ``clear_buffer``, which
    frees each node's data once its rule ran). For a graph whose program is not kept: a
    program costs more to keep than a graph seen once takes to run."""
    grads: dict[int, Any] = {id(root): g}
    prog = UNTAPED
    for n, need in order:  # (on NdArrays: the rules' functions run now in any mode)
        if len(n.outputs) == 1:  # (most nodes: no list comprehensions, a call each)
            v = n.outputs[0]()
            gys = [None if v is None else grads.get(id(v))]
        else:
            gys = [None if v is None else grads.get(id(v)) for v in
                   [r() for r in n.outputs]]
        gxs = n.trace_backward(-1, need, gys, prog)
        if gxs is not None:
            for i, gx in enumerate(gxs):
                if gx is None or not need[i]:
                    continue
                x = n.inputs[i]
                if type(gx) is Variable:  # a Python function's step
                    gx = gx._data
                if x._parent is None:
                    x._receive_grad(gx, _aliased(n, i, gx, gys, gxs))
                    continue
                prev = grads.get(id(x))
                x._grad = grads[id(x)] = gx if prev is None else F.add(prev, gx)
        if clear_buffer:
            _release(n, root, grads)


def _aliased(n: Any, i: int, gx: NdArray, gys: list, gxs: Any) -> bool:
    """Whether input ``i``'s gradient ``gx`` is an output gradient, another input's or
    saved data of ``n`` (then a leaf's ``.grad`` copies it rather than adopt it)."""
    for g in gys:
        if g is gx:
            return True
    for j, g in enumerate(gxs):
        if g is gx and j != i:
            return True
    for d in (n.saved_inputs or ()):
        if d is gx:
            return True
    for d in (n.saved_outputs or ()):
        if d is gx:
            return True
    return False


def _release(n: Any, root: Variable, grads: dict) -> None:
    """``clear_buffer`` as the pass goes: ``n``'s saved data, its outputs' values and
    their gradients (its rule consumed them) are dropped."""
    n.release()
    for v in [r() for r in n.outputs]:
        if v is not None and v is not root:
            v._grad = None
            v._data = None
            grads.pop(id(v), None)


def finish(prog: Program, nodes: list) -> None:
    """What a replay gains from (broadcasts elided, loop-invariant steps marked), done
    once tracing is over: after a run while tracing, which needed every step."""
    _elide_broadcasts(prog, {id(o[2]) for o in prog.leaves} | {id(o[2]) for o in prog.inter})
    _plan_invariants(prog, nodes)


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



