"""``fused_elementwise``: several elementwise steps as one op (made by ``grad.fusion_pass``).

Its one attribute, ``program``, is a ``Program``: a hashable list of instructions over the
op's inputs, each a declared elementwise function (a row of ``ops/ufuncs.py``), ``where``,
a cast, a broadcast or a Python scalar constant (and, last, perhaps one reduction), with
its arguments given as references (``0 .. n_inputs - 1`` the inputs, ``n_inputs + j``
instruction ``j``), and the references of the values it returns. Each instruction is typed
as its unfused op would be (the rows' dtype rules, constants weak); the backends compute it
as that op would, intermediates in registers where they generate a kernel, except that
16-bit floats (float16, bfloat16) compute in float32: every backend runs ``widened(p)``,
where a 16-bit input is read as float32, each 16-bit value is computed as the float32
op gives it on float32 operands (no rounding between the steps), and a 16-bit value is
rounded once: where it is returned (stored), cast to (``cast``: the one rounding asked
for) or reduced (the operand rounded, then reduced accumulating in float32, as the unfused
reduction does). Not part of ``F``: the fusion pass creates it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from .. import dtypes
from ..dtypes import LOW
from ..errors import DTypeError, ShapeError
from . import reduction as _reduction
from . import ufuncs
from .common import broadcast_to_shape, require_array
from .elementwise import ops as _rows
from .elementwise import where as _where
from .op import Op

#: Instruction kinds besides the rows' names (``where``: condition, x, y).
CAST, BROADCAST, CONST, WHERE = "cast", "broadcast_to", "const", "where"
#: Reductions that may end a program (attr: normalized axes, keepdims).
REDUCTIONS = {n: getattr(_reduction, f"{n}_op") for n in ("sum", "prod", "mean", "max", "min")}
_CONST_TYPES = {"bool": bool, "int": int, "float": float}
#: What a 16-bit float value of a program is computed in (``widened``).
WIDE = np.dtype(np.float32)


@dataclass(frozen=True)
class Instr:
    """One instruction: ``op`` (a row name, ``WHERE``, ``CAST``, ``BROADCAST`` or ``CONST``), its
    argument references and ``attr``: a cast's dtype name, a broadcast's shape, a
    constant's ``(type name, repr)`` (so ``1``, ``1.0`` and ``True`` stay distinct and NaN
    equals itself)."""

    op: str
    args: tuple[int, ...] = ()
    attr: Any = None


@dataclass(frozen=True)
class Program:
    """Instructions over ``n_inputs`` inputs and the references it returns."""

    n_inputs: int
    instrs: tuple[Instr, ...]
    outputs: tuple[int, ...]

    def __hash__(self) -> int:  # kernels look their plans up by program on every launch
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.n_inputs, self.instrs, self.outputs))
            object.__setattr__(self, "_hash", h)
        return h

    def __getstate__(self) -> dict:  # string hashes differ between processes
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    def live(self) -> frozenset[int]:
        """The references the outputs depend on (dead instructions need no code)."""
        need, todo = set(), list(self.outputs)
        while todo:
            r = todo.pop()
            if r not in need:
                need.add(r)
                if r >= self.n_inputs:
                    todo.extend(self.instrs[r - self.n_inputs].args)
        return frozenset(need)

    def __str__(self) -> str:
        """One line per instruction: ``t3 = mul(x0, t2)``."""
        lines = [f"{name(self, self.n_inputs + j)} = {describe(self, i)}"
                 for j, i in enumerate(self.instrs)]
        lines.append("return " + ", ".join(name(self, r) for r in self.outputs))
        return "\n".join(lines)


def const(value: bool | int | float) -> Instr:
    """The instruction of a Python scalar constant (weak, as in ``x * 0.5``)."""
    t = type(value).__name__
    if t not in _CONST_TYPES:
        raise TypeError(f"fused_elementwise: a constant must be a Python bool, int or float, "
                        f"got {type(value).__name__}")
    return Instr(CONST, (), (t, repr(value)))


def const_value(i: Instr) -> bool | int | float:
    t, text = i.attr
    return text == "True" if t == "bool" else _CONST_TYPES[t](text)


def name(p: Program, ref: int) -> str:
    """The readable name of reference ``ref``: ``x0`` an input, ``t0`` an instruction."""
    return f"x{ref}" if ref < p.n_inputs else f"t{ref - p.n_inputs}"


def describe(p: Program, i: Instr, shapes: bool = True) -> str:
    """Instruction ``i`` as a call; ``shapes=False`` leaves out a broadcast's shape (the
    kernels' comments: their code does not depend on it, and a shape in the source would
    make the program cache build the same kernel again for every batch size)."""
    if i.op == CONST:
        return repr(const_value(i))
    args = ", ".join(name(p, a) for a in i.args)
    if i.op == CAST or i.op in REDUCTIONS or (i.op == BROADCAST and shapes):
        return f"{i.op}({args}, {i.attr})"
    return f"{i.op}({args})"


class Builder:
    """A program written as calls: ``b.call("mul", x, b.const(0.5))`` returns the new
    instruction's reference; ``b.program(outputs)`` the ``Program``."""

    def __init__(self, n_inputs: int) -> None:
        self.n_inputs = n_inputs
        self.instrs: list[Instr] = []

    def emit(self, i: Instr) -> int:
        self.instrs.append(i)
        return self.n_inputs + len(self.instrs) - 1

    def call(self, op: str, *args: int, attr: Any = None) -> int:
        return self.emit(Instr(op, args, attr))

    def const(self, value: bool | int | float) -> int:
        return self.emit(const(value))

    def program(self, outputs: Any) -> Program:
        return Program(self.n_inputs, tuple(self.instrs), tuple(outputs))


