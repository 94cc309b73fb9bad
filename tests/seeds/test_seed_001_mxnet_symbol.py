"""Seed ``001_4edf843149f21ef3.txt``: notes on MXNet's Symbol tutorial (placeholders and
auto-naming, ``list_arguments``, a two-layer network, composition, name prefixes, the
Conv/BN/ReLU factory and an Inception block, ``Group``, ``infer_shape``/``infer_type``,
``bind`` and the executor, ``eval``, JSON save/load, ``Cast``, arrays shared by
arguments).

nnarray's ``grad.Graph`` over static Variables is the Symbol (API.md section 8):
``mx.sym.Variable('a')`` is ``Variable(shape, name='a')`` (a placeholder's shape is an
example, re-inferred on binding), auto-names are ``add0`` where MXNet says ``_plus0``, and
parameters that MXNet creates inside ``FullyConnected`` are Variables we name (or a
Module's dotted parameter names). ``mx.viz.plot_network`` draws a picture; the closest
step is ``grad.to_dot(g, shapes=True)``. Each test runs on every backend.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, nn
from nnarray.grad import Graph, Variable


@pytest.fixture(autouse=True)
def _fresh_names():
    grad.reset_names()  # a fresh session: the first add is add0 (MXNet's _plus0)
    yield


def host(a) -> np.ndarray:
    return np.asarray(a.get_data("r", "numpy"))


# -- basic Symbol composition --------------------------------------------------------

def test_placeholders_and_auto_naming(backend):
    a = Variable((2, 3), name="a")
    b = Variable((2, 3), name="b")
    c = a + b
    assert (a.name, b.name, c.name) == ("a", "b", "add0")  # (<a>, <b>, <_plus0>)
    assert Graph(c).list_arguments() == ["a", "b"]


def test_operators_dot_reshape_broadcast(backend):
    a = Variable((2, 2), name="a")  # mx.sym.dot needs agreeing shapes: square ones
    b = Variable((2, 2), name="b")
    d = a * b
    e = F.matmul(a, b)
    f = F.reshape(d + e, (1, 4))
    g = F.broadcast_to(f, (2, 4))
    graph = Graph(g)
    assert "->" in grad.to_dot(graph, shapes=True)  # mx.viz.plot_network(symbol=g)
    an = np.array([[1, 2], [3, 4]], np.float32)
    bn = np.array([[5, 6], [7, 8]], np.float32)
    (out,) = graph.eval(backend, a=nna.array(an), b=nna.array(bn))
    np.testing.assert_allclose(host(out),
                               np.broadcast_to((an * bn + an @ bn).reshape(1, 4), (2, 4)))


class TwoLayer(nn.Module):
    """FullyConnected(fc1, 128) -> relu -> FullyConnected(fc2, 10)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(200, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        h = F.relu(self.fc1(x), name="relu1")
        return self.fc2(h)


def two_layer_net():
    model = TwoLayer()
    data = Variable((100, 200), name="data")
    label = Variable((100,), dtype=np.int64, name="out_label")
    # SoftmaxOutput(name='out') is softmax with a cross-entropy loss against its label.
    out = F.mean(F.softmax_cross_entropy(model(data), label), name="out")
    return model, Graph(out, params=model.parameters())


def test_network_list_arguments(backend):
    model, net = two_layer_net()
    # MXNet: ['data', 'fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias', 'out_label']
    assert net.list_arguments() == ["data", "fc1.W", "fc1.b", "fc2.W", "fc2.b", "out_label"]
    assert net.list_outputs() == ["out"]
    args, outs = net.infer_shape(data=(100, 200))  # plot_network(net, shape={'data': ...})
    assert args["fc1.W"] == (200, 128) and outs == {"out": ()}


def test_network_runs_forward_and_backward(backend):
    model, net = two_layer_net()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((100, 200)).astype(np.float32)
    t = rng.integers(0, 10, 100)
    ex = net.bind(backend, {"data": nna.array(x), "out_label": nna.array(t)},
                  grad_req={"fc2.b": "write"})
    (loss,) = ex.forward()
    p = {k: v.d for k, v in model.parameters().items()}
    logits = np.maximum(x @ p["fc1.W"] + p["fc1.b"], 0) @ p["fc2.W"] + p["fc2.b"]
    z = logits - logits.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    np.testing.assert_allclose(float(host(loss)), -logp[np.arange(100), t].mean(), rtol=1e-5)
    ex.backward()
    soft = np.exp(logp)
    soft[np.arange(100), t] -= 1
    np.testing.assert_allclose(host(ex.grad_dict["fc2.b"]), soft.mean(0), rtol=1e-4,
                               atol=1e-6)


def test_explicit_weight_keeps_its_name(backend):
    net = Variable((4, 20), name="data")
    w = Variable((20, 128), name="myweight")
    b = Variable((128,), name="fc1_bias")  # MXNet makes fc1_bias itself; we name it
    net = F.affine(net, w, b, name="fc1")
    assert Graph(net).list_arguments() == ["data", "myweight", "fc1_bias"]


def fully_connected(x, name, num_in, num_hidden):
    """FullyConnected(data=x, name=name, num_hidden=...) with MXNet's parameter names."""
    w = Variable((num_in, num_hidden), need_grad=True, name=f"{name}_weight")
    b = Variable((num_hidden,), need_grad=True, name=f"{name}_bias")
    return F.affine(x, w, b, name=name)


def test_elementwise_sum_feeds_a_layer(backend):
    lhs = Variable((4, 6), name="data1")
    rhs = Variable((4, 6), name="data2")
    net = fully_connected(lhs + rhs, "fc1", 6, 128)
    assert Graph(net).list_arguments() == ["data1", "data2", "fc1_weight", "fc1_bias"]


def test_composition(backend):
    data = Variable((4, 20), name="data")
    net1 = Graph(fully_connected(data, "fc1", 20, 10))
    assert net1.list_arguments() == ["data", "fc1_weight", "fc1_bias"]
    net2 = Graph(fully_connected(Variable((4, 10), name="data2"), "fc2", 10, 10))
    composed = net2(data2=net1)  # MXNet's name='composed' has no counterpart: not needed
    assert composed.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc2_weight",
                                         "fc2_bias"]
    rng = np.random.default_rng(1)
    vals = {n: nna.array(rng.standard_normal(v.shape).astype(np.float32))
            for n, v in composed.argument_variables().items()}
    (out,) = composed.eval(backend, **vals)
    v = {n: host(a) for n, a in vals.items()}
    h = v["data"] @ v["fc1_weight"] + v["fc1_bias"]
    np.testing.assert_allclose(host(out), h @ v["fc2_weight"] + v["fc2_bias"], rtol=1e-4,
                               atol=1e-4)


