"""Graphs as objects (API §8): names, Graph, inference, composition, Executor, planned
memory, JSON, DOT — on every backend."""

from __future__ import annotations

import json

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, nn
from nnarray.grad import Graph, GraphError, PythonFunction, Variable


def _nd(a):
    return nna.NdArray.from_numpy_array(np.asarray(a))


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(6, 5)
        self.fc2 = nn.Linear(5, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


# -- names ----------------------------------------------------------------------------------
def test_auto_names_count_per_op_and_scope() -> None:
    grad.reset_names()
    a = Variable((2, 3), name="a")
    b = Variable((2, 3), name="b")
    c = a + b
    assert c.name == "add0" and a.name == "a"
    assert (c * a).name == "mul0" and (c + a).name == "add1"
    with grad.name_scope("layer1"):
        assert F.relu(c).name == "layer1/relu0"
        with grad.name_scope("b"):
            assert F.relu(c).name == "layer1/b/relu0"
            assert F.affine(a, Variable((3, 4))).name == "layer1/b/affine0"
    assert F.relu(c).name == "relu0"
    grad.reset_names()
    assert (a + b).name == "add0"


def test_auto_names_start_again_once_their_nodes_are_freed() -> None:
    a = Variable((2, 3), name="a")
    with grad.name_scope("freed"):  # counters of its own (other tests' nodes may live)
        c = a + a
        d = a + a
        assert (c.name, d.name) == ("freed/add0", "freed/add1")
        del c, d
        assert (a + a).name == "freed/add0"  # every add named here so far was freed


def test_every_function_takes_name() -> None:
    a = Variable((2, 3), name="a")
    w = Variable((3, 4), name="w")
    assert F.add(a, a, name="s").name == "s"
    assert (F.sum(a, axis=1, name="tot")).name == "tot"
    assert F.reshape(a, (3, 2), name="r").name == "r"
    fc = F.affine(a, w, Variable((4,)), name="fc1")
    assert fc.name == "fc1"
    assert all(n.label.startswith("fc1/") for n in (fc.parent.inputs[0].parent,))
    with grad.name_scope("net"):
        assert F.tanh(a, name="t").name == "net/t"
    parts = F.split(a, 3, axis=1)
    assert len({p.name for p in parts}) == 3
    # an NdArray call ignores the name
    np.testing.assert_allclose(F.tanh(_nd([1.0]), name="t").numpy(), np.tanh([1.0]), 1e-6)


# -- Graph ---------------------------------------------------------------------------------
def test_arguments_in_first_use_order_with_param_names() -> None:
    m = MLP()
    x = Variable((4, 6), name="data")
    g = Graph(m(x), params=m.parameters())
    assert g.arguments() == ["data", "fc1.W", "fc1.b", "fc2.W", "fc2.b"]
    w = Variable((3, 2), name="weight")
    g2 = Graph(F.matmul(Variable((4, 3)), w))
    assert g2.arguments() == ["arg0", "weight"]
    assert g2.outputs() == [g2.output_variables()[0].name]


def test_composition_makes_a_new_graph() -> None:
    grad.reset_names()
    d1 = Variable((4, 6), name="data")
    net1 = Graph(F.relu(F.affine(d1, Variable((6, 5), name="w1"))))
    d2 = Variable((4, 5), name="data2")
    net2 = Graph(F.tanh(F.affine(d2, Variable((5, 2), name="w2"))))
    before = net2.to_json()
    net = net2(data2=net1)
    assert net.arguments() == ["data", "w1", "w2"]
    assert net.infer_shape(data=(7, 6))[1] == {net.outputs()[0]: (7, 2)}
    assert net2.to_json() == before  # the original graph is unchanged
    assert net2(data2=d1.__class__((4, 5), name="z")).arguments() == ["z", "w2"]


def test_group_of_outputs() -> None:
    x = Variable((4, 3), name="x")
    sm = F.softmax(x, name="softmax")
    reg = F.mean_squared_error(x, Variable((4, 3), name="label"), name="regression")
    g = Graph([sm, reg])
    assert g.outputs() == ["softmax", "regression"]
    assert g.arguments() == ["x", "label"]


def _conv_bn_relu(x, c_in, c_out, name):
    with grad.name_scope(name):
        w = Variable((c_out, c_in, 3, 3), need_grad=True, name=f"{name}_w")
        h = F.conv2d(x, w, pad=1)
        gamma = Variable((1, c_out, 1, 1), name=f"{name}_gamma")
        beta = Variable((1, c_out, 1, 1), name=f"{name}_beta")
        rm = Variable((1, c_out, 1, 1), name=f"{name}_mean")
        rv = Variable((1, c_out, 1, 1), name=f"{name}_var")
        return F.relu(F.batch_normalization(h, beta, gamma, rm, rv))


def test_infer_shape_of_an_inception_block() -> None:
    x = Variable((1, 3, 8, 8), name="data")
    b1 = _conv_bn_relu(x, 3, 4, "b1")
    b2 = _conv_bn_relu(_conv_bn_relu(x, 3, 2, "b2a"), 2, 4, "b2b")
    b3 = _conv_bn_relu(F.max_pooling(x, 3, stride=1, pad=1), 3, 2, "b3")
    b4 = _conv_bn_relu(F.average_pooling(x, 3, stride=1, pad=1), 3, 2, "b4")
    out = F.concatenate([b1, b2, b3, b4], axis=1, name="concat")
    g = Graph(out)
    args, outs = g.infer_shape(data=(5, 3, 16, 16))
    assert outs == {"concat": (5, 12, 16, 16)}
    assert args["data"] == (5, 3, 16, 16) and args["b2b_w"] == (4, 2, 3, 3)
    assert x.shape == (1, 3, 8, 8)  # the original graph keeps its shapes
    with pytest.raises(nna.ShapeError, match=r"node 'b1/conv2d\d+|node 'b1/"):
        g.infer_shape(data=(5, 4, 16, 16))


def test_infer_type_through_cast() -> None:
    a = Variable((2, 3), name="a")
    h = F.cast(a * 2, np.float16, name="half")
    g = Graph([h, a + 1])
    args, outs = g.infer_type(a="float32")
    assert args == {"a": np.float32} and outs["half"] == np.float16
    i = Variable((3,), dtype=np.int32, name="i")
    g2 = Graph([F.cast(i + 1, np.float16, name="f16"), i * 2])
    args, outs = g2.infer_type(i="int64")
    assert args == {"i": np.int64} and outs["f16"] == np.float16
    assert list(outs.values())[1] == np.int64
    g3 = Graph(F.cast(i, np.uint8, name="u8"))  # the tutorial's int32 -> uint8
    assert g3.infer_type(i="int32") == ({"i": np.int32}, {"u8": np.uint8})


def test_cast_to_uint8_runs(backend) -> None:
    i = Variable((4,), dtype=np.int32, name="i")
    g = Graph(F.cast(i, np.uint8))
    got = g.eval(backend, i=nna.NdArray.from_numpy_array(np.array([1, 255, 256, 300],
                                                                   np.int32)))[0]
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got.numpy(), np.array([1, 255, 0, 44], np.uint8))


