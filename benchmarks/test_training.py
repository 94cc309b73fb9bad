"""Training steps: the Chainer-tutorial MLP and a small CNN on 8x8 digits-sized input.

nnarray runs them through ``nnarray.grad``/``nn``/``solvers`` (define-by-run); the
baseline is a hand-written numpy forward + backward + SGD update of the same network.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F

from .conftest import Backend, Reference, expect, measure, require

LR = 0.01
MLP = "mlp step 64x1000-100-10 relu mse sgd"
CNN = "cnn step 64x1x8x8 conv16-pool-fc10 softmax-ce sgd"


def _rand(*shape: int, seed: int, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


# -- data and initial parameters shared by every implementation ---------------------------
def mlp_data() -> tuple[np.ndarray, np.ndarray]:
    return _rand(64, 1000, seed=0), _rand(64, 10, seed=1)


def mlp_params() -> dict[str, np.ndarray]:
    return {"l1.W": _rand(1000, 100, seed=2, scale=1000**-0.5), "l1.b": np.zeros(100, "f4"),
            "l2.W": _rand(100, 10, seed=3, scale=0.1), "l2.b": np.zeros(10, "f4")}


def cnn_data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.random((64, 1, 8, 8), dtype=np.float32) * 16, rng.integers(0, 10, 64)


def cnn_params() -> dict[str, np.ndarray]:
    return {"conv.W": _rand(16, 1, 3, 3, seed=2, scale=1 / 3), "conv.b": np.zeros(16, "f4"),
            "fc.W": _rand(256, 10, seed=3, scale=1 / 16), "fc.b": np.zeros(10, "f4")}


# -- hand-written references (numpy or cupy) -----------------------------------------------
class MLPReference:
    """64x1000 -> Linear 100 -> relu -> Linear 10 -> MSE -> SGD, backprop by hand."""

    def __init__(self, xp: Any, asarray: Any) -> None:
        self.xp = xp
        self.p = {k: asarray(v) for k, v in mlp_params().items()}
        self.x, self.t = (asarray(v) for v in mlp_data())

    def step(self) -> Any:
        p, x = self.p, self.x
        h = x @ p["l1.W"] + p["l1.b"]
        a = self.xp.maximum(h, 0)
        d = a @ p["l2.W"] + p["l2.b"] - self.t
        gy = d * (2.0 / d.size)
        g = {"l2.W": a.T @ gy, "l2.b": gy.sum(0)}
        gh = (gy @ p["l2.W"].T) * (h > 0)
        g["l1.W"], g["l1.b"] = x.T @ gh, gh.sum(0)
        for k, v in g.items():
            p[k] -= LR * v
        return (d * d).mean()


class CNNReference:
    """conv 1->16 3x3 pad 1 -> relu -> 2x2 max pool -> Linear 256->10 -> softmax CE -> SGD."""

    def __init__(self, xp: Any, asarray: Any) -> None:
        self.xp = xp
        self.p = {k: asarray(v) for k, v in cnn_params().items()}
        x, t = cnn_data()
        n = len(x)
        xp_ = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        win = np.lib.stride_tricks.sliding_window_view(xp_, (3, 3), axis=(2, 3))
        cols = win.transpose(0, 1, 4, 5, 2, 3).reshape(n, 9, 64)  # input needs no gradient
        self.cols, self.t = asarray(np.ascontiguousarray(cols)), asarray(t)
        self.onehot = asarray(np.eye(10, dtype=np.float32)[t])

    def step(self) -> Any:
        xp, p, cols = self.xp, self.p, self.cols
        n = cols.shape[0]
        h = xp.matmul(p["conv.W"].reshape(16, 9), cols) + p["conv.b"][:, None]  # (n,16,64)
        a = xp.maximum(h, 0).reshape(n, 16, 4, 2, 4, 2)
        pooled = a.max(axis=(3, 5))
        mask = a == pooled[:, :, :, None, :, None]
        flat = pooled.reshape(n, 256)
        z = flat @ p["fc.W"] + p["fc.b"]
        z = z - z.max(axis=1, keepdims=True)
        e = xp.exp(z)
        s = e.sum(axis=1, keepdims=True)
        loss = (xp.log(s[:, 0]) - (z * self.onehot).sum(1)).mean()
        gz = (e / s - self.onehot) / n
        g = {"fc.W": flat.T @ gz, "fc.b": gz.sum(0)}
        gp = (gz @ p["fc.W"].T).reshape(n, 16, 4, 1, 4, 1)
        gh = (mask * gp).reshape(n, 16, 64) * (h > 0)
        g["conv.W"] = xp.tensordot(gh, cols, axes=((0, 2), (0, 2))).reshape(16, 1, 3, 3)
        g["conv.b"] = gh.sum(axis=(0, 2))
        for k, v in g.items():
            p[k] -= LR * v
        return loss


# -- nnarray ------------------------------------------------------------------------------
def _layers() -> tuple[Any, Any, Any]:
    grad = require("nnarray.grad", "Variable", "auto_forward")
    nn = require("nnarray.nn", "Module", "Linear", "Conv2d")
    solvers = require("nnarray.solvers", "SGD")
    return grad, nn, solvers


def build_mlp(nn: Any) -> Any:
    class MLPNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.l1 = nn.Linear(1000, 100)
            self.l2 = nn.Linear(100, 10)

        def forward(self, x: Any) -> Any:
            return self.l2(F.relu(self.l1(x)))

    return MLPNet()


def build_cnn(nn: Any) -> Any:
    class CNNNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(1, 16, 3, pad=1)
            self.fc = nn.Linear(256, 10)

        def forward(self, x: Any) -> Any:
            h = F.max_pooling(F.relu(self.conv(x)), 2)
            return self.fc(F.reshape(h, (h.shape[0], -1)))

    return CNNNet()


def nnarray_step(kind: str, params: dict[str, np.ndarray] | None = None,
                 static: bool = False, executor: bool = False) -> tuple[Any, Any]:
    """``(model, step)``: one training step of the MLP or CNN on the current context,
    define-by-run, or (``static``) on a graph built once and re-run with ``forward()``,
    or (``executor``) on that graph bound as a ``grad.Graph`` executor writing the
    parameters' gradients; ``params`` overrides the initial parameters."""
    grad, nn, solvers = _layers()
    model = build_mlp(nn) if kind == "mlp" else build_cnn(nn)
    for name, value in (params or {}).items():
        model.parameters()[name].d = value
    xs, ts = mlp_data() if kind == "mlp" else cnn_data()
    x, t = grad.Variable.from_numpy_array(xs), grad.Variable.from_numpy_array(ts)
    solver = solvers.SGD(LR)
    solver.set_parameters(model.parameters())

    def loss_of(y: Any) -> Any:
        if kind == "mlp":
            return F.mean_squared_error(y, t)
        return F.mean(F.softmax_cross_entropy(y, t))

    if executor:
        loss = loss_of(model(x))
        ps = model.parameters()
        ex = grad.Graph(loss, params=ps).bind(
            nna.get_current_context(), {}, grad_req=dict.fromkeys(ps, "write"),
            args_grad={n: p.grad for n, p in ps.items()})

        def step() -> Any:
            ex.forward()
            ex.backward()
            solver.update()
            return loss.__class__.from_ndarray(ex.outputs[0])
    elif static:
        step = static_step(loss_of(model(x)), solver)
    else:
        def step() -> Any:
            return eager_step(grad, solver, lambda: loss_of(model(x)))

    return model, step