def test_name_prefix(backend):
    # mx.name.Prefix("layer%d_") prefixes the names made inside; nnarray's name_scope
    # prefixes node names with "layer1/" (scopes nest), and the weights we create take it.
    net = Variable((4, 100), name="data")
    for i in range(2):
        with grad.name_scope(f"layer{i + 1}"):
            net = fully_connected(net, f"layer{i + 1}_fc", 100, 100)
    assert Graph(net).list_arguments() == ["data", "layer1_fc_weight", "layer1_fc_bias",
                                           "layer2_fc_weight", "layer2_fc_bias"]
    assert net.name == "layer2/layer2_fc"


# -- modular networks: a factory and an Inception block -------------------------------

def conv_factory(data, c_in, num_filter, kernel, stride=(1, 1), pad=(0, 0), name=None,
                 suffix=""):
    """Convolution -> BatchNorm -> ReLU, its parameters named as MXNet names them."""
    tag = f"{name}{suffix}"
    w = Variable((num_filter, c_in) + kernel, need_grad=True, name=f"conv_{tag}_weight")
    b = Variable((num_filter,), need_grad=True, name=f"conv_{tag}_bias")
    conv = F.conv2d(data, w, b, stride=stride, pad=pad, name=f"conv_{tag}")
    stat = (1, num_filter, 1, 1)
    gamma = Variable(stat, need_grad=True, name=f"bn_{tag}_gamma")
    beta = Variable(stat, need_grad=True, name=f"bn_{tag}_beta")
    gamma.d = 1.0
    mean = Variable(stat, name=f"bn_{tag}_moving_mean")
    var = Variable(stat, name=f"bn_{tag}_moving_var")
    var.d = 1.0
    bn = F.batch_normalization(conv, gamma, beta, mean, var, name=f"bn_{tag}")
    return F.relu(bn, name=f"relu_{tag}")


