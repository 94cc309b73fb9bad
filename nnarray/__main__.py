"""``python -m nnarray``: list the backends, then run a short demo on each available one."""

from __future__ import annotations

import time

import numpy as np

import nnarray as nna
import nnarray.functions as F


def _backends_report() -> list[str]:
    usable = []
    print(f"nnarray {nna.__version__} - backends:")
    for name in nna.backends.registered():
        reason = nna.backends.why_unavailable(name)
        if reason is None:
            devices = nna.backends.module(name).describe_devices()
            print(f"  {name:<7} available: {'; '.join(devices)}")
            usable.append(name)
        else:
            print(f"  {name:<7} unavailable: {reason}")
    return usable


def _imperative(x, W, b, t):
    h = F.relu(F.affine(x, W, b))
    p = F.softmax(h)
    loss = F.mean(F.softmax_cross_entropy(h, t))
    return p, loss


def demo(backend: str, rng: np.random.Generator) -> None:
    """Imperative math on ``backend``: time, transfers and agreement with numpy."""
    xs = (rng.standard_normal((256, 512), np.float32),
          rng.standard_normal((512, 256), np.float32) / 16,
          rng.standard_normal(256, np.float32), rng.integers(0, 256, 256))
    ref_p, ref_loss = _imperative(*[nna.array(a) for a in xs])
    with nna.context_scope(backend):
        args = [nna.array(a) for a in xs]
        _imperative(*args)  # warm-up: kernel compilation, first allocations
        nna.device_synchronize()
        nna.reset_transfer_stats()
        t0 = time.perf_counter()
        p, loss = _imperative(*args)
        nna.device_synchronize()
        ms = (time.perf_counter() - t0) * 1e3
        moved = nna.transfer_stats()["count"]
        err = float(np.abs(p.get_data("r", "numpy") - ref_p.get_data("r", "numpy")).max())
    print(f"  {backend:<7} {ms:8.2f} ms   transfers during the run: {moved}   "
          f"loss {float(loss.get_data('r', 'numpy')):.4f} (numpy {float(ref_loss):.4f})   "
          f"max |softmax - numpy| {err:.1e}")


def train_demo(backend: str, iters: int = 20) -> None:
    """Train the tutorial MLP (64x1000 -> 100 -> 10, SGD) on ``backend``: time and
    transfers per iteration (the loss is read once, explicitly, at the end)."""
    from . import grad, nn, solvers
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(s).astype(np.float32) for s in ((64, 1000), (64, 10)))
    with nna.context_scope(backend):
        model = nn.Sequential(nn.Linear(1000, 100, rng=rng), nn.relu, nn.Linear(100, 10, rng=rng))
        opt = solvers.SGD(0.01)
        opt.set_parameters(model.parameters())
        xv, yv = (grad.Variable.from_numpy_array(a) for a in (x, y))
        for v in (xv, yv):
            v.data.get_data("rw")  # explicit upload

        def step():
            opt.zero_grad()
            with grad.auto_forward():
                loss = F.mean_squared_error(model(xv), yv)
            loss.backward()
            opt.update()
            return loss

        step()  # warm-up
        nna.device_synchronize()
        nna.reset_transfer_stats()
        t0 = time.perf_counter()
        for _ in range(iters):
            loss = step()
        nna.device_synchronize()
        ms = (time.perf_counter() - t0) * 1e3 / iters
        moved = nna.transfer_stats()["count"] / iters
        value = float(loss.data.get_data("r", "numpy"))
    print(f"  {backend:<7} {ms:8.2f} ms/iteration   transfers per iteration: {moved:g}   "
          f"loss@{iters} {value:.4f}")


def main() -> None:
    usable = _backends_report()
    rng = np.random.default_rng(0)
    print("\nImperative demo: softmax(relu(x @ W + b)) and cross-entropy, 256x512 @ 512x256")
    for name in usable:
        demo(name, rng)
    print("\nTraining demo: MLP 64x1000 -> 100 -> 10, SGD, 20 iterations")
    for name in usable:
        train_demo(name)


if __name__ == "__main__":
    main()
