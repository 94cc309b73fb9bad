"""Batched GEMM for OpenCL: ``out[i] = a[i] @ b[i]`` on row-major matrices.

Why a kernel of our own: numpy's BLAS cannot run on an OpenCL device (it works on host
pointers; a device's buffers are only reachable through the OpenCL queue, and on a GPU they are
not host memory at all), pyopencl ships no GEMM, and the OpenCL BLAS libraries (clBLAS,
CLBlast) have no wheels on PyPI, so an install from pip could not depend on them; CLBlast also
runs at a few GFLOP/s on pocl, the CPU driver this project tests on, where a naive
one-work-item-per-output kernel reaches ~2 GFLOP/s. The register kernel below runs 1024^3
float32 at about numpy's rate on one BLAS thread (2026-11-26, 2-core Zen 3 with AVX2, pocl
``basic``, one core: ~100 GFLOP/s, 1.0-1.15x numpy in the same benchmark run) and the MLP's
64x1000x100 products at 1.05-1.1x numpy's time. The kernels here are generated from a few
parameters:

* ``"reg"``, for CPUs: no local memory (pocl emulates it, with barriers, at a cost). Each
  work-item computes an ``mr x (vw*nv)`` block of C in registers from explicit ``T<vw>`` vectors:
  per step of k it loads ``nv`` vectors of a row of B, broadcasts ``mr`` scalars of A and issues
  ``mr*nv`` vector FMAs. LLVM maps these straight to AVX/AVX-512 registers. Edge blocks clamp
  rows of A to ``m-1``, shift the last column vector left to end at ``n-1`` and store only
  their own columns, so any m, n, k (k = 0 included) works without padding copies; the tile
  shrinks to small matrices (``mr <= m``, ``vw <= n``). For very large products B is first
  packed into k-contiguous panels.
* ``"tiled"``, for GPUs: the classic local-memory tiling (``tm x tn`` tile of C per work-group,
  k in steps of ``tk``, each work-item ``wm x wn`` outputs strided by the work-group size so
  loads, local reads and stores stay coalesced/conflict-free), with zero-filled edge tiles.
* ``"naive"``: one work-item per output, for tiny products where launch cost dominates.

Parameters are chosen by device type (``device.type & CPU``) and, on CPUs, by the vector width
the device reports (``cpu_params``); they were tuned on pocl with
``python -m nnarray.backends.opencl.tune_gemm``. Nothing touches a device at import time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

try:  # importable without pyopencl (the backend reports it unavailable)
    import pyopencl as cl
except ImportError:  # pragma: no cover - exercised only where pyopencl is missing
    cl = None  # type: ignore[assignment]

__all__ = ["Gemm", "CPU_PARAMS", "GPU_PARAMS", "NT_TILE", "compiled_vector_bits", "cpu_params",
           "gemm_source"]

#: For CPUs with 512-bit vectors (AVX-512: 32 vector registers), tuned on pocl 3.1 (LLVM 15,
#: AVX-512 host, 2 cores) with ``tune_gemm``: float32 takes 7 rows x 64 columns per work-item
#: (28 zmm accumulators + 4 B vectors), float64 8 x 24. Tiles from 5x64 to 14x32 all measured
#: within ~10% of each other there; smaller ones lose. ``cpu_params`` picks these by the
#: vector width the device reports.
CPU_PARAMS: dict[str, dict[str, Any]] = {
    "float": {"kind": "reg", "mr": 7, "vw": 16, "nv": 4, "lx": 1, "ly": 1},
    "double": {"kind": "reg", "mr": 8, "vw": 8, "nv": 3, "lx": 1, "ly": 1},
}
#: For narrower vectors (AVX/AVX2, SSE: 16 vector registers): 6 rows x 2 vectors, i.e. 12
#: accumulators + 2 B vectors + 1 broadcast of A = 15 registers; the AVX-512 tile needs 56
#: ymm accumulators there and spills. Measured on pocl 3.0 (Zen, AVX2, 2 cores), per CPU-second
#: at 1024^3 float32: 6x2 packed 32 GFLOP/s, 4x3 packed 31, 6x2 unpacked 26, 4x3 24,
#: 8x1 19, the AVX-512 tile 16; float64 512^3: 6x2 and 4x3 packed 16, AVX-512 tile 9.
#: Work-groups of 4 along y (rows in place, column panels packed): 1024^3 unpacked 25 vs 18
#: (pocl's pthread driver pays per work-group), packed and 64x1000x100 the same.
NARROW_TILE = {"mr": 6, "nv": 2, "lx": 1, "ly": 4}
#: For GPUs (not tuned here: no GPU on the tuning machine): 64x64 tiles, 16x16 work-groups,
#: 4x4 outputs per work-item, k steps of 16.
GPU_PARAMS: dict[str, dict[str, Any]] = {
    "float": {"kind": "tiled", "tm": 64, "tn": 64, "tk": 16, "wm": 4, "wn": 4},
    "double": {"kind": "tiled", "tm": 64, "tn": 64, "tk": 16, "wm": 4, "wn": 4},
}
NAIVE: dict[str, Any] = {"kind": "naive"}

#: On GPUs, below this many multiply-adds (m*n*k) the naive kernel is used. (On pocl the
#: register kernel, shrunk to the matrix, measured as fast as the naive one even for 2x4x3.)
SMALL_WORK = 4096
#: On CPUs, products of at least ``work`` multiply-adds (m*n*k), with m >= ``min_m``, first
#: copy B into k-contiguous panels: one extra pass over B, then streaming loads instead of one
#: row of B per step of k (with a power-of-two n those rows all hit one cache set). By vector
#: register count: below these sizes the extra pass costs more than it saves (measured per
#: vector width, benchmarks/README.md).
PACK_AT: dict[int, tuple[int, int]] = {32: (1 << 32, 512), 16: (1 << 27, 256)}
#: The ``A @ B.T`` kernel's rows x columns of dot products per work-item, by vector register
#: count: 12 accumulators + 3 + 1 loads in 16 registers, 24 + 4 + 1 in 32 (the fastest
#: tile of those tried; benchmarks/README.md).
NT_TILE: dict[int, tuple[int, int]] = {16: (3, 4), 32: (4, 6)}
#: Packed B of a batch is made (and used) in chunks of at most this many bytes.
SCRATCH_BYTES = 256 << 20

_ARGS = ("__global const T* restrict A, const long a_off, __global const T* restrict B, "
         "const long b_off, __global T* restrict C, const long c_off, const int m, const int n, "
         "const int k, const long sa, const long sb")
_SCALARS = [None, np.int64, None, np.int64, None, np.int64, np.int32, np.int32, np.int32,
            np.int64, np.int64]
_PACK_SCALARS = [None, np.int64, None, np.int32, np.int32, np.int64]
_PROLOGUE = """
  const long bt = get_global_id(2);
  A += a_off + bt * sa; B += b_off + bt * sb; C += c_off + bt * (long)m * n;
