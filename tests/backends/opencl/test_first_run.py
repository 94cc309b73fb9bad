"""What a new user sees on a first OpenCL run: one progress line per device while kernels
compile, no compiler chatter (unless NNARRAY_DEBUG), and silence once they are cached."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs
from helpers import CHILD_LIMIT, child_env

ROOT = Path(__file__).resolve().parents[3]
CODE = ("import numpy as np, nnarray as nna, nnarray.functions as F\n"
        "with nna.context_scope('opencl'):\n"
        "    x = nna.array(np.ones((64, 64), np.float32))\n"
        "    print(float(F.sum(F.softmax(F.relu(x @ x))).numpy()))\n")


def _run(cache: Path, **env: str) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k not in ("NNARRAY_DEBUG",
                                                            "PYOPENCL_COMPILER_OUTPUT")}
    e = child_env(base=e, NNARRAY_OPENCL_CACHE_DIR=str(cache), NNARRAY_OPENCL_DEVICES="0",
                  **env)
    return subprocess.run([sys.executable, "-c", CODE], cwd=ROOT, env=e, capture_output=True,
                          text=True, timeout=CHILD_LIMIT)


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


WARN = ("import nnarray as nna\n"
        "dev = nna.backends.get_device('opencl', 0)\n"
        "dev.programs.kernel('#warning nnarray_build_log\\n'\n"
        "                    '__kernel void f(__global float* a) { a[0] = 1; }', 'f')\n")


def test_debug_shows_build_logs(tmp_path):
    """NNARRAY_DEBUG keeps the compiler's build log (here: a #warning); without
    it the same build is quiet."""
    def run(cache, **env):
        e = {k: v for k, v in os.environ.items() if k not in ("NNARRAY_DEBUG",
                                                                "PYOPENCL_COMPILER_OUTPUT")}
        e = child_env(base=e, NNARRAY_OPENCL_CACHE_DIR=str(cache), NNARRAY_OPENCL_DEVICES="0",
                      **env)
        return subprocess.run([sys.executable, "-c", WARN], cwd=ROOT, env=e,
                              capture_output=True, text=True, timeout=CHILD_LIMIT)
    r = run(tmp_path, NNARRAY_DEBUG="1")
    assert r.returncode == 0, r.stderr
    assert "nnarray: compiling OpenCL kernels" in r.stderr
    assert "CompilerWarning" in r.stderr or "nnarray_build_log" in r.stderr, r.stderr
    quiet = run(tmp_path / "quiet")
    assert quiet.returncode == 0, quiet.stderr
    assert "CompilerWarning" not in quiet.stderr and "nnarray_build_log" not in quiet.stderr
    assert "warnings generated" not in quiet.stderr