# -- Executor ---------------------------------------------------------------------------------
def test_bind_forward_backward_grad_req(backend) -> None:
    a = Variable((2, 3), name="a")
    b = Variable((2, 3), name="b")
    g = Graph(F.sum(a * b + a))
    an, bn = _rand(2, 3, seed=1), _rand(2, 3, seed=2)
    ex = g.bind(backend, {"a": _nd(an), "b": _nd(bn)}, grad_req="write")
    (out,) = ex.forward()
    np.testing.assert_allclose(out.numpy(), (an * bn + an).sum(), rtol=1e-5)
    assert ex.outputs[0] is out
    ex.backward()
    np.testing.assert_allclose(ex.grad_dict["a"].numpy(), bn + 1, rtol=1e-6)
    np.testing.assert_allclose(ex.grad_dict["b"].numpy(), an, rtol=1e-6)
    ex.forward()
    ex.backward()  # write: not accumulated
    np.testing.assert_allclose(ex.grad_dict["a"].numpy(), bn + 1, rtol=1e-6)
    ex2 = g.bind(backend, {"a": _nd(an), "b": _nd(bn)}, grad_req={"a": "add", "b": "null"})
    assert set(ex2.grad_dict) == {"a"}
    for _ in range(2):
        ex2.forward()
        ex2.backward()
    np.testing.assert_allclose(ex2.grad_dict["a"].numpy(), 2 * (bn + 1), rtol=1e-6)
    assert a.grad.numpy().sum() == 0  # the graph's own Variables are not touched