"""


_SIZE = {"float": 4, "double": 8}


def vector_registers(dtype: str, width: int) -> int:
    """Vector registers for ``width``-wide vectors of ``dtype`` on x86-64: 32 with 512-bit
    vectors (AVX-512), 16 below (AVX/AVX2, SSE)."""
    return 32 if width * _SIZE[dtype] >= 64 else 16


def cpu_params(dtype: str, width: int) -> dict[str, Any]:
    """Register-kernel parameters for a CPU whose vectors of ``dtype`` are ``width`` wide (as
    the device reports it; rounded down to a power of two, at most 512 bits): the tuned
    AVX-512 tile for 512-bit vectors, else ``NARROW_TILE``, which fits 16 registers."""
    w = min(1 << (max(int(width), 1).bit_length() - 1), 64 // _SIZE[dtype])
    if vector_registers(dtype, w) >= 32:
        return CPU_PARAMS[dtype]
    return dict(NARROW_TILE, kind="reg", vw=w)


def device_vector_width(device: Any, dtype: str) -> int:
    """The widest of the device's native and preferred vector widths for ``dtype`` (some
    CPU drivers report a preferred width of 1 and leave vectorizing to their compiler),
    capped at what its compiler targets (``compiled_vector_bits``)."""
    width = max(getattr(device, f"{kind}_vector_width_{dtype}", 0) or 0
                for kind in ("native", "preferred"))
    bits = compiled_vector_bits(getattr(device, "version", "") or "")
    return width if bits is None else min(width, bits // (8 * _SIZE[dtype]))


#: LLVM CPU names whose code uses 512-bit vectors (AVX-512), and generic x86-64 targets
#: without AVX; every other x86 CPU name counts as 256 bits (AVX/AVX2).
AVX512_CPUS = frozenset({
    "skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake-client",
    "icelake-server", "tigerlake", "rocketlake", "sapphirerapids", "emeraldrapids",
    "graniterapids", "graniterapids-d", "diamondrapids", "knl", "knm", "znver4", "znver5",
    "x86-64-v4"})
SSE_CPUS = frozenset({"x86-64", "x86-64-v2", "generic", "core2", "nehalem", "westmere"})


def compiled_vector_bits(version: str) -> int | None:
    """Vector bits of the x86 CPU that pocl compiles kernels for, from its device version
    (``"OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-znver3"``); None where the
    version names none. pocl reports vector widths from CPUID but compiles for the CPU that
    its LLVM recognizes: LLVM 14 takes a Zen 4 (AVX-512) for ``znver3`` (AVX2), and the
    AVX-512 tile's 28 accumulators then spill out of 16 ymm registers (3x slower)."""
    hstr = version.partition("HSTR: ")[2].split(" ")[0]
    if not any(f"-{arch}-" in hstr for arch in ("x86_64", "i386", "i486", "i586", "i686")):
        return None
    cpus = [c for c in AVX512_CPUS | SSE_CPUS if hstr.endswith("-" + c)]
    if not cpus:
        return 256
    return 512 if max(cpus, key=len) in AVX512_CPUS else 128


