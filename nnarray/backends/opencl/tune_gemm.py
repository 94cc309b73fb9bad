"""Measure gemm kernel parameter sets on the first OpenCL device that builds programs.

``python -m nnarray.backends.opencl.tune_gemm [--dtype float|double] [--shape M,N,K ...]
[--rounds R] [--tiles MRxNV ...] [--cpu-time] [--transposed-b]`` prints GFLOP/s per
configuration (best over rounds; rounds interleave the configurations so that load from other
processes spreads evenly) and numpy's figures before and after the OpenCL runs. Each
configuration's result is checked first. ``--transposed-b`` tunes the CPU ``A @ B.T`` kernel
(B stored (n, k); ``--tiles`` then reads MRxNC).
"""

from __future__ import annotations

import argparse
import itertools
import os
import time
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from .gemm import GPU_PARAMS, NT_TILE, Gemm, cpu_params, device_vector_width, vector_registers


def first_working_device() -> cl.Device:
    """The first device whose platform compiles a trivial kernel."""
    for platform in cl.get_platforms():
        for dev in platform.get_devices():
            try:
                cl.Program(cl.Context([dev]), "__kernel void f(__global int* a) { a[0] = 1; }"
                           ).build()
                return dev
            except cl.Error:
                continue
    raise RuntimeError("no OpenCL device can build programs")


def candidates(dtype: str, cpu: bool, width: int = 0) -> list[dict[str, Any]]:
    """Parameter sets to try. CPU: the set ``cpu_params`` picks for vectors ``width`` wide
    (as the device reports it) first, then register tiles that fill most of the vector
    registers that width implies (accumulators + B vectors + one broadcast), in place and
    packed, and a few work-group shapes."""
    if not cpu:
        return [dict(GPU_PARAMS[dtype], tm=tm, tn=tn, tk=tk, wm=w, wn=w)
                for tm, tn, tk, w in [(64, 64, 16, 4), (128, 128, 16, 8), (32, 32, 16, 2),
                                      (64, 64, 8, 4)]]
    chosen = cpu_params(dtype, width or (16 if dtype == "float" else 8))
    vw, regs = chosen["vw"], vector_registers(dtype, chosen["vw"])
    out = [chosen]
    for mr, nv in itertools.product((3, 4, 5, 6, 7, 8, 10, 12, 14), (1, 2, 3, 4)):
        if regs * 5 // 8 <= mr * nv + nv + 1 <= regs:
            out.append({"kind": "reg", "mr": mr, "vw": vw, "nv": nv, "lx": 1, "ly": 1})
    out += [dict(p, rows_first=True) for p in out] + [dict(p, packed=True, rows_first=True)
                                                      for p in out]
    for ly in (1, 4, 16):
        out += [dict(chosen, ly=ly), dict(chosen, ly=ly, packed=True, rows_first=True)]
    seen, uniq = set(), []
    for p in out:
        key = tuple(sorted(p.items()))
        if key not in seen:
            seen.add(key)
            uniq.append(p)
    return uniq