def test_bound_arrays_are_shared_and_outputs_of_new_shapes(backend) -> None:
    a = Variable((2, 3), name="a")
    b = Variable((2, 3), name="b")
    g = Graph(a * b)
    shared = _nd(np.full((2, 3), 3.0, np.float32))
    ex = g.bind(backend, {"a": shared, "b": shared})
    assert ex.arg_dict["a"] is shared and ex.arg_dict["b"] is shared
    np.testing.assert_allclose(ex.forward()[0].numpy(), 9.0)
    ex.backward(np.ones((2, 3), np.float32))
    np.testing.assert_allclose(ex.grad_dict["a"].numpy(), 3.0)
    big = _nd(np.full((5, 3), 2.0, np.float32))
    ex = g.bind(backend, {"a": big, "b": big})  # new shapes: inferred again
    assert ex.forward()[0].shape == (5, 3) and a.shape == (2, 3)
    a.d = 4.0
    out = g.bind(backend, {"b": _nd(np.ones((2, 3), np.float32))}).forward()[0]
    np.testing.assert_allclose(out.numpy(), 4.0)  # a takes its Variable's data
    np.testing.assert_allclose(g.eval(backend, a=shared, b=shared)[0].numpy(), 9.0)


#: Graphs whose recorded constants depend on the input's shape, and numpy on the same.
REBIND_CASES = {
    "xp.var axis=0": (lambda x: nna.var(x, axis=0), lambda a: a.var(0)),
    "xp.std axis=0": (lambda x: nna.std(x, axis=0), lambda a: a.std(0)),
    "xp.var correction=1": (lambda x: nna.var(x, axis=(0, 2), correction=1),
                            lambda a: a.var((0, 2), ddof=1)),
    "xp.var all": (lambda x: nna.var(x), lambda a: a.var()),
    "Variable.var()": (lambda x: x.var(axis=0), lambda a: a.var(0)),
    "mean axis=0": (lambda x: F.mean(x, axis=0), lambda a: a.mean(0)),
    "reshape(-1, 5)": (lambda x: F.reshape(x * 2.0, (-1, 5)), lambda a: (a * 2).reshape(-1, 5)),
    "reshape(-1)": (lambda x: x.reshape(-1), lambda a: a.reshape(-1)),
    "reshape(4, -1)": (lambda x: F.reshape(x, (4, -1)), lambda a: a.reshape(4, -1)),
    "reshape(N, -1)": (lambda x: F.reshape(x, (x.shape[0], -1)),
                       lambda a: a.reshape(a.shape[0], -1)),
    "broadcast_to(x.shape)": (lambda x: F.broadcast_to(F.sum(x, 0, True), x.shape) - x,
                              lambda a: a.sum(0, keepdims=True) - a),
    "xp.broadcast_arrays": (lambda x: nna.broadcast_arrays(F.sum(x, 0, True), x)[0],
                            lambda a: np.broadcast_to(a.sum(0, keepdims=True), a.shape)),
}