def _header(t: str) -> str:
    pragma = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if t == "double" else ""
    return f"{pragma}#define T {t}\n"


def _naive_source(t: str, ta: bool = False, **_: Any) -> str:
    a, step = ("A + i", "(long)p * m") if ta else ("A + (long)i * k", "p")
    return _header(t) + f"""
__kernel void gemm({_ARGS})
{{
  const int j = get_global_id(0), i = get_global_id(1);
  {_PROLOGUE}
  if (i >= m || j >= n) return;
  const __global T* a = {a};
  const __global T* b = B + j;
  T acc = 0;
  for (int p = 0; p < k; ++p) acc = fma(a[{step}], b[(long)p * n], acc);
  C[(long)i * n + j] = acc;
}}
"""


def _clamped(first: str, count: int, limit: str) -> list[str]:
    """Indices ``first + r`` for r < count, clamped to ``limit - 1`` (edge tiles re-read the
    last row; their results are dropped)."""
    return [f"({first} + {r} < {limit} ? {first} + {r} : {limit} - 1)" for r in range(count)]


def _row_pointers(name: str, base: str, rows: list[str]) -> list[str]:
    """``const __global T* <name><r> = <base> + row * k;`` for each of ``rows``."""
    return [f"  const __global T* {name}{r} = {base} + (long){row} * k;"
            for r, row in enumerate(rows)]


