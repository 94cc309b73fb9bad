"""The fusion pass: which elementwise steps of a schedule run as one generated kernel.

A pure function over a backend-neutral description of the steps (``Step``: op name,
attrs, input value ids or constants, output value ids and metas, device), independent of
the graph classes, so any runner's schedule can call it: ``groups(steps, materialize)``
returns the maximal groups, each with its ``fused_elementwise`` program (``ops.fused``),
its external inputs and the values it must write. The caller replaces a group's steps by
one ``fused_elementwise`` step at ``Group.position`` (its last step's place).
``recompute(steps, retained)`` says which values a forward keeps for backward are better
recomputed by backward (its steps run again at backward's head and fuse there);
``arithmetic(step)`` whether a step calls no math function (what is cheap to recompute
where compute, not memory, bounds an elementwise kernel: a CPU).

Rules:

- a step may join when it is elementwise: a declared function (``ops/ufuncs.py``) with a
  C expression, ``where``, a cast or a ``broadcast_to``, its scalar operands becoming constants, and
  every dtype it reads or writes one the kernels fuse (``FUSED_DTYPES``; integer ``pow``
  never: its kernels check the exponent first);
- only devices whose backend generates kernels fuse (``FUSING_BACKENDS``): numpy keeps
  its own ``out=`` reuse, which a fused step could not beat;
- a step joins the groups of its producers and of the step just before it when they run
  on its device with its output shape, unless a step outside them that runs before it
  reads one of their values (the group runs at its last step's place, after that reader)
  or the kernel would take more than ``MAX_BUFFERS`` buffers;
- a reduction (``sum prod mean max min``) may end the group computing its operand, on
  OpenCL (``REDUCING_BACKENDS``), which then takes no further step;
- a group has at least two steps; a value it computes is written (an output) when the
  caller must have it (``materialize``: graph outputs, values retained for backward) or a
  step outside the group reads it; the rest stay in registers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..dtypes import LOW, DTypeSet, is_floating
from ..ops import fused as _fused
from ..ops.ufuncs import BY_NAME

#: Backends whose devices fuse (they generate one kernel per program).
FUSING_BACKENDS = ("opencl", "cuda")
#: Most buffers (inputs and outputs) a fused kernel takes: OpenCL guarantees 1024 bytes of
#: kernel arguments (128 pointers) and CUDA before 12.1 4 KiB, where each CuPy array
#: argument of rank 4 takes 80 bytes.
MAX_BUFFERS = 32
#: Backends where a reduction may end a group (computing the program as it reduces;
#: CUDA's kernel would run the program, then the reduction: nothing gained).
REDUCING_BACKENDS = ("opencl",)
#: Dtypes a fused step may read or write (complex is not fused yet). The 16-bit floats
#: are loaded and stored as such and computed in float32 (``ops.fused.widened``: rounded
#: once, where stored or cast, not after every op as unfused steps do).
FUSED_DTYPES = DTypeSet((np.bool_, np.int32, np.int64, np.float16, np.float32, np.float64),
                        bf16=True)


@dataclass(frozen=True)
class Const:
    """A scalar operand of a step (``x * 0.5``): a Python bool, int or float."""

    value: bool | int | float


@dataclass(frozen=True)
class Step:
    """One step of a schedule as the pass sees it. ``inputs``: value ids (any hashable
    but ``Const``) or ``Const``; ``in_metas``/``metas``: ``(shape, dtype)`` per input
    (``None`` for a ``Const``) and per output; ``device``: where it runs (a ``Context``,
    a device, or a string such as ``"opencl:1"``)."""

    op: str
    inputs: tuple
    outputs: tuple
    in_metas: tuple
    metas: tuple
    device: Any
    attrs: dict = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class Group:
    """A fused group: ``steps`` (indices into the step list, ascending) run as
    ``fused_elementwise(*inputs, program=program)`` at ``position`` (the last step's
    index), which returns the values ``outputs`` (ids) in order."""

    steps: tuple[int, ...]
    program: _fused.Program
    inputs: tuple
    outputs: tuple
    position: int


def backend_of(device: Any) -> str:
    """The backend name of a ``Step.device``."""
    return str(getattr(device, "backend", device)).split(":")[0]


def fusable(step: Step) -> bool:
    """Whether ``step`` may join a group (see the module docstring)."""
    if backend_of(step.device) not in FUSING_BACKENDS or len(step.outputs) != 1:
        return False
    metas = [m for m in (*step.in_metas, *step.metas) if m is not None]
    if any(np.dtype(d) not in FUSED_DTYPES for _, d in metas):
        return False
    if not any(not isinstance(x, Const) for x in step.inputs):
        return False
    if step.op in (_fused.CAST, _fused.BROADCAST):
        return len(step.inputs) == 1
    if step.op == _fused.WHERE:
        return len(step.inputs) == 3 and not isinstance(step.inputs[0], Const)
    row = BY_NAME.get(step.op)
    if row is None or row.c is None or len(step.inputs) != row.arity:
        return False
    if row.hints.narrow and any(np.dtype(d) in LOW for _, d in metas):
        return False  # a 16-bit step would compute in float32 (see ``Hints.narrow``)
    return not (step.op == "pow" and not is_floating(np.dtype(step.metas[0][1])))


#: Calls in a C expression that cost about as much as arithmetic.
CHEAP_CALLS = frozenset({"max", "min", "fmax", "fmin", "fabs", "abs", "copysign", "isnan",
                         "isinf", "isfinite", "signbit", "floor", "ceil", "trunc", "rint",
                         "round", "select"})
_CALL = re.compile(r"([A-Za-z_]\w*)\s*\(")


def arithmetic(step: Step) -> bool:
    """Whether fusable ``step`` computes with arithmetic alone: a cast, broadcast,
    ``where``, or a row whose C expression calls nothing but ``CHEAP_CALLS`` (``add``,
    ``mul``, ``maximum`` are; ``tanh``, ``sigmoid``, ``exp``, ``sqrt``, ``pow`` are not)."""
    if step.op in (_fused.CAST, _fused.BROADCAST, _fused.WHERE):
        return True
    row = BY_NAME.get(step.op)
    c = None if row is None else row.c
    if callable(c):
        c = c(np.dtype(step.metas[0][1]))
    return isinstance(c, str) and set(_CALL.findall(c)) <= CHEAP_CALLS


def reducible(step: Step) -> bool:
    """Whether reduction ``step`` may end the group computing its operand: on a device of
    ``REDUCING_BACKENDS``, of dtypes the kernels fuse."""
    if step.op not in _fused.REDUCTIONS or backend_of(step.device) not in REDUCING_BACKENDS:
        return False
    metas = (*step.in_metas, *step.metas)
    return len(step.inputs) == 1 and not isinstance(step.inputs[0], Const) and \
        None not in metas and all(np.dtype(d) in FUSED_DTYPES for _, d in metas)


def groups(steps: Sequence[Step], materialize: Collection[Hashable],
           can_fuse: Callable[[Step], bool] = fusable,
           can_reduce: Callable[[Step], bool] = reducible) -> list[Group]:
    """The maximal fused groups of ``steps`` (in schedule order). ``materialize``: the
    value ids that must be written whatever reads them."""
    producer = {v: k for k, s in enumerate(steps) for v in s.outputs}
    readers = readers_of(steps)
    group_of: dict[int, frozenset[int]] = {}
    closed: set[frozenset[int]] = set()  # ended by a reduction

    def join(chosen: frozenset[int]) -> None:
        for j in chosen:
            group_of[j] = chosen

    for k, s in enumerate(steps):
        if can_reduce(s):  # ends the group of its operand, if it may run here
            g = group_of.get(producer.get(s.inputs[0], -1))
            if g is not None and g not in closed and \
                    _key(steps, g) == (s.device, tuple(s.in_metas[0][0])) and \
                    _placeable(steps, g | {k}, readers):
                join(g | {k})
                closed.add(g | {k})
            continue
        if not can_fuse(s):
            continue
        key = (s.device, tuple(s.metas[0][0]))
        near = {producer[x] for x in s.inputs if not isinstance(x, Const) and x in producer}
        if k > 0:
            near.add(k - 1)
        cands = {group_of[j] for j in near if j in group_of and group_of[j] not in closed
                 and _key(steps, group_of[j]) == key}
        chosen = frozenset({k})
        merged = frozenset({k}).union(*cands)
        if cands and _placeable(steps, merged, readers):
            chosen = merged
        else:  # the largest one that can move here alone
            for g in sorted(cands, key=len, reverse=True):
                if _placeable(steps, g | {k}, readers):
                    chosen = g | {k}
                    break
        join(chosen)
    made = (_group(steps, sorted(g), materialize, readers)
            for g in dict.fromkeys(group_of.values()) if len(g) >= 2)
    return sorted((g for g in made if g is not None), key=lambda g: g.position)


def readers_of(steps: Sequence[Step]) -> dict[Hashable, list[int]]:
    """``{value: [index of each step reading it]}`` (constants aside)."""
    readers: dict[Hashable, list[int]] = {}
    for k, s in enumerate(steps):
        for x in s.inputs:
            if not isinstance(x, Const):
                readers.setdefault(x, []).append(k)
    return readers


def _key(steps: Sequence[Step], g: frozenset[int]) -> tuple:
    s = steps[max(g)]
    return (s.device, tuple(s.metas[0][0]))


def _placeable(steps: Sequence[Step], g: frozenset[int], readers: dict) -> bool:
    """No step outside ``g`` between its first and last step reads a value of ``g`` (it
    would run before the fused step that writes it), and its kernel would take at most
    ``MAX_BUFFERS`` buffers (counting every value read outside, later steps too)."""
    first, last = min(g), max(g)
    made = {v for j in g for v in steps[j].outputs}
    ins = {x for j in g for x in steps[j].inputs if not isinstance(x, Const) and x not in made}
    outs = 0
    for v in made:
        outside = [r for r in readers.get(v, ()) if r not in g]
        if any(first < r < last for r in outside):
            return False
        outs += bool(outside)
    return len(ins) + outs <= MAX_BUFFERS


def _group(steps: Sequence[Step], members: list[int], materialize: Collection[Hashable],
           readers: dict) -> Group | None:
    """The program of ``members``: external inputs in first-read order, constants
    deduplicated, written values those read outside or to be materialized."""
    inside = set(members)
    produced = {v for j in members for v in steps[j].outputs}
    inputs: list = []
    for j in members:
        for x in steps[j].inputs:
            if not isinstance(x, Const) and x not in produced and x not in inputs:
                inputs.append(x)
    ref = {x: k for k, x in enumerate(inputs)}
    instrs: list[_fused.Instr] = []
    consts: dict[_fused.Instr, int] = {}

    def emit(i: _fused.Instr) -> int:
        instrs.append(i)
        return len(inputs) + len(instrs) - 1

    for j in members:
        s = steps[j]
        args = []
        for x in s.inputs:
            if isinstance(x, Const):
                c = _fused.const(x.value)
                if c not in consts:
                    consts[c] = emit(c)
                args.append(consts[c])
            else:
                args.append(ref[x])
        attr = None
        if s.op in _fused.REDUCTIONS:
            attr = (tuple(s.attrs["axis"]), bool(s.attrs.get("keepdims", False)))
        elif s.op == _fused.CAST:
            attr = np.dtype(s.attrs["dtype"]).name
        elif s.op == _fused.BROADCAST:
            attr = tuple(s.attrs["shape"])
        ref[s.outputs[0]] = emit(_fused.Instr(s.op, tuple(args), attr))
    outputs = tuple(v for j in members for v in steps[j].outputs
                    if v in materialize or any(r not in inside for r in readers.get(v, ())))
    if not outputs:
        return None  # nothing reads what it computes: the caller's dead code
    program = _fused.Program(len(inputs), tuple(instrs), tuple(ref[v] for v in outputs))
    return Group(tuple(members), program, tuple(inputs), outputs, members[-1])


@dataclass(frozen=True)
class Recompute:
    """Retained values that backward may recompute instead (``recompute``): ``values``
    need not be kept once ``needs`` are; ``steps`` (indices, in order) compute them from
    ``needs``, to run again at the head of backward, where they fuse into its groups."""

    values: frozenset
    steps: tuple[int, ...]
    needs: frozenset


def recompute(steps: Sequence[Step], retained: Collection[Hashable], max_steps: int = 16,
              can_fuse: Callable[[Step], bool] = fusable,
              only: Collection[Hashable] | None = None) -> Recompute:
    """Which ``retained`` values (kept by a forward ``steps`` for backward) are cheaper
    recomputed: each one (of ``only``, if given) that fusable steps on its device, of its
    shape, compute from values not made that way, in at most ``max_steps`` steps, and that
    no other such value needs as a source. Taken only when keeping their sources instead
    keeps no more values than ``retained`` (the chain's ``t`` and ``s`` become its
    ``x``); otherwise nothing is."""
    producer = {v: k for k, s in enumerate(steps) for v in s.outputs}
    cones = {}
    for v in retained:
        if only is None or v in only:
            cone, srcs = _cone(steps, producer, v, can_fuse, max_steps)
            if cone:
                cones[v] = (cone, srcs)
    while True:  # a value another one is recomputed from stays kept
        needs = set().union(*(s for _, s in cones.values()))
        clash = needs & cones.keys()
        if not clash:
            break
        for v in clash:
            del cones[v]
    kept = (set(retained) - cones.keys()) | needs
    if not cones or len(kept) > len(set(retained)):
        return Recompute(frozenset(), (), frozenset())
    steps_ = set().union(*(c for c, _ in cones.values()))
    return Recompute(frozenset(cones), tuple(sorted(steps_)), frozenset(needs))


def _cone(steps: Sequence[Step], producer: dict, v: Hashable, can_fuse: Callable,
          limit: int) -> tuple[set[int], set]:
    """The fusable steps computing ``v`` (same device and shape) and the values they read
    from elsewhere; empty when ``v`` is not made so or takes more than ``limit`` steps."""
    k = producer.get(v)
    if k is None or not can_fuse(steps[k]):
        return set(), set()
    key = (steps[k].device, tuple(steps[k].metas[0][0]))
    cone, srcs, todo = set(), set(), [v]
    while todo:
        x = todo.pop()
        j = producer.get(x)
        if j is None or not can_fuse(steps[j]) or \
                (steps[j].device, tuple(steps[j].metas[0][0])) != key:
            srcs.add(x)
        elif j not in cone:
            cone.add(j)
            todo.extend(i for i in steps[j].inputs if not isinstance(i, Const))
    return (cone, srcs) if len(cone) <= limit else (set(), set())
