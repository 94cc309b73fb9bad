"""Higher-order gradients: a Hessian-vector product of the Chainer-tutorial MLP's loss
(64x1000 -> 100 -> 10, relu, MSE) in its parameters, and a WGAN-GP critic step (the
gradient penalty trained through), against torch on the CPU.

nnarray's hvp runs define-by-run (``grad.hvp``) and as a static graph built once
(``grad.grad(..., create_graph=True)`` twice, one schedule); torch's is
``torch.autograd.functional.hvp``. Every row checks its first result against torch's
float64 numbers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F

from .conftest import expect, measure, require
from .test_training import mlp_data, mlp_params

HVP = "hvp mlp loss 64x1000-100-10 relu mse (in the parameters)"
GP = "wgan-gp critic step 64x256-512-512-1 tanh adam"
_KEYS = ("l1.W", "l1.b", "l2.W", "l2.b")


def _vectors() -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    return [rng.standard_normal(v.shape).astype(np.float32) for v in mlp_params().values()]


def _mlp_loss(x: Any, t: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
    return F.mean_squared_error(F.affine(F.relu(F.affine(x, w1, b1)), w2, b2), t)


def _torch_hvp_ref() -> list[np.ndarray]:
    """torch's float64 hvp: what every row must reproduce."""
    torch = pytest.importorskip("torch")
    (x, t), ps = mlp_data(), [torch.tensor(mlp_params()[k], dtype=torch.float64)
                              for k in _KEYS]
    xt, tt = torch.tensor(x, dtype=torch.float64), torch.tensor(t, dtype=torch.float64)

    def f(w1, b1, w2, b2):
        return ((torch.relu(xt @ w1 + b1) @ w2 + b2 - tt) ** 2).mean()

    vs = tuple(torch.tensor(v, dtype=torch.float64) for v in _vectors())
    return [h.numpy() for h in torch.autograd.functional.hvp(f, tuple(ps), vs)[1]]


def _check() -> Any:
    return expect(*_torch_hvp_ref(), rtol=2e-3, atol=1e-6)


def test_hvp_define_by_run(benchmark, backend):
    grad = require("nnarray.grad", "hvp")
    benchmark.group = HVP
    x, t = (nna.asarray(a) for a in mlp_data())
    ps = [nna.asarray(mlp_params()[k]) for k in _KEYS]
    vs = [nna.asarray(v) for v in _vectors()]

    def step() -> Any:
        return tuple(h.data for h in grad.hvp(lambda *p: _mlp_loss(x, t, *p), tuple(ps),
                                              tuple(vs))[1])
    measure(benchmark, backend, step, variant="define-by-run grad.hvp", check=_check())


def test_hvp_static(benchmark, backend):
    grad = require("nnarray.grad", "grad")
    benchmark.group = HVP
    x, t = (grad.Variable.from_numpy_array(a) for a in mlp_data())
    ps = [grad.Variable.from_numpy_array(mlp_params()[k], need_grad=True) for k in _KEYS]
    vs = [grad.Variable.from_numpy_array(v) for v in _vectors()]
    gs = grad.grad(_mlp_loss(x, t, *ps), ps, create_graph=True)
    dot = F.sum(F.stack([F.sum(g * v) for g, v in zip(gs, vs)]))
    hs = grad.grad(dot, ps)
    flat = F.concatenate([F.reshape(h, (-1,)) for h in hs])  # one output: one forward
    sizes = np.cumsum([int(np.prod(p.shape)) for p in ps])[:-1]

    def step() -> Any:
        flat.forward()
        return flat

    def check(got: Any) -> None:
        parts = np.split(np.asarray(got.data), sizes)
        _check()(tuple(p.reshape(q.shape) for p, q in zip(parts, ps)))
    measure(benchmark, backend, step, variant="static graph", check=check)


def test_hvp_torch(benchmark, ref):
    if not ref.name.startswith("torch"):
        pytest.skip("a torch row")
    torch = ref.xp
    benchmark.group = HVP
    x, t = (ref.asarray(a) for a in mlp_data())
    ps = tuple(ref.asarray(mlp_params()[k]) for k in _KEYS)
    vs = tuple(ref.asarray(v) for v in _vectors())

    def f(w1, b1, w2, b2):
        return ((torch.relu(x @ w1 + b1) @ w2 + b2 - t) ** 2).mean()

    measure(benchmark, ref, lambda: torch.autograd.functional.hvp(f, ps, vs)[1],
            baseline=True, variant="autograd.functional.hvp", check=_check())


