"""What a new user sees on a first OpenCL run: one progress line per device while kernels
compile, no compiler chatter (unless NNARRAY_DEBUG), and silence once they are cached."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs

ROOT = Path(__file__).resolve().parent.parent
CODE = ("import numpy as np, nnarray as nna, nnarray.functions as F\n"
        "with nna.context_scope('opencl'):\n"
        "    x = nna.array(np.ones((64, 64), np.float32))\n"
        "    print(float(F.sum(F.softmax(F.relu(x @ x))).numpy()))\n")


def _run(cache: Path, **env: str) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k not in ("NNARRAY_DEBUG",
                                                            "PYOPENCL_COMPILER_OUTPUT")}
    e.update(PYTHONPATH=str(ROOT), NNARRAY_OPENCL_CACHE_DIR=str(cache),
             NNARRAY_OPENCL_DEVICES="0", **env)
    return subprocess.run([sys.executable, "-c", CODE], cwd=ROOT, env=e, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(autouse=True)
def _opencl():
    needs("opencl")


def test_first_compile_says_so_once_and_nothing_else(tmp_path):
    first = _run(tmp_path)
    assert first.returncode == 0, first.stderr
    lines = first.stderr.splitlines()
    notes = [ln for ln in lines if ln.startswith("nnarray: compiling OpenCL kernels for ")]
    assert len(notes) == 1 and str(tmp_path) in notes[0], first.stderr
    assert lines == notes, f"unexpected stderr on a first run:\n{first.stderr}"
    again = _run(tmp_path)  # binaries cached: nothing to announce
    assert again.returncode == 0 and again.stderr == "", again.stderr
    assert again.stdout == first.stdout


def test_debug_shows_build_logs(tmp_path):
    """NNARRAY_DEBUG keeps pyopencl's compiler warnings (here pocl's float16 ABI notes on
    x86 CPUs; other drivers may have nothing to say)."""
    r = _run(tmp_path, NNARRAY_DEBUG="1")
    assert r.returncode == 0, r.stderr
    assert "nnarray: compiling OpenCL kernels" in r.stderr
    if _pocl_without_avx512():
        assert "CompilerWarning" in r.stderr, r.stderr
    quiet = _run(tmp_path / "quiet")
    assert "CompilerWarning" not in quiet.stderr and "warnings generated" not in quiet.stderr


def _pocl_without_avx512() -> bool:
    import nnarray as nna
    desc = nna.backends.module("opencl").describe_devices()[0]
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "Portable Computing Language" in desc and " avx2" in flags and "avx512f" not in flags