def _reg_source(t: str, mr: int, vw: int, nv: int, rows_first: bool = False,
                packed: bool = False, ta: bool = False, **_: Any) -> str:
    """Register-blocked kernel: work-item (x, y) owns rows y*mr.. and columns x*vw*nv.. of C
    (x and y swapped with ``rows_first``, so that consecutive work-groups share B's columns).

    Rows past m read row m-1 (results dropped). Unpacked, B is read in place and needs n >= vw:
    a column vector that would run past n is shifted left to end at column n-1, so every load
    is a plain vector load. ``packed``: B was rearranged by the ``pack`` kernel (also in this
    source) into zero-padded panels of vw*nv columns, contiguous along k, so the loop streams
    through memory. Either way the stores write only the columns this work-item owns.
    ``ta``: A is stored transposed, (k, m): the ``mr`` scalars of a step of k are adjacent.
    """
    nr = vw * nv
    v = t if vw == 1 else f"{t}{vw}"
    comp = [""] if vw == 1 else [f".s{e:x}" for e in range(vw)]

    def vload(off: str) -> str:  # a vector from consecutive scalars: one unaligned load
        return f"bp[{off}]" if vw == 1 else f"({v})(" + ", ".join(
            f"bp[{off} + {e}]" for e in range(vw)) + ")"

    # full vectors are stored through a vector type of the scalar's alignment (one unaligned
    # store; component by component, LLVM emits one extract and store per element)
    vstore = f"typedef {v} __attribute__((aligned({_SIZE[t]}))) {v}_u;\n" if vw > 1 else ""
    # min_vector_width: without it LLVM may split the vectors into halves for CPUs that it
    # prefers to run at 256 bits (skylake-avx512: 56 ymm accumulators instead of 28 zmm).
    # The builtins this kernel no longer calls used to carry the attribute into it.
    width = f" __attribute__((min_vector_width({vw * _SIZE[t] * 8})))" if vw > 1 else ""
    lines = [_header(t) + vstore, f"__kernel{width} void gemm({_ARGS})", "{",
             f"  const int j0 = get_global_id({int(rows_first)}) * {nr};",
             f"  const int i0 = get_global_id({int(not rows_first)}) * {mr};",
             _PROLOGUE, "  if (i0 >= m || j0 >= n) return;"]
    rows = _clamped("i0", mr, "m")
    if ta:  # a{r}[0] is row r's element at step p; ap moves by m per step
        lines += [f"  const int a{r} = {row};" for r, row in enumerate(rows)]
        lines.append("  const __global T* ap = A;")
        step, a_of = ", ap += m", "ap[a{}]"
    else:
        lines += _row_pointers("a", "A", rows)
        step, a_of = "", "a{}[p]"
    if packed:
        lines += [f"  const int s{q} = {q * vw};" for q in range(nv)]
        lines += ["  const __global T* bp = B + (long)j0 * k;",
                  f"  for (int p = 0; p < k; ++p, bp += {nr}{step}) {{"]
    else:
        lines += [f"  const int s{q} = j0 + {q * vw} < n - {vw} ? j0 + {q * vw} : n - {vw};"
                  for q in range(nv)]
        lines += ["  const __global T* bp = B;",
                  f"  for (int p = 0; p < k; ++p, bp += n{step}) {{"]
    lines[-1:-1] = [f"  {v} c{r}_{q} = 0;" for r in range(mr) for q in range(nv)]
    lines += [f"    const {v} b{q} = {vload(f's{q}')};" for q in range(nv)]
    for r in range(mr):
        lines.append(f"    const {v} x{r} = ({v})({a_of.format(r)});")
        # a * b + c, not fma(): LLVM contracts it to an FMA instruction all the same, while
        # fma() is a call into pocl's builtin library, which is not inlined where that
        # library was built for another CPU than the kernel (Zen with pocl's AVX2 library)
        lines += [f"    c{r}_{q} = x{r} * b{q} + c{r}_{q};" for q in range(nv)]
    lines.append("  }")
    for r in range(mr):
        lines.append(f"  if (i0 + {r} < m) {{")
        lines.append(f"    __global T* cr = C + (long)(i0 + {r}) * n + j0;")
        lines.append("    const int nc = n - j0;")
        for q in range(nv):
            # c{r}_{q} holds columns (packed ? j0 : 0) + s{q} + [0, vw) of the row; a
            # shifted edge vector stores only its columns not stored by vector q-1
            first = f"s{q} - j0" if not packed else f"s{q}"
            full = (f"*(__global {v}_u*)(cr + {q * vw}) = c{r}_{q};" if vw > 1
                    else f"cr[{q}] = c{r}_{q};")
            lines.append(f"    if ({(q + 1) * vw} <= nc) {full}")
            lines.append(f"    else if ({q * vw} < nc) {{ const int f = {first}; "
                         + " ".join(f"if (f + {e} >= {q * vw} && f + {e} < nc) "
                                    f"cr[f + {e}] = c{r}_{q}{comp[e]};" for e in range(vw))
                         + " }")
        lines.append("  }")
    lines.append("}")
    if packed:
        lines.append(f"""
__kernel void pack(__global const T* restrict B, const long b_off, __global T* restrict P,
                   const int n, const int k, const long sb)
{{
  const int j = get_global_id(0), p = get_global_id(1);
  const long bt = get_global_id(2);
  P += bt * (long)get_global_size(0) * k;
  P[((long)(j / {nr}) * k + p) * {nr} + j % {nr}] =
      j < n ? B[b_off + bt * sb + (long)p * n + j] : (T)0;
}}""")
    return "\n".join(lines)


