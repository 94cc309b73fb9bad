"""Python int constants an integer array's dtype cannot hold (issue 40 item 5).

numpy 2 (NEP 50) answers comparisons with them exactly (``int64_array > 2**63`` is all
False) and raises ``OverflowError`` for arithmetic whose result is an integer; a float
result (``/``, ``atan2``) takes any int. Eager calls, unfused graphs and fused graphs
must all do the same: fused kernels wrapped the constant (``x_int64 > 2**63`` all True,
``x_int32 + 2**31`` wrapped) while the unfused graph raised. Every binary row, every
integer dtype, constants on both sides at and beyond each dtype's bounds.

On a compiling backend each (row, dtype, side) is a program (eager and unfused graphs
pass the constant as an argument) and a fused kernel bakes the constant in (a program
per constant too), rendered by its compute type alone (``fused._literal``): the
constants' handling is per rule class (``check_int_fits``, the compare folding), so
there every (rule class, dtype, constant, side) runs in every mode and every row on
both sides, not their product (``design``); numpy runs every case.
"""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna
from nnarray import grad
from nnarray.grad import Variable
from nnarray.ops.elementwise import BINARY
from nnarray.ops.elementwise import ops as row_ops

INTS = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                              np.uint8, np.uint16, np.uint32, np.uint64)]
#: Beyond some dtype's range (each case keeps those beyond its own).
WIDE = (2**7, -(2**7) - 1, 2**8, 2**15, 2**16, 2**31, -(2**31) - 1, 2**32, 2**63,
        -(2**63) - 1, 2**64, -1, 2**64 + 5, -(2**70))
#: numpy's function per row (its xp name where the row has one).
NP = {n: getattr(np, {"div": "true_divide", "pow": "power", "atan2": "arctan2",
                      "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift",
                      "sub": "subtract", "mul": "multiply"}.get(n, n)) for n in BINARY}


def _values(d: np.dtype) -> np.ndarray:
    i = np.iinfo(d)
    v = [i.min, i.max, 0, 1, 2, i.max // 3, i.min // 3 if i.min else 5]
    return np.array(v, d)


def _reference(name: str, h: np.ndarray, c: int, left: bool) -> object:
    """numpy's answer, or the exception type it raises (a logical op takes the int's
    truth: numpy 2 converts it first and fails for the widest)."""
    if BINARY[name][0] == "logical":
        c = bool(c)
    try:
        with np.errstate(all="ignore"):
            return NP[name](c, h) if left else NP[name](h, c)
    except OverflowError:
        return OverflowError


def _cases(d: np.dtype) -> list:
    lo, hi = int(np.iinfo(d).min), int(np.iinfo(d).max)
    return [c for c in WIDE if not lo <= c <= hi] + [lo, hi]


def _inside(d: np.dtype, c: int) -> bool:
    return int(np.iinfo(d).min) <= c <= int(np.iinfo(d).max)


def _rows_by_rule() -> dict[str, list[str]]:
    by: dict[str, list[str]] = {}
    for name, (rule, *_) in sorted(BINARY.items()):
        by.setdefault(rule, []).append(name)
    return by


def design(d: np.dtype) -> set[tuple[str, int, bool]]:
    """The (row, constant, left) cases a compiling backend runs for dtype ``d``: per rule
    class and side, every constant of the class once, on a window of two of its rows
    that moves with ``d`` (``INTS`` index) and the side, so every row meets the
    out-of-range constants on both sides across the dtypes."""
    i = INTS.index(d)
    picks = set()
    for rule, names in _rows_by_rule().items():
        cs = [c for c in _cases(d) if rule in ("compare", "logical") or not _inside(d, c)]
        for left in (False, True):
            rows = [names[(2 * i + left + j) % len(names)] for j in range(min(2, len(names)))]
            picks |= {(rows[k % len(rows)], c, left) for k, c in enumerate(cs)}
    return picks


def test_design_covers_every_row_and_constant() -> None:
    """Per rule class and side: every row on some dtype, with constants above and below
    a dtype's range (a comparison's answer depends on the row and which); per dtype
    every constant."""
    got = {d: design(d) for d in INTS}
    for rule, names in _rows_by_rule().items():
        for left in (False, True):
            assert {n for d in INTS for n, _, lf in got[d] if lf == left and n in names} \
                == set(names)
            for n in names:
                assert {c > 0 for d in INTS for m, c, lf in got[d]
                        if (m, lf) == (n, left) and not _inside(d, c)} == {True, False}
            for d in INTS:
                want = {c for c in _cases(d) if rule in ("compare", "logical")
                        or not _inside(d, c)}
                assert {c for n, c, lf in got[d] if lf == left and n in names} == want


def _run(name: str, mode: str, h: np.ndarray, c: int, left: bool) -> object:
    op = row_ops[name]
    try:
        if mode == "eager":
            x = nna.asarray(h)
            r = op(c, x) if left else op(x, c)
            return r.numpy()
        with grad.fusion_enabled(mode == "fused"):
            x = Variable.from_numpy_array(h)
            y = x + 0 if h.dtype.kind == "i" else x * 1  # an elementwise group to fuse
            r = op(c, y) if left else op(y, c)
            r = r + 0 if r.dtype.kind in "iu" else r  # and one after it
            r.forward()
            return r.d.copy()
    except OverflowError:
        return OverflowError


def _agree(got: object, want: object) -> bool:
    if want is OverflowError or got is OverflowError:
        return got is want
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if want.dtype.kind == "f":  # numpy rounds the constant to a float16 result first
        atol = 4e-3 if want.dtype == np.float16 else 0.0
        return np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-3,
                           atol=atol, equal_nan=True)
    return bool((got == want).all())


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("d", INTS, ids=str)
def test_int_constants_out_of_range_agree_with_numpy(backend: str, d: np.dtype) -> None:
    """Every row with every boundary constant on either side, eager, as an unfused graph
    and as a fused graph: numpy 2's value, or ``OverflowError`` where numpy raises one
    (in-range bounds only for comparisons and logical rows: the rest compute with them
    as numpy does, which other tests check). Compiling backends: the cases of
    ``design``, and every one where numpy raises (nothing compiles)."""
    h = _values(d)
    bad = []
    run = None if backend == "numpy" else design(d)
    with nna.context_scope(backend):
        for name, (rule, *_) in sorted(BINARY.items()):
            for c in _cases(d):
                if _inside(d, c) and rule not in ("compare", "logical"):
                    continue
                for left in (False, True):
                    want = _reference(name, h, c, left)
                    if run is not None and want is not OverflowError and \
                            (name, c, left) not in run:
                        continue  # another row of the class takes this constant here
                    for mode in ("eager", "graph", "fused"):
                        try:
                            got = _run(name, mode, h, c, left)
                        except nna.errors.DTypeError:
                            got = "DTypeError"
                        if isinstance(got, str) and want is not OverflowError:
                            continue  # the row refuses the dtype (shifts of uint64 ...)
                        if not _agree(got, want):
                            bad.append(f"{name}({'c, x' if left else 'x, c'}) c={c} {mode}: "
                                       f"{got!r} != numpy {want!r}")
    assert not bad, f"{len(bad)} disagreements, first: " + "\n".join(bad[:8])
