"""Every documented error: the right class, a message naming the op, the argument and the
shapes, raised before any kernel runs or any state changes."""

from __future__ import annotations

import re

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import DTypeError, ShapeError

pytestmark = pytest.mark.usefixtures("no_fallback")  # a backend runs its own kernels


def A(shape=(2, 3), dtype=np.float32) -> nna.NdArray:
    n = int(np.prod(shape))
    return nna.NdArray.from_numpy_array((np.arange(n) % 5 + 1).reshape(shape).astype(dtype))


def S(*parts: str) -> str:
    """A regex matching ``parts`` in order, each literally."""
    return ".*".join(re.escape(p) for p in parts)


I32, I64, B = np.int32, np.int64, np.bool_

CASES = [  # id, call, exception, message regex
    # elementwise
    ("add-shapes", lambda: F.add(A((2, 3)), A((4,))), ShapeError, S("add", "(2, 3)", "(4,)")),
    ("op-shapes", lambda: A((2, 3)) * A((2, 1, 4)), ShapeError, S("mul", "(2, 3)", "(2, 1, 4)")),
    ("cmp-shapes", lambda: A((3,)) < A((2,)), ShapeError, S("less", "(3,)", "(2,)")),
    ("two-scalars", lambda: F.add(1, 2.0), TypeError, S("add", "at least one operand")),
    ("bad-operand", lambda: F.mul(A(), "x"), DTypeError, S("mul", "'b'", "str")),
    ("sub-bool", lambda: A((2,), B) - A((2,), B), DTypeError, S("sub", "bool", "(2,)")),
    ("pow-bool", lambda: F.pow(A((2,), B), A((2,), B)), DTypeError, S("pow", "bool")),
    ("neg-bool", lambda: -A((2,), B), DTypeError, S("neg", "'x'", "bool", "(2,)")),
    ("sign-bool", lambda: F.sign(A((2,), B)), DTypeError, S("sign", "'x'", "bool")),
    ("exp-list", lambda: F.exp([1.0]), TypeError, S("exp", "'x'", "NdArray", "list")),
    ("where-cond", lambda: F.where(A(), A(), A()), DTypeError,
     S("where", "'condition'", "bool", "float32", "(2, 3)")),
    ("where-shapes", lambda: F.where(A((2,), B), A((3,)), 0.0), ShapeError,
     S("where", "'condition' (2,)", "'x' (3,)")),
    ("leaky-alpha", lambda: F.leaky_relu(A(), "a"), TypeError, S("leaky_relu", "'alpha'")),
    ("clip-none", lambda: F.clip(A()), ValueError, S("clip", "'a_min'", "'a_max'")),
    ("clip-array", lambda: F.clip(A(), A(), 1.0), TypeError, S("clip", "'a_min'", "scalar")),
    ("cast-dtype", lambda: F.cast(A(), "M8[s]"), DTypeError,
     S("cast", "'dtype'", "datetime64[s]", "not supported")),
    ("cast-name", lambda: F.cast(A(), "nonsense"), DTypeError, S("cast", "'nonsense'")),
    # reductions
    ("sum-axis", lambda: F.sum(A((2, 3, 4)), axis=3), ValueError, S("sum", "axis 3", "3 dim")),
    ("mean-neg-axis", lambda: F.mean(A((2, 3)), axis=-3), ValueError, S("mean", "axis -3")),
    ("max-repeated", lambda: F.max(A((2, 3, 4)), axis=(0, -3)), ValueError,
     S("max", "repeated axis", "(2, 3, 4)")),
    ("min-float-axis", lambda: F.min(A(), axis=1.0), TypeError, S("min", "'axis'", "int")),
    ("max-empty", lambda: F.max(A((0, 3)), axis=0), ValueError, S("max", "zero-size", "(0, 3)")),
    ("argmax-bool", lambda: F.argmax(A((2,), B)), DTypeError, S("argmax", "bool", "(2,)")),
    ("argmax-empty", lambda: F.argmax(A((0,))), ValueError, S("argmax", "empty", "(0,)")),
    ("argmax-axis", lambda: F.argmax(A(), axis=2), ValueError, S("argmax", "axis 2")),
    # shapes
    ("reshape-size", lambda: F.reshape(A((2, 3)), (4, 2)), ShapeError,
     S("reshape", "(2, 3)", "(4, 2)")),
    ("reshape-two-minus", lambda: F.reshape(A((2, 3)), (-1, -1)), ShapeError,
     S("reshape", "(-1, -1)", "(2, 3)")),
    ("reshape-minus", lambda: F.reshape(A((2, 3)), (4, -1)), ShapeError,
     S("reshape", "(2, 3)", "(4, -1)")),
    ("transpose-perm", lambda: F.transpose(A((2, 3)), (0, 0)), ValueError,
     S("transpose", "(0, 0)", "permutation", "(2, 3)")),
    ("transpose-range", lambda: F.transpose(A((2, 3)), (0, 2)), ValueError,
     S("transpose", "axes 2", "out of range")),
    ("broadcast", lambda: F.broadcast_to(A((2, 3)), (3, 3)), ShapeError,
     S("broadcast_to", "(2, 3)", "(3, 3)")),
    ("broadcast-fewer", lambda: F.broadcast_to(A((2, 3)), (3,)), ShapeError,
     S("broadcast_to", "(2, 3)", "(3,)")),
    ("concat-shapes", lambda: F.concatenate([A((2, 3)), A((2, 4))]), ShapeError,
     S("concatenate", "xs[1]", "(2, 4)", "(2, 3)", "axis 0")),
    ("concat-ndim", lambda: F.concatenate([A((2, 3)), A((3,))], axis=0), ShapeError,
     S("concatenate", "xs[1]", "(3,)")),
    ("concat-empty", lambda: F.concatenate([]), ValueError, S("concatenate", "at least one")),
    ("concat-0d", lambda: F.concatenate([A(()), A(())]), ShapeError,
     S("concatenate", "zero-dimensional")),
    ("concat-not-list", lambda: F.concatenate(A()), TypeError, S("concatenate", "'xs'")),
    ("concat-axis", lambda: F.concatenate([A(), A()], axis=2), ValueError,
     S("concatenate", "axis 2")),
    ("stack-shapes", lambda: F.stack([A((2, 3)), A((3, 2))]), ShapeError,
     S("stack", "xs[1]", "(3, 2)", "(2, 3)")),
    ("stack-empty", lambda: F.stack([]), ValueError, S("stack", "'xs'")),
    ("stack-axis", lambda: F.stack([A((2, 3))], axis=3), ValueError, S("stack", "axis 3")),
    ("split-uneven", lambda: F.split(A((5, 2)), 2), ValueError,
     S("split", "(5, 2)", "2 equal sections")),
    ("split-zero", lambda: F.split(A((4,)), 0), ValueError, S("split", "0 equal sections")),
    ("index-bounds", lambda: A((4, 3))[4], IndexError,
     S("index 4", "out of bounds", "axis 0", "size 4", "(4, 3)")),
    ("index-neg-bounds", lambda: A((4, 3))[0, -4], IndexError, S("index -4", "axis 1")),
    ("index-too-many", lambda: A((4, 3))[0, 0, 0], IndexError, S("too many indices", "(4, 3)")),
    ("index-ellipsis", lambda: A((4, 3))[..., ...], IndexError, S("single ellipsis")),
    ("index-float", lambda: A((4, 3))[1.5], IndexError, S("getitem", "float")),
    ("index-list", lambda: A((4, 3))[[0, 4]], IndexError, S("getitem", "index 4", "(4, 3)")),
    ("index-mask", lambda: A((4, 3))[np.ones(3, bool)], IndexError,
     S("getitem", "boolean index of shape (3,)", "(4, 3)")),
    ("slice-axes", lambda: F.slice(A((4, 3)), (0, 0, 0)), ValueError, S("slice", "3 axes",
                                                                         "(4, 3)")),
    # nn
    ("matmul-inner", lambda: F.matmul(A((2, 3)), A((4, 5))), ShapeError,
     S("matmul", "'a' (2, 3)", "'b' (4, 5)")),
    ("matmul-op", lambda: A((3,)) @ A((4,)), ShapeError, S("matmul", "(3,)", "(4,)")),
    ("matmul-batch", lambda: F.matmul(A((2, 2, 3)), A((3, 3, 4))), ShapeError,
     S("matmul", "batch", "(2, 2, 3)", "(3, 3, 4)")),
    ("matmul-0d", lambda: F.matmul(A(()), A((3,))), ShapeError, S("matmul", "1-D", "()")),
    ("affine-W", lambda: F.affine(A((4, 6)), A((6,))), ShapeError, S("affine", "W", "(6,)")),
    ("affine-k", lambda: F.affine(A((4, 2, 3)), A((5, 2))), ShapeError,
     S("affine", "(4, 2, 3)", "(4, 6)", "(5, 2)")),
    ("affine-b", lambda: F.affine(A((4, 6)), A((6, 5)), A((4,))), ShapeError,
     S("affine", "b", "(4,)", "(5,)")),
    ("softmax-int", lambda: F.softmax(A((2, 3), I32)), DTypeError,
     S("softmax", "'x'", "floating point", "int32", "(2, 3)")),
    ("softmax-0d", lambda: F.softmax(A(())), ShapeError, S("softmax", "()")),
    ("log-softmax-axis", lambda: F.log_softmax(A((2, 3)), axis=2), ValueError,
     S("log_softmax", "axis 2")),
    ("sce-t-dtype", lambda: F.softmax_cross_entropy(A((4, 3)), A((4,))), DTypeError,
     S("softmax_cross_entropy", "'t'", "int", "float32", "(4,)")),
    ("sce-t-shape", lambda: F.softmax_cross_entropy(A((4, 3)), A((3,), I64)), ShapeError,
     S("softmax_cross_entropy", "t", "(3,)", "(4,)", "(4, 3)")),
    ("sce-x-dtype", lambda: F.softmax_cross_entropy(A((4, 3), I32), A((4,), I64)), DTypeError,
     S("softmax_cross_entropy", "'x'", "int32")),
    ("mse-shapes", lambda: F.mean_squared_error(A((4, 3)), A((4,))), ShapeError,
     S("mean_squared_error", "(4, 3)", "(4,)")),
    ("conv-ndim", lambda: F.conv2d(A((3, 5, 5)), A((2, 3, 3, 3))), ShapeError,
     S("conv2d", "(3, 5, 5)", "(2, 3, 3, 3)")),
    ("conv-channels", lambda: F.conv2d(A((1, 3, 5, 5)), A((2, 4, 3, 3))), ShapeError,
     S("conv2d", "(1, 3, 5, 5)", "(2, 4, 3, 3)", "groups=1")),
    ("conv-groups", lambda: F.conv2d(A((1, 4, 5, 5)), A((3, 2, 3, 3)), groups=2), ShapeError,
     S("conv2d", "groups=2")),
    ("conv-dtype", lambda: F.conv2d(A((1, 1, 5, 5), I32), A((1, 1, 3, 3))), DTypeError,
     S("conv2d", "'x'", "int32")),
    ("conv-bias", lambda: F.conv2d(A((1, 1, 5, 5)), A((2, 1, 3, 3)), A((3,))), ShapeError,
     S("conv2d", "b", "(3,)", "(2,)")),
    ("conv-fit", lambda: F.conv2d(A((1, 1, 2, 5)), A((1, 1, 3, 3))), ShapeError,
     S("conv2d", "kernel 3", "height 2")),
    ("conv-stride", lambda: F.conv2d(A((1, 1, 5, 5)), A((1, 1, 3, 3)), stride=0), ValueError,
     S("conv2d", "'stride'", "0")),
    ("conv-pad", lambda: F.conv2d(A((1, 1, 5, 5)), A((1, 1, 3, 3)), pad=(1, -1)), ValueError,
     S("conv2d", "'pad'")),
    ("conv-dilation", lambda: F.conv2d(A((1, 1, 5, 5)), A((1, 1, 3, 3)), dilation=(1, 2, 3)),
     ValueError, S("conv2d", "'dilation'")),
    ("pool-ndim", lambda: F.max_pooling(A((4,)), 2), ShapeError, S("max_pooling", "(4,)")),
    ("pool-kernel", lambda: F.average_pooling(A((1, 4, 4)), 0), ValueError,
     S("average_pooling", "'kernel'")),
    ("pool-fit", lambda: F.max_pooling(A((1, 1, 4, 2)), 3), ShapeError,
     S("max_pooling", "kernel 3", "width 2")),
    ("avgpool-int", lambda: F.average_pooling(A((1, 1, 4, 4), I32), 2), DTypeError,
     S("average_pooling", "'x'", "int32")),
    ("dropout-p1", lambda: F.dropout(A(), 1.0), ValueError, S("dropout", "p", "[0, 1)", "1.0")),
    ("dropout-neg", lambda: F.dropout(A(), -0.1), ValueError, S("dropout", "-0.1")),
    ("dropout-int", lambda: F.dropout(A((2,), I32), 0.5), DTypeError, S("dropout", "'x'")),
    ("dropout-int-eval", lambda: F.dropout(A((2,), I32), 0.5, training=False), DTypeError,
     S("dropout", "'x'")),
    ("rand-int", lambda: F.rand((2, 3), dtype=np.int32), DTypeError,
     S("rand", "floating point", "int32")),
    ("randn-shape", lambda: F.randn((2, -3)), ShapeError, S("randn", "negative", "(2, -3)")),
    ("ndarray-shape", lambda: nna.NdArray((2, -1)), ShapeError, S("negative", "(2, -1)")),
    ("ndarray-dtype", lambda: nna.NdArray((2,), "M8[s]"), DTypeError, S("datetime64[s]")),
    ("from-numpy-dtype", lambda: nna.NdArray.from_numpy_array(np.zeros(2, "M8[s]")),
     DTypeError, S("from_numpy_array", "datetime64[s]")),
]


