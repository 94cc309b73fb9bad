"""A WGAN-GP critic (Gulrajani et al. 2017) trained on synthetic data: the gradient
penalty ``lam * (||d critic / d x_hat|| - 1)^2`` is a gradient taken with
``grad.grad(..., create_graph=True)`` and trained through (a double backward).

Real samples lie on a ring of radius 2, fake ones come from a fixed Gaussian "generator".
The critic (2 -> 64 -> 64 -> 1, tanh) is trained with Adam; it must separate them (the
Wasserstein estimate ``mean D(real) - mean D(fake)`` above ``--min-gap``) while its
gradient norm on the interpolates stays near 1 (the penalty below ``--max-penalty``).
``--static`` builds the step once as a static graph: the gradient is graph nodes like any
other, and the step compiles to one schedule (``grad.print_schedule``).

    python examples/gradient_penalty.py --backend opencl
"""

from __future__ import annotations

import sys

import _cli
import numpy as np

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, nn, solvers


class Critic(nn.Module):
    def __init__(self, rng: np.random.Generator, width: int) -> None:
        self.l1 = nn.Linear(2, width, rng=rng)
        self.l2 = nn.Linear(width, width, rng=rng)
        self.l3 = nn.Linear(width, 1, rng=rng)

    def forward(self, x):
        return self.l3(F.tanh(self.l2(F.tanh(self.l1(x)))))


def batches(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Real (ring), fake (Gaussian) samples and the interpolation weights."""
    t = rng.uniform(0, 2 * np.pi, n)
    real = np.stack([2 * np.cos(t), 2 * np.sin(t)], 1) + 0.05 * rng.standard_normal((n, 2))
    fake = 0.5 * rng.standard_normal((n, 2))
    return real.astype(np.float32), fake.astype(np.float32), \
        rng.uniform(0, 1, (n, 1)).astype(np.float32)


def critic_loss(critic: Critic, xr, xf, x_hat, lam: float) -> tuple:
    """``lam * GP - (mean D(real) - mean D(fake))``, with the W estimate and GP."""
    (g,) = grad.grad(F.sum(critic(x_hat)), x_hat, create_graph=True)
    norm = F.sqrt(F.sum(g * g, axis=1) + 1e-12)
    gp = F.mean((norm - 1.0) ** 2)
    w = F.mean(critic(xr)) - F.mean(critic(xf))
    return lam * gp - w, w, gp


def critic_step(critic: Critic, opt: solvers.Solver, real: np.ndarray, fake: np.ndarray,
                eps: np.ndarray, lam: float) -> tuple[float, float]:
    """One critic update, define-by-run; returns (W estimate, GP)."""
    opt.zero_grad()
    with grad.auto_forward():
        xr = grad.Variable.from_numpy_array(real)
        xf = grad.Variable.from_numpy_array(fake)
        x_hat = grad.Variable.from_numpy_array(eps * real + (1 - eps) * fake, need_grad=True)
        loss, w, gp = critic_loss(critic, xr, xf, x_hat, lam)
    loss.backward()
    opt.update()
    return float(w.data), float(gp.data)


class StaticStep:
    """The same step as one static graph, built once (the gradient inside it is graph
    nodes too: it compiles to one schedule) and run on each new batch."""

    def __init__(self, critic: Critic, opt: solvers.Solver, n: int, lam: float) -> None:
        self.opt = opt
        self.xr, self.xf = grad.Variable((n, 2)), grad.Variable((n, 2))
        self.x_hat = grad.Variable((n, 2), need_grad=True)
        self.loss, self.w, self.gp = critic_loss(critic, self.xr, self.xf, self.x_hat, lam)

    def __call__(self, real: np.ndarray, fake: np.ndarray, eps: np.ndarray) -> tuple:
        self.xr.d, self.xf.d, self.x_hat.d = real, fake, eps * real + (1 - eps) * fake
        self.opt.zero_grad()
        self.loss.forward()
        self.loss.backward()
        self.opt.update()
        return float(self.w.d), float(self.gp.d)


def main(argv: list[str] | None = None) -> int:
    ap = _cli.parser(__doc__)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--lam", type=float, default=10.0, help="the penalty's weight")
    ap.add_argument("--min-gap", type=float, default=1.0,
                    help="the Wasserstein estimate the critic must reach")
    ap.add_argument("--max-penalty", type=float, default=0.2,
                    help="the gradient penalty it must stay below")
    ap.add_argument("--static", action="store_true",
                    help="build the step once as a static graph (else define-by-run)")
    ap.add_argument("--seed", type=int, default=0,
                    help="seed of the initial weights and the samples")
    args = ap.parse_args(argv)
    if _cli.unavailable(args.backend):
        return 1
    rng = np.random.default_rng(args.seed)
    with nna.context_scope(args.backend):
        critic = Critic(rng, args.width)
        opt = solvers.Adam(3e-3, beta1=0.5, beta2=0.9)
        opt.set_parameters(critic.parameters())
        step_fn = StaticStep(critic, opt, args.batch, args.lam) if args.static else \
            (lambda *b: critic_step(critic, opt, *b, args.lam))
        for step in range(args.steps):
            w, gp = step_fn(*batches(rng, args.batch))
            if step % 50 == 0 or step == args.steps - 1:
                print(f"step {step:4d}  W estimate {w:7.4f}  gradient penalty {gp:.4f}")
    ok = w > args.min_gap and gp < args.max_penalty
    print(f"{'separated' if ok else 'NOT separated'}: W estimate {w:.4f} (> {args.min_gap}), "
          f"penalty {gp:.4f} (< {args.max_penalty})")
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
