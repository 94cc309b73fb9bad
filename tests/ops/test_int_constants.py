"""Python int constants an integer array's dtype cannot hold (issue 40 item 5).

numpy 2 (NEP 50) answers comparisons with them exactly (``int64_array > 2**63`` is all
False) and raises ``OverflowError`` for arithmetic whose result is an integer; a float
result (``/``, ``atan2``) takes any int. Eager calls, unfused graphs and fused graphs
must all do the same: fused kernels wrapped the constant (``x_int64 > 2**63`` all True,
``x_int32 + 2**31`` wrapped) while the unfused graph raised. Every binary row, every
integer dtype, constants on both sides at and beyond each dtype's bounds.
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
    as numpy does, which other tests check)."""
    h = _values(d)
    bad = []
    with nna.context_scope(backend):
        for name, (rule, *_) in sorted(BINARY.items()):
            for c in _cases(d):
                inside = int(np.iinfo(d).min) <= c <= int(np.iinfo(d).max)
                if inside and rule not in ("compare", "logical"):
                    continue
                for left in (False, True):
                    want = _reference(name, h, c, left)
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