@pytest.mark.parametrize("call, exc, match", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error(backend, call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def _bn_args(gamma_shape=(3,), decay=0.9, x_dtype=np.float32):
    return (A((4, 3, 2, 2), x_dtype), A(gamma_shape), A((3,)), A((3,)), A((3,)))


@pytest.mark.parametrize("args, kw, exc, match", [
    (_bn_args, {}, None, None),
    (lambda: _bn_args(gamma_shape=(4,)), {}, ShapeError,
     S("batch_normalization", "gamma", "(4,)", "(1, 3, 1, 1)", "(3,)", "(4, 3, 2, 2)")),
    (lambda: _bn_args(x_dtype=np.int32), {}, DTypeError, S("batch_normalization", "'x'")),
    (_bn_args, {"decay": 1.5}, ValueError, S("batch_normalization", "decay=1.5")),
    (_bn_args, {"eps": 0.0}, ValueError, S("batch_normalization", "eps=0.0")),
    (_bn_args, {"axes": (4,)}, ValueError, S("batch_normalization", "axes 4")),
], ids=["ok", "gamma", "dtype", "decay", "eps", "axes"])
def test_batch_normalization_errors_leave_stats(backend, args, kw, exc, match):
    x, g, b, rm, rv = args()
    before = [(p.version, np.asarray(p).copy()) for p in (rm, rv)]
    if exc is None:  # the control case: a valid call does update the statistics
        F.batch_normalization(x, g, b, rm, rv, **kw)
        assert rm.version > before[0][0]
        return
    with pytest.raises(exc, match=match):
        F.batch_normalization(x, g, b, rm, rv, **kw)
    for p, (v, d) in zip((rm, rv), before):
        assert p.version == v
        np.testing.assert_array_equal(np.asarray(p), d)


INPLACE_ERRORS = [  # target, method, other, exception, regex
    (lambda: A((3,)), "__iadd__", lambda: A((2, 3)), ShapeError,
     S("add (in place)", "(2, 3)", "(3,)")),
    (lambda: A((2, 1)), "__imul__", lambda: A((3,)), ShapeError,
     S("mul (in place)", "(2, 3)", "(2, 1)")),
    (lambda: A((2, 3)), "__isub__", lambda: A((2, 4)), ShapeError, S("sub", "(2, 3)", "(2, 4)")),
    (lambda: A((2, 3), I32), "__iadd__", lambda: 0.5, DTypeError,
     S("add (in place)", "float64", "int32")),
    (lambda: A((2, 3), I32), "__itruediv__", lambda: 2, DTypeError,
     S("div (in place)", "float64", "int32")),
    (lambda: A((2, 3), I32), "__imul__", lambda: A((3,)), DTypeError,
     S("mul (in place)", "float64", "int32")),
    (lambda: A((2, 3), I64), "__iadd__", lambda: A((3,), np.float16), DTypeError,
     S("add (in place)", "float64", "int64")),
    (lambda: A((2, 3), B), "__isub__", lambda: A((2, 3), B), DTypeError, S("sub", "bool")),
    (lambda: A((2, 3), I32), "__iadd__", lambda: A((2, 3)), DTypeError,
     S("add (in place)", "float64", "int32")),
    (lambda: A((2, 3), I32), "__iadd__", lambda: A((2, 3)), DTypeError,  # again: cache warm
     S("add (in place)", "float64", "int32")),
    (lambda: A((2, 3), B), "__iadd__", lambda: 1, DTypeError, S("add (in place)", "int64",
                                                                "bool")),
]


@pytest.mark.parametrize("target, method, other, exc, match", INPLACE_ERRORS,
                         ids=[f"{c[1]}-{i}" for i, c in enumerate(INPLACE_ERRORS)])
def test_inplace_errors_change_nothing(backend, target, method, other, exc, match):
    a, b = target(), other()
    v, d = a.version, np.asarray(a).copy()
    with pytest.raises(exc, match=match):
        getattr(a, method)(b)
    assert a.version == v
    assert a.dtype == d.dtype and a.shape == d.shape
    np.testing.assert_array_equal(np.asarray(a), d)


def test_copy_from_errors_change_nothing(backend):
    a = A((2, 3))
    v, d = a.version, np.asarray(a).copy()
    with pytest.raises(ShapeError, match=S("copy_from", "(3, 2)", "(2, 3)")):
        a.copy_from(A((3, 2)))
    with pytest.raises(TypeError, match=S("copy_from", "ndarray")):
        a.copy_from(np.zeros((2, 3), np.float32))
    assert a.version == v
    np.testing.assert_array_equal(np.asarray(a), d)


def test_errors_are_nnarray_errors(backend):
    """ShapeError/DTypeError are also ValueError/TypeError, for callers catching numpy's."""
    assert issubclass(ShapeError, ValueError) and issubclass(ShapeError, nna.NnarrayError)
    assert issubclass(DTypeError, TypeError) and issubclass(DTypeError, nna.NnarrayError)
    with pytest.raises(ValueError):
        F.add(A((2,)), A((3,)))
