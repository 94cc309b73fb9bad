"""The CUDA backend's raw kernel sources, compiled for and run on the host (tests only).

g++ compiles a source after a shim that defines CUDA's qualifiers, a one-thread grid
(every kernel loops grid-stride, so one thread visits every index) and the math
functions NVRTC provides but C++ lacks (``cospi``; the ``__fmul_rn`` family, one rounding
each, through a ``volatile`` so no compiler fuses them). This tests a kernel's arithmetic,
not a device: no fake device stands in for CUDA. NVRTC (``cuda.bindings``, no GPU
needed) checks that the same source compiles for the GPU.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

SHIM = r"""
#include <math.h>
#define __global__
#define __device__
#define __forceinline__ inline
struct nna_dim3 { unsigned int x, y, z; };
static const nna_dim3 blockIdx = {0, 0, 0}, threadIdx = {0, 0, 0};
static const nna_dim3 blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
static inline float cospif(float x) { return cosf(3.14159265358979323846f * x); }
static inline double cospi(double x) { return cos(3.14159265358979323846 * x); }
static inline float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
static inline float __fadd_rn(float a, float b) { volatile float r = a + b; return r; }
static inline double __dmul_rn(double a, double b) { volatile double r = a * b; return r; }
static inline double __dadd_rn(double a, double b) { volatile double r = a + b; return r; }
"""

_DIR = Path(tempfile.gettempdir()) / "nnarray-cuda-host"


def load(code: str) -> ctypes.CDLL:
    """``code`` (a specialized kernel source) built as a host library (cached by hash);
    skips the test where g++ is missing."""
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ not found: the host run of CUDA kernel sources needs it")
    src = SHIM + code
    lib = _DIR / f"k{hashlib.sha1(src.encode()).hexdigest()[:16]}.so"
    if not lib.exists():
        _DIR.mkdir(exist_ok=True)
        tmp = lib.with_suffix(f".{os.getpid()}.so")  # processes may build it at once
        r = subprocess.run([gxx, "-O1", "-shared", "-fPIC", "-x", "c++", "-", "-o", str(tmp)],
                           input=src, text=True, capture_output=True)
        if r.returncode:
            pytest.fail(f"g++ failed on the kernel source:\n{r.stderr}")
        tmp.replace(lib)
    return ctypes.CDLL(str(lib))


def nvrtc_check(code: str) -> None:
    """Fail unless NVRTC compiles ``code`` for compute 7.5, 8.0 and 9.0 with empty logs
    (skips without NVRTC)."""
    try:
        from cuda.bindings import nvrtc
    except Exception as e:  # no cuda-bindings here
        pytest.skip(f"NVRTC unavailable: {type(e).__name__}: {e}")
    for arch in ("compute_75", "compute_80", "compute_90"):
        _nvrtc_one(nvrtc, code, arch)


def _nvrtc_one(nvrtc, code: str, arch: str) -> None:
    err, prog = nvrtc.nvrtcCreateProgram(code.encode(), b"k.cu", 0, [], [])
    err, = nvrtc.nvrtcCompileProgram(prog, 1, [f"--gpu-architecture={arch}".encode()])
    _, n = nvrtc.nvrtcGetProgramLogSize(prog)
    log = b" " * n
    nvrtc.nvrtcGetProgramLog(prog, log)
    text = log.rstrip(b"\0 ").decode(errors="replace")
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS and not text, f"{arch}: {text}"


def ptr(a: np.ndarray) -> ctypes.c_void_p:
    assert a.flags.c_contiguous
    return a.ctypes.data_as(ctypes.c_void_p)


def scalar(dtype: np.dtype) -> type:
    """The ctypes type of a kernel's ``T`` argument for ``dtype``."""
    return ctypes.c_float if np.dtype(dtype) == np.float32 else ctypes.c_double