class Meta(NamedTuple):
    """A value's shape and dtype (what the rows' inference reads of an array)."""

    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)


def evaluate_types(p: Program, inputs: tuple) -> list:
    """Per reference: a ``Meta`` (inputs and computed values) or a constant's Python
    scalar; raises the typed error of the first bad instruction, naming it."""
    if not isinstance(p, Program):
        raise TypeError(f"fused_elementwise: attribute 'program' must be a Program, "
                        f"got {type(p).__name__}")
    if len(inputs) != p.n_inputs:
        raise ValueError(f"fused_elementwise: the program takes {p.n_inputs} inputs, "
                         f"got {len(inputs)}")
    vals: list = []
    for k, x in enumerate(inputs):
        require_array("fused_elementwise", f"x{k}", x)
        vals.append(Meta(tuple(x.shape), np.dtype(x.dtype)))
    for j, i in enumerate(p.instrs):
        vals.append(_instr_type(p, j, i, vals))
    if not p.outputs:
        raise ValueError("fused_elementwise: the program returns nothing")
    for r in p.outputs:
        if not p.n_inputs <= r < len(vals) or not isinstance(vals[r], Meta):
            raise ValueError(f"fused_elementwise: output reference {r} is not a computed "
                             f"array value (inputs {p.n_inputs}, instructions {len(p.instrs)})")
    return vals


def _instr_type(p: Program, j: int, i: Instr, vals: list) -> Any:
    ok = all(isinstance(a, int) and 0 <= a < len(vals) for a in i.args)
    where = f"fused_elementwise: instruction t{j} ({describe(p, i) if ok else i.op})"
    if not ok:
        raise ValueError(f"{where}: argument references {i.args} must name inputs or earlier "
                         f"instructions (< {len(vals)})")
    args = [vals[a] for a in i.args]
    if i.op == CONST:
        if i.args or not (isinstance(i.attr, tuple) and len(i.attr) == 2 and
                          i.attr[0] in _CONST_TYPES):
            raise ValueError(f"{where}: a constant takes no arguments and a (type, repr) attr")
        return const_value(i)
    arrays = [isinstance(a, Meta) for a in args]
    if not all(arrays) and (i.op in (CAST, BROADCAST) or not any(arrays)):
        raise TypeError(f"{where}: at least one argument must be an array value")
    try:
        if i.op == CAST:
            (x,) = args
            return Meta(x.shape, dtypes.normalize(i.attr, "fused_elementwise"))
        if i.op == BROADCAST:
            (x,) = args
            broadcast_to_shape(BROADCAST, x.shape, tuple(i.attr))
            return Meta(tuple(i.attr), x.dtype)
        if i.op in REDUCTIONS:
            return _reduction_type(p, j, i, args, where)
        row = ufuncs.BY_NAME.get(i.op)
        if row is None and i.op != WHERE:
            raise ValueError(f"{where}: {i.op!r} is no elementwise function")
        arity = 3 if row is None else row.arity
        if len(args) != arity:
            raise ValueError(f"{where}: {i.op} takes {arity} arguments, got {len(args)}")
        ((shape, dt),) = (_where if row is None else _rows[i.op]).infer(tuple(args), {})
        return Meta(tuple(shape), np.dtype(dt))
    except (ShapeError, DTypeError) as e:
        raise type(e)(f"{where}: {e}") from None
    except ValueError as e:
        if str(e).startswith(where):
            raise
        raise ValueError(f"{where}: {e}") from None