# -- the WGAN-GP critic step ------------------------------------------------------------------
N, D, H = 64, 256, 512
LAM = 10.0


def _gp_data() -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(5)
    real = rng.standard_normal((N, D)).astype(np.float32) + 1.0
    fake = rng.standard_normal((N, D)).astype(np.float32)
    eps = rng.uniform(0, 1, (N, 1)).astype(np.float32)
    return real, fake, eps * real + (1 - eps) * fake


def _gp_params() -> list[np.ndarray]:
    rng = np.random.default_rng(6)
    return [(rng.standard_normal(s) * (s[0] ** -0.5 if len(s) == 2 else 0)).astype(np.float32)
            for s in ((D, H), (H,), (H, H), (H,), (H, 1), (1,))]


def _critic(x: Any, w1: Any, b1: Any, w2: Any, b2: Any, w3: Any, b3: Any, tanh: Any) -> Any:
    return (tanh(tanh(x @ w1 + b1) @ w2 + b2) @ w3) + b3


def _gp_first_loss() -> float:
    torch = pytest.importorskip("torch")
    return _torch_gp_loss(torch, *(torch.tensor(a, dtype=torch.float64)
                                   for a in (*_gp_data(), *_gp_params()))).item()


def _gp_check() -> Any:
    return expect(_gp_first_loss(), rtol=1e-4, atol=1e-5)


def _torch_gp_loss(torch: Any, real, fake, xh, *p) -> Any:
    xh = xh.detach().requires_grad_()
    (g,) = torch.autograd.grad(_critic(xh, *p, torch.tanh).sum(), xh, create_graph=True)
    gp = ((g.pow(2).sum(1) + 1e-12).sqrt() - 1).pow(2).mean()
    return LAM * gp - (_critic(real, *p, torch.tanh).mean() - _critic(fake, *p, torch.tanh).mean())


def test_gp_step_static(benchmark, backend):
    grad = require("nnarray.grad", "grad")
    solvers = require("nnarray.solvers", "Adam")
    benchmark.group = GP
    real, fake, xh = (grad.Variable.from_numpy_array(a) for a in _gp_data())
    xh.need_grad = True
    ps = [grad.Variable.from_numpy_array(p, need_grad=True) for p in _gp_params()]
    opt = solvers.Adam(1e-4)
    opt.set_parameters({str(i): p for i, p in enumerate(ps)})
    (g,) = grad.grad(F.sum(_critic(xh, *ps, F.tanh)), xh, create_graph=True)
    gp = F.mean((F.sqrt(F.sum(g * g, axis=1) + 1e-12) - 1.0) ** 2)
    loss = LAM * gp - (F.mean(_critic(real, *ps, F.tanh)) - F.mean(_critic(fake, *ps, F.tanh)))

    def step() -> Any:
        opt.zero_grad()
        loss.forward()
        loss.backward()
        opt.update()
        return loss
    measure(benchmark, backend, step, variant="static graph", check=_gp_check())
    nna.reset_kernel_stats()
    step()
    stats = nna.kernel_stats()  # the launches of one warm step, fused ones among them
    benchmark.extra_info.update(launches=stats["count"], fused_launches=sum(
        n for op, n in stats["by_op"].items() if "fused" in op))


def test_gp_step_torch(benchmark, ref):
    if not ref.name.startswith("torch"):
        pytest.skip("a torch row")
    torch = ref.xp
    benchmark.group = GP
    data = [ref.asarray(a) for a in _gp_data()]
    ps = [ref.asarray(p).requires_grad_() for p in _gp_params()]
    opt = torch.optim.Adam(ps, lr=1e-4)

    def step() -> Any:
        opt.zero_grad()
        loss = _torch_gp_loss(torch, *data, *ps)
        loss.backward()
        opt.step()
        return loss
    measure(benchmark, ref, step, baseline=True, variant="eager", check=_gp_check())
