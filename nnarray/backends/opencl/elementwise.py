"""Elementwise kernels with numpy broadcasting and weak Python scalars.

We write our own kernels rather than use ``pyopencl.elementwise``/``pyopencl.array``
arithmetic: those ignore strides, cannot broadcast and launch a fixed small grid.

One kernel source per (op, operand dtypes, scalar positions, output dtype, rank, index
type). Rank 0 is the contiguous case (every array operand has the output's shape): one
work-item per element with no bounds check (buffers are padded, see ``device.py``), so
pocl vectorizes it. Otherwise dimensions are coalesced and each operand's offset comes
from its strides (0 where broadcast). A launch plan (kernel + index arguments) is cached
per (op, operand dtypes and shapes, output dtype) on the device.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from ...dtypes import promote
from ...ops.common import check_int_pow
from ...ops.elementwise import BINARY as _RULES
from ...ops.elementwise import UNARY as _URULES
from ...ops.elementwise import binary_dtype, unary_dtype
from ...ops.ufuncs import BY_NAME
from ...registry import register_kernel
from .cltypes import CLType, cltype, convert, header, index_type
from .complex_fast import FastPlan, items
from .complex_fast import eligible as fast_eligible
from .complex_fast import source as fast_source
from .complex_math import PAIR_IO
from .complex_math import expression as complex_expression
from .device import OpenCLDevice, _by_queue, device_of
from .indexing import broadcast_strides, coalesce, index_args, index_params, offsets_code, span
from .inline_math import inline
from .programs import LOCAL, typed

_Array = cla.Array
_enqueue = cl.enqueue_nd_range_kernel
_LOCAL = (LOCAL,)
_BOOL = np.dtype(np.bool_)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
#: An expression builder: (operand value names, compute type) -> C expression.
Expr = Callable[[list[str], CLType], str]

_IPOW = """
static long ipow(long b, long e) {
  if (e < 0) return b == 1 ? 1 : (b == -1 ? ((e & 1) ? -1 : 1) : 0);
  long r = 1;
  while (e) { if (e & 1) r *= b; b *= b; e >>= 1; }
  return r;
}
"""


class Plan:
    """One launch shape of one elementwise kernel.

    Arguments go to pyopencl's setters directly (``_set_arg_multi`` for buffers,
    ``_set_arg_buf_pack_multi`` for scalars): its ``set_args`` adds a generic path per
    argument, most for a broadcast's six index constants. The constants
    (``n``, sizes and strides) are set only when another plan of the same kernel object
    (kernels are shared by source) set its own since (``_owner``): pocl copies the
    arguments at each enqueue, so those left as they are stay valid."""

    __slots__ = ("kernel", "n", "shape", "dtype", "layout", "scalars", "consts", "grid",
                 "local", "arrays", "tail", "slots", "packed")

    def __init__(self, kernel: Any, n: int, shape: tuple[int, ...], dtype: np.dtype,
                 layout: tuple, scalars: list, consts: list,
                 rows: tuple[int, int] | None = None, tail: Any = None) -> None:
        self.kernel = kernel
        self.n = n
        self.shape = shape
        self.dtype = dtype
        self.layout = layout  #: the output's (``OpenCLDevice.layout``)
        self.scalars = scalars  #: per operand: None (array) or the numpy scalar type
        self.consts = consts
        if rows is None:
            self.grid, self.local = (-(-n // LOCAL) * LOCAL,), _LOCAL
        else:  # (row length, rows): a 2-D launch, see ``source``
            w = row_width(rows[0])
            self.grid, self.local = (-(-rows[0] // w) * w, rows[1]), (w, 1)
        #: ``tail``: launches of the columns that ``kernel`` (unchecked) leaves out, when
        #: the work-group width does not divide the rows (``_SPLIT``): whole groups of
        #: ``_ROW_MIN`` unchecked, then the last partial one with ``tail`` (checked)
        self.tail: list = []
        if tail is not None:
            length, nrows = rows
            end = length // w * w
            self.grid = (end, nrows)
            mid = length // _ROW_MIN * _ROW_MIN
            small = (_ROW_MIN, 1)
            if mid > end:
                self.tail.append((kernel, (mid - end, nrows), small, (end, 0)))
            self.tail.append((tail, (_ROW_MIN, nrows), small, (mid, 0)))
        self.arrays = not consts and all(s is None for s in scalars)
        #: per operand: its argument index and how a scalar is set (``_scalar_arg``)
        self.slots = [(i, None if s is None else _packing(s))
                      for i, s in enumerate(scalars, 1)]
        #: the constants as ``_set_arg_buf_pack_multi`` takes them
        self.packed = tuple(v for i, c in enumerate(consts, len(scalars) + 1)
                            for v in (i, c.dtype.char.encode(), c))

    def run(self, dev: OpenCLDevice, xs: tuple, out: Any = None) -> Any:
        # Allocation, arguments and launch of a shared kernel under the device lock (see
        # device.py); acquire/release rather than ``with``: half the cost on the hot path.
        dev.acquire()
        try:
            if out is None:
                out = dev.new_locked(self.layout)
            if not self.n:
                return out
            k = self.kernel
            if self.arrays:  # the hot path: contiguous arrays only
                if len(xs) == 2:
                    k._set_arg_multi((0, out.base_data, 1, xs[0].base_data,
                                      2, xs[1].base_data))
                elif len(xs) == 1:
                    k._set_arg_multi((0, out.base_data, 1, xs[0].base_data))
                else:
                    self._set_args(k, out, xs)
            else:
                self._set_args(k, out, xs)
                for tail, grid, local, offset in self.tail:
                    if tail is not k:
                        self._set_args(tail, out, xs)
                    _enqueue(dev.queue, tail, grid, local, offset)
            _enqueue(dev.queue, k, self.grid, self.local)
        finally:
            dev.release()
        return out

    def _set_args(self, k: Any, out: Any, xs: tuple) -> None:
        """Set ``k``'s arguments for one launch (the caller holds the device lock)."""
        bufs: list = [0, out.base_data]
        for (i, how), x in zip(self.slots, xs):
            if how is None:
                bufs += (i, x.base_data)
            else:
                _scalar_arg(k, i, how, x)
        k._set_arg_multi(tuple(bufs))
        if self.packed and _owner.get(id(k)) is not self:
            k._set_arg_buf_pack_multi(self.packed)
            _owner[id(k)] = self