@pytest.mark.parametrize("case", list(REBIND_CASES))
def test_rebind_recomputes_shape_dependent_constants(backend, case) -> None:
    """A graph built for batch 8 and bound to batch 32 computes what numpy does for 32:
    constants taken from the shapes (a mean's N, a -1 in a reshape target, a broadcast
    target) follow the new shapes; after a JSON round trip too."""
    build, ref = REBIND_CASES[case]
    g = Graph(build(Variable((8, 4, 5), name="x")))
    for a in (_rand(8, 4, 5, seed=1), _rand(32, 4, 5, seed=2)):
        for gg in (g, Graph.from_json(g.to_json())):
            got = gg.bind(backend, {"x": _nd(a)}, grad_req="null").forward()[0].numpy()
            np.testing.assert_allclose(got, ref(a), rtol=1e-4, atol=1e-5, err_msg=case)


def test_executor_matches_static_graph_on_an_mlp(backend) -> None:
    """A bound executor's loss and gradients match the static graph's, and its backward
    leaves the parameters' own gradients as they were (it writes only its grad_dict)."""
    m = MLP()
    x = Variable.from_numpy_array(_rand(4, 6), name="data")
    t = Variable.from_numpy_array(_rand(4, 3, seed=5), name="t")
    loss = F.mean_squared_error(m(x), t)
    params = m.parameters()
    before = {n: p.grad.numpy().copy() for n, p in params.items()}
    g = Graph(loss, params=params)
    ex = g.bind(backend, {}, grad_req={n: "write" for n in params})
    ex.forward()
    ex.backward()
    untouched = {n: p.grad.numpy() for n, p in params.items()}
    with nna.context_scope(backend):
        loss.forward()
        m.zero_grad()
        loss.backward()
    np.testing.assert_allclose(ex.outputs[0].numpy(), loss.d, rtol=1e-5)
    for n, p in params.items():
        np.testing.assert_allclose(ex.grad_dict[n].numpy(), p.g, rtol=1e-4, atol=1e-6)
        np.testing.assert_array_equal(untouched[n], before[n], err_msg=n)
    new = g.bind(backend, {"data": _nd(_rand(9, 6)), "t": _nd(_rand(9, 3))}).forward()
    assert new[0].shape == ()


def test_executor_forward_is_one_generated_program(backend) -> None:
    """A bound graph of plain kernels runs its forward as one generated function (with
    the memory plan's releases written in): results follow new data, gradients match,
    and what backward retains is still checked for in-place changes."""
    a = Variable((3, 4), name="a")
    w = Variable((4, 2), name="w")
    g = Graph(F.sum(F.tanh(a @ w + 1.0)))
    wn = _rand(4, 2, seed=3)
    ex = g.bind(backend, {"a": _nd(_rand(3, 4)), "w": _nd(wn)}, grad_req={"w": "write"})
    for seed in (1, 2):
        an = _rand(3, 4, seed=seed)
        (out,) = ex.forward(a=an)
        hn = np.tanh(an @ wn + 1.0)
        np.testing.assert_allclose(out.numpy(), hn.sum(), rtol=1e-5)
        ex.backward()
        np.testing.assert_allclose(ex.grad_dict["w"].numpy(), an.T @ (1 - hn * hn),
                                   rtol=1e-4, atol=1e-6)
    assert ex.schedule().program is not None
    assert "generated: yes" in ex.schedule().describe()
    ex.forward()
    ex.arg_dict["w"].fill(0.5)  # matmul's retained input, changed after the forward pass
    with pytest.raises(GraphError, match="modified in place"):
        ex.backward()


def test_group_backward_with_out_grads(backend) -> None:
    a = Variable((3,), name="a")
    g = Graph([a * 2, F.sum(a * a)])
    an = np.array([1.0, 2.0, 3.0], np.float32)
    ex = g.bind(backend, {"a": _nd(an)})
    ex.forward()
    ex.backward([np.ones(3, np.float32), 1.0])
    np.testing.assert_allclose(ex.grad_dict["a"].numpy(), 2 + 2 * an, rtol=1e-6)