def _reduction_type(p: Program, j: int, i: Instr, args: list, where: str) -> Meta:
    """A reduction: the last instruction, over a value of the program's whole shape."""
    if j != len(p.instrs) - 1:
        raise ValueError(f"{where}: a reduction must be the last instruction")
    (x,) = args
    axes, keep = i.attr if isinstance(i.attr, tuple) and len(i.attr) == 2 else (None, None)
    attrs = {"axis": axes, "keepdims": keep}
    ((shape, dt),) = REDUCTIONS[i.op].infer((x,), attrs)
    if attrs["axis"] != axes or not isinstance(keep, bool):
        raise ValueError(f"{where}: attr must be (normalized axes, keepdims), here "
                         f"({attrs['axis']}, {attrs['keepdims']})")
    return Meta(tuple(shape), np.dtype(dt))


def reduction(p: Program) -> Instr | None:
    """The reduction ending ``p``, if any."""
    return p.instrs[-1] if p.instrs and p.instrs[-1].op in REDUCTIONS else None


@functools.lru_cache(maxsize=256)
def without_reduction(p: Program) -> Program:
    """``p`` up to its reduction, returning its other outputs and then the reduced value
    (kernels that cannot reduce in the same pass run this, then the reduction). Cached:
    the kernels ask on every launch, and one program (its hash kept) avoids rebuilding and
    rehashing the instructions each time."""
    last = p.n_inputs + len(p.instrs) - 1
    outs = tuple(r for r in p.outputs if r != last) + p.instrs[-1].args
    return Program(p.n_inputs, p.instrs[:-1], outs)


def reduced_outputs(p: Program, others: list, reduced: Any) -> list:
    """``p``'s outputs in order from ``without_reduction(p)``'s other outputs (``others``)
    and the reduced value."""
    last = p.n_inputs + len(p.instrs) - 1
    it = iter(others)
    return [reduced if r == last else next(it) for r in p.outputs]


def _infer(inputs: tuple, attrs: dict) -> tuple:
    p = attrs.get("program")
    vals = evaluate_types(p, inputs)
    red = p.n_inputs + len(p.instrs) - 1 if reduction(p) else -1
    full = tuple(np.broadcast_shapes(*(v.shape for k, v in enumerate(vals)
                                       if isinstance(v, Meta) and k != red)))
    if red >= 0 and vals[p.instrs[-1].args[0]].shape != full:
        raise ShapeError(f"fused_elementwise: the reduction's operand has shape "
                         f"{vals[p.instrs[-1].args[0]].shape}, not the program's shape {full}")
    metas = tuple((vals[r].shape, vals[r].dtype) for r in p.outputs)
    for r, (shape, _) in zip(p.outputs, metas):
        if shape != full and r != red:  # kernels write every output over the whole shape
            shapes = ", ".join(str(tuple(x.shape)) for x in inputs)
            raise ShapeError(f"fused_elementwise: output {name(p, r)} has shape {shape}, not "
                             f"the program's shape {full} (inputs {shapes})")
    return metas


#: The op (not in ``F``): ``fused_elementwise(*inputs, program=...)``.
fused_elementwise = Op("fused_elementwise", _infer, differentiable=False)


@functools.lru_cache(maxsize=256)
def widened(p: Program, metas: tuple) -> Program:
    """``p`` over inputs of ``metas`` (``Meta`` each) computing its 16-bit float values in
    float32 (see the module docstring): 16-bit inputs cast up first, each instruction
    with a 16-bit result computing on float32 operands, a 16-bit value rounded (a cast to
    its dtype) where it is returned, cast to, or reduced. ``p`` itself when no value is
    16-bit. The backends generate kernels of this program: 16-bit loads and stores, float
    in between."""
    vals = evaluate_types(p, metas)
    if not any(isinstance(v, Meta) and v.dtype in LOW for v in vals):
        return p
    w = _Widen(p, vals).program()
    got = evaluate_types(w, metas)
    if [got[r].dtype for r in w.outputs] != [vals[r].dtype for r in p.outputs]:
        raise DTypeError(f"fused_elementwise: computing the 16-bit values in float32 changes "
                         f"the output dtypes (program:\n{p})")
    return w


