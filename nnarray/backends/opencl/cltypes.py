"""numpy dtypes as OpenCL C types: storage type, compute type, loads, stores, conversions.

float16 is stored as ``half`` but read and written only through ``vload_half`` /
``vstore_half_rte`` (core OpenCL, no ``cl_khr_fp16`` needed) and computed in ``float``, so
it works on every device. bfloat16 is stored as ``ushort`` and computed in ``float``: a
load shifts the 16 bits into the top of a float, a store rounds to nearest even (NaN
kept NaN). bool is stored as ``uchar`` (0 or 1, like numpy). complex64 and
complex128 are ``float2``/``double2`` (``.x`` real, ``.y`` imaginary: numpy's layout, and
that of ``cfloat_t``/``cdouble_t`` of pyopencl's complex header).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import dtypes
from ...errors import DTypeError


@dataclass(frozen=True)
class CLType:
    """How one numpy dtype appears in kernel source."""

    dtype: np.dtype
    storage: str  #: C type of a buffer element
    calc: str  #: C type values are computed in
    scalar: type  #: numpy type of a scalar kernel argument of the compute type

    @property
    def is_float(self) -> bool:
        return self.dtype.kind == "f" or self.is_bf16

    @property
    def is_bf16(self) -> bool:
        return dtypes.is_bfloat16(self.dtype)

    @property
    def is_complex(self) -> bool:
        return self.dtype.kind == "c"

    @property
    def real(self) -> str:
        """The C type of one component (``float`` of ``float2``)."""
        return self.calc[:-1] if self.is_complex else self.calc

    @property
    def is_bool(self) -> bool:
        return self.dtype.kind == "b"

    def load(self, ptr: str, idx: str, pairs: bool = False) -> str:
        """Expression reading element ``idx`` of ``ptr`` as the compute type; ``pairs``: a
        complex element as its two parts (see ``_PAIRS``)."""
        if self.storage == "half":
            return f"vload_half({idx}, {ptr})"
        if self.is_bf16:
            return f"as_float((uint)({ptr}[{idx}]) << 16)"
        if pairs and self.is_complex:
            return f"NNA_PAIR_LOAD({self.real}, {ptr}, {idx})"
        if self.storage == "float2":
            return f"nna_c64_load((__global const ulong*)({ptr}), {idx})"
        return f"{ptr}[{idx}]"

    def store(self, ptr: str, idx: str, value: str, pairs: bool = False) -> str:
        """Statement writing ``value`` (already of the compute type) to ``ptr[idx]``."""
        if self.storage == "half":
            return f"vstore_half_rte({value}, {idx}, {ptr});"
        if self.is_bf16:
            return (f"{{ const uint nna_u_ = as_uint((float)({value})); {ptr}[{idx}] = "
                    "(nna_u_ & 0x7fffffffu) > 0x7f800000u ? (ushort)((nna_u_ >> 16) | 0x40u) : "
                    "(ushort)((nna_u_ + 0x7fffu + ((nna_u_ >> 16) & 1u)) >> 16); }")
        if pairs and self.is_complex:
            return f"NNA_PAIR_STORE({self.real}, {ptr}, {idx}, {value});"
        if self.storage == "float2":
            return f"nna_c64_store((__global ulong*)({ptr}), {idx}, {value});"
        return f"{ptr}[{idx}] = {value};"

    def rounded(self, value: str) -> str:
        """Expression of the compute type: ``value`` (a float) rounded to this 16-bit
        dtype as a store would round it (``ROUNDING`` defines the functions)."""
        return f"nna_{'bf16' if self.is_bf16 else 'half'}_round({value})"

    def lowest(self) -> str:
        """The identity of ``max`` in the compute type."""
        if self.is_float:
            return "(-INFINITY)"
        if self.dtype.kind in "bu":
            return "0"
        return {"char": "CHAR_MIN", "short": "SHRT_MIN", "int": "INT_MIN",
                "long": "LONG_MIN"}[self.calc]

    def highest(self) -> str:
        """The identity of ``min`` in the compute type."""
        if self.is_float:
            return "INFINITY"
        if self.is_bool:
            return "1"
        return {"char": "CHAR_MAX", "short": "SHRT_MAX", "int": "INT_MAX", "long": "LONG_MAX",
                "uchar": "UCHAR_MAX", "ushort": "USHRT_MAX", "uint": "UINT_MAX",
                "ulong": "ULONG_MAX"}[self.calc]


_TABLE = {np.dtype(d): CLType(np.dtype(d), s, c, t) for d, s, c, t in (
    (np.float16, "half", "float", np.float32),
    (np.float32, "float", "float", np.float32),
    (np.float64, "double", "double", np.float64),
    (np.int8, "char", "char", np.int8),
    (np.int16, "short", "short", np.int16),
    (np.int32, "int", "int", np.int32),
    (np.int64, "long", "long", np.int64),
    (np.uint8, "uchar", "uchar", np.uint8),
    (np.uint16, "ushort", "ushort", np.uint16),
    (np.uint32, "uint", "uint", np.uint32),
    (np.uint64, "ulong", "ulong", np.uint64),
    (np.bool_, "uchar", "uchar", np.uint8),
    (np.complex64, "float2", "float2", np.complex64),
    (np.complex128, "double2", "double2", np.complex128),
)}
#: bfloat16's row, added on first use (``dtypes.is_bfloat16``: ``ml_dtypes`` loaded).
_BF16_ROW = ("ushort", "float", np.float32)


def cltype(dtype: np.dtype) -> CLType:
    """The ``CLType`` of a supported numpy dtype."""
    d = np.dtype(dtype)
    t = _TABLE.get(d)
    if t is None and dtypes.is_bfloat16(d):
        t = _TABLE[d] = CLType(d, *_BF16_ROW)
    if t is None:
        raise DTypeError(f"opencl: dtype {dtype} is not supported")
    return t


def convert(expr: str, src: CLType, dst: CLType) -> str:
    """``expr`` (of ``src``'s compute type) converted like numpy's unsafe cast."""
    if src.calc == dst.calc and src.is_bool == dst.is_bool:
        return expr
    if src.is_complex:
        if dst.is_complex:
            return f"convert_{dst.calc}({expr})"
        if dst.is_bool:
            return f"(uchar)(({expr}).x != 0 || ({expr}).y != 0)"
        return f"({dst.calc})(({expr}).x)"
    if dst.is_complex:
        return f"(({dst.calc})(({dst.real})({expr}), 0))"
    if dst.is_bool:
        return f"(uchar)(({expr}) != 0)"
    return f"({dst.calc})({expr})"


#: complex64 elements move as one 64-bit integer each: a ``float2`` load or store is an
#: instruction of vector type, which stops pocl's CPU drivers from vectorizing the kernel
#: across work-items (complex elementwise ran 5-20x slower per element than float).
_C64 = """#ifndef NNA_C64_IO
#define NNA_C64_IO
inline float2 nna_c64_load(__global const ulong* p, long i) {
  const ulong u = p[i];
  return (float2)(as_float((uint)u), as_float((uint)(u >> 32)));
}
inline void nna_c64_store(__global ulong* p, long i, float2 v) {
  p[i] = (ulong)as_uint(v.x) | ((ulong)as_uint(v.y) << 32);
}
#endif
"""

#: Or a complex element moves as its two parts (``load(..., pairs=True)``): the 64-bit type
#: halves the vector width the vectorizer picks for complex64 (4 lanes, not float's 8), and
#: a ``double2`` load is of vector type. The parts keep full width for the functions in
#: ``complex_math.PAIR_IO`` but stop vectorization of others (complex64 ``log`` and ``exp``
#: 5-7x slower), hence the choice per function. Macros: the index keeps its type (an int
#: index passed as a function's long stopped the vectorizer recognizing the addresses).
_PAIRS = """#ifndef NNA_PAIR_IO
#define NNA_PAIR_IO
#define NNA_PAIR_LOAD(R, p, i) ((R##2)(((__global const R*)(p))[2 * (i)], \\
                                       ((__global const R*)(p))[2 * (i) + 1]))