def test_backward_needs_this_executors_forward(backend) -> None:
    a = Variable((3,), name="a")
    g = Graph(F.sum(a * a))
    ex1 = g.bind(backend, {"a": _nd(np.ones(3, np.float32))})
    ex2 = g.bind(backend, {"a": _nd(np.ones(3, np.float32))})
    with pytest.raises(GraphError, match="forward"):
        ex1.backward()
    ex1.forward()
    ex2.forward()
    with pytest.raises(GraphError, match="another executor"):
        ex1.backward()


# -- memory -----------------------------------------------------------------------------------
MB = 1 << 20


def _chain(need_grad: bool):
    """24 ops on a 1 MiB array (pool blocks of the size 4 MiB ones take; the peaks, in
    buffers, are those of 1024 x 1024: 3-4 planned, 26-27 unplanned, 0.53-0.63 trained)."""
    x = Variable((512, 512), need_grad=need_grad, name="x")
    h = x
    for i in range(24):
        h = F.tanh(h) if i % 2 else h * 1.01
    return x, h


@pytest.mark.parametrize("be", ["numpy", "opencl"])
def test_planned_inference_peaks_at_a_handful_of_buffers(be) -> None:
    from conftest import needs
    needs(be)
    x, h = _chain(False)
    g = Graph(h)
    buf = MB
    x.data = xd = _nd(_rand(512, 512))
    ex = g.bind(be, {"x": xd}, grad_req="null")
    ex.forward()
    nna.reset_peak_memory(be)
    ex.forward()
    planned = nna.memory_stats(be)["peak"]
    with nna.context_scope(be):
        h.forward()
        nna.reset_peak_memory(be)
        h.forward()
    unplanned = nna.memory_stats(be)["peak"]
    assert planned <= 5 * buf, planned / buf
    assert unplanned >= 24 * buf, unplanned / buf
    np.testing.assert_allclose(ex.outputs[0].numpy(), h.d, rtol=1e-5)


@pytest.mark.parametrize("be", ["numpy", "opencl"])
def test_training_executor_peaks_below_the_unplanned_graph(be) -> None:
    from conftest import needs
    needs(be)
    x, h = _chain(True)
    loss = F.sum(h)
    del h
    g = Graph(loss)
    xd = _nd(_rand(512, 512))
    x.data = xd
    with nna.context_scope(be):
        for _ in range(2):
            nna.reset_peak_memory(be)
            loss.forward()
            loss.backward()
    unplanned = nna.memory_stats(be)["peak"]
    ex = g.bind(be, {"x": xd})
    for _ in range(2):
        nna.reset_peak_memory(be)
        ex.forward()
        ex.backward()
    planned = nna.memory_stats(be)["peak"]
    assert planned < 0.8 * unplanned, (planned / MB, unplanned / MB)
    np.testing.assert_allclose(ex.grad_dict["x"].numpy(), x.g / 2, rtol=1e-4)


def test_memory_stats_count_allocations(backend) -> None:
    nna.reset_peak_memory()
    before = nna.memory_stats()["in_use"]
    a = nna.zeros((512, 1024)) + 1.0
    st = nna.memory_stats()
    assert st["in_use"] >= before + 2 * MB and st["peak"] >= st["in_use"]
    del a
    assert nna.memory_stats()["in_use"] <= st["in_use"] - 2 * MB


# -- JSON -------------------------------------------------------------------------------------
def test_json_round_trip_and_unbound_parameters(backend, tmp_path) -> None:
    m = MLP()
    x = Variable((4, 6), name="data")
    y = F.softmax(m(x), name="prob")
    g = Graph(y, params=m.parameters())
    s = g.to_json()
    assert Graph.from_json(s).to_json() == s
    doc = json.loads(s)
    assert [a["name"] for a in doc["arguments"]] == g.arguments()
    assert "values" not in s  # structure, not data
    g.save(tmp_path / "net.json")
    h = Graph.load(tmp_path / "net.json")
    assert h.arguments() == g.arguments() and h.outputs() == ["prob"]
    with pytest.raises(GraphError, match="fc1.W, fc1.b, fc2.W, fc2.b"):
        h.bind(backend, {"data": _nd(_rand(4, 6))})
    xs = _rand(4, 6)
    args = {n: p.data for n, p in m.parameters().items()}
    got = h.eval(backend, data=_nd(xs), **args)[0].numpy()
    want = g.eval(backend, data=_nd(xs))[0].numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5)


