"""``fused_elementwise`` on CUDA: one ``cupy.ElementwiseKernel`` per program and dtypes.

The body computes the instructions one C line each into named temporaries (registers)
and assigns only the outputs; CuPy's kernel does the broadcasting and indexing. An
instruction computes as on OpenCL (the row's C expression in the compute type its op
uses, constants as literals of that type); math calls become ``nna_<fn>`` overloads for
float and double. The kernel is that of ``widened(program)``: float16 inputs read as
float, the body in float, a float16 output or cast rounded once (CuPy's ``float16``).
Rows without a C expression, integer ``pow``, bfloat16 (CuPy has no bfloat16 arrays)
and complex are refused (``DTypeError``): the fusion pass leaves those unfused. A program
ending in a reduction runs as its elementwise kernel, then the backend's reduction.
``SAMPLES`` (the chain ``tanh(0.5 x + 0.1) * sigmoid(x) + x * x`` and its backward, in
float16, float32 and float64) are declared in the CUDA C table, so NVRTC compiles them on
every machine. Importable without CuPy.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

import numpy as np

from ...dtypes import promote
from ...errors import DTypeError
from ...ops.elementwise import BINARY as _RULES
from ...ops.elementwise import UNARY as _URULES
from ...ops.elementwise import binary_dtype, unary_dtype
from ...ops.fused import (
    BROADCAST,
    CAST,
    CONST,
    WHERE,
    Builder,
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
from ...ops.ufuncs import BY_NAME
from .cmath import render
from .table import Elementwise

#: C types of the dtypes a fused kernel computes.
CTYPES = {np.dtype(d): c for d, c in ((np.bool_, "bool"), (np.int32, "int"),
                                      (np.int64, "long long"), (np.float16, "float16"),
                                      (np.float32, "float"), (np.float64, "double"))}
_XY = re.compile(r"\b([xyT])\b")
_CALL = re.compile(r"\bnna_([a-z0-9_]+)\(")
_PREDICATES = ("isnan", "isinf", "isfinite", "signbit")
_TWO = ("pow", "atan2", "hypot", "fmax", "copysign", "nextafter")
_BITS = {"float": ("__int_as_float", "0x7f800000", "0x7fc00000"),
         "double": ("__longlong_as_double", "0x7ff0000000000000LL", "0x7ff8000000000000LL")}


def _ctype(d: np.dtype, p: Program) -> str:
    c = CTYPES.get(np.dtype(d))
    if c is None:
        raise DTypeError(f"fused_elementwise: dtype {d} is not fused on CUDA (program:\n{p})")
    return c


def _convert(e: str, src: np.dtype, dst: np.dtype, p: Program) -> str:
    if src == dst:
        return e
    if dst.kind == "b":
        return f"(({e}) != 0)"
    return f"(({_ctype(dst, p)})({e}))"


def _literal(v: Any, d: np.dtype, p: Program) -> str:
    """Python scalar ``v`` as a literal of ``d`` (numpy's cast of a weak scalar)."""
    c = _ctype(d, p)
    if d.kind == "f":
        f = float(v)
        if math.isnan(f) or math.isinf(f):
            fn, inf, nan = _BITS[c]
            return f"({'-' if f < 0 else ''}{fn}({nan if math.isnan(f) else inf}))"
        return repr(f) + ("f" if c == "float" else "")
    if d.kind == "b":
        return "true" if v else "false"
    return f"(({c}){int(v)}LL)"


class _Gen:
    def __init__(self, p: Program, in_dtypes: tuple) -> None:
        metas = tuple(Meta((), np.dtype(d)) for d in in_dtypes)
        self.p = p = widened(p, metas)
        self.vals = evaluate_types(p, metas)
        for v in self.vals:
            if isinstance(v, Meta):
                _ctype(v.dtype, p)

    def operand(self, ref: int, d: np.dtype) -> str:
        v = self.vals[ref]
        if isinstance(v, Meta):
            return _convert(name(self.p, ref), v.dtype, d, self.p)
        return _literal(v, d, self.p)

    def expr(self, op: str, args: tuple, d: np.dtype) -> str:
        """Row ``op``'s C expression computing in ``d`` on ``args``."""
        c = BY_NAME[op].c_expr(d)
        if c is None or (op == "pow" and d.kind != "f"):
            raise DTypeError(f"fused_elementwise: {op} on {d} is not fused on CUDA "
                             f"(program:\n{self.p})")
        ops = {"x": self.operand(args[0], d), "T": _ctype(d, self.p)}
        if len(args) > 1:
            ops["y"] = self.operand(args[1], d)
        # math calls renamed first: the operands are CUDA C already (literals' intrinsics)
        return _XY.sub(lambda m: f"({ops[m.group(1)]})" if m.group(1) != "T" else ops["T"],
                       render(c))

    def line(self, j: int) -> str | None:
        i = self.p.instrs[j]
        if i.op == CONST:
            return None
        ref = self.p.n_inputs + j
        out = self.vals[ref].dtype
        if i.op in (CAST, BROADCAST):  # CuPy broadcasts the inputs
            e = self.operand(i.args[0], out)
        elif i.op == WHERE:
            c, x, y = i.args
            e = f"{name(self.p, c)} ? ({self.operand(x, out)}) : ({self.operand(y, out)})"
        elif i.op in _RULES:
            a, b = (self.vals[r] for r in i.args)
            d = promote(i.op, a, b)
            res = binary_dtype(i.op, d)
            e = _convert(self.expr(i.op, i.args, d if res == np.bool_ else res),
                         res, out, self.p)
        else:
            x = self.vals[i.args[0]].dtype
            d = unary_dtype(i.op, x)
            ct = x if _URULES[i.op][0] == "pred" else d
            e = _convert(self.expr(i.op, i.args, ct), ct, out, self.p)
        note = describe(self.p, i, False)
        return f"const {_ctype(out, self.p)} {name(self.p, ref)} = {e};  // {note}"


def _overloads(names: list[str]) -> str:
    """``nna_<fn>``: float and double overloads (``max``/``min``: any type)."""
    out = []
    for f in names:
        if f in ("max", "min"):
            cmp = ">" if f == "max" else "<"
            out.append(f"template <typename T> __device__ __forceinline__ T nna_{f}(T a, T b) "
                       f"{{ return a {cmp} b ? a : b; }}\n")
            continue
        for c, suffix in (("float", "f"), ("double", "")):
            if f in _PREDICATES:
                out.append(f"__device__ __forceinline__ bool nna_{f}({c} a) "
                           f"{{ return {f}(a); }}\n")
            elif f in _TWO:
                out.append(f"__device__ __forceinline__ {c} nna_{f}({c} a, {c} b) "
                           f"{{ return {f}{suffix}(a, b); }}\n")
            else:
                out.append(f"__device__ __forceinline__ {c} nna_{f}({c} a) "
                           f"{{ return {f}{suffix}(a); }}\n")
    return "".join(out)


def elementwise(p: Program, in_dtypes: tuple) -> Elementwise:
    """The CuPy kernel body of ``p`` for inputs of ``in_dtypes`` (undeclared)."""
    g = _Gen(p, tuple(np.dtype(d) for d in in_dtypes))
    p = g.p  # widened
    live = p.live()
    lines = [c for j in range(len(p.instrs)) if p.n_inputs + j in live
             for c in (g.line(j),) if c is not None]
    lines += [f"out{k} = {name(p, r)};" for k, r in enumerate(p.outputs)]
    body = "\n".join(lines)
    ins = ", ".join(f"{np.dtype(d).name} x{k}" for k, d in enumerate(in_dtypes))
    outs = ", ".join(f"{g.vals[r].dtype.name} out{k}" for k, r in enumerate(p.outputs))
    digest = hashlib.sha256(f"{ins}|{outs}|{body}".encode()).hexdigest()[:12]
    return Elementwise(ins, outs, body, f"nna_fused_{digest}",
                       tuple(dict.fromkeys(np.dtype(d).name for d in in_dtypes)),
                       preamble=_overloads(sorted(set(_CALL.findall(body)))))


def source(program: Program, metas: tuple) -> str:
    """The readable body of ``program`` for inputs of ``metas`` (``(shape, dtype)``)."""
    e = elementwise(program, tuple(d for _, d in metas))
    return f"// in: {e.in_params}\n// out: {e.out_params}\n{e.preamble}{e.operation}\n"


def _chain() -> tuple[Program, Program]:
    """The chain ``tanh(0.5 x + 0.1) * sigmoid(x) + x * x`` forward (input x) and
    backward (inputs x and the gradient g; the forward's t and s recomputed)."""
    def forward(p: Builder) -> tuple[int, int, int]:
        t = p.call("tanh", p.call("add", p.call("mul", 0, p.const(0.5)), p.const(0.1)))
        s = p.call("sigmoid", 0)
        return t, s, p.call("add", p.call("mul", t, s), p.call("mul", 0, 0))

    f, b = Builder(1), Builder(2)
    fwd = f.program([forward(f)[2]])
    (x, g), (t, s, _) = (0, 1), forward(b)
    one, half, two = b.const(1.0), b.const(0.5), b.const(2.0)
    db = b.call("mul", b.call("mul", g, s), b.call("sub", one, b.call("mul", t, t)))
    dxs = b.call("mul", b.call("mul", g, t), b.call("mul", s, b.call("sub", one, s)))
    dxq = b.call("mul", g, b.call("mul", x, two))
    dx = b.call("add", b.call("add", dxq, b.call("mul", db, half)), dxs)
    return fwd, b.program([dx])


#: Programs whose bodies the CUDA C table holds (NVRTC compiles them everywhere).
SAMPLES = _chain()
for _p in SAMPLES:
    for _d in ("float16", "float32", "float64"):
        elementwise(_p, (_d,) * _p.n_inputs).declare()


def register_fused(xp: Any) -> None:
    """Register the kernel (``xp``: CuPy)."""
    from .scope import register, registered
    kernels: dict[tuple, Any] = {}

    def run(program: Program, xs: tuple) -> Any:
        key = (program, *[x.dtype for x in xs])
        k = kernels.get(key)
        if k is None:
            k = kernels[key] = elementwise(program, tuple(x.dtype for x in xs)).build(xp)
        return k(*xs)

    @register("fused_elementwise")
    def fused_elementwise(*xs: Any, program: Program) -> Any:
        red = reduction(program)
        if red is None:
            return run(program, xs)
        # the program, then the backend's reduction (CuPy reduces in its own kernel)
        got = run(without_reduction(program), xs)
        vals = list(got) if isinstance(got, tuple) else [got]
        r = registered()[red.op](vals.pop(), *red.attr)
        outs = reduced_outputs(program, vals, r)
        return outs[0] if len(outs) == 1 else tuple(outs)

    fused_elementwise.source = source  # type: ignore[attr-defined]
