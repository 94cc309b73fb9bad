"""``fused_elementwise`` on OpenCL: one generated kernel per program.

Each work-item loads its element of every input (at its broadcast offset), computes the
instructions one C line each into named temporaries (``t3``: registers, never memory)
and stores only the outputs. An instruction computes as its unfused kernel does
(``elementwise.expression``: the row's C expression or OpenCL's own, in the same compute
type, converted the same way); scalar constants become literals of the type they are
used in (numpy's weak scalars). When every input has the program's shape the kernel is
the contiguous one (index ``i`` for all); otherwise it walks the coalesced broadcast
strides as ``elementwise.source`` does. Sources depend only on the program, the dtypes
and the rank, so the device's program cache (in process and on disk) keys the build;
launch plans are cached per input shapes. ``source(program, metas)`` gives the readable
source (before the inline math rewrite). The kernel is that of ``widened(program)``:
float16 and bfloat16 inputs loaded as float (``cltypes``), the body in float, a 16-bit
output rounded by its store and a cast to a 16-bit type read further rounded in
registers (``CLType.rounded``). Complex values are refused (``DTypeError``): the fusion
pass leaves those steps unfused.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ...dtypes import LOW, DTypeSet, is_bfloat16, promote
from ...errors import DTypeError
from ...ops.elementwise import BINARY as _RULES
from ...ops.elementwise import UNARY as _URULES
from ...ops.elementwise import binary_dtype, unary_dtype
from ...ops.fused import (
    BROADCAST,
    CAST,
    CONST,
    WHERE,
    Meta,
    Program,
    describe,
    evaluate_types,
    name,
    reduced_outputs,
    reduction,
    widened,
    without_reduction,
)
from ...registry import register_kernel
from .cltypes import ROUNDING, CLType, cltype, convert, header
from .device import OpenCLDevice, device_of
from .elementwise import Rows, expression, index_layout, row_lines, row_width, rows_of
from .indexing import index_args, index_params, offsets_code
from .inline_math import inline
from .programs import LOCAL, typed
from .reduction import Load, reduce

_enqueue = cl.enqueue_nd_range_kernel
_BOOL = np.dtype(np.bool_)
_V = re.compile(r"\bv([01])\b")
#: Dtypes a fused kernel loads, computes and stores (16-bit floats: computed in float).
DTYPES = DTypeSet((np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                   np.uint32, np.uint64, np.float16, np.float32, np.float64), bf16=True)


def _literal(v: Any, ct: CLType) -> str:
    """Python scalar ``v`` as a C literal of ``ct`` (as numpy casts a weak scalar)."""
    if ct.is_float:
        f = float(v)
        if math.isnan(f):
            return f"(({ct.calc})NAN)"
        if math.isinf(f):
            return f"(({ct.calc}){'-' if f < 0 else ''}INFINITY)"
        return repr(f) + ("f" if ct.calc == "float" else "")
    if ct.is_bool:
        return "((uchar)1)" if v else "((uchar)0)"
    return f"(({ct.calc}){int(v)}{'UL' if ct.dtype.kind == 'u' else 'L'})"


class _Gen:
    """The kernel body of one program for given input metas."""

    def __init__(self, p: Program, metas: tuple) -> None:
        self.p = p
        self.vals = evaluate_types(p, metas)
        for v in self.vals:
            if isinstance(v, Meta) and v.dtype not in DTYPES:
                raise DTypeError(f"fused_elementwise: dtype {v.dtype} is not fused on OpenCL "
                                 f"(program:\n{p})")
        self.helpers: dict[str, None] = {}
        #: References an instruction reads (a 16-bit cast only stored needs no rounding).
        self.read = {a for j in p.live() if j >= p.n_inputs for a in p.instrs[j - p.n_inputs].args}

    def operand(self, ref: int, ct: CLType) -> str:
        v = self.vals[ref]
        if isinstance(v, Meta):
            return convert(name(self.p, ref), cltype(v.dtype), ct)
        return _literal(v, ct)

    def line(self, j: int) -> str | None:
        i = self.p.instrs[j]
        if i.op == CONST:
            return None  # a literal where it is used
        ref = self.p.n_inputs + j
        out = cltype(self.vals[ref].dtype)
        if i.op in (CAST, BROADCAST):
            e = self.operand(i.args[0], out)  # broadcasting is in the loads' offsets
            if i.op == CAST and out.dtype in LOW and ref in self.read and \
                    self.vals[i.args[0]].dtype != out.dtype:  # read on: rounded here
                self.helpers[ROUNDING] = None
                e = out.rounded(e)
        elif i.op == WHERE:
            c, x, y = i.args
            e = f"{name(self.p, c)} ? ({self.operand(x, out)}) : ({self.operand(y, out)})"
        elif i.op in _RULES:
            e = self.binary(i.op, i.args)
        else:
            e = self.unary(i.op, i.args[0], out)
        return f"const {out.calc} {name(self.p, ref)} = {e};  // {describe(self.p, i, False)}"

    def binary(self, op: str, args: tuple[int, int]) -> str:
        a, b = (self.vals[r] for r in args)
        d = promote(op, a, b)
        res = binary_dtype(op, d)
        if res != _BOOL:
            d = res  # computed in the result type, as the unfused kernel does
        if op == "pow" and d.kind != "f" and not is_bfloat16(d):  # unfused: exponent checked first
            raise DTypeError(f"fused_elementwise: integer pow is not fused (program:\n{self.p})")
        ct = cltype(d)
        expr, helpers = expression(op, ct)
        self.helpers[helpers] = None
        ops = [self.operand(r, ct) for r in args]
        return _V.sub(lambda m: f"({ops[int(m.group(1))]})", expr)

    def unary(self, op: str, arg: int, out: CLType) -> str:
        x = self.vals[arg]
        d = unary_dtype(op, x.dtype)
        ct = cltype(x.dtype if _URULES[op][0] == "pred" else d)
        expr, helpers = expression(op, ct)
        self.helpers[helpers] = None
        v = f"({self.operand(arg, ct)})"
        return convert(_V.sub(lambda m: v, expr), ct, out)


_FLAT = Rows()


def _source(p: Program, metas: tuple, rank: int, idx: str, rows: Rows = _FLAT
            ) -> tuple[str, list[np.dtype]]:
    p = widened(p, metas)
    g = _Gen(p, metas)
    outs = [cltype(g.vals[r].dtype) for r in p.outputs]
    ins = [cltype(m.dtype) for m in metas]
    params = [f"__global {t.storage}* restrict out{k}" for k, t in enumerate(outs)]
    params += [f"__global const {t.storage}* restrict in{k}" for k, t in enumerate(ins)]
    body = [f"const {idx} i = get_global_id(0);"]
    if rank:
        params += [f"const {idx} n", index_params(rank, len(ins), idx)]
        body += ["if (i >= n) return;", offsets_code(rank, len(ins), idx, last_size=rows.last)]
    if rows.length:  # as elementwise.source: (index in the row, row)
        body = row_lines(rank, len(ins), idx, rows.whole, rows.steps, rows.last)
    body += [f"const {t.calc} x{k} = {t.load(f'in{k}', f'o{k}' if rank else 'i')};"
             for k, t in enumerate(ins)]
    live = p.live()
    body += [c for j in range(len(p.instrs)) if p.n_inputs + j in live
             for c in (g.line(j),) if c is not None]
    body += [t.store(f"out{k}", "i", name(p, r))
             for k, (t, r) in enumerate(zip(outs, p.outputs))]
    src = (header(*outs, *ins, *(cltype(v.dtype) for v in g.vals if isinstance(v, Meta)))
           + "".join(g.helpers) + "__kernel void fused(" + ", ".join(p for p in params if p)
           + ") {\n    " + "\n    ".join(body) + "\n}\n")
    return src, [g.vals[r].dtype for r in p.outputs]


def source(program: Program, metas: tuple) -> str:
    """The readable OpenCL C of ``program`` for inputs of ``metas`` (``(shape, dtype)``
    each), as compiled before the inline math rewrite."""
    metas = tuple(Meta(tuple(s), np.dtype(d)) for s, d in metas)
    shape = tuple(np.broadcast_shapes(*(m.shape for m in metas)))
    rank, dims, strides, idx = index_layout(metas, shape)
    return _source(program, metas, rank, idx, rows_of(rank, dims, strides))[0]


class _Plan:
    """One launch shape of a program's kernel: outputs' layouts and the index arguments."""

    __slots__ = ("kernel", "n", "outs", "consts", "grid", "local")

    def __init__(self, dev: OpenCLDevice, p: Program, metas: tuple) -> None:
        shape = tuple(np.broadcast_shapes(*(m.shape for m in metas)))
        rank, dims, strides, idx = index_layout(metas, shape)
        rows = rows_of(rank, dims, strides)
        src, out_dtypes = _source(p, metas, rank, idx, rows)
        for d in {*out_dtypes, *(m.dtype for m in metas)}:
            dev.check_dtype(d, "fused_elementwise")
        self.kernel = dev.programs.kernel(inline(src, dev), "fused")
        self.n = math.prod(shape)
        self.outs = [dev.layout(shape, d) for d in out_dtypes]  # ``new_locked``'s
        t = np.int32 if idx == "int" else np.int64
        self.consts = [t(self.n), *index_args(dims, strides, idx)] if rank else []
        typed(self.kernel, [None] * (len(self.outs) + len(metas)) + self.consts)
        # rank 0 needs no bounds check: buffers are padded to the work-group size
        self.grid, self.local = (-(-self.n // LOCAL) * LOCAL,), (LOCAL,)
        if rows.length:
            w = row_width(rows.length)
            self.grid = (-(-rows.length // w) * w, self.n // rows.length)
            self.local = (w, 1)

    def run(self, dev: OpenCLDevice, xs: tuple) -> list:
        dev.acquire()
        try:
            outs = [dev.new_locked(lay) for lay in self.outs]
            if self.n:
                self.kernel.set_args(*[o.base_data for o in outs],
                                     *[x.base_data for x in xs], *self.consts)
                _enqueue(dev.queue, self.kernel, self.grid, self.local)
        finally:
            dev.release()
        return outs


def _reduce_load(p: Program, metas: tuple) -> tuple[Load, list[np.dtype], np.dtype]:
    """The program up to its reduction as the reduction's element load: every input read
    and every other output written at the element's position (all of the program's
    shape, C-contiguous). Returns the load, the other outputs' dtypes and the reduced
    value's dtype."""
    p = widened(p, metas)
    g = _Gen(p, metas)
    last = p.n_inputs + len(p.instrs) - 1
    refs = [r for r in p.outputs if r != last]
    outs = [cltype(g.vals[r].dtype) for r in refs]
    ins = [cltype(m.dtype) for m in metas]
    params = [f"__global {t.storage}* restrict out{k}" for k, t in enumerate(outs)]
    params += [f"__global const {t.storage}* restrict in{k}" for k, t in enumerate(ins)]
    live = p.live()
    lines = [c for j in range(len(p.instrs) - 1) if p.n_inputs + j in live
             for c in (g.line(j),) if c is not None]

    def code(pos: str) -> str:
        loads = [f"const {t.calc} x{k} = {t.load(f'in{k}', pos)};" for k, t in enumerate(ins)]
        stores = [t.store(f"out{k}", pos, name(p, r)) for k, (t, r) in enumerate(zip(outs, refs))]
        return "".join(f"{c}\n      " for c in (*loads, *lines, *stores))

    operand = p.instrs[-1].args[0]
    prelude = header(*(cltype(v.dtype) for v in g.vals if isinstance(v, Meta))) + \
        "".join(g.helpers)
    return (Load(params, code, lambda pos: name(p, operand), prelude),
            [t.dtype for t in outs], g.vals[operand].dtype)


