"""``python -m nnarray``: list the backends, then run a short demo on each available one.

Timings are the median of ``--repeats`` runs after a warm-up (a single run swings many
times over on a loaded machine), with the host's BLAS/OpenMP thread settings printed
beside them: compare backends only on a quiet machine. On a loaded host with the BLAS's
threads unlimited, a note says that numpy's timings suffer (``OPENBLAS_NUM_THREADS=1``).
"""

from __future__ import annotations

import argparse
import os
import statistics
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


def _threads() -> str:
    """The host's thread settings, which decide numpy's (BLAS) timings."""
    env = [f"{k}={os.environ[k]}" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                            "MKL_NUM_THREADS") if k in os.environ]
    pools = []
    try:
        from threadpoolctl import threadpool_info
        pools = [f"{p['internal_api']} {p['num_threads']} threads"
                 for p in threadpool_info()]
    except Exception:  # optional dependency (comes with scikit-learn)
        pass
    parts = [f"{os.cpu_count()} CPUs", *pools, *(env or ["no *_NUM_THREADS set"])]
    return ", ".join(parts)


#: The variables that limit the host BLAS's threads.
_BLAS_LIMITS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def busy_host_note(load: float | None = None, cpus: int | None = None,
                   env: dict | None = None) -> str | None:
    """A warning when the host is loaded (1-minute load average at least half its CPUs,
    and at least 1) and nothing limits the BLAS's threads: OpenBLAS's threads spin waiting
    for cores that other work holds, and the small products nnarray issues gain nothing
    from them (README, *The numpy backend's BLAS threads*)."""
    env = os.environ if env is None else env
    if any(k in env for k in _BLAS_LIMITS):
        return None
    cpus = (os.cpu_count() or 1) if cpus is None else cpus
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):  # not on this platform
            return None
    if load < max(1.0, cpus / 2):
        return None
    return (f"note: this host is busy (load {load:.1f} on {cpus} CPUs) and nothing limits "
            "the BLAS's threads: numpy's timings can be several times slower than with "
            "OPENBLAS_NUM_THREADS=1 (set it before Python starts; its threads spin for "
            "cores others hold and nnarray's small products gain nothing from them)")


def _median_ms(fn, repeats: int, per: int = 1) -> tuple[float, float, float]:
    """(median, min, max) milliseconds per call of ``fn`` over ``repeats`` timed runs
    (each synchronized; ``per`` calls per run)."""
    times = []
    for _ in range(repeats):
        nna.device_synchronize()
        t0 = time.perf_counter()
        for _ in range(per):
            fn()
        nna.device_synchronize()
        times.append((time.perf_counter() - t0) * 1e3 / per)
    return statistics.median(times), min(times), max(times)


def _fmt(t: tuple[float, float, float], unit: str = "ms") -> str:
    return f"{t[0]:8.2f} {unit} (min {t[1]:.2f}, max {t[2]:.2f})"


def demo(backend: str, rng: np.random.Generator, repeats: int = 7) -> None:
    """Imperative math on ``backend``: median time, transfers and agreement with numpy."""
    xs = (rng.standard_normal((256, 512), np.float32),
          rng.standard_normal((512, 256), np.float32) / 16,
          rng.standard_normal(256, np.float32), rng.integers(0, 256, 256))
    ref_p, ref_loss = _imperative(*[nna.array(a) for a in xs])
    with nna.context_scope(backend):
        args = [nna.array(a) for a in xs]
        _imperative(*args)  # warm-up: kernel compilation, first allocations
        nna.device_synchronize()
        nna.reset_transfer_stats()
        p, loss = _imperative(*args)
        nna.device_synchronize()
        moved = nna.transfer_stats()["count"]
        ms = _median_ms(lambda: _imperative(*args), repeats)
        err = float(np.abs(p.get_data("r", "numpy") - ref_p.get_data("r", "numpy")).max())
    print(f"  {backend:<7} {_fmt(ms)}   transfers per run: {moved}   "
          f"loss {float(loss.get_data('r', 'numpy')):.4f} (numpy {float(ref_loss):.4f})   "
          f"max |softmax - numpy| {err:.1e}")


def train_demo(backend: str, iters: int = 20, repeats: int = 5) -> None:
    """Train the tutorial MLP (64x1000 -> 100 -> 10, SGD) on ``backend``: median time
    and transfers per iteration (the loss is read once, explicitly, at the end)."""
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
        for _ in range(iters):
            loss = step()
        nna.device_synchronize()
        moved = nna.transfer_stats()["count"] / iters
        value = float(loss.data.get_data("r", "numpy"))
        per = max(1, iters // repeats)
        ms = _median_ms(step, repeats, per)
    print(f"  {backend:<7} {_fmt(ms, 'ms/iteration')}   transfers per iteration: {moved:g}   "
          f"loss@{iters} {value:.4f}")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m nnarray",
        description="List nnarray's backends, then run a short imperative demo and a few "
                    "MLP training iterations on each available one.",
        epilog=__doc__.split("\n\n")[1], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--backend", action="append", metavar="BACKEND[:N]",
                    help="run the demos on this context only, e.g. opencl or opencl:1 "
                         "(repeatable; default: device 0 of every available backend)")
    ap.add_argument("--repeats", type=int, default=7,
                    help="timed runs per measurement; the median is reported")
    ap.add_argument("--iters", type=int, default=20, help="training iterations")
    ap.add_argument("--list", action="store_true", help="list the backends and stop")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.repeats < 1 or args.iters < 1:
        _parser().error("--repeats and --iters must be >= 1")
    usable = _backends_report()
    if args.list:
        return 0
    if args.backend:
        for spec in args.backend:
            try:
                ctx = nna.Context.parse(spec)
                nna.backends.get_device(ctx.backend, ctx.device_id)
            except nna.BackendError as e:
                print(e)
                return 2
        usable = args.backend
    print(f"\nTimings: median of {args.repeats} runs after a warm-up (min, max beside it); "
          f"host threads: {_threads()}")
    note = busy_host_note()
    if note:
        print(note)
    print("\nImperative demo: softmax(relu(x @ W + b)) and cross-entropy, 256x512 @ 512x256")
    for name in usable:
        demo(name, np.random.default_rng(0), args.repeats)  # the same data on every backend
    print(f"\nTraining demo: MLP 64x1000 -> 100 -> 10, SGD, {args.iters} iterations")
    for name in usable:
        train_demo(name, args.iters, args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