#define NNA_PAIR_STORE(R, p, i, v) do { const R##2 nna_v_ = (v); \\
  ((__global R*)(p))[2 * (i)] = nna_v_.x; ((__global R*)(p))[2 * (i) + 1] = nna_v_.y; \\
} while (0)
#endif
"""


#: ``CLType.rounded``'s functions: a float rounded to bfloat16 or float16 in registers, as
#: the 16-bit stores round (the half one stores to private memory: no ``cl_khr_fp16``).
ROUNDING = """#ifndef NNA_ROUNDING
#define NNA_ROUNDING
inline float nna_bf16_round(float v) {
  const uint u = as_uint(v);
  return as_float((u & 0x7fffffffu) > 0x7f800000u ? (u | 0x400000u) & 0xffff0000u
                  : (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u);
}
inline float nna_half_round(float v) {
  ushort h[1];
  vstore_half_rte(v, 0, (__private half*)h);
  return vload_half(0, (__private const half*)h);
}
#endif
"""


def header(*types: CLType) -> str:
    """What a source needs before its kernels for ``types``: the fp64 pragma, the
    complex64 load and store."""
    out = ""
    if any(t.calc.startswith("double") for t in types):
        out += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    if any(t.storage == "float2" for t in types):
        out += _C64
    if any(t.is_complex for t in types):
        out += _PAIRS
    return out


def index_type(*sizes: int) -> str:
    """``int`` index arithmetic when every element offset fits, else ``long``."""
    return "int" if max(sizes, default=0) < 2**31 - 1 else "long"
