"""``F.logsumexp`` (``ops/logsumexp.py``, an op declared in one file): values against
scipy on every backend, special values, bad input, gradients, ONNX export."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import tol
from helpers import A, check, ids, sample
from scipy.special import logsumexp as ref

import nnarray.functions as F
from nnarray import grad
from nnarray.errors import DTypeError

AXES = [(None, False), (None, True), (0, False), (1, True), (-1, False), ((0, 2), False),
        ((0, 2), True), ((2, 0, 1), True), ((), False)]


@pytest.mark.parametrize("axis, keepdims", AXES, ids=ids)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64], ids=ids)
def test_values_match_scipy(backend, dtype, axis, keepdims):
    x = sample((2, 3, 4), dtype, -8, 8)
    want = ref(x.astype(np.float64), axis=axis, keepdims=keepdims).astype(dtype)
    check(F.logsumexp(A(x), axis=axis, keepdims=keepdims), want)


def test_large_and_spread_values_do_not_overflow(backend):
    """Naive ``log(sum(exp(x)))`` overflows at 89 in float32 and loses -1000 next to 0."""
    x = np.array([[1e30, 1e30], [-1000.0, 0.0], [88.0, 89.0], [-90.0, -95.0]], np.float32)
    check(F.logsumexp(A(x), axis=1), ref(x.astype(np.float64), axis=1).astype(np.float32))


def test_special_values(backend):
    inf, nan = np.inf, np.nan
    x = np.array([[-inf, -inf], [inf, 1.0], [nan, 1.0], [-inf, 2.0], [inf, -inf]], np.float32)
    got = np.asarray(F.logsumexp(A(x), axis=1))
    np.testing.assert_array_equal(got, np.array([-inf, inf, nan, 2.0, inf], np.float32))


def test_empty_reduction_is_minus_inf_and_zero_d_is_the_value(backend):
    check(F.logsumexp(A(np.zeros((2, 0), np.float32)), axis=1),
          np.full((2,), -np.inf, np.float32))
    check(F.logsumexp(A(np.float32(2.5))), np.float32(2.5))


@pytest.mark.parametrize("dtype", [np.int32, np.bool_, np.complex64], ids=ids)
def test_non_float_input_is_a_dtype_error_naming_the_op(backend, dtype):
    with pytest.raises(DTypeError, match="logsumexp: argument 'x' must be floating point"):
        F.logsumexp(A(np.zeros((2, 3), dtype)))


def test_axis_out_of_range_names_the_op(backend):
    with pytest.raises(Exception, match="logsumexp"):
        F.logsumexp(A(np.zeros((2, 3), np.float32)), axis=2)


@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, True), ((0, 2), False)],
                         ids=ids)
def test_gradient_matches_finite_differences(backend, axis, keepdims):
    x = grad.Variable.from_numpy_array(sample((2, 3, 4), np.float64, -4, 4), need_grad=True)
    assert grad.gradcheck(lambda v: F.logsumexp(v, axis=axis, keepdims=keepdims), [x])


def test_gradient_is_softmax_and_zero_at_minus_inf(backend):
    x = np.array([[1.0, 2.0, -np.inf], [-np.inf, -np.inf, -np.inf]], np.float32)
    v = grad.Variable.from_numpy_array(x, need_grad=True)
    y = F.sum(F.logsumexp(v, axis=1))
    y.forward()
    y.backward()
    e = np.exp(np.array([1.0, 2.0]) - 2.0)
    want = np.array([[*(e / e.sum()), 0.0], [0.0, 0.0, 0.0]], np.float32)
    np.testing.assert_allclose(v.g, want, **tol(np.float32))


def test_onnx_export_matches_onnxruntime(tmp_path):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from nnarray.grad import onnx as gonnx
    x = sample((2, 3, 4), np.float32, -8, 8)
    for opset in (17, 18):
        v = grad.Variable(x.shape, dtype=np.float32)
        v.d = x
        y = F.logsumexp(v, axis=(0, 2), keepdims=True)
        y.forward()
        path = tmp_path / f"lse{opset}.onnx"
        gonnx.export([y], path, arg_names={id(v): "x"}, opset=opset)
        assert [n.op_type for n in onnx.load(str(path)).graph.node] == ["ReduceLogSumExp"]
        (got,) = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
            None, {"x": x})
        np.testing.assert_allclose(got, ref(x, axis=(0, 2), keepdims=True), rtol=1e-5)
