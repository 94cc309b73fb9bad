"""Axis reductions: sum prod mean max min argmax argmin (pyopencl only reduces whole arrays).

The input's dimensions are coalesced into kept and reduced groups. Work-item ``g`` takes
output ``g % nout`` and reduces chunk ``g / nout`` of its reduced elements, walking them
with an odometer (adds, no divisions per element). Neighbouring work-items take
neighbouring outputs, so a reduction over an outer axis (``sum(x, axis=0)``) reads
contiguous memory across a work-group, which pocl vectorizes (chunk-major would not).
When the outputs are few and the reductions long, chunks run in parallel into a
partials array that a second pass reduces; chunked sums are also more accurate than one
serial sum. float32 sums and means accumulate in double where the device has fp64.

The launches of a reduction depend only on its op, the input's shape and dtype, the axes and
the ``Load``: the first call records them (``_Plan``) and later calls replay them, without
building sources and arguments again (Python that outweighed a small reduction's kernel).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ...registry import register_kernel
from .cltypes import CLType, cltype, convert, header
from .device import OpenCLDevice, device_of
from .indexing import c_strides
from .inline_math import inline
from .programs import launch

_I64 = np.dtype(np.int64)
_F64 = np.dtype(np.float64)
#: Work-items a reduction aims to occupy; each chunk covers at least ``_MIN_CHUNK``.
_ITEMS, _MIN_CHUNK = 8192, 256

Dims = list[tuple[int, int]]  # (size, stride) per coalesced dimension


class Load(NamedTuple):
    """How the first pass of a reduction reads element ``pos`` of its (C-contiguous)
    input: kernel parameters before ``out``, statements computing the element and its
    expression (of the input's compute type). ``fused.py`` computes a program there (its
    math is rewritten by ``inline_math.inline``)."""

    params: list[str]
    code: Callable[[str], str]
    expr: Callable[[str], str]
    prelude: str = ""  #: source before the kernel (pragmas, helper functions)


class _Slot:
    """A buffer of a recorded reduction (``_Plan``): the load's arguments, then the output,
    then temporaries."""

    __slots__ = ("i", "shape", "dtype", "size", "base_data")

    def __init__(self, i: int, shape: tuple[int, ...], dtype: Any) -> None:
        self.i, self.shape, self.dtype = i, shape, None if dtype is None else np.dtype(dtype)
        self.size = int(np.prod(shape, dtype=np.int64))
        self.base_data = self  # stands for the buffer in recorded arguments


class _Plan:
    """The launches of one reduction, recorded by running the planning code (``_reduce``,
    ``_columns``, ``_launch``) with this object as its device and ``_Slot``s as its
    buffers; ``run`` replays them on real ones. Other attributes are the device's."""

    def __init__(self, dev: OpenCLDevice, inputs: int, out_shape: tuple[int, ...],
                 out_dtype: np.dtype, keep: Any = None) -> None:
        self.device = dev
        self.inputs = [_Slot(i, (), None) for i in range(inputs)]
        self.out = _Slot(inputs, out_shape, out_dtype)
        self.keep = keep  # the Load whose id() keys this plan: alive while the plan is
        self.temps: list[tuple[tuple[int, ...], np.dtype]] = []
        #: (kernel, work-items, arguments, [(argument position, slot)])
        self.steps: list[tuple[Any, int, list, list[tuple[int, int]]]] = []

    def __getattr__(self, name: str) -> Any:  # programs, cl_device, fp64 ...
        return getattr(self.device, name)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> _Slot:
        self.temps.append((shape, np.dtype(dtype)))
        return _Slot(self.out.i + len(self.temps), shape, dtype)

    def launch(self, kernel: Any, n: int, args: list) -> None:
        slots = [(p, a.i) for p, a in enumerate(args) if type(a) is _Slot]
        self.steps.append((kernel, n, list(args), slots))

    def run(self, dev: OpenCLDevice, args: list) -> Any:
        """The launches on the load's arguments ``args``; returns the new output array."""
        with dev.lock:
            out = dev.empty_locked(self.out.shape, self.out.dtype)
            if not out.size:
                return out
            bufs = [*args, out.base_data] + [dev.empty_locked(s, d).base_data
                                             for s, d in self.temps]
            for kernel, n, recorded, slots in self.steps:
                a = list(recorded)
                for p, i in slots:
                    a[p] = bufs[i]
                launch(dev.queue, kernel, n, a)
        return out


