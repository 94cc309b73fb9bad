"""The five stages of the Chainer tutorial on one two-layer MLP (64x1000 -> 100 -> 10).

1. hand-written numpy forward and backward passes (the reference);
2. ``grad.Variable`` s and autograd, updating the weights by hand with NdArray in-place ops;
3. the model as an ``nn.Module``;
4. a solver (``solvers.SGD``) doing the update;
5. the training loop (``training.Trainer``).

Every stage starts from the same seeded data and weights, trains for ``--iters``
iterations with full-batch SGD on the mean squared error, and prints the loss at the last
iteration; stages 2-5 run on ``--backend`` and must agree with numpy to 1e-3 relative.

    python examples/chainer_mlp.py --backend opencl
"""

from __future__ import annotations

import sys

import _cli
import numpy as np

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, nn, solvers
from nnarray.nn import initializers as I
from nnarray.training import Trainer

N, D_IN, H, D_OUT = 64, 1000, 100, 10


def make_data(seed: int) -> tuple[np.random.Generator, np.ndarray, np.ndarray]:
    """Random inputs and targets, and the generator that then draws the weights."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, D_IN)).astype(np.float32)
    y = rng.standard_normal((N, D_OUT)).astype(np.float32)
    return rng, x, y


def init_weights(rng: np.random.Generator) -> list[np.ndarray]:
    """``[W1, b1, W2, b2]`` drawn exactly as ``MLP`` draws them (He normal, zero bias)."""
    return [I.he_normal((D_IN, H), D_IN, H, rng), np.zeros(H, np.float32),
            I.he_normal((H, D_OUT), H, D_OUT, rng), np.zeros(D_OUT, np.float32)]


def stage1_numpy(seed: int, iters: int, lr: float) -> float:
    """Forward and backward written out in numpy."""
    rng, x, y = make_data(seed)
    w1, b1, w2, b2 = init_weights(rng)
    for _ in range(iters):
        h = x @ w1 + b1
        h_relu = np.maximum(h, 0)
        y_pred = h_relu @ w2 + b2
        diff = y_pred - y
        loss = float(np.square(diff).mean())
        g_pred = diff * np.float32(2.0 / diff.size)
        g_w2, g_b2 = h_relu.T @ g_pred, g_pred.sum(0)
        g_h = g_pred @ w2.T
        g_h[h < 0] = 0
        g_w1, g_b1 = x.T @ g_h, g_h.sum(0)
        for w, g in ((w1, g_w1), (b1, g_b1), (w2, g_w2), (b2, g_b2)):
            w -= np.float32(lr) * g
    return loss


def stage2_variables(seed: int, iters: int, lr: float) -> float:
    """Variables record the graph; ``backward`` gives the gradients; we update by hand."""
    rng, x_np, y_np = make_data(seed)
    x = grad.Variable.from_numpy_array(x_np)
    y = grad.Variable.from_numpy_array(y_np)
    params = [grad.Variable.from_numpy_array(w, need_grad=True) for w in init_weights(rng)]
    for v in (x, y, *params):
        v.data.get_data("rw")  # explicit upload to the current context
    w1, b1, w2, b2 = params
    for _ in range(iters):
        for p in params:
            p.grad.zero()
        with grad.auto_forward():
            y_pred = F.affine(F.relu(F.affine(x, w1, b1)), w2, b2)
            loss = F.mean_squared_error(y_pred, y)
        loss.backward()
        for p in params:
            w = p.data
            w -= p.grad * lr  # an NdArray in-place op on the parameter's device
    return float(loss.data.get_data("r", "numpy"))


class MLP(nn.Module):
    """``Linear -> relu -> Linear`` with He-normal weights from ``rng``."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.l1 = nn.Linear(D_IN, H, w_init=I.he_normal, rng=rng)
        self.l2 = nn.Linear(H, D_OUT, w_init=I.he_normal, rng=rng)

    def forward(self, x):
        return self.l2(nn.relu(self.l1(x)))


def _inputs(seed: int):
    rng, x_np, y_np = make_data(seed)
    model = MLP(rng)
    x, y = (grad.Variable.from_numpy_array(a) for a in (x_np, y_np))
    for v in (x, y):
        v.data.get_data("rw")
    return model, x, y, x_np, y_np


def stage3_module(seed: int, iters: int, lr: float) -> float:
    """The model as a Module: parameters() replaces the hand-kept list."""
    model, x, y, _, _ = _inputs(seed)
    for _ in range(iters):
        model.zero_grad()
        with grad.auto_forward():
            loss = F.mean_squared_error(model(x), y)
        loss.backward()
        for p in model.parameters().values():
            w = p.data
            w -= p.grad * lr
    return float(loss.data.get_data("r", "numpy"))


def stage4_solver(seed: int, iters: int, lr: float) -> float:
    """A solver owns the update rule."""
    model, x, y, _, _ = _inputs(seed)
    opt = solvers.SGD(lr)
    opt.set_parameters(model.parameters())
    for _ in range(iters):
        opt.zero_grad()
        with grad.auto_forward():
            loss = F.mean_squared_error(model(x), y)
        loss.backward()
        opt.update()
    return float(loss.data.get_data("r", "numpy"))


def stage5_trainer(seed: int, iters: int, lr: float, progress: bool = True) -> float:
    """The training loop: one full batch per epoch, ``iters`` epochs."""
    model, _, _, x_np, y_np = _inputs(seed)
    trainer = Trainer(model, solvers.SGD(lr), loss_fn=F.mean_squared_error, batch_size=N,
                      shuffle=False, progress=progress, report=False)
    return trainer.fit((x_np, y_np), epochs=iters)[-1]["loss"]


def main(argv: list[str] | None = None) -> int:
    ap = _cli.parser(__doc__)
    ap.add_argument("--iters", type=int, default=300,
                    help="training iterations per stage")
    ap.add_argument("--lr", type=float, default=0.01, help="SGD learning rate")
    ap.add_argument("--seed", type=int, default=0,
                    help="seed of the data and the initial weights")
    ap.add_argument("--no-progress", action="store_true",
                    help="no progress bar in stage 5 (the Trainer)")
    args = ap.parse_args(argv)
    if _cli.unavailable(args.backend):
        return 2
    ref = stage1_numpy(args.seed, args.iters, args.lr)
    at = f"loss@{args.iters - 1}"
    print(f"stage 1 numpy (hand-written)  {at} = {ref:.6g}")
    stages = [("2 Variables + autograd", stage2_variables), ("3 nn.Module", stage3_module),
              ("4 solvers.SGD", stage4_solver), ("5 training.Trainer", stage5_trainer)]
    ok = True
    with nna.context_scope(args.backend):
        for label, fn in stages:
            kw = {"progress": not args.no_progress} if fn is stage5_trainer else {}
            loss = fn(args.seed, args.iters, args.lr, **kw)
            rel = abs(loss - ref) / abs(ref)
            ok &= rel <= 1e-3
            print(f"stage {label:<24} {at} = {loss:.6g}  (rel. diff {rel:.1e}) "
                  f"on {args.backend}")
    print("all stages agree with numpy to 1e-3" if ok else "MISMATCH with numpy")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