class Twice(PythonFunction):
    def __init__(self, k=2.0):
        super().__init__()
        self.k = k

    def setup_impl(self, inputs, outputs):
        outputs[0].reset_shape(inputs[0].shape, True)

    def forward_impl(self, inputs, outputs):
        outputs[0].d = inputs[0].d * self.k

    def backward_impl(self, inputs, outputs, propagate_down, accum):
        g = outputs[0].g * self.k
        inputs[0].g = inputs[0].g + g if accum[0] else g


class Unregistered(Twice):
    pass


def test_python_functions_serialize_only_when_registered() -> None:
    x = Variable((3,), name="x")
    with pytest.raises(GraphError, match="Unregistered"):
        Graph(Unregistered()(x)).to_json()
    grad.register_function(Twice)
    g = Graph(Twice(3.0)(x))
    s = g.to_json()
    h = Graph.from_json(s)
    assert h.to_json() == s
    out = h.eval("numpy", x=_nd(np.array([1.0, 2.0, 3.0], np.float32)))[0]
    np.testing.assert_allclose(out.numpy(), [3.0, 6.0, 9.0])


# -- DOT -------------------------------------------------------------------------------------
def test_to_dot_with_shapes() -> None:
    grad.reset_names()
    a = Variable((2, 3), name="a")
    w = Variable((3, 4), name="w")
    y = F.relu(F.matmul(a, w))
    dot = grad.to_dot(Graph(y), shapes=True)
    assert dot.startswith("digraph") and 'label="(2, 3)"' in dot and 'label="(2, 4)"' in dot
    assert "relu0" in dot and "matmul0" in dot
    assert grad.to_dot(y).startswith("digraph")


# -- issue 15 ---------------------------------------------------------------------------------
def test_static_value_under_auto_forward_is_computed(backend) -> None:
    x = Variable.from_numpy_array(np.array([0.5, 1.0], np.float32))
    ys = F.tanh(x)
    with grad.auto_forward():
        s = F.sum(ys * 2)
        s2 = F.sum(2 * F.tanh(x) + ys)
    np.testing.assert_allclose(float(s.d), 2 * np.tanh([0.5, 1.0]).sum(), rtol=1e-6)
    np.testing.assert_allclose(float(s2.d), 3 * np.tanh([0.5, 1.0]).sum(), rtol=1e-6)
    zs = F.tanh(x)
    with grad.auto_forward():
        z = Twice(2.0)(zs)  # a PythonFunction on a static value computes it first too
    np.testing.assert_allclose(z.d, 2 * np.tanh([0.5, 1.0]), rtol=1e-6)


def test_write_through_d_to_saved_data_raises(backend) -> None:
    x = Variable.from_numpy_array(np.array([0.5, 1.0], np.float32), need_grad=True)
    with grad.auto_forward():
        y = F.sum(x * x)
    _ = x.d  # reading is fine
    y.backward()
    with grad.auto_forward():
        y = F.sum(x * x)
    x.d[0] = 5.0
    with pytest.raises(GraphError, match="modified in place"):
        y.backward()
    # a static training loop writing its input through .d between iterations is fine
    z = F.sum(F.tanh(x) * x)
    for v in (1.0, 2.0):
        x.d[...] = v
        z.forward()
        z.backward()