def _plain(t: CLType) -> Load:
    """Reading array ``x`` of type ``t``."""
    return Load([f"__global const {t.storage}* restrict x"], lambda pos: "",
                lambda pos: t.load("x", pos))


def _groups(shape: tuple[int, ...], axes: set[int]) -> tuple[Dims, Dims]:
    """(kept, reduced) coalesced dimensions of a C-contiguous ``shape``."""
    kept: Dims = []
    red: Dims = []
    last = None
    for d, (s, st) in enumerate(zip(shape, c_strides(shape))):
        if s == 1:
            continue
        r = d in axes
        grp = red if r else kept
        if last is r:
            grp[-1] = (grp[-1][0] * s, st)
        else:
            grp.append((s, st))
        last = r
    return kept, red


def _odometer(d: int) -> str:
    if d == 0:
        return "++c0; off += rs0;"
    return (f"if (++c{d} == rd{d}) {{ c{d} = 0; off -= (rd{d} - 1) * rs{d}; "
            f"{_odometer(d - 1)} }} else off += rs{d};")


def _combine(op: str, t: CLType) -> str:
    if op == "sum":
        return "acc += v;"
    if op == "prod":
        return "acc = (acc_t)(acc.x * v.x - acc.y * v.y, acc.x * v.y + acc.y * v.x);" \
            .replace("acc_t", t.calc) if t.is_complex else "acc *= v;"
    cmp = ">" if op in ("max", "argmax") else "<"
    if op.startswith("arg"):
        nan = " || (isnan(v) && !isnan(acc))" if t.is_float else ""
        return f"if (r == r0 || v {cmp} acc{nan}) {{ acc = v; bi = r; }}"
    if t.is_bool:
        return "acc = acc " + ("|" if op == "max" else "&") + " v;"
    if t.is_float:
        return f"acc = (v {cmp} acc || isnan(v)) ? v : acc;"
    return f"acc = {op}(acc, v);"


def _source(op: str, kr: int, rr: int, in_t: CLType, acc_t: CLType, out_t: CLType,
            scaled: bool, partial: bool, load: Load | None = None) -> str:
    arg = op.startswith("arg")
    init = _init(op, acc_t)
    load = _plain(in_t) if load is None else load
    params = [*load.params, f"__global {out_t.storage}* out"]
    if arg and partial:
        params.append("__global long* outi")
    params += ["const long nout", "const long R", "const long chunk", "const long nchunk",
               f"const {acc_t.real} scale"]
    params += [f"const long kd{d}" for d in range(1, kr)]
    params += [f"const long ks{d}" for d in range(kr)]
    params += [f"const long rd{d}" for d in range(rr)] + [f"const long rs{d}" for d in range(rr)]
    body = ["const long g = get_global_id(0);", "if (g >= nout * nchunk) return;",
            "const long o = g % nout;", "const long r0 = (g / nout) * chunk;",
            "const long r1 = min(R, r0 + chunk);", "long base = 0, q = o;"]
    for d in range(kr - 1, 0, -1):
        body.append(f"base += (q % kd{d}) * ks{d}; q /= kd{d};")
    if kr:
        body.append("base += q * ks0;")
    body.append("q = r0; long off = 0;")
    for d in range(rr - 1, -1, -1):
        body.append(f"long c{d} = q % rd{d}; q /= rd{d}; off += c{d} * rs{d};"
                    if d else "long c0 = q; off += c0 * rs0;")
    body.append(f"{acc_t.calc} acc = {init};" + (" long bi = r0;" if arg else ""))
    step = _odometer(rr - 1) if rr else ""
    body.append("for (long r = r0; r < r1; ++r) {\n      " + load.code("base + off") + "const "
                f"{acc_t.calc} v = {convert(load.expr('base + off'), in_t, acc_t)};\n"
                f"      {_combine(op, acc_t)}\n      {step}\n    }}")
    if arg:
        body.append(out_t.store("out", "g", "acc") + " outi[g] = bi;" if partial
                    else "out[g] = bi;")
    else:
        val = "acc * scale" if scaled else "acc"
        body.append(out_t.store("out", "g", convert(val, acc_t, out_t)))
    return (load.prelude + header(in_t, acc_t, out_t) + "__kernel void reduce(" + ", ".join(params)
            + ") {\n    " + "\n    ".join(body) + "\n}\n")