def _nt_source(t: str, mr: int, nc: int, vw: int, **_: Any) -> str:
    """``C = A @ B.T`` with B stored (n, k), for CPUs: work-item (x, y) owns rows y*mr.. and
    columns x*nc.. of C and keeps ``mr*nc`` dot products as ``vw``-wide partial sums along k
    (A's and B's rows both contiguous), summed across the vector at the end; the k % vw tail
    runs in scalars. Rows and columns past the edge re-read the last one (results dropped)."""
    v = f"{t}{vw}"

    def step(at: str, masked: bool = False) -> list[str]:  # a vector of k from ``at``
        load = [f"*(const __global {v}_u*)(a{r} + {at})" for r in range(mr)]
        out = [f"    const {v} x{r} = " + (f"keep ? {x} : zero;" if masked else f"{x};")
               for r, x in enumerate(load)]
        for c in range(nc):  # both masked: 0 * inf would be NaN
            y = f"*(const __global {v}_u*)(b{c} + {at})"
            out.append(f"    const {v} y{c} = " + (f"keep ? {y} : zero;" if masked else f"{y};"))
            out += [f"    c{r}_{c} = x{r} * y{c} + c{r}_{c};" for r in range(mr)]
        return out
    width = f" __attribute__((min_vector_width({vw * _SIZE[t] * 8})))"
    # one unaligned vector load (LLVM left (v)(a[p], a[p+1], ...) as vw inserts here)
    vtype = f"typedef {v} __attribute__((aligned({_SIZE[t]}))) {v}_u;"
    lines = [_header(t) + vtype, f"__kernel{width} void gemm({_ARGS})", "{",
             f"  const int j0 = get_global_id(0) * {nc}, i0 = get_global_id(1) * {mr};",
             _PROLOGUE, "  if (i0 >= m || j0 >= n) return;"]
    lines += _row_pointers("a", "A", _clamped("i0", mr, "m"))
    lines += _row_pointers("b", "B", _clamped("j0", nc, "n"))
    lines += [f"  {v} c{r}_{c} = 0;" for r in range(mr) for c in range(nc)]
    lines.append(f"  int p = 0;\n  for (; p + {vw} <= k; p += {vw}) {{")
    lines += step("p") + ["  }"]
    # the k % vw tail as one vector ending at k, its lanes before p zeroed
    lane = ("int" if t == "float" else "long") + str(vw)
    lines += [f"  if (p < k && k >= {vw}) {{",
              f"    const {lane} keep = ({lane})("
              + ", ".join(str(e) for e in range(vw)) + f") >= ({lane})({vw} - (k - p));",
              f"    const {v} zero = 0;"]
    lines += step(f"k - {vw}", masked=True) + ["    p = k;", "  }"]
    for r in range(mr):
        for c in range(nc):  # halve the vector until one scalar is left
            w, prev = vw, f"c{r}_{c}"
            while w > 1:
                w //= 2
                cur = f"h{w}_{r}_{c}"
                lines.append(f"  {t}{w if w > 1 else ''} {cur} = {prev}.lo + {prev}.hi;")
                prev = cur
            lines.append(f"  T s{r}_{c} = {prev};")
    lines.append("  for (; p < k; ++p) {")
    lines += [f"    s{r}_{c} = a{r}[p] * b{c}[p] + s{r}_{c};"
              for r in range(mr) for c in range(nc)]
    lines.append("  }")
    for r in range(mr):
        lines.append(f"  if (i0 + {r} < m) {{")
        lines.append(f"    __global T* cr = C + (long)(i0 + {r}) * n + j0;")
        lines += [f"    if (j0 + {c} < n) cr[{c}] = s{r}_{c};" for c in range(nc)]
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines)