SHAPE = {"Previos Output": (128, 3, 28, 28)}  # sic, the tutorial's name


def test_conv_factory_shape(backend):
    prev = Variable((1, 3, 28, 28), name="Previos Output")
    conv_comp = conv_factory(prev, 3, num_filter=64, kernel=(7, 7), stride=(2, 2), name="c")
    _, outs = Graph(conv_comp).infer_shape(**SHAPE)
    assert outs == {"relu_c": (128, 64, 11, 11)}  # 7x7, stride 2, no pad: 11 x 11


def inception_factory_a(data, c_in, num_1x1, num_3x3red, num_3x3, num_d3x3red, num_d3x3,
                        pool, proj, name):
    c1x1 = conv_factory(data, c_in, num_1x1, (1, 1), name=f"{name}_1x1")
    c3x3r = conv_factory(data, c_in, num_3x3red, (1, 1), name=f"{name}_3x3", suffix="_reduce")
    c3x3 = conv_factory(c3x3r, num_3x3red, num_3x3, (3, 3), pad=(1, 1), name=f"{name}_3x3")
    cd3x3r = conv_factory(data, c_in, num_d3x3red, (1, 1), name=f"{name}_double_3x3",
                          suffix="_reduce")
    cd3x3 = conv_factory(cd3x3r, num_d3x3red, num_d3x3, (3, 3), pad=(1, 1),
                         name=f"{name}_double_3x3_0")
    cd3x3 = conv_factory(cd3x3, num_d3x3, num_d3x3, (3, 3), pad=(1, 1),
                         name=f"{name}_double_3x3_1")
    pooling = {"avg": F.average_pooling, "max": F.max_pooling}[pool]
    pooled = pooling(data, (3, 3), stride=(1, 1), pad=(1, 1),
                     name=f"{pool}_pool_{name}_pool")
    cproj = conv_factory(pooled, c_in, proj, (1, 1), name=f"{name}_proj")
    return F.concatenate([c1x1, c3x3, cd3x3, cproj], axis=1, name=f"ch_concat_{name}_chconcat")


def test_inception_block(backend):
    prev = Variable((2, 3, 8, 8), name="Previos Output")
    in3a = inception_factory_a(prev, 3, 64, 64, 64, 64, 96, "avg", 32, name="in3a")
    g = Graph(in3a)
    _, outs = g.infer_shape(**SHAPE)
    assert outs == {"ch_concat_in3a_chconcat": (128, 64 + 64 + 96 + 32, 28, 28)}
    # and it runs: the backend's result equals numpy's, weights drawn once
    rng = np.random.default_rng(2)
    for name, v in g.argument_variables().items():
        if name.endswith("_weight"):
            v.d = rng.standard_normal(v.shape).astype(np.float32) * 0.3
    x = nna.array(rng.standard_normal((2, 3, 8, 8)).astype(np.float32))
    (ref,) = g.eval("numpy", **{"Previos Output": x})
    (out,) = g.eval(backend, **{"Previos Output": x})
    assert out.shape == (2, 256, 8, 8)
    np.testing.assert_allclose(host(out), host(ref), rtol=1e-4, atol=1e-4)


def test_group(backend):
    net = Variable((4, 6), name="data")
    fc1 = fully_connected(net, "fc1", 6, 128)
    net = F.relu(fc1, name="relu1")
    out1 = F.softmax(net, name="softmax")  # SoftmaxOutput
    out2 = F.mean_squared_error(net, Variable((4, 128), name="regression_label"),
                                name="regression")  # LinearRegressionOutput
    group = Graph([out1, out2])
    assert group.list_outputs() == ["softmax", "regression"]  # MXNet appends "_output"


# -- operating on Symbols: inference, binding, evaluation, JSON -----------------------

def c_is_a_plus_b():
    a = Variable((2, 3), name="a")
    b = Variable((2, 3), name="b")
    return Graph(a + b)


