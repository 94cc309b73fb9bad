"""conv2d, pooling and batch normalization as ops: one graph node per call, backward
through the op's rule, ONNX units from the node's op, typed errors before any kernel."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad
from nnarray.errors import DTypeError, ShapeError
from nnarray.grad import Variable, gradcheck
from nnarray.ops.conv import conv2d_op
from nnarray.ops.pooling import average_pooling_op, max_pooling_op


def _distinct(*shape: int, seed: int = 0) -> np.ndarray:
    """Values in [-1, 1], ``2 / size`` apart (no near-ties for max pooling's differences
    with gradcheck's step of 1e-3 on images of up to 1000 elements)."""
    n = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(n) * (2 / n) - 1).reshape(shape) \
        .astype(np.float32)


def _leaf(a: np.ndarray, need_grad: bool = True) -> Variable:
    v = Variable(a.shape, need_grad=need_grad, dtype=a.dtype)
    v.d = a
    return v


def _bn(x):
    c = x.shape[1]
    ps = [_leaf(np.full(c, v, np.float32), need_grad=k < 2)
          for k, v in enumerate((1.5, 0.1, 0.0, 1.0))]
    return F.batch_normalization(x, *ps), ps


CALLS = {
    "conv2d": lambda x: F.conv2d(x, _leaf(_distinct(4, 3, 3, 3, seed=1)),
                                 _leaf(_distinct(4, seed=2)), pad=1),
    "conv2d_groups": lambda x: F.conv2d(x, _leaf(_distinct(6, 1, 2, 2, seed=1)), stride=2,
                                        dilation=(1, 2), groups=3),
    "max_pooling": lambda x: F.max_pooling(x, 3, stride=2, pad=1),
    "average_pooling": lambda x: F.average_pooling(x, 2, pad=1),
    "batch_normalization": lambda x: _bn(x)[0],
}
OPS = {"conv2d": "conv2d", "conv2d_groups": "conv2d", "max_pooling": "max_pooling",
       "average_pooling": "average_pooling", "batch_normalization": "batch_normalization"}


@pytest.mark.parametrize("case", sorted(CALLS))
def test_one_call_records_one_node(case):
    x = Variable((2, 3, 6, 6), name="x")
    y = CALLS[case](x)
    assert y._parent.name == OPS[case]
    assert grad.Graph(y).nodes() == [y._parent.label]  # nothing recorded beside it
    assert all(getattr(i, "_parent", None) is None for i in y._parent.inputs)
    with grad.auto_forward():  # define-by-run too
        d = CALLS[case](_leaf(_distinct(2, 3, 6, 6)))
    assert d._parent.name == OPS[case]
    assert all(getattr(i, "_parent", None) is None for i in d._parent.inputs)


@pytest.mark.parametrize("case", sorted(CALLS))
def test_gradcheck(backend, case):
    x = _leaf(_distinct(2, 3, 6, 6, seed=3))
    if case == "batch_normalization":
        _, ps = _bn(x)
        assert gradcheck(lambda x, g, b: F.batch_normalization(x, g, b, ps[2], ps[3]),
                         [x, ps[0], ps[1]], eps=1e-2)  # float32 sums: a wider step
        return
    call = CALLS[case]
    with grad.auto_forward():
        ins = [x] + [i for i in call(x)._parent.inputs[1:]]
    fn = {"conv2d": lambda x, W, b: F.conv2d(x, W, b, pad=1),
          "conv2d_groups": lambda x, W: F.conv2d(x, W, stride=2, dilation=(1, 2), groups=3),
          "max_pooling": CALLS["max_pooling"],
          "average_pooling": CALLS["average_pooling"]}[case]
    assert gradcheck(fn, ins, eps=1e-3 if case == "max_pooling" else 1e-2)


ATTRS = {"conv2d": {"stride": (1, 1), "pad": (1, 1), "dilation": (1, 1), "groups": 1},
         "max_pooling": {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1)},
         "average_pooling": {"kernel": (2, 2), "stride": (2, 2), "pad": (1, 1)}}


@pytest.mark.parametrize("case", sorted(ATTRS))
def test_gradient_matches_the_composition(backend, case):
    """The op's rule and the composite kernel's primitives, differentiated, agree."""
    from nnarray.registry import composite
    op = {"conv2d": conv2d_op, "max_pooling": max_pooling_op,
          "average_pooling": average_pooling_op}[case]
    arrays = [_distinct(2, 3, 6, 6, seed=4)] + \
        ([_distinct(4, 3, 3, 3, seed=5)] if case == "conv2d" else [])
    grads = []
    for run in (lambda *v: op(*v, **ATTRS[case]), lambda *v: composite(case)(*v, **ATTRS[case])):
        vs = [_leaf(a) for a in arrays]
        with grad.auto_forward():
            y = run(*vs)
        y.backward(nna.asarray(np.linspace(-1, 1, y.size, dtype=np.float32).reshape(y.shape)))
        grads.append([v.grad.numpy() for v in vs])
    for g1, g2 in zip(*grads):
        np.testing.assert_allclose(g1, g2, rtol=1e-5, atol=1e-5)


