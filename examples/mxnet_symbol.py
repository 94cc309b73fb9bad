"""MXNet's Symbol tutorial with ``grad.Graph``: declare a network first, then inspect,
compose, infer shapes and types, bind to arrays, run, save and draw it.

Each step prints what it shows and checks its result against numpy; the walk runs on
every available backend (``--backend`` picks one; default: all of numpy, opencl, cuda
that are available here).

    python examples/mxnet_symbol.py
    python examples/mxnet_symbol.py --backend opencl
"""

from __future__ import annotations

import os
import sys
import tempfile

import _cli
import numpy as np

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, nn
from nnarray.grad import Graph, Variable


def check(what: str, got, want) -> None:
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-5, err_msg=what)
    print(f"  ok  {what}")


def basic_operations(ctx: str) -> None:
    print("basic operations: named placeholders, auto-named nodes")
    grad.reset_names()
    a = Variable((2, 2), name="a")
    b = Variable((2, 2), name="b")
    c = a + b
    print(f"  {a.name}, {b.name}, {c.name}")
    d = a * b
    e = F.matmul(a, b)
    f = F.reshape(d + e, (1, 4))
    g = F.broadcast_to(f, (2, 4))
    graph = Graph(g)
    print(f"  arguments {graph.arguments()}, outputs {graph.outputs()}")
    an, bn = np.ones((2, 2), np.float32), np.full((2, 2), 2, np.float32)
    (out,) = graph.eval(ctx, a=nna.array(an), b=nna.array(bn))
    check("a*b + a@b reshaped and broadcast", out.numpy(),
          np.broadcast_to((an * bn + an @ bn).reshape(1, 4), (2, 4)))


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(20, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        with grad.name_scope("fc1"):
            h = F.relu(self.fc1(x), name="relu1")
        return F.softmax(self.fc2(h), name="out")


def neural_network(ctx: str) -> Graph:
    print("a network from nn modules: arguments in use order, named by parameters")
    model = MLP()
    data = Variable((4, 20), name="data")
    net = Graph(model(data), params=model.parameters())
    print(f"  arguments {net.arguments()}")
    print(f"  outputs   {net.outputs()}")
    assert net.arguments() == ["data", "fc1.W", "fc1.b", "fc2.W", "fc2.b"]
    w = Variable((20, 8), name="myweight")
    h = F.affine(data, w, name="fc3")
    print(f"  an explicit weight is an argument under its name: {Graph(h).arguments()}")
    assert Graph(h).arguments() == ["data", "myweight"]
    return net


def composition(ctx: str) -> None:
    print("composition: substitute an argument with another graph")
    data = Variable((4, 20), name="data")
    net1 = Graph(F.affine(data, Variable((20, 10), name="w1"), name="fc1"))
    data2 = Variable((4, 10), name="data2")
    net2 = Graph(F.affine(data2, Variable((10, 10), name="w2"), name="fc2"))
    composed = net2(data2=net1)
    print(f"  net2(data2=net1).arguments() = {composed.arguments()}")
    assert composed.arguments() == ["data", "w1", "w2"]


def conv_factory(x, c_in: int, c_out: int, kernel: int, pad: int, name: str):
    """Convolution -> BatchNorm -> ReLU, its arguments named after ``name``."""
    with grad.name_scope(name):
        w = Variable((c_out, c_in, kernel, kernel), need_grad=True, name=f"{name}_weight")
        bias = Variable((c_out,), need_grad=True, name=f"{name}_bias")
        h = F.conv2d(x, w, bias, pad=pad, name="conv")
        stat = (1, c_out, 1, 1)
        beta, gamma = Variable(stat, name=f"{name}_beta"), Variable(stat, name=f"{name}_gamma")
        mean, var = Variable(stat, name=f"{name}_mean"), Variable(stat, name=f"{name}_var")
        h = F.batch_normalization(h, beta, gamma, mean, var, name="bn")
        return F.relu(h, name="relu")


def inception(x, c_in: int) -> Variable:
    b1 = conv_factory(x, c_in, 8, 1, 0, "b1x1")
    b3 = conv_factory(conv_factory(x, c_in, 4, 1, 0, "b3r"), 4, 8, 3, 1, "b3x3")
    b5 = conv_factory(conv_factory(x, c_in, 2, 1, 0, "b5r"), 2, 4, 5, 2, "b5x5")
    pool = F.max_pooling(x, 3, stride=1, pad=1, name="pool")
    bp = conv_factory(pool, c_in, 4, 1, 0, "bproj")
    return F.concatenate([b1, b3, b5, bp], axis=1, name="concat")


def shape_inference(ctx: str) -> None:
    print("modular networks and shape inference from the input shape alone")
    x = Variable((1, 3, 8, 8), name="data")
    g = Graph(inception(conv_factory(x, 3, 6, 3, 1, "stem"), 6))
    args, outs = g.infer_shape(data=(2, 3, 28, 28))
    print(f"  {len(args)} arguments, e.g. b3x3_weight {args['b3x3_weight']}; outputs {outs}")
    assert outs == {"concat": (2, 24, 28, 28)}
    try:
        g.infer_shape(data=(2, 5, 28, 28))
    except nna.ShapeError as err:
        print(f"  an incompatible shape raises: {str(err)[:110]}...")
    else:
        raise AssertionError("no ShapeError")
    dot = grad.to_dot(g, shapes=True)
    print(f"  to_dot(g, shapes=True): {dot.count('->')} edges labelled with shapes")


def group(ctx: str) -> None:
    print("a group of outputs")
    data = Variable((4, 6), name="data")
    h = F.relu(F.affine(data, Variable((6, 3), name="fc1_weight"), name="fc1"), name="relu1")
    out1 = F.softmax(h, name="softmax")
    out2 = F.mean_squared_error(h, Variable((4, 3), name="label"), name="regression")
    g = Graph([out1, out2])
    print(f"  outputs {g.outputs()}")
    assert g.outputs() == ["softmax", "regression"]


def type_inference(ctx: str) -> None:
    print("type inference through cast")
    a = Variable((2, 3), name="data")
    g = Graph([F.cast(a, np.float16, name="half"), F.cast(a, np.int32, name="int")])
    args, outs = g.infer_type(data="float32")
    print(f"  {args} -> {outs}")
    assert outs == {"half": np.float16, "int": np.int32}
    b = Variable((2, 3), dtype=np.int32, name="labels")
    args, outs = Graph(F.cast(b, np.uint8, name="bytes")).infer_type(labels="int32")
    print(f"  {args} -> {outs}")
    assert outs == {"bytes": np.uint8}


def bind_and_run(ctx: str) -> None:
    print(f"bind and run on {ctx}")
    a = Variable((2, 3), name="a")
    b = Variable((2, 3), name="b")
    c = a + b
    g = Graph(c)
    ex = g.bind(ctx, {"a": nna.ones((2, 3)), "b": nna.ones((2, 3))})
    ex.forward()
    check("executor outputs", ex.outputs[0].numpy(), 2)
    ex.backward(nna.ones((2, 3)))
    check("gradients (grad_req='write')", ex.grad_dict["a"].numpy(), 1)
    ex = g.bind(ctx, {"a": nna.full((3, 4), 2.0), "b": nna.full((3, 4), 3.0)})
    check("binding arrays of new shapes re-infers", ex.forward()[0].numpy(), np.full((3, 4), 5))
    check("eval = bind + forward", g.eval(ctx, a=nna.ones((2, 3)), b=nna.ones((2, 3)))[0].numpy(),
          2)
    x, y, z = Variable((2, 3), name="a"), Variable((2, 3), name="b"), Variable((2, 3), name="c")
    shared = nna.full((2, 3), 2.0)
    ex = Graph(x * y + z).bind(ctx, {"a": shared, "b": shared, "c": shared})
    assert ex.arg_dict["a"] is ex.arg_dict["b"] is shared
    check("one array bound to several arguments", ex.forward()[0].numpy(), 6)


def save_and_load(ctx: str, net: Graph) -> None:
    print("save and load: structure, not data")
    s = net.to_json()
    assert Graph.from_json(s).to_json() == s
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "net.json")
        net.save(path)
        loaded = Graph.load(path)
    print(f"  to_json() round-trips exactly ({len(s)} characters); loaded arguments "
          f"{loaded.arguments()}")
    try:
        loaded.bind(ctx, {"data": nna.ones((4, 20))})
    except grad.GraphError as err:
        print(f"  running it without its parameters raises: {err}")
    else:
        raise AssertionError("no GraphError")
    params = {n: v.data for n, v in net.argument_variables().items() if n != "data"}
    x = nna.array(np.random.default_rng(0).random((4, 20), np.float32))
    check("the loaded graph with its parameters bound", loaded.eval(ctx, data=x, **params)[0]
          .numpy(), net.eval(ctx, data=x)[0].numpy())