def test_reset_shape_of_an_input_raises_instead_of_old_shapes() -> None:
    x = Variable((2, 3))
    y = F.sum(F.tanh(x) * 2, axis=1)
    y.forward()
    x.reset_shape((4, 3))
    with pytest.raises(GraphError, match="changed shape"):
        y.forward()
    x2 = Variable((2, 3))
    y2 = F.sum(F.tanh(x2), axis=1)
    x2.reset_shape((4, 3))
    with pytest.raises(GraphError, match="tanh"):
        y2.forward()
    g = Graph(F.sum(F.tanh(Variable((2, 3), name="x")), axis=1))
    assert g.bind("numpy", {"x": _nd(np.ones((4, 3), np.float32))}).forward()[0].shape == (4,)


class Halves(PythonFunction):
    def min_outputs(self):
        return 2

    def setup_impl(self, inputs, outputs):
        n = inputs[0].shape[0] // 2
        outputs[0].reset_shape((n,), True)
        outputs[1].reset_shape((inputs[0].shape[0] - n,), True)

    def forward_impl(self, inputs, outputs):
        n = outputs[0].shape[0]
        outputs[0].d = inputs[0].d[:n]
        outputs[1].d = inputs[0].d[n:]

    def backward_impl(self, inputs, outputs, propagate_down, accum):
        g = np.concatenate([outputs[0].g, outputs[1].g])
        inputs[0].g = inputs[0].g + g if accum[0] else g


def test_outputs_of_a_node_with_several_are_numbered(backend) -> None:
    grad.reset_names()
    x = Variable((4,), name="x")
    lo, hi = Halves()(x)
    assert (lo.name, hi.name) == ("halves0_output0", "halves0_output1")
    g = Graph([lo, F.sum(hi * 3.0)])
    assert g.outputs() == ["halves0_output0", "sum0"]
    ex = g.bind(backend, {"x": _nd(np.arange(4, dtype=np.float32))})
    lo_v, s = ex.forward()
    np.testing.assert_allclose(lo_v.numpy(), [0.0, 1.0])
    np.testing.assert_allclose(s.numpy(), 15.0)
    ex.backward([np.ones(2, np.float32), 1.0])
    np.testing.assert_allclose(ex.grad_dict["x"].numpy(), [1.0, 1.0, 3.0, 3.0])


def _many_ops(n: int, hw: int):
    """A graph touching most ops (composites, indexing, splits, reductions, casts)."""
    grad.reset_names()
    x = Variable((n, 3, hw, hw), name="x")
    w = Variable((5, 3, 3, 3), name="w")
    h = F.max_pooling(F.conv2d(x, w, pad=1), 2)
    a = F.reshape(h, (n, -1))
    b = F.transpose(a, (1, 0))
    c = F.concatenate([a, a * 2], axis=1)
    parts = F.split(c, 2, axis=1)
    d = F.clip(parts[0], -1.0, 1.0) + F.leaky_relu(parts[1], 0.2)
    e = F.where(d > 0, d, F.exp(d))
    t = Variable((n,), dtype=np.int32, name="t")
    loss = F.mean(F.sum(F.cast(F.softmax_cross_entropy(e[:, 1:3], t), np.float64), axis=0,
                        keepdims=True))
    h2 = F.average_pooling(x, 2)
    st = F.stack([F.sum(h2, axis=(1, 2, 3), keepdims=True) * h2, h2], axis=0)
    mx = F.maximum(F.log_softmax(b, axis=0), F.min(b) * 0.5) + F.sqrt(F.abs(b)) - b ** 2
    return Graph([loss, F.argmax(c, axis=1), st, mx, F.mean_squared_error(a, a * 0.5),
                  F.tanh(a)])