def nt_candidates(dtype: str, width: int) -> list[dict[str, Any]]:
    """``A @ B.T`` tiles (CPU): the one ``Gemm.nt_params`` picks first, then mr x nc dot
    products filling about half to all of the vector registers."""
    vw = cpu_params(dtype, width or (16 if dtype == "float" else 8))["vw"]
    regs = vector_registers(dtype, vw)
    mr, nc = NT_TILE[regs]
    out = [{"kind": "nt", "mr": mr, "nc": nc, "vw": vw, "ly": 4}]
    out += [{"kind": "nt", "mr": mr, "nc": nc, "vw": vw, "ly": ly}
            for mr, nc in itertools.product((1, 2, 3, 4, 6), (2, 3, 4, 6, 8))
            if regs // 2 <= mr * nc + mr + 1 <= regs for ly in (1, 4)]
    return [p for i, p in enumerate(out) if p not in out[:i]]


def measure(gemm: Gemm, queue: cl.CommandQueue, params: dict[str, Any], dtype: str,
            shape: tuple[int, int, int], reps: int = 3, cpu_time: bool = False) -> float:
    """Best-of-``reps`` GFLOP/s of one product with ``params`` (queue.finish() timed).

    ``cpu_time``: flops per CPU-second of this process times the core count instead, for a
    CPU device on a busy machine (pocl's threads are ours; others' load then counts less).
    "nt" parameters run ``A @ B.T`` with B stored (n, k)."""
    m, n, k = shape
    tb = params["kind"] == "nt"
    dt = np.float32 if dtype == "float" else np.float64
    rng = np.random.default_rng(0)
    a = cla.to_device(queue, rng.standard_normal((m, k)).astype(dt))
    b = cla.to_device(queue, rng.standard_normal((n, k) if tb else (k, n)).astype(dt))
    c = cla.empty(queue, (m, n), dt)
    setattr(gemm, "nt_params" if tb else "params_for", lambda *_: params)
    gemm._plans.clear()
    gemm(queue, a, b, c, 1, m, n, k, 0, 0, b_transposed=tb)
    ref = a.get().astype(np.float64) @ (b.get().T if tb else b.get()).astype(np.float64)
    if not np.allclose(c.get(), ref, rtol=1e-4, atol=1e-4 * np.sqrt(k)):
        return float("nan")
    clock, scale = (time.process_time, os.cpu_count() or 1) if cpu_time else (time.perf_counter, 1)
    best = float("inf")
    for _ in range(reps):
        t = clock()
        gemm(queue, a, b, c, 1, m, n, k, 0, 0, b_transposed=tb)
        queue.finish()
        best = min(best, clock() - t)
    return scale * 2 * m * n * k / max(best, 1e-9) / 1e9


def numpy_gflops(dtype: str, shape: tuple[int, int, int], reps: int = 5) -> float:
    m, n, k = shape
    dt = np.float32 if dtype == "float" else np.float64
    a, b = np.ones((m, k), dt), np.ones((k, n), dt)
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * m * n * k / best / 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default="float", choices=["float", "double"])
    ap.add_argument("--shape", nargs="*", default=["1024,1024,1024", "64,100,1000"])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cpu-time", action="store_true",
                    help="rate per CPU-second x cores (steadier on a shared machine)")
    ap.add_argument("--tiles", nargs="*", help="only these register tiles, as MRxNV (CPU)")
    ap.add_argument("--transposed-b", action="store_true",
                    help="tune the A @ B.T kernel (CPU; B stored transposed)")
    args = ap.parse_args()
    shapes = [tuple(int(x) for x in s.split(",")) for s in args.shape]
    before = [numpy_gflops(args.dtype, s) for s in shapes]  # before pocl's threads exist
    dev = first_working_device()
    ctx = cl.Context([dev])
    queue = cl.CommandQueue(ctx)
    cpu = bool(dev.type & cl.device_type.CPU)
    gemm = Gemm(ctx, dev)
    width = device_vector_width(dev, args.dtype) if cpu else 0
    tb = args.transposed_b and cpu
    cands = nt_candidates(args.dtype, width) if tb else candidates(args.dtype, cpu, width)
    if args.tiles:
        tiles = {tuple(int(x) for x in t.split("x")) for t in args.tiles}
        cands = [p for p in cands if (p.get("mr"), p.get("nc" if tb else "nv")) in tiles]
    print(f"device: {dev.name} ({dev.platform.version}); {len(cands)} candidates, "
          f"first the one chosen for it: {cands[0]}")
    best: dict[int, list[float]] = {i: [0.0] * len(shapes) for i in range(len(cands))}
    for _ in range(args.rounds):
        for i, p in enumerate(cands):
            for s, shape in enumerate(shapes):
                best[i][s] = max(best[i][s], measure(gemm, queue, p, args.dtype, shape,
                                                    cpu_time=args.cpu_time))
    print("GFLOP/s for M,N,K = " + "  ".join(args.shape))
    for i in sorted(best, key=lambda i: -best[i][0]):
        p = {key: v for key, v in cands[i].items() if key != "kind"}
        p = dict(p, chosen=True) if i == 0 else p
        print("  ".join(f"{g:7.1f}" for g in best[i]), p)
    print("  ".join(f"{g:7.1f}" for g in before), "numpy, before the OpenCL runs")
    print("  ".join(f"{numpy_gflops(args.dtype, s):7.1f}" for s in shapes), "numpy, after")


if __name__ == "__main__":
    main()