def static_step(graph: Any, solver: Any) -> Any:
    """One step on the static graph ``graph`` (the loss, built once): ``forward``,
    ``zero_grad``, ``backward``, ``update``; returns the loss."""
    def step() -> Any:
        graph.forward()
        solver.zero_grad()
        graph.backward()
        solver.update()
        return graph
    return step


def eager_step(grad: Any, solver: Any, loss_of: Any) -> Any:
    """One define-by-run step as users write it: ``zero_grad``, ``loss_of()`` under
    ``grad.auto_forward``, ``backward``, ``update``; returns the loss."""
    solver.zero_grad()
    with grad.auto_forward():
        loss = loss_of()
    loss.backward()
    solver.update()
    return loss


def torch_step(kind: str, ref: Reference, wrap: Any = None) -> Any:
    """torch's step of the MLP or CNN from the shared initial parameters; ``wrap``
    (e.g. ``torch.compile``) is applied to the model."""
    torch = ref.xp
    nn = torch.nn
    if kind == "mlp":
        model = nn.Sequential(nn.Linear(1000, 100), nn.ReLU(), nn.Linear(100, 10))
        loss_fn, (xs, ts) = nn.MSELoss(), mlp_data()
    else:
        model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(256, 10))
        loss_fn, (xs, ts) = nn.CrossEntropyLoss(), cnn_data()
    layers = ({"l1": model[0], "l2": model[2]} if kind == "mlp"
              else {"conv": model[0], "fc": model[4]})
    with torch.no_grad():  # the shared initial parameters (torch's Linear stores W.T)
        for name, value in (mlp_params() if kind == "mlp" else cnn_params()).items():
            layer, kind_ = name.split(".")
            m = layers[layer]
            if kind_ == "b":
                m.bias.copy_(torch.from_numpy(value))
            else:
                w = value.T.copy() if isinstance(m, nn.Linear) else value
                m.weight.copy_(torch.from_numpy(w))
    model.to(ref.device)
    x, t = ref.asarray(xs), ref.asarray(ts)
    return _torch_loop(torch.optim.SGD(model.parameters(), lr=LR),
                       wrap(model) if wrap is not None else model, loss_fn, lambda: (x, t))


