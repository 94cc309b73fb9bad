"""Reductions (sum mean max min argmax argmin) against numpy, on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import A, case, check, ids, latin, rotation, sample

import nnarray.functions as F

pytestmark = pytest.mark.usefixtures("no_fallback")  # a backend runs its own kernels

DTYPES = [np.float16, np.float32, np.float64, np.int32, np.int64, np.bool_]
#: (axis, keepdims) cases of a (2, 3, 4) array, by the OpenCL kernel they run: a program
#: per (op, dtype, kernel); the cases of one kernel differ in its arguments only.
KERNELS = {"whole": [(None, False), (None, True), ((2, 0, 1), False), ((2, 0, 1), True)],
           "columns": [(0, False), (1, True), ([1], False)],  # the outer-axis kernel
           "inner": [(-1, False), (-1, True)],
           "strided": [((0, 2), False), ((0, 2), True), ((-1, -3), True)]}
REDUCE = {"sum": (F.sum, np.sum), "mean": (F.mean, np.mean), "max": (F.max, np.max),
          "min": (F.min, np.min)}


def axis_arg(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def test_latin_covers_every_case_once_and_each_test_every_row_and_column():
    rows, cols, n = DTYPES, list(KERNELS), len(REDUCE)
    got = [latin("opencl", k, n, rows, cols) for k in range(n)]
    assert sorted(map(str, sum(got, []))) == sorted(str((r, c)) for r in rows for c in cols)
    for g in got:
        assert {r for r, _ in g} == set(rows) and {c for _, c in g} == set(cols)
    assert len(latin("numpy", 0, n, rows, cols)) == len(rows) * len(cols)


def test_rotation_gives_each_value_to_one_case_in_n():
    values = list("abcdefg")
    for n in (2, 3):
        got = [rotation("opencl", k, values, n) for k in range(n)]
        assert sorted(sum(got, [])) == values  # n consecutive cases: each value once
        assert all(len(g) >= len(values) // n for g in got)
    assert rotation("numpy", 1, values) == values


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
@pytest.mark.parametrize("name", list(REDUCE))
def test_reduce(backend, name, dtype):
    """Every (axis, keepdims) case on numpy; on a compiling backend, float32 on every
    kernel (``test_reduce_larger`` builds those programs anyway) and each other dtype on
    the kernels a Latin square over the ops gives it (``latin``): across the ops every
    (dtype, kernel) runs, and each op runs every dtype and every kernel (36 programs, not
    96), each kernel with all of its cases."""
    fn, ref = REDUCE[name]
    x = sample((2, 3, 4), dtype)
    others = [d for d in DTYPES if d is not np.float32]
    cells = latin(backend, list(REDUCE).index(name), len(REDUCE), others, list(KERNELS))
    for kernel in KERNELS if dtype is np.float32 else [k for d, k in cells if d is dtype]:
        for axis, keepdims in KERNELS[kernel]:
            with case(axis=axis, keepdims=keepdims):
                check(fn(A(x), axis=axis, keepdims=keepdims),
                      ref(x, axis=axis_arg(axis), keepdims=keepdims))


@pytest.mark.parametrize("shape, axis", [((37, 129), 0), ((37, 129), 1), ((37, 129), None),
                                         ((3, 1000), -1), ((1025,), 0), ((2, 64, 65), (0, 2))],
                         ids=ids)
@pytest.mark.parametrize("name", list(REDUCE))
def test_reduce_larger(backend, name, shape, axis):
    x = sample(shape, np.float32, -8, 8, seed=1)
    fn, ref = REDUCE[name]
    check(fn(A(x), axis=axis), ref(x, axis=axis))


@pytest.mark.parametrize("name", list(REDUCE))
def test_reduce_zero_dim_and_size_one(backend, name):
    fn, ref = REDUCE[name]
    s = np.array(2.5, np.float32)
    check(fn(A(s)), ref(s))
    check(fn(A(s), keepdims=True), ref(s, keepdims=True))
    x = sample((1, 3, 1), np.float32)
    check(fn(A(x), axis=(0, 2)), ref(x, axis=(0, 2)))


def test_reduce_empty_axis_tuple(backend):
    """``axis=()`` reduces nothing (numpy): values kept, dtype as for a reduction."""
    x = sample((2, 3), np.int32)
    check(F.sum(A(x), axis=()), np.sum(x, axis=()))
    check(F.max(A(x), axis=()), np.max(x, axis=()))


def test_sum_over_empty_axis(backend):
    x = np.zeros((0, 3), np.float32)
    check(F.sum(A(x), axis=0), np.zeros(3, np.float32))
    check(F.sum(A(x)), np.float32(0))


def test_max_min_with_infinities(backend):
    x = np.array([[-np.inf, 1, 2], [3, np.inf, -1]], np.float32)
    check(F.max(A(x), axis=1), x.max(axis=1))
    check(F.min(A(x), axis=0), x.min(axis=0))
    n = -np.ones((2, 3), np.float32) * 1e30  # all-negative: a 0 initial value would be wrong
    check(F.max(A(n), axis=1), n.max(axis=1))


def test_nan_propagates(backend):
    """numpy semantics: max/min/sum of a NaN are NaN; argmax/argmin pick the first NaN."""
    x = np.array([[1.0, np.nan, 3.0, np.nan], [4.0, 5.0, -1.0, 0.0]], np.float32)
    for name in ("sum", "mean", "max", "min"):
        fn, ref = REDUCE[name]
        check(fn(A(x), axis=1), ref(x, axis=1))
        check(fn(A(x)), ref(x))
    check(F.argmax(A(x), axis=1), np.argmax(x, axis=1))
    check(F.argmin(A(x), axis=1), np.argmin(x, axis=1))
    check(F.argmax(A(x)), np.argmax(x))


ARG = {"argmax": (F.argmax, np.argmax), "argmin": (F.argmin, np.argmin)}


#: argmax/argmin's axis cases of a (3, 4, 5) array by the OpenCL kernel they run (its
#: kept and reduced dimensions, coalesced), each with keepdims False and True.
ARG_KERNELS = {"whole": [None], "one kept": [0, 2, -1, -3], "two kept": [1]}
ARG_DTYPES = [np.float16, np.float32, np.float64, np.int32, np.int64]


@pytest.mark.parametrize("dtype", ARG_DTYPES, ids=ids)
@pytest.mark.parametrize("name", list(ARG))
def test_argmax_argmin(backend, name, dtype):
    """Every axis case on numpy; on a compiling backend a Latin square over argmax/argmin
    (as ``test_reduce``): every (dtype, kernel) runs, each op every dtype and kernel."""
    fn, ref = ARG[name]
    x = sample((3, 4, 5), dtype, -2, 2)  # few distinct values: ties pick the first index
    for _, kernel in (c for c in latin(backend, list(ARG).index(name), len(ARG), ARG_DTYPES,
                                       list(ARG_KERNELS)) if c[0] is dtype):
        for axis in ARG_KERNELS[kernel]:
            for keepdims in (False, True):
                with case(axis=axis, keepdims=keepdims):
                    check(fn(A(x), axis=axis, keepdims=keepdims),
                          ref(x, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("shape, axis", [((37, 129), 0), ((37, 129), 1), ((37, 129), None),
                                         ((2, 1000), -1)], ids=ids)
def test_argmax_larger(backend, shape, axis):
    x = np.random.default_rng(2).permutation(np.prod(shape)).reshape(shape).astype(np.float32)
    check(F.argmax(A(x), axis=axis), np.argmax(x, axis=axis))
    check(F.argmin(A(x), axis=axis), np.argmin(x, axis=axis))


def test_argmax_zero_dim(backend):
    check(F.argmax(A(np.array(3.0, np.float32))), np.int64(0))


def test_ndarray_methods(backend):
    x = sample((3, 4), np.float32, seed=3)
    a = A(x)
    check(a.sum(), x.sum())
    check(a.sum(1), x.sum(1))
    check(a.mean(axis=0, keepdims=True), x.mean(axis=0, keepdims=True))
    check(a.max(-1), x.max(-1))
    check(a.min(), x.min())
    check(a.argmax(1), x.argmax(1))
    check(a.argmax(), np.int64(x.argmax()))


def test_reductions_do_not_modify_input(backend):
    x = sample((3, 4), np.float32)
    a = A(x)
    v = a.version
    for fn in (F.sum, F.mean, F.max, F.min, F.argmax):
        fn(a, axis=0)
    assert a.version == v
    check(a, x)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("shape, axis", [((300, 130), 0), ((1000, 3), 0), ((4, 700, 5), 1),
                                         ((3, 5, 7), 0), ((2, 64, 65), (0, 1))], ids=ids)
def test_outer_axis_reductions(backend, op, shape, axis):
    """Reductions over outer axes (OpenCL on a CPU: the tiled outer-axis kernel, split into
    chunks and a second pass where the outputs are few) match numpy."""
    x = np.random.default_rng(1).uniform(0.5, 1.5, shape).astype(np.float32)
    want = getattr(np, op)(x.astype(np.float64), axis=axis)
    got = getattr(F, op)(A(x), axis=axis).numpy()
    np.testing.assert_allclose(got, want, rtol=2e-4 if op != "prod" else 2e-3)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.bool_],
                         ids=ids)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("name", list(REDUCE))
def test_short_middle_axis(backend, name, dtype, keepdims):
    """One short middle axis over many rows, as pooling's window axis (numpy folds the
    slices into one another there): same values as numpy, NaN kept."""
    x = sample((96, 4, 16), dtype, seed=3)
    if x.dtype.kind == "f":
        x[5, 2, 7] = np.nan
    fn, ref = REDUCE[name]
    check(fn(A(x), axis=1, keepdims=keepdims), ref(x, axis=1, keepdims=keepdims))


def test_max_of_an_empty_array_over_no_axes_is_refused(backend) -> None:
    # numpy has no identity for it; the OpenCL kernel returned the empty array
    x = A(np.empty((2, 0, 4), np.float32))
    for f in (F.max, F.min):
        with pytest.raises(ValueError, match="zero-size"):
            f(x, axis=())


_ZERO_D = ["sum", "prod", "any", "all", "mean", "max", "min", "std", "var", "count_nonzero",
           "argmax", "argmin"]


@pytest.mark.parametrize("name", _ZERO_D)
def test_reductions_of_0d_arrays_check_axis(backend, name) -> None:
    """A 0-D array takes only ``axis=None`` and ``axis=()``; any other axis raises the
    1-D case's ``ShapeError`` naming the op, the axis and the shape (``sum``, ``prod``,
    ``any``, ``all`` returned a value for any axis: issue 40 item 10). numpy raises
    ``AxisError`` too, except for ``axis=0``/``-1`` where its ufunc reductions (not
    ``mean``/``var``/``std``) let a 0-D array pass: the Array API's rule is kept there."""
    import nnarray as nna
    from nnarray.errors import ShapeError
    a = np.array(3.0, np.float32)
    x = nna.asarray(a)
    fn, ref = getattr(nna, name), getattr(np, name)
    for axis in (0, -1, 1, 5, (0,), (0, 1)):
        if name.startswith("arg") and not isinstance(axis, int):
            continue  # argmax/argmin take one int
        if axis not in (0, -1) or name in ("mean", "std", "var"):
            with pytest.raises(ValueError):
                ref(a, axis=axis)  # numpy's AxisError
        with pytest.raises(ShapeError, match=rf"{name if name != 'std' else 'var'}: axis "
                                             rf"-?\d+ is out of range.*0 dimension.*\(\)"):
            fn(x, axis=axis)
    with pytest.raises(ShapeError, match=r"axis 1 is out of range.*\(1,\)"):
        fn(nna.asarray(np.float32([3.0])), axis=1)  # the 1-D case: the same error
    for axis in (None,) if name.startswith("arg") else (None, ()):
        np.testing.assert_allclose(fn(x, axis=axis).numpy(), ref(a, axis=axis))
    if name in ("sum", "prod", "max", "min", "mean", "any", "all"):
        with pytest.raises(ShapeError, match="out of range"):
            getattr(x, name)(axis=0)  # the method