#: ``id(kernel) -> the Plan`` that last set its constant arguments (kernel objects live
#: as long as the device's program cache, so their ids stay theirs).
_owner: dict[int, Plan] = {}
#: Type characters that ``_set_arg_buf_pack_multi`` packs (pyopencl's invoker's list).
_PACKED = frozenset("cbBhHiIlLfd")


def _packing(scalar: type) -> tuple[type, bytes | None, bool]:
    """How ``_scalar_arg`` sets a scalar of numpy type ``scalar``: (the type, its pack
    character or ``None`` for raw bytes, whether a Python float goes in as it is)."""
    c = np.dtype(scalar).char
    return scalar, c.encode() if c in _PACKED else None, c in "fd"


def _scalar_arg(k: Any, i: int, how: tuple, x: Any) -> None:
    """Set argument ``i`` of ``k`` to the scalar ``x`` converted as numpy converts it to
    ``how``'s type (a Python float straight to a float argument: the same rounding)."""
    t, char, direct = how
    if char is None:
        k._set_arg_buf_multi((i, t(x).tobytes()))
    else:
        k._set_arg_buf_pack_multi((i, char, x if direct and type(x) is float else t(x)))


#: Broadcast launches whose innermost (coalesced) dimension has at least this many
#: elements run 2-D: work-item (c, row) needs no division for the innermost offset and
#: rank - 2 for the row's, where the 1-D walk pays rank - 1 per element; pocl vectorizes
#: along c, where the 1-D walk did not.
_ROW_MIN = 64
#: Row launches of at least this many elements whose rows the work-group width does not
#: divide run as two: the whole work-groups of every row unchecked, then the last partial
#: one checked (``source``'s ``whole``), so the whole ones vectorize.
_SPLIT = 1 << 15


def row_width(length: int) -> int:
    """Work-group width of a 2-D launch over rows of ``length`` (``length >= _ROW_MIN``)."""
    return LOCAL if length >= LOCAL else _ROW_MIN


def index_layout(arrays: Any, shape: tuple[int, ...]) -> tuple[int, tuple, list, str]:
    """(rank, coalesced dims, the ``arrays``' strides, index type) of a launch over
    ``shape`` (``arrays``: anything with a ``shape``); rank 0: all of that shape."""
    if all(x.shape == shape for x in arrays):
        return 0, (), [], index_type(math.prod(shape))
    dims, strides = coalesce(shape, [broadcast_strides(x.shape, shape) for x in arrays])
    if not dims:
        dims, strides = (1,), [(0,) for _ in arrays]
    return len(dims), dims, strides, index_type(span(dims, strides))