def _torch_loop(opt: Any, forward: Any, loss_fn: Any, batch: Any) -> Any:
    """One torch training step on ``batch()``'s ``(x, t)``."""
    def step() -> Any:
        x, t = batch()
        opt.zero_grad()
        loss = loss_fn(forward(x), t)
        loss.backward()
        opt.step()
        return loss
    return step


def reference_step(kind: str, ref: Reference) -> Any:
    if ref.name.startswith("torch"):
        return torch_step(kind, ref)
    net = (MLPReference if kind == "mlp" else CNNReference)(ref.xp, ref.asarray)
    return net.step


GROUPS = {"mlp": MLP, "cnn": CNN}
KINDS = pytest.mark.parametrize("kind", list(GROUPS))


def _first_loss(kind: str):
    """A ``check``: the first step's loss equals the hand-written numpy reference's, from
    the same initial parameters (``initial``), so every row times the same work."""
    ref = (MLPReference if kind == "mlp" else CNNReference)(np, np.array)
    return expect(ref.step(), rtol=1e-4)


def initial(kind: str) -> dict[str, np.ndarray]:
    return mlp_params() if kind == "mlp" else cnn_params()


@KINDS
def test_step_nnarray(benchmark, backend, kind):
    benchmark.group = GROUPS[kind]
    measure(benchmark, backend, nnarray_step(kind, initial(kind))[1], check=_first_loss(kind))


@KINDS
def test_step_nnarray_static(benchmark, backend, kind):
    benchmark.group = GROUPS[kind]
    measure(benchmark, backend, nnarray_step(kind, initial(kind), static=True)[1],
            variant="static graph", check=_first_loss(kind))


@KINDS
def test_step_nnarray_executor(benchmark, backend, kind):
    benchmark.group = GROUPS[kind]
    measure(benchmark, backend, nnarray_step(kind, initial(kind), executor=True)[1],
            variant="graph executor", check=_first_loss(kind))


@KINDS
def test_step_reference(benchmark, ref, kind):
    benchmark.group = GROUPS[kind]
    measure(benchmark, ref, reference_step(kind, ref), baseline=ref.name == "numpy",
            check=_first_loss(kind))


