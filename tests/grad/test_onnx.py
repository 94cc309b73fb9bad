"""ONNX export/import (``nnarray.grad.onnx``) checked against the real onnxruntime."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import peak_rss_each

onnx = pytest.importorskip("onnx", reason="onnx is not installed (pip install 'nnarray[onnx]')")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (test extra)")

import nnarray.functions as F  # noqa: E402
from nnarray import NdArray, grad, nn  # noqa: E402
from nnarray.errors import GraphError  # noqa: E402
from nnarray.grad import onnx as gonnx  # noqa: E402
from nnarray.ops.ufuncs import ROWS  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5  # float32 through two implementations


def ort_run(path, feeds: dict) -> list:
    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def close(got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind == "f":
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    else:
        np.testing.assert_array_equal(got, want)


def leaf(a: np.ndarray) -> grad.Variable:
    v = grad.Variable(a.shape, dtype=a.dtype)
    v.d = a
    return v


def roundtrip(path, feeds: dict, outputs: list) -> None:
    """Import ``path`` into nnarray, run it on ``feeds`` and compare with ``outputs``."""
    outs, values = gonnx.import_model(path)
    for k, a in feeds.items():
        values[k].d = a
    for o, want in zip(outs, outputs):
        o.forward()
        close(o.d, want)


# -- models from nn modules ------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self, rng):
        self.fc1 = nn.Linear(6, 8, rng=rng)
        self.fc2 = nn.Linear(8, 4, rng=rng)

    def forward(self, x):
        return F.softmax(self.fc2(F.relu(self.fc1(x))))


class CNN(nn.Module):
    def __init__(self, rng):
        self.conv1 = nn.Conv2d(3, 4, 3, pad=1, rng=rng)
        self.bn1 = nn.BatchNorm(4)
        self.conv2 = nn.Conv2d(4, 6, 3, stride=1, pad=0, rng=rng)
        self.fc = nn.Linear(6 * 1 * 1, 5, rng=rng)

    def forward(self, x):
        h = F.max_pooling(F.relu(self.bn1(self.conv1(x))), 2)  # (N, 4, 4, 4)
        h = F.relu(self.conv2(h))  # (N, 6, 2, 2)
        h = F.average_pooling(h, 2)  # (N, 6, 1, 1)
        return self.fc(h)


def _trained_bn(m, rng):
    for _, mod in m.named_modules():
        if isinstance(mod, nn.BatchNorm):
            c = mod.num_features
            mod.running_mean.data = rng.standard_normal(c).astype(np.float32)
            mod.running_var.data = (rng.random(c) + 0.5).astype(np.float32)
            mod.gamma.d = (rng.random(c) + 0.5).astype(np.float32)
            mod.beta.d = rng.standard_normal(c).astype(np.float32)
    return m.eval()


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_model_matches_onnxruntime(backend, kind, tmp_path):
    rng = np.random.default_rng(0)
    if kind == "mlp":
        m, shape = MLP(rng), (3, 6)
    else:
        m, shape = _trained_bn(CNN(rng), rng), (2, 3, 8, 8)
    xd = rng.standard_normal(shape).astype(np.float32)
    x = leaf(xd)
    y = m(x)
    y.forward()
    path = tmp_path / f"{kind}.onnx"
    gonnx.export([y], path, params=m.parameters(), arg_names={id(x): "data"})
    model = onnx.load(str(path))
    assert [i.name for i in model.graph.input] == ["data"]
    assert set(m.parameters()) <= {t.name for t in model.graph.initializer}
    assert [o.name for o in model.graph.output] == [y.name]  # the node's auto-name
    ops = [n.op_type for n in model.graph.node]
    if kind == "cnn":  # composites exported as the units ONNX users expect
        assert ops.count("Conv") == 2 and "BatchNormalization" in ops
        assert "MaxPool" in ops and "AveragePool" in ops
    (got,) = ort_run(path, {"data": xd})
    close(got, y.d)
    roundtrip(path, {"data": xd}, [y.d])


def test_parameters_hold_current_data_and_state_can_be_named(tmp_path):
    rng = np.random.default_rng(1)
    m = _trained_bn(CNN(rng), rng)
    x = leaf(rng.standard_normal((1, 3, 8, 8)).astype(np.float32))
    y = m(x)
    path = tmp_path / "cnn.onnx"
    gonnx.export([y], path, params=m.named_arrays())
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}
    for k, v in m.named_arrays().items():
        np.testing.assert_array_equal(inits[k], v.numpy() if isinstance(v, NdArray) else v.d)


def test_names_multiple_outputs_and_leaf_outputs(tmp_path):
    a, b = leaf(np.ones((2, 3), np.float32)), leaf(np.full((2, 3), 2, np.float32))
    s = a + b
    p = F.sum(s * b, axis=1)
    path = tmp_path / "two.onnx"
    gonnx.export([s, p, a], path, arg_names={id(a): "a"})
    g = onnx.load(str(path)).graph
    assert [i.name for i in g.input] == ["a", "arg0"]
    assert [o.name for o in g.output] == [s.name, p.name, "out2"]  # node names; a leaf: out<k>
    got = ort_run(path, {"a": a.d, "arg0": b.d})
    s.forward()
    p.forward()
    for o, w in zip(got, [s.d, p.d, a.d]):
        close(o, w)


# -- every op alone ---------------------------------------------------------------------
R = np.random.default_rng(42)


def _f(*shape, lo=-2.0, hi=2.0):
    return R.uniform(lo, hi, shape).astype(np.float32)


X = _f(3, 4)
POS = _f(3, 4, lo=0.5, hi=3.0)
UNIT = _f(3, 4, lo=-0.9, hi=0.9)
X3 = _f(2, 3, 4)
IMG = _f(2, 4, 6, 6)
I32 = R.integers(-5, 6, (3, 4)).astype(np.int32)
HALVES = np.round(_f(3, 4) * 2) / 2  # equal elements for the comparisons
HALVES2 = np.round(_f(3, 4) * 2) / 2
HALVES2[HALVES2 == 0] = 0.5  # a divisor
LAB = np.array([0, 3, 1], np.int32)

_UNARY_DOMAIN = {"log": POS, "sqrt": POS, "log1p": POS, "log2": POS, "log10": POS,
                 "asin": UNIT, "acos": UNIT}
# every declared elementwise function with an ONNX op or composition (``Ufunc.onnx``)
_UNARY = [r.name for r in ROWS if r.onnx is not None and r.arity == 1]
_BINARY = [r.name for r in ROWS if r.onnx is not None and r.arity == 2]

CASES = [
    *[(f"{n}", (lambda n: lambda x: getattr(F, n)(x))(n), [_UNARY_DOMAIN.get(n, X)])
      for n in _UNARY],
    *[(f"{n}", (lambda n: lambda a, b: getattr(F, n)(a, b))(n),
       [POS, _f(4, lo=-1, hi=2)] if n == "pow" else [HALVES, HALVES2])
      for n in _BINARY],
    ("hypot_broadcast", lambda a, b: F.hypot(a, b), [X, _f(4)]),
    ("add_scalar", lambda x: x + 1.5, [X]),
    ("add_bool_is_or", lambda a, b: a + b, [X > 0, HALVES > 0]),
    ("mul_bool_is_and", lambda a, b: a * b, [X > 0, HALVES > 0]),
    ("minimum_bool_is_and", lambda a, b: F.minimum(a, b), [X > 0, HALVES > 0]),
    ("rsub_scalar", lambda x: 2.0 - x, [X]),
    ("div_int_to_float64", lambda a, b: a / b, [I32, np.full((3, 4), 3, np.int32)]),
    ("add_int_float", lambda a, b: a + b, [I32, X]),
    ("compare_scalar", lambda x: F.greater(x, 0.5), [X]),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), [X]),
    ("clip", lambda x: F.clip(x, -0.5, 1.0), [X]),
    ("clip_min", lambda x: F.clip(x, a_min=0.1), [X]),
    ("clip_int", lambda x: F.clip(x, -2, 3), [I32]),
    ("cast_to_int", lambda x: F.cast(x, np.int32), [X]),
    ("cast_to_float", lambda x: F.cast(x, np.float32), [I32]),
    ("where", lambda x, y: F.where(F.greater(x, 0.0), x, y), [X, _f(3, 4)]),
    ("where_scalar", lambda x: F.where(F.less(x, 0.0), 0.0, x), [X]),
    *[(f"{n}_{a}_{k}", (lambda n, a, k: lambda x: getattr(F, n)(x, axis=a, keepdims=k))(n, a, k),
       [X3]) for n in ("sum", "mean", "max", "min")
      for a, k in ((None, False), (1, False), ((0, 2), True))],
    ("sum_int", lambda x: F.sum(x, axis=1), [I32]),
    *[(f"{n}_{a}_{k}", (lambda n, a, k: lambda x: getattr(F, n)(x, axis=a, keepdims=k))(n, a, k),
       [X3]) for n in ("argmax", "argmin") for a, k in ((None, False), (None, True), (2, True))],
    ("reshape", lambda x: F.reshape(x, (4, -1)), [X3]),
    ("transpose", lambda x: F.transpose(x, (2, 0, 1)), [X3]),
    ("broadcast_to", lambda x: F.broadcast_to(x, (2, 3, 4)), [_f(3, 1)]),
    ("concatenate", lambda a, b: F.concatenate([a, b], axis=1), [X, _f(3, 2)]),
    ("stack", lambda a, b: F.stack([a, b], axis=1), [X, _f(3, 4)]),
    ("split", lambda x: F.split(x, [1, 3], axis=2)[1], [X3]),
    ("getitem_slices", lambda x: x[1:, ::2], [X]),
    ("getitem_reverse", lambda x: x[::-1, 3:0:-2], [X]),
    ("getitem_int", lambda x: x[1], [X3]),
    ("getitem_int_last", lambda x: x[..., 2], [X3]),
    ("getitem_newaxis", lambda x: x[:, None, :2], [X]),
    ("getitem_empty", lambda x: x[2:1], [X]),
    ("slice", lambda x: F.slice(x, (0, 1), (2, 4), (1, 2)), [X3]),
    ("matmul", lambda a, b: F.matmul(a, b), [X, _f(4, 5)]),
    ("matmul_batched", lambda a, b: F.matmul(a, b), [X3, _f(4, 2)]),
    ("matmul_vector", lambda a, b: F.matmul(a, b), [X, _f(4)]),
    ("matmul_transposed", lambda a, b: F.matmul(a, b, transpose_a=True, transpose_b=True),
     [X, _f(5, 3)]),
    ("affine", lambda x, w, b: F.affine(x, w, b), [X3, _f(12, 5), _f(5)]),
    ("softmax", lambda x: F.softmax(x, axis=1), [X3]),
    ("log_softmax", lambda x: F.log_softmax(x), [X3]),
    ("one_hot", lambda t: F.one_hot(t, 5), [LAB]),
    ("one_hot_axis0_int64", lambda t: F.one_hot(t, 4, axis=0, dtype=np.float64),
     [LAB.astype(np.int64)]),
    ("softmax_cross_entropy", lambda x, t: F.softmax_cross_entropy(x, t), [X, LAB]),
    ("mean_squared_error", lambda x, t: F.mean_squared_error(x, t), [X, _f(3, 4)]),
    ("conv2d", lambda x, w, b: F.conv2d(x, w, b, pad=1), [IMG, _f(5, 4, 3, 3), _f(5)]),
    ("conv2d_groups_stride_dilation",
     lambda x, w: F.conv2d(x, w, stride=2, pad=(1, 0), dilation=(1, 2), groups=2),
     [IMG, _f(6, 2, 3, 2)]),
    ("max_pooling", lambda x: F.max_pooling(x, 3, 2, pad=1), [IMG]),
    ("average_pooling", lambda x: F.average_pooling(x, (2, 3), (2, 1)), [IMG]),
    ("average_pooling_pad", lambda x: F.average_pooling(x, 2, pad=1), [IMG]),
    ("max_pooling_3d_input", lambda x: F.max_pooling(x, 2), [_f(3, 4, 6)]),
    ("im2col", lambda x: F.im2col(x, (2, 3), stride=(1, 2), pad=1, dilation=(2, 1)), [IMG]),
    ("batch_normalization_eval",
     lambda x, g, b, m, v: F.batch_normalization(x, g, b, m, v, training=False),
     [IMG, _f(4), _f(4), _f(4), _f(4, lo=0.5, hi=2)]),
    ("batch_normalization_eval_full_params",
     lambda x, g, b, m, v: F.batch_normalization(x, g, b, m, v, training=False),
     [IMG, _f(1, 4, 1, 1), _f(1, 4, 1, 1), _f(1, 4, 1, 1), _f(1, 4, 1, 1, lo=0.5, hi=2)]),
    ("batch_normalization_eval_axes",
     lambda x, g, b, m, v: F.batch_normalization(x, g, b, m, v, axes=(2,), training=False),
     [X3, _f(4), _f(4), _f(4), _f(4, lo=0.5, hi=2)]),
    ("batch_normalization_train_output",
     lambda x, g, b, m, v: F.batch_normalization(x, g, b, m.data, v.data),
     [IMG, _f(4), _f(4), _f(4), _f(4, lo=0.5, hi=2)]),
]


@pytest.mark.parametrize("name, fn, arrays", CASES, ids=[c[0] for c in CASES])
def test_op_matches_onnxruntime_and_round_trips(name, fn, arrays, tmp_path):
    xs = [leaf(a) for a in arrays]
    y = fn(*xs)
    y.forward()
    want = y.d.copy()
    path = tmp_path / f"{name}.onnx"
    gonnx.export([y], path, arg_names={id(x): f"in{k}" for k, x in enumerate(xs)})
    feeds = {f"in{k}": a for k, a in enumerate(arrays)}
    used = {i.name for i in onnx.load(str(path)).graph.input}
    feeds = {k: v for k, v in feeds.items() if k in used}
    (got,) = ort_run(path, feeds)
    close(got, want)
    roundtrip(path, feeds, [want])


def test_dropout_exports_as_inference_identity(tmp_path):
    x = leaf(X)
    y = F.relu(F.dropout(x, 0.5))
    gonnx.export([y], tmp_path / "d.onnx")
    (got,) = ort_run(tmp_path / "d.onnx", {"arg0": X})  # one input: arg0
    close(got, np.maximum(X, 0))
    roundtrip(tmp_path / "d.onnx", {"arg0": X}, [np.maximum(X, 0)])


def test_opset_18_reductions_take_axes_as_input(tmp_path):
    x = leaf(X3)
    y = F.mean(F.max(x, axis=1, keepdims=True), axis=2)
    y.forward()
    gonnx.export([y], tmp_path / "r.onnx", opset=18)
    assert onnx.load(str(tmp_path / "r.onnx")).opset_import[0].version == 18
    (got,) = ort_run(tmp_path / "r.onnx", {"arg0": X3})
    close(got, y.d)


def test_col2im_needs_opset_18(tmp_path):
    cd = _f(2, 12, 15)
    y = F.col2im(leaf(cd), (3, 4, 5), 2, stride=(1, 2), pad=1)
    y.forward()
    with pytest.raises(GraphError, match="'col2im'.*opset 18"):
        gonnx.export([y], tmp_path / "x.onnx")
    gonnx.export([y], tmp_path / "x.onnx", opset=18)
    (got,) = ort_run(tmp_path / "x.onnx", {"arg0": cd})
    close(got, y.d)
    roundtrip(tmp_path / "x.onnx", {"arg0": cd}, [y.d])


def test_export_without_translation_raises_naming_the_op(tmp_path):
    class Twice(grad.PythonFunction):
        def setup_impl(self, inputs, outputs):
            outputs[0].reset_shape(inputs[0].shape, True)

        def forward_impl(self, inputs, outputs):
            outputs[0].d = inputs[0].d * 2

    y = Twice()(leaf(X))
    with pytest.raises(GraphError, match="no ONNX translation for op 'Twice'"):
        gonnx.export([y], tmp_path / "x.onnx")


# -- import of ONNX ops that export does not write ------------------------------------------
def _model(nodes, inputs, outputs, inits=()):
    h = onnx.helper
    g = h.make_graph(nodes, "g",
                     [h.make_tensor_value_info(n, onnx.TensorProto.FLOAT, s) for n, s in inputs],
                     [h.make_tensor_value_info(n, onnx.TensorProto.FLOAT, s)
                      for n, s in outputs],
                     [onnx.numpy_helper.from_array(a, name=k) for k, a in inits])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8)


def _n(op, ins, outs, **kw):
    return onnx.helper.make_node(op, ins, outs, name=f"my_{op.lower()}", **kw)


IMPORT_CASES = [
    ("Gemm", [_n("Gemm", ["x", "w", "c"], ["y"], transB=1, alpha=0.5, beta=2.0)], (3, 4), (3, 5),
     [("w", _f(5, 4)), ("c", _f(5))]),
    ("Split", [_n("Split", ["x", "s"], ["a", "y"], axis=1)], (3, 4), (3, 3),
     [("s", np.array([1, 3], np.int64))]),
    ("Gather", [_n("Gather", ["x", "i"], ["y"], axis=1)], (3, 4), (3, 3),
     [("i", np.array([3, 0, 0], np.int64))]),
    ("Flatten", [_n("Flatten", ["x"], ["y"], axis=2)], (2, 3, 4), (6, 4), []),
    ("Squeeze_Unsqueeze", [_n("Unsqueeze", ["x", "a"], ["u"]), _n("Squeeze", ["u", "b"], ["y"])],
     (3, 4), (3, 4), [("a", np.array([0, 3], np.int64)), ("b", np.array([0], np.int64))]),
    ("Max_variadic", [_n("Max", ["x", "c", "d"], ["y"])], (3, 4), (3, 4),
     [("c", _f(3, 4)), ("d", _f(4))]),
    ("Constant", [_n("Constant", [], ["c"], value=onnx.numpy_helper.from_array(_f(4))),
                  _n("Mul", ["x", "c"], ["y"])], (3, 4), (3, 4), []),
    ("GlobalAveragePool", [_n("GlobalAveragePool", ["x"], ["y"])], (2, 3, 4, 5), (2, 3, 1, 1), []),
    ("GlobalMaxPool", [_n("GlobalMaxPool", ["x"], ["y"])], (2, 3, 4, 5), (2, 3, 1, 1), []),
    ("OneHot_values", [_n("Cast", ["x"], ["t"], to=onnx.TensorProto.INT64),
                       _n("Abs", ["t"], ["ta"]),
                       _n("OneHot", ["ta", "d", "v"], ["y"], axis=1)], (3,), (3, 4),
     [("d", np.array(4, np.int64)), ("v", np.array([-1.0, 2.0], np.float32))]),
    ("Shape_arithmetic_flatten",  # how exporters write x.view(x.size(0), -1)
     [_n("Shape", ["x"], ["s"]), _n("Gather", ["s", "zero"], ["n"], axis=0),
      _n("Unsqueeze", ["n", "zeroes"], ["n1"]), _n("Concat", ["n1", "minus1"], ["shape"], axis=0),
      _n("Reshape", ["x", "shape"], ["y"])], (2, 3, 4), (2, 12),
     [("zero", np.array(0, np.int64)), ("zeroes", np.array([0], np.int64)),
      ("minus1", np.array([-1], np.int64))]),
    ("Slice_negative_step", [_n("Slice", ["x", "s", "e", "a", "st"], ["y"])], (5, 4), (3, 4),
     [("s", np.array([-1], np.int64)), ("e", np.array([-(2**63)], np.int64)),
      ("a", np.array([0], np.int64)), ("st", np.array([-2], np.int64))]),
]


@pytest.mark.parametrize("name, nodes, shape, out, inits", IMPORT_CASES,
                         ids=[c[0] for c in IMPORT_CASES])
def test_import_matches_onnxruntime(name, nodes, shape, out, inits, tmp_path):
    path = tmp_path / f"{name}.onnx"
    model = _model(nodes, [("x", list(shape))], [("y", list(out))], inits)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    xd = (np.abs(_f(*shape)) * 2).round().astype(np.float32) if name.startswith("OneHot") \
        else _f(*shape)
    (want,) = ort_run(path, {"x": xd})
    roundtrip(path, {"x": xd}, [want])


def test_import_unsupported_op_raises_naming_op_and_node(tmp_path):
    path = tmp_path / "u.onnx"
    onnx.save(_model([_n("Mish", ["x"], ["y"])], [("x", [2])], [("y", [2])]), str(path))
    with pytest.raises(GraphError, match=r"'Mish'.*my_mish"):
        gonnx.import_model(path)


def test_import_initializers_are_parameters(tmp_path):
    path = tmp_path / "p.onnx"
    w = _f(4, 2)
    onnx.save(_model([_n("MatMul", ["x", "w"], ["y"])], [("x", [3, 4])], [("y", [3, 2])],
                     [("w", w)]),
              str(path))
    outs, values = gonnx.import_model(path)
    assert list(values) == ["x", "w"]
    assert values["w"].need_grad and values["x"].parent is None
    np.testing.assert_array_equal(values["w"].d, w)
    values["x"].d = X
    outs[0].forward()
    close(outs[0].d, X @ w)


def test_import_symbolic_batch_needs_a_shape(tmp_path):
    path = tmp_path / "dyn.onnx"
    model = _model([_n("Relu", ["x"], ["r"]),
                    _n("Constant", [], ["s"], value_ints=[-1]),
                    _n("Reshape", ["r", "s"], ["y"])], [("x", ["N", 4])], [("y", ["M"])])
    onnx.save(model, str(path))
    with pytest.raises(GraphError, match="symbolic dimension 0 .*shapes="):
        gonnx.import_model(path)
    outs, values = gonnx.import_model(path, shapes={"x": (3, 4)})
    values["x"].d = X
    outs[0].forward()
    close(outs[0].d, np.maximum(X, 0).reshape(-1))


def test_graph_recorded_under_auto_forward_exports(tmp_path):
    rng = np.random.default_rng(3)
    m = MLP(rng)
    with grad.auto_forward():
        y = m(grad.Variable.from_numpy_array(X[:, :3].repeat(2, axis=1)))
    path = tmp_path / "dyn.onnx"
    gonnx.export([y], path, params=m.parameters())
    (got,) = ort_run(path, {"arg0": X[:, :3].repeat(2, axis=1)})
    close(got, y.d)


def test_graph_to_onnx_and_back(backend, tmp_path):
    """grad.Graph's ONNX methods: parameters as initializers, the data as the one input,
    onnxruntime and the re-imported Graph agree with the original."""
    rng = np.random.default_rng(5)
    m = MLP(rng)
    xd = rng.standard_normal((3, 6)).astype(np.float32)
    x = grad.Variable((3, 6), name="data")
    g = grad.Graph(m(x), params=m.parameters())
    assert g.arguments()[0] == "data"
    want = g.eval(backend, data=NdArray.from_numpy_array(xd))[0].numpy()
    path = tmp_path / "g.onnx"
    g.to_onnx(path, params=m.parameters())
    inits = {t.name for t in onnx.load(str(path)).graph.initializer}
    assert set(m.parameters()) <= inits
    np.testing.assert_allclose(ort_run(path, {"data": xd})[0], want, rtol=1e-5, atol=1e-5)
    back = grad.Graph.from_onnx(path)
    assert "data" in back.arguments()
    got = back.eval(backend, data=NdArray.from_numpy_array(xd))[0].numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# -- transformer layers ------------------------------------------------------------------
class _Attention(nn.Module):
    def __init__(self):
        self.emb = nn.Embedding(7, 8)
        self.ln = nn.LayerNorm(8)
        self.att = nn.MultiheadAttention(8, 2, causal=True)

    def forward(self, i):
        h = self.ln(self.emb(i))
        return F.gelu(self.att(h), approximate="tanh") + F.gelu(h)


@pytest.mark.parametrize("opset", [17, 20])
def test_transformer_layers_export_as_onnx_ops(backend, opset, tmp_path):
    """Embedding as Gather, layer_norm as LayerNormalization, gelu as Gelu (opset 20;
    its formula before), attention from MatMul/Softmax/Where; onnxruntime agrees and the
    file imports back."""
    rng = np.random.default_rng(3)
    m = _Attention()
    for p in m.parameters().values():
        p.d = (p.d + rng.normal(0, 0.1, p.shape)).astype(np.float32)
    idx = rng.integers(0, 7, (2, 5))
    x = leaf(idx)
    y = m(x)
    y.forward()
    path = tmp_path / "attn.onnx"
    gonnx.export([y], path, params=m.parameters(), arg_names={id(x): "idx"}, opset=opset)
    ops = {n.op_type for n in onnx.load(str(path)).graph.node}
    assert {"Gather", "LayerNormalization", "Softmax"} <= ops
    assert ("Gelu" in ops) == (opset >= 20) and ("Erf" in ops) == (opset < 20)
    (got,) = ort_run(path, {"idx": idx})
    close(got, y.d)
    roundtrip(path, {"idx": idx}, [y.d])


# -- untrusted models: typed errors, and no allocation past the fold limit -------------
_BIG = 2**28  # elements: a 1 GiB float32 value from a model of under 100 bytes
_PEAK_MB = 400  # the interpreter with nnarray and onnx: about 50 MiB, up to 205 seen; a
# folded 2^28-element value would be 1 GiB or more
_I64 = np.int64


def _consts_model(path, node, inits, inputs=(), out_type=onnx.TensorProto.FLOAT):
    h = onnx.helper
    g = h.make_graph([node], "g", [h.make_tensor_value_info(n, onnx.TensorProto.FLOAT, s)
                                   for n, s in inputs],
                     [h.make_tensor_value_info("y", out_type, None)],
                     [onnx.numpy_helper.from_array(a, name=k) for k, a in inits])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), str(path))


HUGE_FOLDS = [
    ("Expand", _n("Expand", ["x", "s"], ["y"]),
     [("x", np.array(1.0, np.float32)), ("s", np.array([_BIG], _I64))], ()),
    ("Pad", _n("Pad", ["x", "p"], ["y"]),
     [("x", np.array([1.0], np.float32)), ("p", np.array([_BIG, 0], _I64))], ()),
    ("OneHot", _n("OneHot", ["i", "d", "v"], ["y"]),
     [("i", np.array([0], _I64)), ("d", np.array(_BIG, _I64)),
      ("v", np.array([0, 1], np.int32))], ()),
]


_NO_GRAD = ("from nnarray import grad; from nnarray.grad import onnx\n"
            "with grad.no_grad():\n    (y,), _ = onnx.import_model(path)\n"
            "assert y.parent is not None")


@pytest.fixture(scope="module")
def huge_imports(tmp_path_factory) -> dict[str, tuple[Any, str, int]]:
    """Each model of ``HUGE_FOLDS`` imported, and the Pad model under ``no_grad`` (key
    ``no_grad``), in one child (``peak_rss_each``): name -> (model path, what the import
    raised or ``returned``, peak RSS in MiB)."""
    d = tmp_path_factory.mktemp("huge")
    runs = {}
    for op, node, inits, inputs in HUGE_FOLDS:
        _consts_model(d / f"{op}.onnx", node, inits, inputs,
                      onnx.TensorProto.INT32 if op == "OneHot" else onnx.TensorProto.FLOAT)
        runs[op] = ("from nnarray.grad import onnx; onnx.import_model(path)", d / f"{op}.onnx")
    path = d / "pad_input.onnx"
    _consts_model(path, _n("Pad", ["x", "p"], ["y"]), [("p", np.array([_BIG, 0], _I64))],
                  [("x", [1])])
    runs["no_grad"] = (_NO_GRAD, path)
    got = peak_rss_each(list(runs.values()))
    return {k: (path, *g) for (k, (_, path)), g in zip(runs.items(), got)}


@pytest.mark.parametrize("op", [c[0] for c in HUGE_FOLDS])
def test_folding_past_the_limit_raises_before_allocating(op, huge_imports):
    path, outcome, peak = huge_imports[op]
    assert path.stat().st_size < 200
    assert outcome.startswith("GraphError"), outcome
    assert f"{op} node 'my_{op.lower()}'" in outcome and "fold limit of 67108864" in outcome
    assert peak < _PEAK_MB, f"peak RSS {peak} MiB importing {op}"


def test_import_records_without_running_under_no_grad(huge_imports):
    _, outcome, peak = huge_imports["no_grad"]
    assert outcome == "returned" and peak < _PEAK_MB, (outcome, peak)


def test_fold_limit_is_settable(backend, tmp_path, monkeypatch):
    path = tmp_path / "expand.onnx"
    _consts_model(path, _n("Expand", ["x", "s"], ["y"]),
                  [("x", np.array(1.5, np.float32)), ("s", np.array([1000], _I64))])
    (y,), values = gonnx.import_model(path)  # 4,000 bytes: folded to a constant
    assert y.parent is None and values == {}
    np.testing.assert_array_equal(y.d, np.full(1000, 1.5, np.float32))
    with pytest.raises(GraphError, match=r"\(1000,\) \(4000 bytes\).*fold limit of 3999"):
        gonnx.import_model(path, fold_limit=3999)
    monkeypatch.setattr(gonnx, "FOLD_LIMIT", 3999)
    with pytest.raises(GraphError, match="fold limit of 3999"):
        gonnx.import_model(path)
    (y,), _ = gonnx.import_model(path, fold_limit=4000)
    np.testing.assert_array_equal(y.d, np.full(1000, 1.5, np.float32))


def _mismatched_initializer(path):
    t = onnx.numpy_helper.from_array(np.zeros(4, np.float32), "w")
    t.dims[0] = 2**30
    _consts_model_tensor(path, _n("Identity", ["w"], ["y"]), [t])


def _mismatched_constant(path):
    t = onnx.numpy_helper.from_array(np.zeros(4, np.float32), "c")
    t.dims[0] = 5
    _consts_model_tensor(path, _n("Constant", [], ["y"], value=t), [])


def _consts_model_tensor(path, node, tensors):
    h = onnx.helper
    g = h.make_graph([node], "g", [], [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT,
                                                                None)], tensors)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), str(path))


@pytest.mark.parametrize("case, make, match", [
    ("empty", lambda p: p.write_bytes(b""), "no graph outputs"),
    ("garbage", lambda p: p.write_bytes(np.random.default_rng(1).bytes(300)),
     "not a readable ONNX model"),
    ("text", lambda p: p.write_text("not a model"), "not a readable ONNX model"),
    ("initializer", _mismatched_initializer, r"initializer 'w' \(dims \[1073741824\]"),
    ("constant", _mismatched_constant, r"Constant node 'my_constant' \(dims \[5\]"),
])
def test_malformed_model_is_a_graph_error(tmp_path, case, make, match):
    path = tmp_path / f"{case}.onnx"
    make(path)
    with pytest.raises(GraphError, match=match):
        gonnx.import_model(path)