class Rows(NamedTuple):
    """How a broadcast launches (``plan`` and the fused kernels alike): ``length`` > 0:
    2-D over rows of that length (the innermost dimension, or the last two where the
    innermost is short), ``whole``: the work-group width divides it (no bounds
    check); ``steps``: the inputs' innermost strides (constants 0 and 1 vectorize);
    ``last``: the innermost size as a constant (its division vectorizes; given with
    ``length`` where a row is the last two dimensions)."""

    length: int = 0
    whole: bool = False
    steps: Any = None
    last: Any = None


def rows_of(rank: int, dims: tuple, strides: list) -> Rows:
    """The launch of coalesced ``dims`` and operand ``strides`` (``Rows``)."""
    if rank < 2:
        return Rows()
    pair = dims[-1] < _ROW_MIN <= dims[-2] * dims[-1]
    if not pair and dims[-1] < _ROW_MIN:
        return Rows(last=dims[-1])
    length = dims[-1] * dims[-2] if pair else dims[-1]
    return Rows(length, length % row_width(length) == 0,
                None if pair else [st[-1] for st in strides], dims[-1] if pair else None)


def row_lines(rank: int, n_arr: int, idx: str, whole: bool, inner_steps: list[int] | None,
              last_size: int | None) -> list[str]:
    """A 2-D launch's index code: work-item (c, row), ``i`` and the operands' offsets;
    the row is the last two dimensions where ``last_size`` is given (see ``source``)."""
    # the row's length: the innermost size, or the last two sizes' product
    last = f"d{rank - 1}" if not last_size else \
        f"({last_size} * d{rank - 2})" if rank > 2 else "n"
    return [f"const {idx} c = get_global_id(0), row = get_global_id(1);",
            "" if whole else f"if (c >= {last}) return;",
            f"const {idx} i = row * {last} + c;",
            offsets_code(rank, n_arr, idx, "row", inner="c", inner_steps=inner_steps,
                         last_size=last_size)]


def source(expr: str, operands: list[tuple[bool, CLType, CLType]], out_t: CLType, rank: int,
           idx: str, helpers: str = "", rows: bool = False, whole: bool = False,
           inner_steps: list[int] | None = None, last_size: int | None = None,
           pairs: bool = False) -> str:
    """Kernel ``map``: ``out[i] = expr(v0, v1, ...)``; operand ``k`` is ``(is_array, its
    type, the type it is converted to as v{k})``; rank 0 means all arrays contiguous;
    ``rows``: a 2-D launch over (innermost index, row); ``whole``: its work-group width
    divides the row, so no bounds check (the check's early return stops pocl
    vectorizing); ``inner_steps``: the
    array operands' innermost strides, ``last_size``: the innermost size as a constant,
    where a row is the last two dimensions (both as ``offsets_code`` takes them); ``pairs``:
    complex64 moves as two floats (``cltypes.CLType.load``)."""
    n_arr = sum(1 for a, _, _ in operands if a)
    params = [f"__global {out_t.storage}* out"]
    loads = []
    j = 0
    for k, (is_arr, t, ct) in enumerate(operands):
        if is_arr:
            params.append(f"__global const {t.storage}* restrict a{k}")
            pos = "i" if rank == 0 else f"o{j}"
            loads.append(f"const {ct.calc} v{k} = {convert(t.load(f'a{k}', pos, pairs), t, ct)};")
            j += 1
        else:
            params.append(f"const {ct.calc} v{k}")
    body = [f"const {idx} i = get_global_id(0);"]
    if rows:
        params += [f"const {idx} n", index_params(rank, n_arr, idx)]
        body = row_lines(rank, n_arr, idx, whole, inner_steps, last_size)
    elif rank:
        params.append(f"const {idx} n")
        if rank > 1 or n_arr:
            params.append(index_params(rank, n_arr, idx))
        body += ["if (i >= n) return;", offsets_code(rank, n_arr, idx, last_size=last_size)]
    types = [out_t] + [t for _, t, _ in operands] + [ct for _, _, ct in operands]
    return (header(*types) + helpers + "__kernel void map(" + ", ".join(params) + ") {\n    "
            + "\n    ".join(body + loads + [out_t.store("out", "i", expr, pairs)]) + "\n}\n")