@pytest.mark.parametrize("static", [False, True, "executor"],
                         ids=["dynamic", "static", "executor"])
@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_step_matches_numpy_reference(kind, static, backend):
    """Two steps from the same parameters: nnarray and the hand-written reference agree
    (so the benchmark compares equal work)."""
    params = mlp_params() if kind == "mlp" else cnn_params()
    model, step = nnarray_step(kind, params, static is True, static == "executor")
    ref = (MLPReference if kind == "mlp" else CNNReference)(np, np.array)
    for _ in range(2):
        loss = step()
        want = ref.step()
    np.testing.assert_allclose(float(loss.d), want, rtol=1e-4)
    for name, p in model.parameters().items():
        np.testing.assert_allclose(p.d, ref.p[name], rtol=1e-3, atol=1e-5, err_msg=name)


# -- loops as users write them: a fresh batch every step (issue 25's table) ---------------
FRESH = "mlp step fresh batch 64x1000-100-10 relu mse sgd"
N_BATCHES = 4


def fresh_batches() -> list[tuple[np.ndarray, np.ndarray]]:
    """The batches the loops cycle through, one per step; the first is ``mlp_data()``,
    so the first step's loss is ``_first_loss("mlp")``."""
    return [mlp_data()] + [(_rand(64, 1000, seed=10 + i), _rand(64, 10, seed=20 + i))
                           for i in range(N_BATCHES - 1)]


def _cycle(items: list) -> Any:
    it = iter(())

    def next_item() -> Any:
        nonlocal it
        try:
            return next(it)
        except StopIteration:
            it = iter(items)
            return next(it)
    return next_item


def numpy_fresh_step() -> Any:
    """The hand-written numpy step on the next batch (the group's baseline)."""
    net, batch = MLPReference(np, np.array), _cycle(fresh_batches())

    def step() -> Any:
        net.x, net.t = batch()
        return net.step()
    return step


def static_fresh_step(scope: str | None = None) -> Any:
    """nnabla's loop: a graph built once, ``x.d = batch`` and ``forward()``/``backward()``
    each step; with ``scope``, each step runs inside a fresh ``context_scope(scope)``."""
    grad, nn, solvers = _layers()
    model = build_mlp(nn)
    for name, value in mlp_params().items():
        model.parameters()[name].d = value
    x, t = grad.Variable((64, 1000)), grad.Variable((64, 10))
    loss = F.mean_squared_error(model(x), t)
    solver = solvers.SGD(LR)
    solver.set_parameters(model.parameters())
    batch = _cycle(fresh_batches())
    here = nna.get_current_context()
    upload = here.backend != "numpy"

    def step() -> Any:
        x.d, t.d = batch()
        if upload:  # the host batch to the device, explicitly (2 counted transfers)
            x.data.get_data("r", here)
            t.data.get_data("r", here)
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        return loss

    if scope is None:
        return step

    def scoped_step() -> Any:
        with nna.context_scope(scope):
            return step()
    return scoped_step


def dynamic_fresh_step(modules: bool) -> Any:
    """Define-by-run on new Variables per batch: ``nn`` modules (``modules``) or ``F``
    functions on parameter Variables, the same SGD solver."""
    grad, nn, solvers = _layers()
    if modules:
        model = build_mlp(nn)
        for name, value in mlp_params().items():
            model.parameters()[name].d = value
        params, forward = model.parameters(), model
    else:
        params = {k: grad.Variable.from_numpy_array(v, need_grad=True)
                  for k, v in mlp_params().items()}
        p = params

        def forward(x: Any) -> Any:
            h = F.relu(F.matmul(x, p["l1.W"]) + p["l1.b"])
            return F.matmul(h, p["l2.W"]) + p["l2.b"]
    solver = solvers.SGD(LR)
    solver.set_parameters(params)
    batches = [tuple(grad.Variable.from_numpy_array(a) for a in b) for b in fresh_batches()]
    here = nna.get_current_context()
    for v in (v for b in batches for v in b):
        v.data.get_data("r", here)  # on the device, as a loader would put them
    batch = _cycle(batches)  # new Variables each pass (built before timing, as a loader)

    def step() -> Any:
        xs, ts = batch()
        x, t = grad.Variable.from_ndarray(xs.data), grad.Variable.from_ndarray(ts.data)
        return eager_step(grad, solver, lambda: F.mean_squared_error(forward(x), t))
    return step


