"""The CUDA backend's float ``floor_divide``/``remainder`` source (``cuda/divmod.py``) gives
numpy's results at signed zeros, infinities, NaN and large quotients.

The kernel's C++ template is compiled by g++ on the host and run over every pair of
special values: this checks the arithmetic the GPU runs, with no device involved (the
GPU run itself is ``test_special_values[cuda]``)."""

from __future__ import annotations

import itertools
import shutil
import subprocess

import numpy as np
import pytest

from nnarray.backends.cuda.divmod import DIVMOD, FUNCTIONS

MAIN = r"""
#include <cstdio>
int main() {
    double a, b;
    while (scanf("%la %la", &a, &b) == 2)
        printf("%a %a %a %a\n", (double)nna_floordiv<float>((float)a, (float)b),
               (double)nna_remainder<float>((float)a, (float)b),
               nna_floordiv<double>(a, b), nna_remainder<double>(a, b));
}
"""
VALUES = [np.nan, np.inf, -np.inf, -0.0, 0.0, -2.5, 2.5, 0.5, -3.65, 7.0, 1e-30, -1e30, 3.0,
          -3.0, 1.5, 1e10]


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("g++ not installed")
    d = tmp_path_factory.mktemp("divmod")
    src = "#include <cmath>\nusing std::fmod; using std::floor; using std::copysign;\n"
    (d / "t.cpp").write_text(src + DIVMOD.replace("__device__", "") + MAIN)
    subprocess.run(["g++", "-O2", "-o", str(d / "t"), str(d / "t.cpp")], check=True)
    return d / "t"


def same(x, y) -> bool:
    return (np.isnan(x) and np.isnan(y)) or (x == y and np.signbit(x) == np.signbit(y))


def test_functions_cover_the_ops():
    assert [op for op, _ in FUNCTIONS] == ["floor_divide", "remainder"]


def test_divmod_source_matches_numpy(program):
    pairs = list(itertools.product(VALUES, VALUES))
    inp = "\n".join(f"{float(a).hex()} {float(b).hex()}" for a, b in pairs)
    out = subprocess.run([str(program)], input=inp, capture_output=True, text=True,
                         check=True).stdout.split("\n")
    wrong = []
    with np.errstate(all="ignore"):
        for (a, b), line in zip(pairs, out):
            got = [float.fromhex(t) for t in line.split()]
            for dt, (q, m) in ((np.float32, got[:2]), (np.float64, got[2:])):
                want = np.floor_divide(dt(a), dt(b)), np.remainder(dt(a), dt(b))
                if not (same(q, want[0]) and same(m, want[1])):
                    wrong.append((dt.__name__, a, b, q, m, want))
    assert not wrong, wrong[:10]