_PICK = """__kernel void pick(__global const {t}* restrict v, __global const long* restrict vi,
                   __global long* out, const long nout, const long n) {{
    const long o = get_global_id(0);
    if (o >= nout) return;
    {t} acc = v[o]; long bi = vi[o];
    for (long c = 1; c < n; ++c) {{
      const {t} x = v[c * nout + o];
      if (x {cmp} acc{nan}) {{ acc = x; bi = vi[c * nout + o]; }}
    }}
    out[o] = bi;
}}
"""


def _chunks(nout: int, R: int) -> tuple[int, int]:
    nchunk = max(1, min(-(-R // _MIN_CHUNK), -(-_ITEMS // max(nout, 1))))
    chunk = max(1, -(-R // nchunk))
    return chunk, -(-R // chunk) if R else 1


def _launch(dev: _Plan, src: str, xs: list, outs: list, nout: int, R: int, chunk: int,
            nchunk: int, scale: Any, kept: Dims, red: Dims) -> None:
    """``xs``: the arguments of the source's load parameters."""
    L = np.int64
    args = [*xs, *(o.base_data for o in outs), L(nout), L(R), L(chunk), L(nchunk), scale]
    args += [L(s) for s, _ in kept[1:]] + [L(st) for _, st in kept]
    args += [L(s) for s, _ in red] + [L(st) for _, st in red]
    dev.launch(dev.programs.kernel(src, "reduce"), nout * nchunk, args)


#: Outputs per work-item of the outer-axis reduction on a CPU device (``_columns``).
_TILE = 64

_COLUMNS = """{hdr}__kernel void columns(__global const {s}* restrict x, __global {o}* out,
        const long K, const long R, const long chunk, const long ntile, const long nchunk,
        const long total, const {sr} scale) {{
    const long g = get_global_id(0);
    if (g >= total) return;
    const long tile = g % ntile, rest = g / ntile;
    const long c = rest % nchunk, A = rest / nchunk;
    const long k0 = tile * {V}, nk = min((long){V}, K - k0);
    const long r0 = c * chunk, r1 = min(R, r0 + chunk);
    {a} accs[{V}];
    for (int j = 0; j < {V}; ++j) accs[j] = {init};
    for (long r = r0; r < r1; ++r) {{
      const long off = (A * R + r) * K + k0;
      if (nk == {V}) {{
        for (int j = 0; j < {V}; ++j) {{ {a} acc = accs[j]; const {a} v = {load}; {comb}
          accs[j] = acc; }}
      }} else {{
        for (int j = 0; j < nk; ++j) {{ {a} acc = accs[j]; const {a} v = {load}; {comb}
          accs[j] = acc; }}
      }}
    }}
    const long ob = (A * nchunk + c) * K + k0;
    for (int j = 0; j < nk; ++j) {{ {store} }}
}}
"""


def _columns(dev: _Plan, x: Any, in_t: CLType, kept: Dims, red: Dims, op: str,
             acc_t: CLType, out: Any, scale: float | None) -> bool:
    """An outer-axis reduction, ``x`` as (A, R, K) reduced over R, on a CPU device: each
    work-item sums a row of ``_TILE`` neighbouring outputs while walking R. pocl runs a
    work-group's items one after another, so the general kernel's one-column walk per
    item costs a cache line and a TLB entry per element. False where the layout is not
    (A, R, K) or the device no CPU."""
    if len(red) != 1 or not kept or kept[-1][1] != 1 or len(kept) > 2 \
            or not dev.cl_device.type & 2:  # CL_DEVICE_TYPE_CPU
        return False
    (R, rs), K = red[0], kept[-1][0]
    if rs != K or R == 0 or (len(kept) == 2 and kept[0][1] != R * K):
        return False
    A = kept[0][0] if len(kept) == 2 else 1
    ntile = -(-K // _TILE)
    nchunk = max(1, min(-(-R // 64), -(-16 // (A * ntile))))  # >= 16 work-items
    chunk = -(-R // nchunk)
    nchunk = -(-R // chunk)
    init = _init(op, acc_t)
    final = nchunk == 1
    out_t = cltype(out.dtype) if final else acc_t
    val = "accs[j] * scale" if final and _scaled(op, acc_t, scale) else "accs[j]"
    src = _COLUMNS.format(hdr=header(in_t, acc_t, out_t), s=in_t.storage, o=out_t.storage,
                          a=acc_t.calc, sr=acc_t.real, V=_TILE, init=init,
                          load=convert(in_t.load("x", "off + j"), in_t, acc_t),
                          comb=_combine(op, acc_t),
                          store=out_t.store("out", "ob + j", convert(val, acc_t, out_t)))
    dst = out if final else dev.empty((A, nchunk, K), acc_t.dtype)
    L = np.int64
    total = A * ntile * nchunk
    dev.launch(dev.programs.kernel(src, "columns"), total,
           [x.base_data, dst.base_data, L(K), L(R), L(chunk), L(ntile), L(nchunk), L(total),
            _scale(acc_t, 1 if scale is None else scale)])
    if not final:
        _reduce(dev, dst, acc_t, [(A, nchunk * K), (K, 1)] if A > 1 else [(K, 1)],
                [(nchunk, K)], op, acc_t, out, scale)
    return True


def _reduce(dev: _Plan, x: Any, in_t: CLType, kept: Dims, red: Dims, op: str,
            acc_t: CLType, out: Any, scale: float | None,
            load: tuple[Load, list] | None = None) -> None:
    """Reduce ``x`` (``in_t``) into ``out``; ``scale`` multiplies the final value (mean).
    ``load``: ``(Load, its arguments)`` computing the elements instead of ``x``."""
    if load is None and _columns(dev, x, in_t, kept, red, op, acc_t, out, scale):
        return
    first, xs = load or (None, [x.base_data])
    nout = int(np.prod([s for s, _ in kept], dtype=np.int64))
    R = int(np.prod([s for s, _ in red], dtype=np.int64))
    chunk, nchunk = _chunks(nout, R)
    out_t = cltype(out.dtype)
    sc = _scale(acc_t, 1 if scale is None else scale)
    math = (lambda src: inline(src, dev)) if first is not None else (lambda src: src)
    if nchunk == 1:
        src = _source(op, len(kept), len(red), in_t, acc_t, out_t, _scaled(op, acc_t, scale),
                      False, first)
        _launch(dev, math(src), xs, [out], nout, R, chunk, 1, sc, kept, red)
        return
    part = dev.empty((nchunk, nout), acc_t.dtype)
    src = math(_source(op, len(kept), len(red), in_t, acc_t, acc_t, False, False, first))
    _launch(dev, src, xs, [part], nout, R, chunk, nchunk, _scale(acc_t, 1), kept, red)
    _reduce(dev, part, acc_t, [(nout, 1)] if nout > 1 else [], [(nchunk, nout)], op, acc_t,
            out, scale)


def _scaled(op: str, acc_t: CLType, scale: float | None) -> bool:
    """Whether the final store multiplies by ``scale``: for a mean, and for every float
    sum (by 1, exact), so that a sum and a mean of one layout share their program."""
    return scale is not None or (op == "sum" and acc_t.dtype.kind in "fc")


def _init(op: str, t: CLType) -> str:
    """The identity of ``op`` in the accumulator type."""
    if op == "prod" and t.is_complex:
        return f"(({t.calc})(1, 0))"
    if op == "max":
        return t.lowest()
    return t.highest() if op == "min" else {"prod": "1"}.get(op, "0")


def _scale(t: CLType, v: float) -> Any:
    """The kernels' ``scale`` argument (of the accumulator's real component type)."""
    return (np.float64 if t.real == "double" else np.float32)(v) if t.dtype.kind in "fc" \
        else t.scalar(v)


def _acc_type(dev: OpenCLDevice, op: str, t: CLType) -> CLType:
    if op in ("max", "min"):
        return t
    if t.is_complex:  # complex sums in double where the device has it, like floats
        return cltype(np.dtype(np.complex128)) if dev.fp64 else t
    if t.is_float:
        return cltype(_F64) if dev.fp64 else cltype(np.float32) if t.calc == "float" else t
    if op == "mean":
        return cltype(_F64)
    return cltype(np.dtype(np.uint64)) if t.dtype.kind == "u" else cltype(_I64)


def _out_shape(shape: tuple[int, ...], axes: set[int], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def reduce(dev: OpenCLDevice, op: str, x: Any, shape: tuple[int, ...], dtype: np.dtype,
           axis: tuple[int, ...], keepdims: bool, load: tuple[Load, list] | None = None) -> Any:
    """``op`` (sum prod mean max min) of ``x`` (``shape``, ``dtype``) over ``axis``; with
    ``load`` (``(Load, arguments)``), of the elements it computes (``x`` unused). Replays
    the plan recorded for these op, shape, dtype, axes and load (see the module doc)."""
    key = ("reduce", op, dtype, shape, axis, keepdims, None if load is None else id(load[0]))
    plan = dev.plans.get(key)
    if plan is None:
        plan = dev.plans[key] = _plan(dev, op, shape, dtype, axis, keepdims, load)
    return plan.run(dev, [x.base_data] if load is None else load[1])


def _plan(dev: OpenCLDevice, op: str, shape: tuple[int, ...], dtype: np.dtype,
          axis: tuple[int, ...], keepdims: bool, load: tuple[Load, list] | None) -> _Plan:
    """``reduce``'s launches, recorded."""
    axes = set(axis)
    in_t = cltype(dtype)
    out_d = dtype
    if dtype.kind in "biu" and op in ("sum", "prod", "mean"):
        out_d = _F64 if op == "mean" else np.dtype(np.uint64) if dtype.kind == "u" else _I64
    acc_t = _acc_type(dev, op, in_t)
    for d in (dtype, out_d, acc_t.dtype):
        dev.check_dtype(d, op)
    plan = _Plan(dev, 1 if load is None else len(load[1]), _out_shape(shape, axes, keepdims),
                 out_d, None if load is None else load[0])
    if plan.out.size == 0:
        return plan
    kept, red = _groups(shape, axes)
    R = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    scale = (1.0 / R if R else float("nan")) if op == "mean" else None
    _reduce(plan, plan.inputs[0], in_t, kept, red, "sum" if op == "mean" else op, acc_t,
            plan.out, scale, None if load is None else (load[0], plan.inputs))
    return plan


def _register(op: str) -> None:
    @register_kernel(op, "opencl")
    def kernel(x, axis, keepdims):
        return reduce(device_of(x), op, x, x.shape, x.dtype, axis, keepdims)


for _op in ("sum", "prod", "mean", "max", "min"):
    _register(_op)


def _register_arg(op: str) -> None:
    @register_kernel(op, "opencl")
    def kernel(x, axis, keepdims):
        dev = device_of(x)
        key = (op, x.dtype, x.shape, axis, keepdims)
        plan = dev.plans.get(key)
        if plan is None:
            plan = dev.plans[key] = _plan(dev, x, axis, keepdims)
        return plan.run(dev, [x.base_data])

    def _plan(dev: OpenCLDevice, x: Any, axis: Any, keepdims: bool) -> _Plan:
        """The launches of ``op`` on arrays like ``x``, recorded."""
        dev.check_dtype(x.dtype, op)
        axes = set(range(x.ndim)) if axis is None else {axis}
        shape = (1,) * x.ndim if axis is None and keepdims else _out_shape(x.shape, axes,
                                                                            keepdims)
        plan = _Plan(dev, 1, shape, _I64)
        out, xb = plan.out, plan.inputs[0]
        kept, red = _groups(x.shape, axes)
        nout = out.size
        R = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
        chunk, nchunk = _chunks(nout, R)
        t = cltype(x.dtype)
        # partial values in plain float loads (the pick kernel reads them as {t}*: a
        # bfloat16 buffer of ushort read as float* picked garbage)
        pt = cltype(np.float32) if t.storage == "half" or t.is_bf16 else t
        src = _source(op, len(kept), len(red), t, pt, pt if nchunk > 1 else cltype(_I64),
                      False, nchunk > 1)
        if nchunk == 1:
            _launch(plan, src, [xb], [out], nout, R, chunk, 1, t.scalar(1), kept, red)
            return plan
        vals, idxs = plan.empty((nchunk, nout), pt.dtype), plan.empty((nchunk, nout), _I64)
        _launch(plan, src, [xb], [vals, idxs], nout, R, chunk, nchunk, t.scalar(1), kept, red)
        nan = " || (isnan(x) && !isnan(acc))" if t.is_float else ""
        pick = header(pt) + _PICK.format(t=pt.calc, cmp=">" if op == "argmax" else "<", nan=nan)
        plan.launch(dev.programs.kernel(pick, "pick"), nout,
                    [vals.base_data, idxs.base_data, out.base_data, np.int64(nout),
                     np.int64(nchunk)])
        return plan


for _op in ("argmax", "argmin"):
    _register_arg(_op)


_CUMULATIVE = """{hdr}__kernel void cumulative(__global const {s}* restrict x,
                     __global {o}* out, const long outer, const long n, const long inner) {{
    const long g = get_global_id(0);
    if (g >= outer * inner) return;
    const long base = (g / inner) * n * inner + g % inner;
    {a} acc = {init};
    for (long i = 0; i < n; ++i) {{
      const {a} v = {load};
      {comb}
      {store}
    }}
}}
"""
#: The reduction whose identity and step (``_init``, ``_combine``: complex products too) the
#: running fold takes.
_FOLDS = {"cumulative_sum": "sum", "cumulative_prod": "prod"}


def _register_cumulative(name: str) -> None:
    op = _FOLDS[name]

    @register_kernel(name, "opencl")
    def cumulative(x, axis):
        """One work-item per line along ``axis``, folding serially (in double for floats
        where the device has fp64; the accumulator has the result's type otherwise)."""
        dev = device_of(x)
        in_t = cltype(x.dtype)
        k = x.dtype.kind
        out_d = _I64 if k in "bi" else np.dtype(np.uint64) if k == "u" else x.dtype
        out_t = cltype(out_d)
        acc_t = _acc_type(dev, "sum", in_t) if k == "f" else out_t
        for d in (x.dtype, out_d, acc_t.dtype):
            dev.check_dtype(d, name)
        out = dev.empty(x.shape, out_d)
        if out.size == 0:
            return out
        outer = int(np.prod(x.shape[:axis], dtype=np.int64))
        inner = int(np.prod(x.shape[axis + 1:], dtype=np.int64))
        src = _CUMULATIVE.format(
            hdr=header(in_t, acc_t, out_t), s=in_t.storage, o=out_t.storage, a=acc_t.calc,
            init=_init(op, acc_t), comb=_combine(op, acc_t),
            load=convert(in_t.load("x", "base + i * inner"), in_t, acc_t),
            store=out_t.store("out", "base + i * inner", convert("acc", acc_t, out_t)))
        L = np.int64
        launch(dev.queue, dev.programs.kernel(src, "cumulative"), outer * inner,
               [x.base_data, out.base_data, L(outer), L(x.shape[axis]), L(inner)])
        return out
    return cumulative


cumulative_sum = _register_cumulative("cumulative_sum")
cumulative_prod = _register_cumulative("cumulative_prod")