def test_composite_kernel_runs_where_no_native_one_is_registered(backend):
    """The composite (written with F) serves any backend; numpy's native kernels agree."""
    from nnarray.registry import composite
    xd, wd = _distinct(2, 3, 5, 5), _distinct(4, 3, 2, 2, seed=1)
    x, W = nna.asarray(xd), nna.asarray(wd)
    got = composite("conv2d")(x, W, None, (1, 1), (1, 1), (1, 1), 1).numpy()
    np.testing.assert_allclose(got, F.conv2d(x, W, pad=1).numpy(), rtol=1e-5, atol=1e-5)
    for op in ("max_pooling", "average_pooling"):
        a = {"kernel": (2, 2), "stride": (1, 1), "pad": (1, 1)}
        np.testing.assert_allclose(composite(op)(x, **a).numpy(),
                                   getattr(F, op)(x, 2, 1, 1).numpy(), rtol=1e-6)


def _z(*shape, dtype=np.float32):
    return nna.asarray(np.zeros(shape, dtype))


BAD = [
    ("conv-channels", lambda: (_z(1, 3, 5, 5), _z(2, 4, 3, 3)), F.conv2d, ShapeError,
     ["conv2d", "(1, 3, 5, 5)", "(2, 4, 3, 3)"]),
    ("conv-bias", lambda: (_z(1, 1, 5, 5), _z(2, 1, 3, 3), _z(3)), F.conv2d, ShapeError,
     ["conv2d", "b", "(3,)", "(2,)"]),
    ("conv-dtype", lambda: (_z(1, 1, 5, 5, dtype=np.int32), _z(1, 1, 3, 3)), F.conv2d,
     DTypeError, ["conv2d", "'x'", "int32"]),
    ("maxpool-fit", lambda: (_z(1, 1, 4, 2),), lambda x: F.max_pooling(x, 3), ShapeError,
     ["max_pooling", "kernel 3", "width 2"]),
    ("avgpool-ndim", lambda: (_z(4),), lambda x: F.average_pooling(x, 2), ShapeError,
     ["average_pooling", "(4,)"]),
    ("bn-gamma", lambda: (_z(2, 3, 4, 4), *[_z(4)] * 4), F.batch_normalization, ShapeError,
     ["batch_normalization", "gamma", "(4,)", "(2, 3, 4, 4)"]),
]


@pytest.mark.parametrize("name, args, fn, err, words", BAD, ids=[b[0] for b in BAD])
def test_bad_input_raises_before_any_kernel(backend, name, args, fn, err, words):
    ins = args()
    with mock.patch("nnarray.ops.op.Op.kernel", side_effect=AssertionError("a kernel ran")):
        with pytest.raises(err) as e:
            fn(*ins)
    for w in words:
        assert w in str(e.value)


def test_bad_input_records_nothing():
    x, W = Variable((1, 3, 5, 5)), Variable((2, 4, 3, 3))
    with pytest.raises(ShapeError, match=r"conv2d.*\(1, 3, 5, 5\).*\(2, 4, 3, 3\)"):
        F.conv2d(x, W)
    assert x._parent is None and W._parent is None


def test_onnx_export_emits_the_units_from_the_ops(tmp_path):
    onnx = pytest.importorskip("onnx")
    from nnarray.grad import onnx as gonnx
    x = Variable((2, 3, 8, 8), name="x")
    h = F.conv2d(x, _leaf(_distinct(4, 3, 3, 3)), _leaf(_distinct(4)), pad=1)
    rm, rv = _leaf(np.zeros(4, np.float32)), _leaf(np.ones(4, np.float32))
    h = F.batch_normalization(h, _leaf(np.ones(4, np.float32)), _leaf(np.zeros(4, np.float32)),
                              rm, rv, training=False)
    y = F.average_pooling(F.max_pooling(h, 2), 2)
    model = gonnx.to_model([y])
    ops = [n.op_type for n in model.graph.node]
    assert ops == ["Conv", "BatchNormalization", "MaxPool", "AveragePool"]
    onnx.checker.check_model(model)
    outs, _ = gonnx.from_model(model)  # imported back: the same ops, one node each
    chain, v = [], outs[0]
    while v._parent is not None:
        chain.append(v._parent.name)
        v = v._parent.inputs[0]
    assert chain == ["average_pooling", "max_pooling", "batch_normalization", "conv2d"]
    assert len(grad.Graph(outs).nodes()) == 4


def test_onnx_max_pooling_of_integers_reduces_windows(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    from nnarray.grad import onnx as gonnx
    xd = np.arange(2 * 5 * 5, dtype=np.int32).reshape(2, 5, 5)[:, ::-1].copy()
    x = _leaf(xd, need_grad=False)
    y = F.max_pooling(x, 2, pad=1)
    y.forward()
    path = tmp_path / "m.onnx"
    gonnx.export([y], path, arg_names={id(x): "x"})
    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(s.run(None, {"x": xd})[0], y.d)