def test_many_ops_round_trip_and_reinfer(backend) -> None:
    small, big = _many_ops(2, 4), _many_ops(3, 8)
    s = small.to_json()
    loaded = Graph.from_json(s)
    assert loaded.to_json() == s
    rng = np.random.default_rng(0)

    def args(n, hw):
        return {"x": _nd(rng.random((n, 3, hw, hw), np.float32)),
                "w": _nd(rng.random((5, 3, 3, 3), np.float32)),
                "t": _nd(np.arange(n, dtype=np.int32) % 2)}

    a = args(2, 4)
    for p, q in zip(small.eval(backend, **a), loaded.eval(backend, **a)):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5)
    # the small graph bound to the big shapes computes what the big graph does
    assert small.infer_shape(x=(3, 3, 8, 8), t=(3,))[1] == \
        {k: v.shape for k, v in zip(big.outputs(), big.output_variables())}
    b = args(3, 8)
    want = [q.numpy() for q in big.eval(backend, **b)]
    for p, q in zip(small.eval(backend, **b), want):
        np.testing.assert_allclose(p.numpy(), q, rtol=1e-5)
    for p, q in zip(loaded.eval(backend, **b), want):  # JSON keeps the re-run calls too
        np.testing.assert_allclose(p.numpy(), q, rtol=1e-5)


def test_define_by_run_graph_reinfers_through_its_calls(backend) -> None:
    # (define-by-run records only where a gradient flows: both inputs need one here)
    x = Variable.from_numpy_array(_rand(2, 3, 4, 4), need_grad=True, name="x")
    w = Variable.from_numpy_array(_rand(5, 3, 3, 3, seed=1), need_grad=True, name="w")
    with grad.auto_forward():
        y = F.conv2d(x, w, pad=1)[:, 1:3]
    g = Graph(y)
    xs = _rand(3, 3, 8, 8, seed=2)
    got = g.eval(backend, x=_nd(xs))[0]
    with grad.auto_forward():
        want = F.conv2d(Variable.from_numpy_array(xs), w, pad=1)[:, 1:3]
    assert got.shape == (3, 2, 8, 8)
    np.testing.assert_allclose(got.numpy(), want.d, rtol=1e-4, atol=1e-5)


def test_define_by_run_graphs_are_named_in_execution_order(backend) -> None:
    grad.reset_names()
    x = Variable.from_numpy_array(np.ones((2, 3), np.float32), need_grad=True, name="x")
    with grad.auto_forward():
        y = F.sum(F.tanh(x + 1.0) + x)
    g = Graph(y)
    assert g.nodes() == ["add0", "tanh0", "add1", "sum0"] and g.arguments() == ["x"]
    np.testing.assert_allclose(g.eval(backend)[0].numpy(), y.d, rtol=1e-6)


class DropBN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.bn = nn.BatchNorm(3)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(F.relu(self.bn(self.fc(x))))


def test_forward_is_train_false_runs_dropout_and_batchnorm_in_inference(backend) -> None:
    m = DropBN()
    m.train()
    x = Variable((6, 4), name="data")
    g = Graph(m(x), params=m.parameters())
    xs = _rand(6, 4, seed=3)
    ex = g.bind(backend, {"data": _nd(xs)})
    ex.forward(is_train=True)
    assert (ex.outputs[0].numpy() == 0).mean() > 0.3  # dropout active
    rm = m.bn.running_mean.numpy().copy()
    (out,) = ex.forward(is_train=False)
    m.eval()
    with grad.auto_forward():
        want = m(Variable.from_numpy_array(xs)).d
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(m.bn.running_mean.numpy(), rm)  # not updated in inference
    np.testing.assert_allclose(g.eval(backend, data=_nd(xs))[0].numpy(), want, rtol=1e-5,
                               atol=1e-6)


def test_bind_takes_a_list_in_argument_order_and_checks_names() -> None:
    a, b = Variable((2,), name="a"), Variable((2,), name="b")
    g = Graph(a - b)
    out = g.bind("numpy", [_nd(np.array([3.0, 4.0], np.float32)),
                           _nd(np.array([1.0, 1.0], np.float32))]).forward()[0]
    np.testing.assert_allclose(out.numpy(), [2.0, 3.0])
    with pytest.raises(GraphError, match="'c'"):
        g.bind("numpy", {"c": _nd(np.ones(2, np.float32))})
    with pytest.raises(GraphError, match="grad_req names 'z'"):
        g.bind("numpy", {}, grad_req={"z": "write"})
    with pytest.raises(ValueError, match="grad_req"):
        g.bind("numpy", {}, grad_req="sometimes")
