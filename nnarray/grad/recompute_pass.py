"""Recomputation: forward values that backward computes again instead of the forward saving
them, so a fused forward writes less and keeps less alive.

Both sides agree through one ``RecomputeRecord`` record, made once when a forward schedule is
compiled (``plan``, called by the fusion pass) and keyed by positions in the forward
order, not by identity:

- ``values``: ``(node, output)`` of each retained value no longer saved. Only a value
  that then is never written is taken: computed inside one fused group, read by nothing
  outside it, neither the graph's output nor held by the user (``fusion_pass.recompute`` picks
  among those the ones cheap to recompute: a few fusable steps from sources it keeps);
- ``steps``: the forward nodes that compute them from their sources, run again at the
  head of backward (where they fuse into backward's first group, in registers);
- ``needs``: ``(node, slot)`` where each source is saved (``slot`` ``i >= 0`` input ``i``,
  ``-1 - j`` output ``j``); a source no node retained is saved as an input of the first
  recomputing step that reads it, so its version is checked as any saved data is.

The forward schedule keeps the record (``Schedule.recompute``) and rewrites its steps'
``retain``; the runner that ran it hands it to the replay (``executor.forward`` stores it
on the plan, an ``Executor`` reads its schedule's), and the replay runs ``derive(program,
nodes, record)``: the traced backward program with those steps prepended and the proxies
of the values no longer saved replaced by their results, cached in the program under the
record. A program traced once thus replays after forwards that saved all or less.
Forwards that do not fuse (numpy, ``fusion_enabled(False)``, define-by-run graphs, whose
forward runs eagerly) record nothing and save what the rules retain.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Callable, Collection, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from ..ndarray import NdArray
from . import fusion_pass
from .node import Node
from .variable import Variable, _make


@dataclass(frozen=True)
class RecomputeRecord:
    """What a forward schedule no longer saves for backward (see the module docstring)."""

    values: tuple[tuple[int, int], ...]
    steps: tuple[int, ...]
    needs: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.values, self.steps, self.needs)))

    def __hash__(self) -> int:  # each backward looks its program up by the record
        return self._hash  # type: ignore[attr-defined]

    def __str__(self) -> str:
        return (f"backward recomputes outputs {list(self.values)} by nodes "
                f"{list(self.steps)} from the saved slots {list(self.needs)}")


# -- the forward side -----------------------------------------------------------------------
def plan(steps: Sequence[Any], desc: Sequence[fusion_pass.Step],
         groups: Sequence[fusion_pass.Group], retained: Collection[Hashable],
         written: Collection[Hashable],
         can_recompute: Callable[[fusion_pass.Step], bool] = fusion_pass.fusable
         ) -> RecomputeRecord | None:
    """The record for a forward schedule's ``steps`` (one per node of the forward order,
    as ``desc`` describes them for the grouping pass; ``groups``: its groups), its
    steps' ``retain`` rewritten to match; ``None`` when nothing is worth recomputing.
    ``retained``: the value ids the steps retain; ``written``: those written anyway;
    ``can_recompute``: which (fusable) steps backward may run again."""
    group_of = {j: set(g.steps) for g in groups for j in g.steps}
    producer = {v: (k, j) for k, s in enumerate(desc) for j, v in enumerate(s.outputs)}
    readers = fusion_pass.readers_of(desc)
    only = {v for v in retained if v not in written and v in producer and
            set(readers.get(v, ())) <= group_of.get(producer[v][0], set())}
    r = fusion_pass.recompute(desc, retained, can_fuse=can_recompute, only=only)
    if not r.values:
        return None
    for st, d in zip(steps, desc):
        if st.retain is not None:
            ri, ro = st.retain
            st.retain = (tuple(i for i in ri if d.inputs[i] not in r.values),
                         tuple(j for j in ro if d.outputs[j] not in r.values))
    return RecomputeRecord(tuple(sorted(producer[v] for v in r.values)), r.steps,
                      _save_needs(steps, desc, r))


def _save_needs(steps: Sequence[Any], desc: Sequence[fusion_pass.Step],
                r: fusion_pass.Recompute) -> tuple[tuple[int, int], ...]:
    """Where each source of ``r`` is saved, adding it to the retained inputs of the first
    recomputing step reading it where no step retains it."""
    saved: dict[Hashable, tuple[int, int]] = {}
    for k, (st, d) in enumerate(zip(steps, desc)):
        if st.retain is not None:
            for i in st.retain[0]:
                saved.setdefault(d.inputs[i], (k, i))
            for j in st.retain[1]:
                saved.setdefault(d.outputs[j], (k, -1 - j))
    for k in r.steps:
        for i, x in enumerate(desc[k].inputs):
            if x in r.needs and x not in saved:
                ri, ro = steps[k].retain or ((), ())
                steps[k].retain = (tuple(sorted({*ri, i})), ro)
                saved[x] = (k, i)
    return tuple(sorted(saved[u] for u in r.needs))


# -- the backward side ----------------------------------------------------------------------
def derive(prog: Any, nodes: list, r: RecomputeRecord) -> Any:
    """The backward program ``prog`` for a forward that ran with record ``r`` on the graph
    whose forward order is ``nodes`` (built once per record, then cached in ``prog``)."""
    got = prog.derived.get(r)
    if got is None:
        got = prog.derived[r] = _derive(prog, nodes, r)
    return got


def _derive(prog: Any, nodes: list, r: RecomputeRecord) -> Any:
    index = {id(n): k for k, n in enumerate(nodes)}

    def key(a: Any) -> Hashable:  # a forward value: its producer's position, else itself
        p = a._parent if isinstance(a, Variable) else None
        if p is not None and id(p) in index:
            return index[id(p)], next(j for j, o in enumerate(p.outputs) if o() is a)
        return id(a)

    def slot(k: int, i: int) -> Hashable:
        return key(nodes[k].inputs[i]) if i >= 0 else (k, -1 - i)

    values, needs = set(r.values), {slot(k, i): (k, i) for k, i in r.needs}
    binds, replaced, made = [], {}, {}
    for v, k, i in prog.binds:
        fk = slot(k, i)
        if fk in values:
            replaced[id(v)] = fk
        else:
            binds.append((v, k, i))
            if fk in needs:
                made.setdefault(fk, v)
    for fk, (k, i) in needs.items():
        if fk not in made:
            shape, dtype = (nodes[k].inputs[i].shape, nodes[k].inputs[i].dtype) if i >= 0 \
                else nodes[k].out_metas[-1 - i]
            made[fk] = v = _make(shape, dtype, None, None, False)
            binds.append((v, k, i))
    cone = [_again(nodes[k], k, key, made) for k in r.steps]
    sub = {pid: made[fk] for pid, fk in replaced.items()}
    steps = [_reading(st, sub) for st in prog.steps]
    leaves = [(k, i, sub.get(id(gv), gv), sh) for k, i, gv, sh in prog.leaves]
    inter = [(k, i, sub.get(id(gv), gv)) for k, i, gv in prog.inter]
    cone = _live(cone, steps, [o[2] for o in leaves + inter])
    d = _copy(prog)
    d.binds, d.steps, d.leaves, d.inter = binds, cone + steps, leaves, inter
    d.checks = list(dict.fromkeys([*prog.checks, *(k for _, k, _ in binds)]))
    d.inv_steps = [(s + len(cone), out, deps) for s, out, deps in prog.inv_steps]
    d.inv_last = [None] * len(prog.inv_proxies)
    d.held = list(made.values())
    return d


def unsaved(prog: Any, nodes: list) -> Any:
    """The first node a (derived) program reads saved data of that it does not hold
    (another forward over it saved less since), else ``None``."""
    for _, k, i in prog.binds:
        n = nodes[k]
        saved, j = (n.saved_inputs, i) if i >= 0 else (n.saved_outputs, -1 - i)
        if saved is None or len(saved) <= j or saved[j] is None:
            return n
    return None


def _again(n: Any, k: int, key: Any, made: dict) -> Node:
    """Forward node ``n`` (position ``k``) recorded again on the program's values: its
    inputs from ``made`` (by ``key``), its outputs added there."""
    ins = tuple(made[key(a)] if isinstance(a, (Variable, NdArray)) else a for a in n.inputs)
    node = Node(n.function, ins, n.attrs, n.out_metas, 0)
    outs = [_make(s, d, None, None, False, node) for s, d in n.out_metas]
    node.outputs = tuple(weakref.ref(o) for o in outs)
    for j, o in enumerate(outs):
        made[(k, j)] = o
    return node


def _reading(st: Any, sub: dict) -> Any:
    """Program step ``st``, a copy reading ``sub``'s Variables where it read a replaced
    proxy (the original program keeps its own)."""
    if not any(id(a) in sub for a in st.inputs):
        return st
    c = copy.copy(st)
    c.inputs = tuple(sub.get(id(a), a) for a in st.inputs)
    return c


def _live(cone: list, steps: list, results: list) -> list:
    """The recomputing nodes whose outputs something reads (dead ones dropped)."""
    used = {id(a) for st in steps for a in st.inputs} | {id(v) for v in results}
    live = []
    for n in reversed(cone):
        if any(id(o()) in used for o in n.outputs):
            live.append(n)
            used.update(id(a) for a in n.inputs)
    return live[::-1]


def _copy(prog: Any) -> Any:
    """A shallow copy of a ``Program`` with no schedule and no derived programs."""
    d = object.__new__(type(prog))
    for name in type(prog).__slots__:
        if name != "__weakref__":
            setattr(d, name, getattr(prog, name))
    d.schedule, d.derived = None, {}
    return d