def _tiled_source(t: str, tm: int, tn: int, tk: int, wm: int, wn: int, ta: bool = False,
                  **_: Any) -> str:
    """Local-memory tiled kernel for GPUs; work-group (tn/wn, tm/wm); ``ta``: A is (k, m)."""
    a_at = "(long)gc * m + gr" if ta else "(long)gr * k + gc"
    rx, ry = tn // wn, tm // wm
    nth = rx * ry
    return _header(t) + f"""
#define TM {tm}
#define TN {tn}
#define TK {tk}
#define WM {wm}
#define WN {wn}
#define RX {rx}
#define RY {ry}
__kernel __attribute__((reqd_work_group_size(RX, RY, 1)))
void gemm({_ARGS})
{{
  {_PROLOGUE}
  const int tx = get_local_id(0), ty = get_local_id(1), tid = ty * RX + tx;
  const int gm0 = get_group_id(1) * TM, gn0 = get_group_id(0) * TN;
  __local T As[TK][TM + 1];
  __local T Bs[TK][TN + 1];
  T acc[WM][WN];
  for (int r = 0; r < WM; ++r) for (int c = 0; c < WN; ++c) acc[r][c] = 0;
  for (int t0 = 0; t0 < k; t0 += TK) {{
    for (int l = tid; l < TM * TK; l += {nth}) {{
      const int row = l / TK, col = l % TK, gr = gm0 + row, gc = t0 + col;
      As[col][row] = (gr < m && gc < k) ? A[{a_at}] : (T)0;
    }}
    for (int l = tid; l < TK * TN; l += {nth}) {{
      const int row = l / TN, col = l % TN, gr = t0 + row, gc = gn0 + col;
      Bs[row][col] = (gr < k && gc < n) ? B[(long)gr * n + gc] : (T)0;
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
    #pragma unroll
    for (int kk = 0; kk < TK; ++kk) {{
      T av[WM], bv[WN];
      for (int r = 0; r < WM; ++r) av[r] = As[kk][ty + r * RY];
      for (int c = 0; c < WN; ++c) bv[c] = Bs[kk][tx + c * RX];
      for (int r = 0; r < WM; ++r)
        for (int c = 0; c < WN; ++c) acc[r][c] = fma(av[r], bv[c], acc[r][c]);
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  for (int r = 0; r < WM; ++r) {{
    const int i = gm0 + ty + r * RY;
    if (i < m) for (int c = 0; c < WN; ++c) {{
      const int j = gn0 + tx + c * RX;
      if (j < n) C[(long)i * n + j] = acc[r][c];
    }}
  }}
}}
"""


def gemm_source(dtype: str, params: dict[str, Any]) -> str:
    """OpenCL C source of the ``gemm`` kernel for ``dtype`` ("float"/"double") and ``params``."""
    kind = params["kind"]
    if kind == "reg":
        return _reg_source(dtype, **params)
    if kind == "tiled":
        return _tiled_source(dtype, **params)
    if kind == "naive":
        return _naive_source(dtype, **params)
    if kind == "nt":
        return _nt_source(dtype, **params)
    raise ValueError(f"unknown gemm kernel kind {kind!r}")