def test_infer_shape_and_type(backend):
    c = c_is_a_plus_b()
    arg_name = c.list_arguments()
    out_name = c.list_outputs()
    arg_shape, out_shape = c.infer_shape(a=(2, 3), b=(2, 3))
    arg_type, out_type = c.infer_type(a="float32", b="float32")
    assert {"input": arg_shape, "output": out_shape} == \
        {"input": {"a": (2, 3), "b": (2, 3)}, "output": {"add0": (2, 3)}}
    assert dict(zip(arg_name, arg_shape.values())) == arg_shape
    assert out_name == ["add0"]
    assert arg_type == {"a": np.float32, "b": np.float32} and out_type == {"add0": np.float32}


def test_bind_forward(backend):
    c = c_is_a_plus_b()
    ex = c.bind(ctx=backend, args={"a": nna.ones([2, 3]), "b": nna.ones([2, 3])})
    ex.forward()
    assert len(ex.outputs) == 1  # number of outputs = 1
    np.testing.assert_array_equal(host(ex.outputs[0]), [[2., 2., 2.], [2., 2., 2.]])
    assert ex.outputs[0].head == f"{backend}:0"


def test_bind_other_data(backend):
    c = c_is_a_plus_b()
    # mx.gpu() with (3, 4) arrays: another context and other shapes (re-inferred)
    ex_gpu = c.bind(ctx=backend, args={"a": nna.ones([3, 4]) * 2, "b": nna.ones([3, 4]) * 3})
    ex_gpu.forward()
    np.testing.assert_array_equal(host(ex_gpu.outputs[0]), np.full((3, 4), 5.0, np.float32))


def test_bind_backward_and_simple_bind(backend):
    c = c_is_a_plus_b()
    ex = c.bind(backend, {"a": nna.full((2, 3), 4.0), "b": nna.ones((2, 3))})
    ex.forward()
    ex.backward(nna.full((2, 3), 3.0))
    np.testing.assert_array_equal(host(ex.grad_dict["a"]), np.full((2, 3), 3.0))
    np.testing.assert_array_equal(host(ex.grad_dict["b"]), np.full((2, 3), 3.0))
    # simple_bind: arrays are allocated for the arguments; here they are the Variables'
    ex = c.simple_bind(backend)
    ex.arg_dict["a"].fill(1.5)
    ex.arg_dict["b"].fill(0.5)
    np.testing.assert_array_equal(host(ex.forward()[0]), np.full((2, 3), 2.0))


def test_eval(backend):
    c = c_is_a_plus_b()
    ex = c.eval(backend, a=nna.ones([2, 3]), b=nna.ones([2, 3]))
    assert len(ex) == 1
    np.testing.assert_array_equal(host(ex[0]), [[2., 2., 2.], [2., 2., 2.]])


def test_json_save_load(backend, tmp_path):
    c = c_is_a_plus_b()
    doc = json.loads(c.to_json())  # print(c.tojson()): nodes a, b and the add
    text = json.dumps(doc)
    assert all(n in text for n in ('"a"', '"b"', '"add0"'))
    c.save(tmp_path / "symbol-c.json")
    c2 = Graph.load(tmp_path / "symbol-c.json")
    assert c.to_json() == c2.to_json()  # True
    (out,) = c2.eval(backend, a=nna.ones([2, 3]), b=nna.ones([2, 3]))
    np.testing.assert_array_equal(host(out), np.full((2, 3), 2.0))


def test_cast_infer_type(backend):
    a = Variable((2, 3), name="data")
    b = F.cast(a, "float16")
    arg, out = Graph(b).infer_type(data="float32")
    assert list(arg.values()) == [np.float32] and list(out.values()) == [np.float16]
    c = F.cast(a, "uint8")
    arg, out = Graph(c).infer_type(data="int32")
    assert list(arg.values()) == [np.int32] and list(out.values()) == [np.uint8]


def test_shared_arrays(backend):
    a = Variable((2, 3), name="a")
    b = Variable((2, 3), name="b")
    c = Variable((2, 3), name="c")
    d = a + b * c
    data = nna.ones((2, 3)) * 2
    ex = Graph(d).bind(ctx=backend, args={"a": data, "b": data, "c": data})
    ex.forward()
    assert ex.arg_dict["a"] is ex.arg_dict["b"] is ex.arg_dict["c"] is data
    np.testing.assert_array_equal(host(ex.outputs[0]), np.full((2, 3), 6.0))
