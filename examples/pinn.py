"""A physics-informed network (Raissi et al. 2019): fit ``u'' = f`` on [0, 1] with
``u(0) = u(1) = 0`` by a network ``u(x)``, its second derivative taken through the network
with two ``grad.grad(..., create_graph=True)`` calls and trained through.

With ``f = -pi^2 sin(pi x)`` the solution is ``u = sin(pi x)``. The loss is the mean
squared residual ``u'' - f`` at collocation points plus the boundary terms, weighted by
``--bc-weight``; training (Adam) must bring it below ``--max-loss``, and the fitted ``u``
is compared with ``sin(pi x)``.

    python examples/pinn.py --backend opencl
"""

from __future__ import annotations

import sys

import _cli
import numpy as np

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, nn, solvers


class Net(nn.Module):
    def __init__(self, rng: np.random.Generator, width: int) -> None:
        self.l1 = nn.Linear(1, width, rng=rng)
        self.l2 = nn.Linear(width, width, rng=rng)
        self.l3 = nn.Linear(width, 1, rng=rng)

    def forward(self, x):
        return self.l3(F.tanh(self.l2(F.tanh(self.l1(x)))))


def source(x: np.ndarray) -> np.ndarray:
    return (-np.pi ** 2 * np.sin(np.pi * x)).astype(np.float32)


def loss_of(net: Net, xs: np.ndarray, bc_weight: float):
    """Mean squared residual of ``u'' = f`` at ``xs`` plus the boundary terms."""
    x = grad.Variable.from_numpy_array(xs, need_grad=True)
    u = net(x)
    (ux,) = grad.grad(F.sum(u), x, create_graph=True)
    (uxx,) = grad.grad(F.sum(ux), x, create_graph=True)
    residual = F.mean((uxx - grad.Variable.from_numpy_array(source(xs))) ** 2)
    ub = net(grad.Variable.from_numpy_array(np.array([[0.0], [1.0]], np.float32)))
    return residual + bc_weight * F.mean(ub * ub)


def main(argv: list[str] | None = None) -> int:
    ap = _cli.parser(__doc__)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--points", type=int, default=32, help="collocation points per step")
    ap.add_argument("--width", type=int, default=24)
    ap.add_argument("--bc-weight", type=float, default=10.0)
    ap.add_argument("--max-loss", type=float, default=0.05,
                    help="the loss training must reach")
    ap.add_argument("--seed", type=int, default=0,
                    help="seed of the initial weights and the samples")
    args = ap.parse_args(argv)
    if _cli.unavailable(args.backend):
        return 1
    rng = np.random.default_rng(args.seed)
    with nna.context_scope(args.backend):
        net = Net(rng, args.width)
        opt = solvers.Adam(1e-2)
        opt.set_parameters(net.parameters())
        for step in range(args.steps):
            xs = rng.uniform(0, 1, (args.points, 1)).astype(np.float32)
            opt.zero_grad()
            with grad.auto_forward():
                loss = loss_of(net, xs, args.bc_weight)
            loss.backward()
            opt.update()
            if step % 100 == 0 or step == args.steps - 1:
                print(f"step {step:4d}  loss {float(loss.data):.5f}")
        grid = np.linspace(0, 1, 11, dtype=np.float32)[:, None]
        with grad.no_grad():
            u = np.asarray(net(grad.Variable.from_numpy_array(grid)).data)
    final = float(loss.data)
    err = float(np.abs(u - np.sin(np.pi * grid)).max())
    ok = final < args.max_loss
    print(f"{'converged' if ok else 'NOT converged'}: loss {final:.5f} (< {args.max_loss}), "
          f"max |u - sin(pi x)| on the grid {err:.4f}")
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