class _Widen:
    """The builder of ``widened(p)``: per reference of ``p``, the reference of its
    computed (float32 where 16-bit) value and, once made, of its rounded 16-bit one."""

    def __init__(self, p: Program, vals: list) -> None:
        self.p, self.vals, self.b = p, vals, Builder(p.n_inputs)
        self.wide: dict[int, int] = {}
        self.low: dict[int, int] = {}
        self.dtype: dict[int, np.dtype] = {}  # of each new reference holding an array

    def emit(self, op: str, *args: int, attr: Any = None, dtype: np.dtype | None = None) -> int:
        r = self.b.call(op, *args, attr=attr)
        if dtype is not None:
            self.dtype[r] = dtype
        return r

    def to_wide(self, r: int) -> int:
        """New reference ``r`` (an array) as float32: a cast unless it is already."""
        d = self.dtype[r]
        return r if d == WIDE else self.emit(CAST, r, attr=WIDE.name, dtype=WIDE)

    def rounded(self, ref: int) -> int:
        """The 16-bit value of ``p``'s reference ``ref`` (a cast of its float32 one)."""
        if ref not in self.low:
            d = self.vals[ref].dtype
            self.low[ref] = self.emit(CAST, self.wide[ref], attr=d.name, dtype=d)
        return self.low[ref]

    def program(self) -> Program:
        p, vals = self.p, self.vals
        for k in range(p.n_inputs):
            self.dtype[k] = vals[k].dtype
            self.wide[k] = self.to_wide(k) if vals[k].dtype in LOW else k
            if vals[k].dtype in LOW:
                self.low[k] = k
        for j, i in enumerate(p.instrs):
            ref = p.n_inputs + j
            if i.op in REDUCTIONS:  # the last: the other outputs are rounded before it
                for r in p.outputs:
                    if r != ref and vals[r].dtype in LOW:
                        self.rounded(r)
            self.instr(ref, i)
        outs = [self.rounded(r) if vals[r].dtype in LOW else self.wide[r] for r in p.outputs]
        return self.b.program(outs)

    def instr(self, ref: int, i: Instr) -> None:
        out = self.vals[ref]
        if i.op == CONST:
            self.wide[ref] = self.b.emit(i)
            return
        if not isinstance(out, Meta) or out.dtype not in LOW:
            if i.op in REDUCTIONS and self.vals[i.args[0]].dtype in LOW:
                raise DTypeError(f"fused_elementwise: {i.op} of a 16-bit value to {out.dtype} "
                                 f"is not fused (program:\n{self.p})")
            args = [self.wide[a] for a in i.args]
            if i.op == CAST and self.vals[i.args[0]].dtype in LOW and out.dtype == WIDE:
                self.wide[ref] = args[0]  # the float32 value it is computed as
                return
            self.wide[ref] = self.emit(i.op, *args, attr=i.attr, dtype=out.dtype)
            return
        if i.op == CAST:  # the 16-bit value, and the float32 one read from it
            (a,) = i.args
            if self.vals[a].dtype == out.dtype:
                self.wide[ref], self.low[ref] = self.wide[a], self.rounded(a)
                return
            self.low[ref] = self.emit(CAST, self.wide[a], attr=out.dtype.name, dtype=out.dtype)
            self.wide[ref] = self.to_wide(self.low[ref])
            return
        if i.op in REDUCTIONS:  # of the rounded operand, accumulating in float32
            self.wide[ref] = self.low[ref] = self.emit(i.op, self.rounded(i.args[0]),
                                                       attr=i.attr, dtype=out.dtype)
            return
        args = [self.wide[a] if not isinstance(self.vals[a], Meta) or (i.op == WHERE and k == 0)
                else self.to_wide(self.wide[a]) for k, a in enumerate(i.args)]
        self.wide[ref] = self.emit(i.op, *args, attr=i.attr, dtype=WIDE)