def _with_reduction(dev: OpenCLDevice, p: Program, xs: tuple) -> list:
    """A program ending in a reduction: one pass over memory where every input has the
    program's shape (the reduction kernel computes the program per element); else the
    program's kernel, then the reduction."""
    red = p.instrs[-1]
    key = ("fused reduce", p, *[(x.dtype, x.shape) for x in xs])
    got = dev.plans.get(key)
    if got is None:
        metas = tuple(Meta(x.shape, x.dtype) for x in xs)
        shape = evaluate_types(p, metas)[red.args[0]].shape
        got = dev.plans[key] = (shape, _reduce_load(p, metas)
                                if all(x.shape == shape for x in xs) else None)
    shape, load = got
    if load is None:
        vals = _elementwise(dev, without_reduction(p), xs)
        others, operand = vals[:-1], vals[-1]
        r = reduce(dev, red.op, operand, operand.shape, operand.dtype, *red.attr)
    else:
        ld, dts, operand_dtype = load
        others = [dev.empty(shape, d) for d in dts]
        args = [o.base_data for o in others] + [x.base_data for x in xs]
        r = reduce(dev, red.op, None, shape, operand_dtype, *red.attr, (ld, args))
    return reduced_outputs(p, others, r)


def _elementwise(dev: OpenCLDevice, p: Program, xs: tuple) -> list:
    key = ("fused", p, *[(x.dtype, x.shape) for x in xs])
    plan = dev.plans.get(key)
    if plan is None:
        plan = dev.plans[key] = _Plan(dev, p, tuple(Meta(x.shape, x.dtype) for x in xs))
    return plan.run(dev, xs)


@register_kernel("fused_elementwise", "opencl")
def fused_elementwise(*xs: cla.Array, program: Program) -> Any:
    dev = device_of(xs[0])
    run = _with_reduction if reduction(program) is not None else _elementwise
    outs = run(dev, program, xs)
    return outs[0] if len(outs) == 1 else tuple(outs)


fused_elementwise.source = source  # type: ignore[attr-defined]
