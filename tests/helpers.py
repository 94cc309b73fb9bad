"""Helpers shared by the function tests: NdArray construction, readable ids, checks."""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import contextmanager

import numpy as np
import pytest
from conftest import BACKENDS, tol

import nnarray as nna
from nnarray.ops.fused import Builder, Program
from nnarray.ops.ufuncs import ROWS


def S(*parts: str) -> str:
    """A regex matching ``parts`` in order (for ``pytest.raises(match=...)``)."""
    return ".*".join(re.escape(p) for p in parts)


def A(a) -> nna.NdArray:
    """An NdArray copy of ``a`` (dtype kept)."""
    return nna.NdArray.from_numpy_array(np.asarray(a))


def available() -> list[str]:
    """The registered backends usable here (``why_unavailable`` is ``None``), in order."""
    return [b for b in nna.backends.registered() if nna.backends.why_unavailable(b) is None]


def ids(v) -> str:
    """Readable test ids: dtype names, not ``<class 'numpy.float32'>`` (keeps ``-k numpy``
    selecting the numpy backend only)."""
    if isinstance(v, type) and issubclass(v, np.generic):
        return np.dtype(v).name
    if isinstance(v, (tuple, list)):
        return "(" + ",".join(ids(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return str(v).replace(" ", "")


def check(got, want, dtype=None, exact: bool = False) -> None:
    """``got`` is an NdArray with ``want``'s shape, dtype (``dtype`` overrides) and values:
    within ``tol`` for floats unless ``exact``, equal otherwise."""
    want = np.asarray(want)
    if dtype is not None:
        want = want.astype(dtype)
    assert isinstance(got, nna.NdArray)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    if want.dtype.kind == "f" and not exact:
        np.testing.assert_allclose(np.asarray(got), want, **tol(want.dtype))
    else:
        np.testing.assert_array_equal(np.asarray(got), want)


def sample(shape, dtype, lo=-3, hi=3, seed=0) -> np.ndarray:
    """Values in ``[lo, hi]``: quarters for floats (exact sums, even in float16), ints, or
    bools."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "i":
        return rng.integers(lo, hi + 1, shape).astype(dtype)
    if dtype.kind == "u":
        return rng.integers(max(lo, 0), max(hi, 0) + 1, shape).astype(dtype)
    return (rng.integers(lo * 4, hi * 4 + 1, shape) / 4).astype(dtype)


def device_params(cases: list, on_device: Callable[[tuple], bool],
                  ident: Callable[[tuple], str]) -> list:
    """``pytest.param(backend, *case)`` for a test taking the ``backend`` fixture
    (``indirect=["backend"]``): every case on numpy, which compiles nothing, and the cases
    ``on_device`` keeps on the compiling backends (a pocl program per case costs ~0.2 s
    cold); ids ``backend-ident(case)``."""
    return [pytest.param(b, *c, id=f"{b}-{ident(c)}") for b in BACKENDS for c in cases
            if b == "numpy" or on_device(c)]


def latin(backend: str, k: int, n: int, rows: list, cols: list) -> list[tuple]:
    """The ``(row, col)`` cases that test ``k`` of ``n`` runs on ``backend``, for ``n`` tests
    (the ops of a family, say) sharing one ``rows x cols`` grid (dtypes x kernel layouts,
    say): every case on numpy; on a backend that compiles a program per (test, row, col)
    (a pocl program costs ~0.2 s cold), a Latin square: case (i, j) goes to test
    (i + j) mod n, so across the tests every case runs once, and each test runs every row
    and every column (where ``rows`` and ``cols`` have at least ``n`` entries)."""
    if backend == "numpy":
        return [(r, c) for r in rows for c in cols]
    return [(r, c) for i, r in enumerate(rows) for j, c in enumerate(cols) if (i + j) % n == k]


def rotation(backend: str, k: int, values: list, n: int = 2) -> list:
    """The ``values`` case ``k`` of a family runs on ``backend``: every value on numpy; on a
    backend that compiles a program per (case, value), those at positions ``i`` with
    ``(i + k) % n == 0``: each case runs one value in ``n`` (of every kind where kinds
    alternate in ``values``) and each value runs in one case in ``n``, the cases
    consecutive in ``k`` taking the values in turn."""
    if backend == "numpy":
        return list(values)
    return [v for i, v in enumerate(values) if (i + k) % n == 0]


@contextmanager
def case(**named):
    """Name the case (``named``) in an assertion that fails inside: for tests that loop
    over cases, where the test id no longer says which one failed."""
    try:
        yield
    except AssertionError as e:
        raise AssertionError(f"{named}: {e}") from e


# A child that runs ``code`` (with ``path`` bound to its argument), prints the type and
# message of what it raised, then its peak resident memory in MiB: VmHWM, the high-water
# mark of its own address space (Linux's ru_maxrss also keeps the parent's RSS from
# before exec, so a child of a 1 GiB pytest worker "peaks" at 1 GiB).
_PEAK = r"""
import resource, sys
path = sys.argv[1]
try:
    exec(sys.argv[2])
    print("returned")
except Exception as e:
    print(type(e).__name__, str(e).replace("\n", " "))
try:
    with open("/proc/self/status") as f:
        print(next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) // 1024)
except OSError:
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


#: Seconds a test's child process (or a thread it waits for) may take: a guard against a
#: hang, never a speed check. A loaded 2-core machine runs a child many times slower than
#: an idle one (a 60 s limit failed there); speed is measured in ``benchmarks/``.
CHILD_LIMIT = 600


def child_env(*paths: object, base: dict | None = None, **env: str) -> dict[str, str]:
    """The environment for a child interpreter that imports this checkout: ``base``
    (default ``os.environ``) with ``env`` set, and the repository root (then ``paths``)
    put before any ``PYTHONPATH`` already there, which may be where pyopencl or CuPy
    live."""
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    e = dict(os.environ if base is None else base, **env)
    e["PYTHONPATH"] = os.pathsep.join([root, *map(str, paths)] +
                                      [q for q in [e.get("PYTHONPATH", "")] if q])
    return e


def peak_rss(code: str, path) -> tuple[str, int]:
    """Run ``code`` in a fresh interpreter (``forked.run``; ``path`` bound to
    ``str(path)``); return what it raised (``"<Type> <message>"``, or ``"returned"``)
    and its peak RSS in MiB."""
    import forked
    r = forked.run(_PEAK, str(path), code, timeout=CHILD_LIMIT, env=child_env())
    assert r.returncode == 0, r.stderr[-2000:]
    *_, outcome, peak = r.stdout.strip().splitlines()
    return outcome, int(peak)


# One child for several runs: the peak is reset before each ("5" to clear_refs, Linux 4.0
# on: the high-water mark becomes the current RSS, so a run's peak also counts what the
# runs before it left resident: never less than its own peak).
_PEAKS = r"""
import json, sys
out = []
for code, path in json.loads(sys.argv[1]):
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    try:
        exec(code, {"path": path})
        what = "returned"
    except Exception as e:
        what = type(e).__name__ + " " + str(e).replace("\n", " ")
    with open("/proc/self/status") as f:
        out.append((what, next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) // 1024))
print(json.dumps(out))
"""


def peak_rss_each(runs: list[tuple[str, object]]) -> list[tuple[str, int]]:
    """``peak_rss`` of each ``(code, path)`` of ``runs``, in one fresh interpreter where
    Linux can reset the peak between them (one child each elsewhere)."""
    import json
    import os
    import sys
    if not sys.platform.startswith("linux") or not os.access("/proc/self/clear_refs", os.W_OK):
        return [peak_rss(code, path) for code, path in runs]
    got = run_json_child(_PEAKS, json.dumps([(code, str(path)) for code, path in runs]))
    return [(what, peak) for what, peak in got]


def run_json_child(code: str, *args: str, timeout: float = CHILD_LIMIT) -> dict:
    """Run ``code`` in a fresh interpreter (``forked.run``) from the repository root (no
    ``NNARRAY_CONTEXT``: the child chooses), with ``args`` as its argv; return the JSON
    its last line of output holds."""
    import json
    import os

    import forked
    env = {k: v for k, v in os.environ.items() if k != "NNARRAY_CONTEXT"}
    p = forked.run(code, *args, env=env, timeout=timeout)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def cl_build(dev, source: str):
    """``source`` built as a program on ``dev`` (an ``OpenCLDevice``), quietly (the
    library's ``programs._build``), its device binary not asked for: pocl compiles a
    kernel's machine code only when it is launched or the binary is read (0.1-1 s a
    kernel), so a test that checks that kernels build pays the front end alone, whose
    result pocl caches (``POCL_CACHE_DIR``). A missing function fails here (an implicit
    declaration, or a symbol the kernel library lacks)."""
    import pyopencl as cl

    from nnarray.backends.opencl.programs import _build
    return _build(cl.Program(dev.context, source), "")


# -- fused programs (ops/test_fusion.py, backends/cuda/test_cuda_nvrtc.py) ----------
def row_program(rows: list, integral: bool, alone: bool = False) -> Program:
    """Each row applied to alternating inputs (and a constant for every third binary
    row), then ``r * 0.5 + other``: broadcasting, mixed dtypes, weak constants. Inputs:
    x, y (two dtypes and shapes) and one >= 1 (``acosh``'s domain). ``alone``: each row
    applied as the first one is (``row_program([row])`` of every row, in one program)."""
    b, (x, y, extra) = Builder(3), (0, 1, 2)
    half = b.const(2 if integral else 0.5)
    outs = []
    for j, row in enumerate(rows):
        k = 0 if alone else j
        first, other = (x, y) if k % 2 == 0 else (y, x)
        if row.name == "acosh":
            first = extra  # its domain: >= 1
        if row.arity == 1:
            r = b.call(row.name, first)
        elif k % 3 == 2:
            r = b.call(row.name, first, b.const(3 if integral else 0.75))
        else:
            r = b.call(row.name, first, other)
        outs.append(b.call("add", b.call("mul", r, half), other))
    # ``where`` on a computed condition, a constant branch, mixed dtypes
    outs.append(b.call("where", b.call("greater", x, y), x, b.const(3 if integral else 0.25)))
    return b.program(outs)


def fused_rows(integral: bool) -> list:
    """The rows with a C expression that fuse on integers (``integral``) or floats."""
    rows = [r for r in ROWS if r.c is not None]
    if integral:  # int pow is not fused (its kernels check the exponent first)
        return [r for r in rows if r.rule != "float" and r.name != "pow"]
    return [r for r in rows if r.rule not in ("integral", "int")]


def chain(b: Builder, x: int) -> int:
    """``tanh(0.5 x + 0.1) * sigmoid(x) + x * x``"""
    t = b.call("tanh", b.call("add", b.call("mul", x, b.const(0.5)), b.const(0.1)))
    return b.call("add", b.call("mul", t, b.call("sigmoid", x)), b.call("mul", x, x))


def special_program() -> Program:
    """On one float32 input: the chain, its cast to float64, infinite and NaN constants,
    a bool constant and an integer cast."""
    b = Builder(1)
    y = chain(b, 0)
    inf, nan = b.const(float("inf")), b.const(float("nan"))
    clipped = b.call("minimum", b.call("maximum", 0, b.const(-float("inf"))), inf)
    return b.program([y, b.call("cast", y, attr="float64"), clipped,
                      b.call("where", b.call("isnan", 0), nan, b.call("mul", 0, inf)),
                      b.call("add", b.call("cast", b.call("isinf", 0), attr="int64"),
                             b.const(True))])