def plan(dev: OpenCLDevice, op: str, expr: str, xs: tuple, cts: list[CLType],
         shape: tuple[int, ...], out_dtype: np.dtype, helpers: str = "") -> Plan | FastPlan:
    """Build the launch plan of ``expr`` over operands ``xs`` (arrays or scalars)."""
    out_t = cltype(out_dtype)
    for t in {out_t.dtype, *(c.dtype for c in cts)}:
        dev.check_dtype(t, op)
    arrays = [x for x in xs if isinstance(x, _Array)]
    n = math.prod(shape)
    rank, dims, strides, idx = index_layout(arrays, shape)
    operands = [(isinstance(x, _Array), cltype(x.dtype) if isinstance(x, _Array) else ct, ct)
                for x, ct in zip(xs, cts)]
    # rows: of the innermost dimension, or of the last two where the innermost is short
    # (its size then a constant, ``last``)
    length, whole, steps, last = rows_of(rank, dims, strides)
    rows = length > 0
    split = rows and not whole and n >= _SPLIT

    pairs = any(op in PAIR_IO.get(c.calc, ()) for c in cts)

    def kernel_of(whole: bool) -> Any:
        src = source(expr, operands, out_t, rank, idx, helpers, rows, whole, steps, last, pairs)
        return dev.programs.kernel(inline(src, dev), "map")  # math
    kernel = kernel_of(whole or split)
    tail = kernel_of(False) if split else None
    consts: list = []
    if rank:
        t = np.int32 if idx == "int" else np.int64
        consts = [t(n)] + (index_args(dims, strides, idx) if rank > 1 or arrays else [])
    scalars = [None if isinstance(x, _Array) else ct.scalar for x, ct in zip(xs, cts)]
    for k in (kernel, tail) if split else (kernel,):
        typed(k, [None] + [s if s is None else s(0) for s in scalars] + consts)
    layout = dev.layout(shape, out_dtype)
    p = Plan(kernel, n, shape, out_dtype, layout, scalars, consts,
             (length, n // length) if rows else None, tail)
    if idx == "int" and fast_eligible(dev, op, operands, rank):  # see complex_fast
        src = fast_source(op, expr, operands[0][1], out_t, helpers, pairs)
        chunked = typed(dev.programs.kernel(inline(src, dev), "map"), [None, None, np.int32(0)])
        # one work-item per chunk: the plan's n counts work-items, n itself goes as a constant
        return FastPlan(Plan(chunked, items(n), shape, out_dtype, layout, scalars,
                             [np.int32(n)]), p)
    return p


def _key(x: Any) -> Any:
    return (x.dtype, x.shape) if isinstance(x, _Array) else type(x)


def _shape(x: Any) -> tuple[int, ...]:
    return x.shape if isinstance(x, _Array) else ()


def broadcast_shape(*xs: Any) -> tuple[int, ...]:
    return np.broadcast_shapes(*(_shape(x) for x in xs))


# -- op expressions: the rows' C (``ops/ufuncs.py``) and OpenCL's own -------------------
_NAMES = {"x": "v0", "y": "v1"}
_WORD = re.compile(r"\b[xyT]\b")


def render(expr: str, ct: CLType) -> str:
    """A row's C expression as OpenCL C: operands ``v0``, ``v1``; ``T`` the compute type.
    Math keeps its names (``exp(v0)``: OpenCL's builtin)."""
    return _WORD.sub(lambda m: _NAMES.get(m.group(), ct.calc), expr)


def _int_divmod(name: str, ct: CLType) -> str:
    """numpy's floor division / remainder of integers (0 for a zero divisor; the
    remainder takes the divisor's sign; MIN / -1 wraps rather than trapping)."""
    if ct.dtype.kind == "u":
        return "(v1 == 0 ? 0 : v0 / v1)" if name == "floor_divide" else \
            "(v1 == 0 ? 0 : v0 % v1)"
    c = ct.calc
    if name == "floor_divide":
        return (f"(v1 == 0 ? ({c})0 : v1 == -1 ? ({c})(0 - (v0)) : ({c})(v0 / v1 - "
                f"(((v0 % v1) != 0) && ((v0 < 0) != (v1 < 0)))))")
    return (f"(v1 == 0 || v1 == -1 ? ({c})0 : ({c})((v0 % v1) + "
            f"((((v0 % v1) != 0) && (((v0 % v1) < 0) != (v1 < 0))) ? v1 : 0)))")


_FLOORDIV = """
static T floordiv_T(T a, T b) {
  if (b == 0) return a / b;
  T mod = fmod(a, b), div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  if (div == 0) return copysign((T)0, a / b);
  T f = floor(div);
  return (div - f > (T)0.5) ? f + 1 : f;
}
"""


def _float_divmod(name: str, ct: CLType) -> tuple[str, str]:
    """numpy's float floor division / remainder (``npy_divmod``)."""
    c = ct.calc
    if name == "floor_divide":
        return f"floordiv_{c}(v0, v1)", _FLOORDIV.replace("_T", f"_{c}").replace("T", c)
    mod = "fmod(v0, v1)"
    return (f"(v1 == 0 ? {mod} : ({mod} != 0 ? (((({mod}) < 0) != (v1 < 0)) ? {mod} + v1 : "
            f"{mod}) : copysign(({c})0, v1)))"), ""


#: float16 nextafter on the half's bits (computing in float would round back).
_NEXTAFTER_HALF = """
float nna_nextafter_h(float a, float b) {
  if (isnan(a) || isnan(b)) return a + b;
  if (a == b) return b;
  if (a == 0.0f) return b > 0.0f ? 5.9604645e-8f : -5.9604645e-8f;
  ushort h; vstore_half(a, 0, (__private half*)&h);
  if ((a < b) == (a > 0.0f)) h += 1; else h -= 1;
  return vload_half(0, (__private const half*)&h);
}
"""

#: bfloat16 nextafter: a bfloat16 value is a float whose low 16 bits are zero.
_NEXTAFTER_BF16 = """
float nna_nextafter_b(float a, float b) {
  if (isnan(a) || isnan(b)) return a + b;
  if (a == b) return b;
  if (a == 0.0f) return b > 0.0f ? as_float(0x10000u) : as_float(0x80010000u);
  const uint u = as_uint(a);
  return as_float(((a < b) == (a > 0.0f)) ? u + 0x10000u : u - 0x10000u);
}
"""


def _special(name: str, ct: CLType) -> tuple[str, str] | None:
    """(expression, helpers) where OpenCL writes its own C: numpy's divmod, integer
    powers, float16 ``nextafter``; ``None`` for the row's expression."""
    if name in ("floor_divide", "remainder"):
        return _float_divmod(name, ct) if ct.is_float else (_int_divmod(name, ct), "")
    if name == "pow" and not ct.is_float:
        return f"({ct.calc})ipow((long)v0, (long)v1)", _IPOW
    if name == "nextafter" and ct.is_bf16:
        return "nna_nextafter_b(v0, v1)", _NEXTAFTER_BF16
    if name == "nextafter" and ct.dtype.itemsize == 2:
        return "nna_nextafter_h(v0, v1)", _NEXTAFTER_HALF
    return None


def expression(name: str, ct: CLType) -> tuple[str, str]:
    """(OpenCL C of function ``name`` computing in ``ct``, helpers)."""
    if ct.is_complex:
        return complex_expression(name, ct)
    special = _special(name, ct)
    if special is not None:
        return special
    # bfloat16 computes in float: the row's float32 expression (a row that asks the
    # dtype's kind would see bfloat16's "V")
    return render(BY_NAME[name].c_expr(_F32 if ct.is_bf16 else ct.dtype), ct), ""


def _register_binary(name: str) -> None:
    @register_kernel(name, "opencl")
    def kernel(a, b, out=None):
        xs = (a, b)
        od = None if out is None else out.dtype
        if isinstance(a, _Array) and isinstance(b, _Array):  # the hot path: no helper calls
            dev = _by_queue[id(a.queue)]
            key = (name, a.dtype, a.shape, b.dtype, b.shape, od)
        else:
            dev = device_of(a if isinstance(a, _Array) else b)
            key = (name, _key(a), _key(b), od)
        p = dev.plans.get(key)
        if p is None:
            d = promote(name, a, b)
            res = binary_dtype(name, d)
            if res != _BOOL:
                d = res  # computed in the result type (floats of integer operands)
            ct = cltype(d)
            expr, helpers = expression(name, ct)
            rt = cltype(res)
            out_d = res if out is None else out.dtype
            p = dev.plans[key] = plan(dev, name, convert(expr, rt, cltype(out_d)), xs, [ct, ct],
                                      broadcast_shape(a, b), out_d, helpers)
        return p.run(dev, xs, out)

    if name == "pow":  # integer ** negative integer raises, as numpy does (not 0)
        generic = kernel

        @register_kernel(name, "opencl")
        def kernel(a, b, out=None):
            check_int_pow(a, b, _min_on_host)
            return generic(a, b, out)


def _min_on_host(x: Any) -> Any:
    """The smallest element of native array ``x`` (a blocking read, under the lock)."""
    return device_of(x).to_host(x).min()


for _n in _RULES:
    _register_binary(_n)


def _register_unary(name: str) -> None:
    pred = _URULES[name][0] == "pred"

    @register_kernel(name, "opencl")
    def kernel(x, out=None):
        dev = _by_queue[id(x.queue)]  # ``device_of``, inline
        key = (name, x.dtype, x.shape, None if out is None else out.dtype)
        p = dev.plans.get(key)
        if p is None:
            d = unary_dtype(name, x.dtype)
            out_d = d if out is None else out.dtype
            ct = cltype(x.dtype if pred or x.dtype.kind == "c" else d)
            e, helpers = expression(name, ct)
            # a complex predicate is an int, a complex modulus (abs) real
            rt = cltype(_BOOL) if pred and ct.is_complex else cltype(d) if ct.is_complex \
                else ct
            p = dev.plans[key] = plan(dev, name, convert(e, rt, cltype(out_d)), (x,), [ct],
                                      x.shape, out_d, helpers)
        return p.run(dev, (x,), out)


for _n in _URULES:
    _register_unary(_n)


@register_kernel("cast", "opencl")
def cast(x, dtype, out=None):
    dev = device_of(x)
    dtype = np.dtype(dtype if out is None else out.dtype)
    key = ("cast", x.dtype, x.shape, dtype)
    p = dev.plans.get(key)
    if p is None:
        xt = cltype(x.dtype)
        p = dev.plans[key] = plan(dev, "cast", convert("v0", xt, cltype(dtype)), (x,), [xt],
                                  x.shape, dtype)
    return p.run(dev, (x,), out)


@register_kernel("leaky_relu", "opencl")
def leaky_relu(x, alpha):
    dev = device_of(x)
    alpha = float(alpha)
    key = ("leaky_relu", x.dtype, x.shape)
    p = dev.plans.get(key)
    if p is None:
        ct = cltype(promote("leaky_relu", x, alpha))
        p = dev.plans[key] = plan(dev, "leaky_relu", "v0 > 0 ? v0 : v0 * v1", (x, alpha),
                                  [ct, ct], x.shape, ct.dtype)
    return p.run(dev, (x, alpha))


@register_kernel("clip", "opencl")
def clip(x, a_min, a_max):
    dev = device_of(x)
    xs = tuple(v for v in (x, a_min, a_max) if v is not None)
    key = ("clip", x.dtype, x.shape, _key(a_min) if a_min is not None else None,
           _key(a_max) if a_max is not None else None)
    p = dev.plans.get(key)
    if p is None:
        d = promote("clip", x, *xs[1:])
        ct = cltype(d)
        expr = "v0"
        if a_min is not None:
            expr = f"(({expr}) < v1 ? v1 : ({expr}))"
        if a_max is not None:
            hi = "v2" if a_min is not None else "v1"
            expr = f"(({expr}) > {hi} ? {hi} : ({expr}))"
        p = dev.plans[key] = plan(dev, "clip", expr, xs, [ct] * len(xs), x.shape, d)
    return p.run(dev, xs)


@register_kernel("where", "opencl")
def where(c, x, y):
    dev = device_of(c)
    xs = (c, x, y)
    key = ("where", c.shape, _key(x), _key(y))
    p = dev.plans.get(key)
    if p is None:
        d = promote("where", x, y)
        ct = cltype(d)
        p = dev.plans[key] = plan(dev, "where", "v0 ? v1 : v2", xs, [cltype(_BOOL), ct, ct],
                                  broadcast_shape(c, x, y), d)
    return p.run(dev, xs)


@register_kernel("sgd_update", "opencl")
def sgd_update(ws, gs, lr):
    """``w = w - lr * g`` per pair, each one pass over memory (no temporary)."""
    for w, g in zip(ws, gs):
        dev = device_of(w)
        key = ("sgd_update", w.dtype, w.shape)
        p = dev.plans.get(key)
        if p is None:
            ct = cltype(w.dtype)
            p = dev.plans[key] = plan(dev, "sgd_update", "v0 - v2 * v1", (w, g, float(lr)),
                                      [ct, ct, ct], w.shape, w.dtype)
        p.run(dev, (w, g, float(lr)), w)