def torch_fresh_step(ref: Reference, modules: bool) -> Any:
    """torch eager on the next batch: ``nn`` modules and ``nn.MSELoss`` (``modules``), or
    functional ops on leaf tensors; ``torch.optim.SGD`` either way."""
    torch = ref.xp
    init = {k: torch.from_numpy(v.copy()) for k, v in mlp_params().items()}
    if modules:
        nn = torch.nn
        model = nn.Sequential(nn.Linear(1000, 100), nn.ReLU(), nn.Linear(100, 10))
        with torch.no_grad():
            for i, name in ((0, "l1"), (2, "l2")):
                model[i].weight.copy_(init[f"{name}.W"].T)
                model[i].bias.copy_(init[f"{name}.b"])
        model.to(ref.device)
        params, forward, loss_fn = list(model.parameters()), model, nn.MSELoss()
    else:
        p = {k: v.to(ref.device).requires_grad_() for k, v in init.items()}
        params = list(p.values())

        def forward(x: Any) -> Any:
            h = torch.relu(x @ p["l1.W"] + p["l1.b"])
            return h @ p["l2.W"] + p["l2.b"]

        def loss_fn(y: Any, t: Any) -> Any:
            return ((y - t) ** 2).mean()
    batch = _cycle([tuple(ref.asarray(a) for a in b) for b in fresh_batches()])
    return _torch_loop(torch.optim.SGD(params, lr=LR), forward, loss_fn, batch)


def test_fresh_numpy(benchmark):
    benchmark.group = FRESH
    measure(benchmark, Reference("numpy"), numpy_fresh_step(), baseline=True,
            variant="by hand", check=_first_loss("mlp"))


@pytest.mark.parametrize("scope", ["none", "per step"])
def test_fresh_static(benchmark, backend, scope):
    """``x.d = batch`` into a static graph (target: ≤ 1.10× numpy by hand); entering
    ``context_scope`` per step (target: ≤ 1.05× the loop in one scope)."""
    benchmark.group = FRESH
    fn = static_fresh_step(backend.name if scope == "per step" else None)
    measure(benchmark, backend, fn, variant=f"static graph x.d = batch, scope {scope}",
            check=_first_loss("mlp"), transfers=_fresh_transfers(backend))


def _fresh_transfers(backend: Backend) -> int:
    """``x.d = batch`` and ``t.d = batch`` each copy the host batch to the device."""
    return 0 if backend.name.split(":")[0] == "numpy" else 2


@pytest.mark.parametrize("modules", [False, True], ids=["F", "nn modules"])
def test_fresh_dynamic(benchmark, backend, modules):
    """Define-by-run, new Variables per batch (target: ≤ 1.00× torch eager)."""
    benchmark.group = FRESH
    measure(benchmark, backend, dynamic_fresh_step(modules), check=_first_loss("mlp"),
            variant="define-by-run" + (", nn modules" if modules else ", F"))


@pytest.mark.parametrize("modules", [False, True], ids=["F", "nn modules"])
def test_fresh_torch(benchmark, ref, modules):
    benchmark.group = FRESH
    if not ref.name.startswith("torch"):
        pytest.skip("a torch row (numpy's is test_fresh_numpy)")
    measure(benchmark, ref, torch_fresh_step(ref, modules), check=_first_loss("mlp"),
            variant="eager" + (", nn modules" if modules else ", functional"))
