"""Shape functions and basic indexing against numpy, on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import A, ids

import nnarray as nna
import nnarray.functions as F

pytestmark = pytest.mark.usefixtures("no_fallback")  # a backend runs its own kernels

DTYPES = [np.float32, np.float16, np.int64, np.bool_]


def check(got, want) -> None:
    """Shape ops move values: exact equality for every dtype."""
    want = np.asarray(want)
    assert isinstance(got, nna.NdArray)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    np.testing.assert_array_equal(np.asarray(got), want)


def arange(shape, dtype=np.float32) -> np.ndarray:
    n = int(np.prod(shape))
    x = np.arange(n).reshape(shape)
    return (x % 2 == 0) if np.dtype(dtype) == np.bool_ else x.astype(dtype)


def transposed(x: np.ndarray) -> nna.NdArray:
    """An NdArray holding ``x``, produced by a transpose (not created from ``x`` directly)."""
    return F.transpose(A(np.ascontiguousarray(x.T)))


# -- reshape -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
@pytest.mark.parametrize("shape", [(6, 4), (6, -1), (-1,), 24, (4, 3, 2), (2, -1, 3),
                                   (1, 24, 1), (-1, 1)], ids=ids)
def test_reshape(backend, dtype, shape):
    x = arange((2, 3, 4), dtype)
    check(F.reshape(A(x), shape), x.reshape(shape))


@pytest.mark.parametrize("src", ["transposed", "sliced", "reversed"])
def test_reshape_non_contiguous_sources(backend, src):
    x = arange((4, 6))
    a, ref = {"transposed": (F.transpose(A(x)), x.T),
              "sliced": (A(x)[:, ::2], x[:, ::2]),
              "reversed": (A(x)[::-1, 1:5], x[::-1, 1:5])}[src]
    check(F.reshape(a, (-1,)), ref.reshape(-1))
    check(F.reshape(a, (2, -1)), ref.reshape(2, -1))
    check(a.reshape(ref.size), ref.reshape(ref.size))


def test_reshape_method_forms(backend):
    x = arange((2, 6))
    check(A(x).reshape(3, 4), x.reshape(3, 4))
    check(A(x).reshape((4, -1)), x.reshape(4, -1))
    check(A(np.array([7.0], np.float32)).reshape(()), np.float32(7))
    check(A(np.array(7.0, np.float32)).reshape(1, 1), np.full((1, 1), 7, np.float32))


# -- transpose ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
@pytest.mark.parametrize("axes", [None, (0, 1, 2), (2, 0, 1), (1, 0, 2), (-1, 0, -2)], ids=ids)
def test_transpose(backend, dtype, axes):
    x = arange((2, 3, 4), dtype)
    check(F.transpose(A(x), axes), np.transpose(x, axes))


def test_transpose_forms(backend):
    x = arange((3, 5))
    check(A(x).T, x.T)
    check(A(x).transpose(), x.T)
    y = arange((2, 3, 4))
    check(A(y).transpose(1, 2, 0), y.transpose(1, 2, 0))
    check(A(y).transpose((2, 1, 0)), y.transpose(2, 1, 0))
    check(F.transpose(A(np.arange(5.0)), None), np.arange(5.0))
    check(transposed(arange((33, 17))), arange((33, 17)))


# -- broadcast_to ------------------------------------------------------------------------
@pytest.mark.parametrize("src, dst", [((3,), (2, 3)), ((2, 1), (2, 4)), ((), (2, 3)),
                                      ((1, 3, 1), (4, 3, 2)), ((2, 3), (2, 3)),
                                      ((1,), (5,)), ((3,), (2, 2, 3)), ((1, 1), (0, 4))],
                         ids=ids)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_],
                         ids=ids)
def test_broadcast_to(backend, dtype, src, dst):
    x = arange(src, dtype)
    check(F.broadcast_to(A(x), dst), np.broadcast_to(x, dst))


# -- concatenate, stack, split -----------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_concatenate(backend, axis):
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    for i, s in enumerate(shapes):
        s[axis] = i + 1
    xs = [arange(s) + 100 * i for i, s in enumerate(shapes)]
    check(F.concatenate([A(x) for x in xs], axis=axis), np.concatenate(xs, axis=axis))
    check(F.concatenate(tuple(A(x) for x in xs[:1]), axis=axis), xs[0])


@pytest.mark.parametrize("da, db", [(np.int32, np.float32), (np.float16, np.float32),
                                    (np.bool_, np.int64), (np.int64, np.int64)], ids=ids)
def test_concatenate_promotes(backend, da, db):
    a, b = arange((2, 3), da), arange((1, 3), db)
    check(F.concatenate([A(a), A(b)]), np.concatenate([a, b]))


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_],
                         ids=ids)
def test_stack(backend, dtype, axis):
    xs = [arange((2, 3), dtype) if dtype == np.bool_ else arange((2, 3), dtype) + 10 * i
          for i in range(3)]
    check(F.stack([A(x) for x in xs], axis=axis), np.stack(xs, axis=axis))


@pytest.mark.parametrize("ios, axis", [(3, 0), (2, 1), (1, 0), ([1, 4], 0), ([2], -1),
                                       ([4, 1], 0), ([0, 6], 0), ([-2], 0), ([1, 1, 3], 1),
                                       ((), 0)], ids=ids)
def test_split(backend, ios, axis):
    x = arange((6, 4))
    got = F.split(A(x), ios, axis=axis)
    want = np.split(x, ios, axis=axis)
    assert isinstance(got, list) and len(got) == len(want)
    for g, w in zip(got, want):
        check(g, w)


# -- slice and indexing --------------------------------------------------------------------
@pytest.mark.parametrize("start, stop, step, key", [
    ((1,), (3,), None, (slice(1, 3),)),
    ((0, 1), (2, 5), (1, 2), (slice(0, 2), slice(1, 5, 2))),
    (None, None, (-1,), (slice(None, None, -1),)),
    ((None, 4), (None, 0), (None, -2), (slice(None), slice(4, 0, -2))),
    (1, None, None, (slice(1, None),)),
    ((-2, -3), None, None, (slice(-2, None), slice(-3, None))),
    ((0, 0, 1), (3, 4, 5), (2, 3, 2), (slice(0, 3, 2), slice(0, 4, 3), slice(1, 5, 2))),
    ((5,), (1,), None, (slice(5, 1),)),
], ids=ids)
def test_slice(backend, start, stop, step, key):
    x = arange((4, 5, 6))
    check(F.slice(A(x), start, stop, step), x[key])


KEYS = [0, -1, 2, (1, 2), (-1, -2, 3), slice(None), slice(1, 3), slice(None, None, -1),
        slice(3, 0, -2), slice(-1, None, -1), (slice(None), 1), (Ellipsis, 1),
        (0, Ellipsis), (Ellipsis,), None, (None, 0), (1, None, Ellipsis, None),
        (slice(None, None, 2), None, slice(None, None, -3)), (Ellipsis, None),
        (slice(10, 20),), (slice(2, 1),), (-4, slice(-1, -5, -1), -1), (np.int64(1),),
        (1, 2, 3), (slice(1, 2), slice(None), slice(4, 5)), ()]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_getitem(backend, key):
    x = arange((4, 5, 6))
    check(A(x)[key], x[key])


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
def test_getitem_dtypes_and_chains(backend, dtype):
    x = arange((3, 4, 5), dtype)
    a = A(x)
    check(a[1:, ::-1][..., 2][-1], x[1:, ::-1][..., 2][-1])
    check(transposed(x)[0, ::2], x[0, ::2])
    assert [r.shape for r in A(x[0])] == [(5,)] * 4  # __iter__
    check(A(np.array(3.5, np.float32))[()], np.float32(3.5))
    check(A(np.array(3.5, np.float32))[None], np.array([3.5], np.float32))


def test_shape_ops_return_new_arrays(backend):
    """The F functions copy; basic indexing and the reshape/transpose methods give views
    (tests/core/test_views.py)."""
    x = arange((2, 3))
    a = A(x)
    outs = [F.reshape(a, (3, 2)), F.transpose(a), F.broadcast_to(a, (2, 3)),
            F.concatenate([a]), F.split(a, 1)[0], F.getitem(a, (slice(None),))]
    for o in outs:
        assert o is not a
        o += 1  # writing an output never changes the input
    check(a, x)