def _geometry(params: dict[str, Any], m: int, n: int, batch: int
              ) -> tuple[tuple[int, int, int], tuple[int, int, int] | None]:
    """Global and local sizes covering an m x n output per batch entry."""
    kind = params["kind"]
    if kind == "reg":
        lx, ly = params["lx"], params["ly"]
        gx = -(-n // (params["vw"] * params["nv"]))
        gy = -(-m // params["mr"])
        if params.get("rows_first"):
            gx, gy = gy, gx
        return (-(-gx // lx) * lx, -(-gy // ly) * ly, batch), (lx, ly, 1)
    if kind == "nt":
        gx, gy, ly = -(-n // params["nc"]), -(-m // params["mr"]), params["ly"]
        return (gx, -(-gy // ly) * ly, batch), (1, ly, 1)
    if kind == "tiled":
        rx, ry = params["tn"] // params["wn"], params["tm"] // params["wm"]
        return (-(-n // params["tn"]) * rx, -(-m // params["tm"]) * ry, batch), (rx, ry, 1)
    return (n, m, batch), None


class Gemm:
    """Batched matrix product on one OpenCL device; kernels are built lazily and cached.

    Packing B (CPU kernel, large products) uses a scratch buffer per queue, reused by later
    calls: the queue must be in-order (the default) for that reuse to be safe.
    """

    def __init__(self, context: cl.Context, device: cl.Device,
                 build: Callable[[str, str], cl.Program] | None = None) -> None:
        self.context = context
        self.device = device
        self._build = build or (lambda src, opts: cl.Program(context, src).build(opts))
        self.is_cpu = bool(device.type & cl.device_type.CPU)
        self.fp64 = "cl_khr_fp64" in device.extensions
        if self.is_cpu:
            self.params = {t: cpu_params(t, device_vector_width(device, t)) for t in _SIZE}
        else:  # shrink the work-group where the device cannot take 16x16
            self.params = {t: _fit_tiled(p, device.max_work_group_size)
                           for t, p in GPU_PARAMS.items()}
        self._programs: dict[tuple[str, tuple], Any] = {}
        self._plans: dict[tuple[str, int, int, int, bool, bool], _Plan] = {}
        self._scratch: dict[Any, Any] = {}  # queue -> cl.Buffer

    def kernel(self, dtype: str, params: dict[str, Any], name: str = "gemm") -> Any:
        """The built kernel ``name`` ("gemm", or "pack" for packed params) (cached)."""
        key = (dtype, tuple(sorted(params.items())))
        kernels = self._programs.get(key)
        if kernels is None:
            if dtype == "double" and not self.fp64:
                raise TypeError(f"{self.device.name} has no cl_khr_fp64: float64 matmul "
                                "is not available on it")
            prg = self._build(gemm_source(dtype, params), "")
            kernels = {"gemm": prg.gemm}
            kernels["gemm"].set_scalar_arg_dtypes(_SCALARS)
            if params.get("packed"):
                kernels["pack"] = prg.pack
                kernels["pack"].set_scalar_arg_dtypes(_PACK_SCALARS)
            self._programs[key] = kernels
        return kernels[name]

    def reads_transposed_b(self, dtype: str, m: int, n: int, k: int) -> bool:
        """Whether a B stored transposed, (n, k), is read in place (``nt_params``) for this
        product: on CPUs, where B would not be packed anyway (there the copy is amortized)."""
        return self.is_cpu and not self.params_for(dtype, m, n, k).get("packed", False)

    def nt_params(self, dtype: str, m: int, n: int, k: int) -> dict[str, Any]:
        """Parameters of the ``A @ B.T`` kernel: ``mr x nc`` dot products in vectors of the
        tuned width (shrunk to k), 12 accumulators where the width implies 16 registers
        (3 x 4), 24 where 32 (4 x 6)."""
        vw = max(1, min(self.params[dtype]["vw"], 1 << (max(k, 1).bit_length() - 1)))
        mr, nc = NT_TILE[vector_registers(dtype, self.params[dtype]["vw"])]
        return {"kind": "nt", "mr": min(mr, m), "nc": min(nc, n), "vw": max(vw, 2), "ly": 4}

    def params_for(self, dtype: str, m: int, n: int, k: int) -> dict[str, Any]:
        """Kernel parameters for an m x n x k product: the tuned set, with the register tile
        shrunk to the matrix where it is smaller (fewer wasted rows and vectors), B packed
        for large products."""
        p = self.params[dtype]
        if p["kind"] != "reg":
            return NAIVE if m * n * k <= SMALL_WORK else p
        work, min_m = PACK_AT[vector_registers(dtype, p["vw"])]
        if m * n * k >= work and m >= min_m and n >= p["vw"] * p["nv"]:
            return dict(p, packed=True, rows_first=True)
        vw = min(p["vw"], 1 << (n.bit_length() - 1))
        return dict(p, mr=min(p["mr"], m), vw=vw, nv=min(p["nv"], -(-n // vw)))

    def _plan(self, dtype: str, m: int, n: int, k: int, ta: bool, tb: bool) -> _Plan:
        if tb:
            params = self.nt_params(dtype, m, n, k)
        else:
            params = self.params_for(dtype, m, n, k)
        if ta:
            params = dict(params, ta=True)
        (gx, gy, _), local = _geometry(params, m, n, 1)
        pack = None
        if params.get("packed") and k > 0:
            nr = params["vw"] * params["nv"]
            pack = (self.kernel(dtype, params, "pack"), -(-n // nr) * nr, nr)
        plan = (self.kernel(dtype, params), gx, gy, local, pack)
        if len(self._plans) > 4096:
            self._plans.clear()
        self._plans[dtype, m, n, k, ta, tb] = plan
        return plan

    def _scratch_for(self, queue: cl.CommandQueue, nbytes: int) -> Any:
        buf = self._scratch.get(queue)
        if buf is None or buf.size < nbytes:
            buf = self._scratch[queue] = cl.Buffer(self.context, cl.mem_flags.READ_WRITE,
                                                   max(nbytes, 1 << 20))
        return buf

    def __call__(self, queue: cl.CommandQueue, a: Any, b: Any, out: Any, batch: int, m: int,
                 n: int, k: int, a_batch_stride: int, b_batch_stride: int,
                 a_transposed: bool = False, b_transposed: bool = False) -> None:
        """out[i] = a[i] @ b[i] for i < batch; a (batch, m, k), b (batch, k, n) row-major with
        batch strides in elements (0 broadcasts), out (batch, m, n) contiguous. Enqueues only.
        ``a_transposed``: a holds each a[i] transposed, (batch, k, m), read in place;
        ``b_transposed``: b holds each b[i] transposed, (batch, n, k) (CPUs; not with
        ``a_transposed``; see ``reads_transposed_b``)."""
        if batch <= 0 or m <= 0 or n <= 0:
            return
        dt = out.dtype
        name = _NAMES.get(dt)
        if name is None:
            raise TypeError(f"gemm supports float32 and float64, not {dt}")
        key = (name, m, n, k, bool(a_transposed), bool(b_transposed))
        knl, gx, gy, local, pack = self._plans.get(key) or self._plan(*key)
        isz = dt.itemsize
        a_buf, a_off, c_buf, c_off = a.base_data, a.offset // isz, out.base_data, out.offset // isz
        if pack is None:
            knl(queue, (gx, gy, batch), local, a_buf, a_off, b.base_data, b.offset // isz,
                c_buf, c_off, m, n, k, a_batch_stride, b_batch_stride)
            return
        pack_knl, width, nr = pack
        panel = width * k  # elements of one packed B
        step = max(1, SCRATCH_BYTES // (panel * isz)) if b_batch_stride else batch
        scratch = self._scratch_for(queue, min(step, batch) * panel * isz if b_batch_stride
                                    else panel * isz)
        b_off = b.offset // isz
        for start in range(0, batch, step):  # batch chunks that fit the scratch buffer
            nb = min(step, batch - start)
            if b_batch_stride or start == 0:
                pack_knl(queue, (width, k, nb if b_batch_stride else 1), (nr, 1, 1),
                         b.base_data, b_off + start * b_batch_stride, scratch, n, k,
                         b_batch_stride)
            knl(queue, (gx, gy, nb), local, a_buf, a_off + start * a_batch_stride, scratch, 0,
                c_buf, c_off + start * m * n, m, n, k, a_batch_stride,
                panel if b_batch_stride else 0)


_Plan = tuple  # (gemm kernel, global x, global y, local size, (pack kernel, width, nr) | None)
_NAMES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}


def _fit_tiled(params: dict[str, Any], max_wg: int) -> dict[str, Any]:
    p = dict(params)
    while (p["tn"] // p["wn"]) * (p["tm"] // p["wm"]) > max_wg and p["tm"] > p["wm"]:
        p["tm"] //= 2
        p["tn"] //= 2
    return p