def memory(ctx: str) -> None:
    print("planned memory: a 24-op elementwise chain on 4 MB arrays")
    x = Variable((1024, 1024), name="x")
    h = x
    for i in range(24):
        h = F.tanh(h) if i % 2 else h * 1.01
    ex = Graph(h).bind(ctx, {"x": nna.ones((1024, 1024))}, grad_req="null")
    ex.forward()
    nna.reset_peak_memory(ctx)
    ex.forward()
    peak = nna.memory_stats(ctx)["peak"]
    print(f"  executor peak: {peak / 2**20:.0f} MiB ({peak / (4 << 20):.0f} buffers of 4 MiB)")


def main(argv: list[str] | None = None) -> int:
    ap = _cli.parser(__doc__)
    ap.set_defaults(backend=None)
    args = ap.parse_args(argv)
    ctxs = [args.backend] if args.backend else \
        [b for b in ("numpy", "opencl", "cuda") if nna.backends.why_unavailable(b) is None]
    if args.backend and _cli.unavailable(args.backend):
        return 2
    for ctx in ctxs:
        print(f"== {ctx}")
        with nna.context_scope(ctx):
            basic_operations(ctx)
            net = neural_network(ctx)
            composition(ctx)
            shape_inference(ctx)
            group(ctx)
            type_inference(ctx)
            bind_and_run(ctx)
            save_and_load(ctx, net)
            memory(ctx)
    print("all steps done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
