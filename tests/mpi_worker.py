"""Scripts the distributed tests run under ``mpiexec -n 2`` (and plainly, as a world of
one): ``python tests/mpi_worker.py MODE [ARGS]``.

- ``ops BACKEND``: the collectives' results and transfer counts, asserted on every rank;
- ``train OUT BACKEND...``: a tiny MLP trained with ``Trainer(comm=...)``; rank 0 saves
  the final parameters and the history to ``OUT/<backend>.npz``;
- ``mismatch``: rank 1 builds another model, then fits a longer dataset; every rank must
  catch both errors;
- ``fault``: rank 1 raises after one step while rank 0 trains on;
- ``exit``: rank 1 calls ``sys.exit(3)`` while rank 0 waits in an all-reduce;
- ``checks``: all-reduces and broadcasts whose arrays (dtype, size, op) differ between the
  ranks, and validation sets of different sizes; every rank must catch each error and the
  ranks stay in step;
- ``scaler BACKEND``: a loss-scaled data-parallel step where only rank 1's gradient is
  inf, then a finite one; every rank prints its parameters and scale after each (JSON);
- ``leave HOW``: rank 1 leaves in the middle of ``Trainer.fit`` with status 0
  (``os._exit``, ``sys.exit`` or ``raise SystemExit``) while rank 0 trains on;
- ``local_check``: rank 0's arguments fail its own check, rank 1's pass;
- ``loop HOW``: rank 1 leaves a plain loop of all-reduces while rank 0 loops on;
- ``example NAME ARGS``: ``examples/NAME``'s ``main(ARGS)`` on every rank;
- ``sections "MODE ARGS" ...``: several modes that end normally, in turn in one job, each
  line tagged with its mode (the tests share one mpiexec start).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import runpy
import shlex
import sys
import time

import numpy as np

import nnarray as nna
from nnarray import distributed as dist
from nnarray import nn, solvers
from nnarray.distributed import faults
from nnarray.training import Trainer


def check_ops(backend: str) -> None:
    comm = dist.init(backend=backend)
    r, n = comm.rank, comm.size
    with nna.context_scope(comm.ctx):
        def put(a):
            x = nna.array(a)
            x.get_data("rw")  # on this rank's device
            return x

        f32 = [put(np.full((3, 2), r + 1.0, np.float32)),
               put(np.arange(5, dtype=np.float32) * (r + 1)), put(np.float32(r))]
        i64 = put(np.arange(4) + r)
        nna.reset_transfer_stats()
        calls = comm.calls
        with nna.strict_transfers():  # every move is an explicit access
            comm.all_reduce([*f32, i64], op="sum")
        # two buckets (float32, int64); on a device, one transfer each way per bucket
        assert comm.calls - calls == 2, comm.calls - calls
        moved = nna.transfer_stats()["count"]
        # numpy needs no transfer, CUDA reduces on the device through NCCL
        want = 4 if comm.ctx.backend not in ("numpy", "cuda") else 0
        assert moved == want, nna.transfer_stats()
        total = sum(range(1, n + 1))
        np.testing.assert_array_equal(f32[0].numpy(), np.full((3, 2), total, np.float32))
        np.testing.assert_array_equal(f32[1].numpy(), np.arange(5) * total)
        np.testing.assert_array_equal(i64.numpy(), np.arange(4) * n + sum(range(n)))
        assert all(a.head == comm.ctx.key for a in [*f32, i64])
        for op, value in (("mean", (n - 1) / 2), ("max", n - 1), ("min", 0)):
            x = put(np.full(3, float(r), np.float32))
            comm.all_reduce([x], op=op)
            np.testing.assert_allclose(x.numpy(), value, err_msg=op)
        b = [put(np.full(2, 10.0 * r, np.float32)), put(np.full(3, r, np.int32))]
        nna.reset_transfer_stats()
        with nna.strict_transfers():  # two buckets: the root reads each, the others write
            comm.broadcast(b, root=n - 1)
        assert nna.transfer_stats()["count"] == want // 2, nna.transfer_stats()
        np.testing.assert_array_equal(b[0].numpy(), 10.0 * (n - 1))
        np.testing.assert_array_equal(b[1].numpy(), n - 1)
        x = put(np.array([r, r * r], np.float64))
        nna.reset_transfer_stats()
        g = comm.all_gather(x)  # x read to the host once, the result written back once
        assert nna.transfer_stats()["count"] == want // 2, nna.transfer_stats()
        assert g.shape == (n, 2) and g.head == comm.ctx.key
        np.testing.assert_array_equal(g.numpy(), [[k, k * k] for k in range(n)])
        comm.barrier()
    print(f"ops ok on rank {r} ({comm.ctx})", flush=True)


def mlp(seed: int = 0) -> nn.Module:
    rng = np.random.default_rng(seed)
    return nn.Sequential(nn.Linear(4, 8, rng=rng), nn.relu, nn.Linear(8, 3, rng=rng))


def data(n: int = 29) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    return x, (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5)


def train(out: str, backends: list[str]) -> None:
    for backend in backends:
        comm = dist.init(backend=backend)
        with nna.context_scope(comm.ctx):
            # every rank starts from other weights: set_parameters broadcasts rank 0's
            model = mlp(seed=comm.rank)
            solver = solvers.Momentum(0.1, comm=comm)
            # batches of 7 over 29 samples: shards of 4 and 3, then 1 and 0 (empty)
            trainer = Trainer(model, solver, batch_size=7, seed=3, weight_decay=1e-3,
                              progress=False, report=False, comm=comm)
            x, t = data()
            hist = trainer.fit((x, t), epochs=3, val=(x[:9], t[:9]))
            params = {k: p.data.numpy() for k, p in model.parameters().items()}
        if comm.rank == 0:
            np.savez(f"{out}/{backend}.npz", history=json.dumps(hist), **params)
        print(f"trained on rank {comm.rank} of {comm.size} ({comm.ctx})", flush=True)


def mismatch() -> None:
    comm = dist.init(backend="numpy")  # ranks may outnumber GPUs
    rng = np.random.default_rng(0)
    layers = [nn.Linear(4, 8, rng=rng), nn.relu, nn.Linear(8, 3 + comm.rank, rng=rng)]
    solver = solvers.SGD(0.1, comm=comm)
    try:
        solver.set_parameters(nn.Sequential(*layers).parameters())
    except dist.DistributedError as e:
        print(f"rank {comm.rank} caught: {e}", flush=True)
    else:
        print(f"rank {comm.rank}: no error", flush=True)
    # datasets of different lengths would make the ranks run different numbers of steps
    trainer = Trainer(mlp(), solvers.SGD(0.1, comm=comm), batch_size=4, progress=False,
                      report=False, comm=comm)
    x, t = data(8 + comm.rank)
    try:
        trainer.fit((x, t), epochs=1)
    except dist.DistributedError as e:
        print(f"rank {comm.rank} caught: {e}", flush=True)


def fault() -> None:
    comm = dist.init(backend="numpy")
    model = mlp()
    trainer = Trainer(model, solvers.SGD(0.1, comm=comm), batch_size=8, progress=False,
                      report=False, comm=comm)
    x, t = data(16)
    trainer.step(x[:8], t[:8])
    if comm.rank == 1:
        raise ValueError("boom from rank one")
    deadline = time.monotonic() + 900  # past the test's limit: only an abort ends it
    while time.monotonic() < deadline:  # would hang in the next all-reduce without abort
        trainer.step(x[:8], t[:8])
    print("rank 0 was never stopped", flush=True)


def exit_early() -> None:
    comm = dist.init(backend="numpy")
    if comm.rank == 1:
        sys.exit(3)
    x = nna.zeros(3)
    comm.all_reduce([x])
    print("rank 0 passed an all-reduce rank 1 never joined", flush=True)


def mismatched_collectives() -> None:
    comm = dist.init(backend="numpy")  # ranks may outnumber GPUs
    r = comm.rank

    def caught(what: str, fn) -> None:
        try:
            fn()
        except dist.DistributedError as e:
            print(f"rank {r} caught {what}: {e}", flush=True)
        else:
            print(f"rank {r}: {what} passed unchecked", flush=True)

    f32 = np.float32
    caught("dtype", lambda: comm.all_reduce([nna.zeros(2), nna.zeros(3, np.int32 if r else f32)],
                                            op="sum"))
    caught("size", lambda: comm.all_reduce([nna.zeros(3 + r)], op="sum"))
    caught("op", lambda: comm.all_reduce([nna.zeros(3)], op="max" if r else "sum"))
    caught("broadcast", lambda: comm.broadcast([nna.zeros(2, np.int64 if r else f32)]))
    x = nna.array(np.full(3, r + 1.0, f32))
    comm.all_reduce([x], op="sum")  # the ranks are still in step
    assert x.numpy().tolist() == [3.0] * 3, x
    trainer = Trainer(mlp(), solvers.SGD(0.1, comm=comm), batch_size=4, progress=False,
                      report=False, comm=comm)
    (x, t), (xv, tv) = data(8), data(9 + r)
    caught("validation", lambda: trainer.fit((x, t), epochs=1, val=(xv, tv)))
    caught("evaluate", lambda: trainer.evaluate(xv, tv))
    print(f"checks done on rank {r}", flush=True)


def leave(how: str) -> None:
    comm = dist.init(backend="numpy")  # ranks may outnumber GPUs

    class Leaving(Trainer):
        def step(self, x, t):
            if comm.rank == 1 and self.iteration == 2:
                if how == "os_exit":
                    os._exit(0)
                if how == "sys_exit":
                    sys.exit(0)
                raise SystemExit
            return super().step(x, t)

    trainer = Leaving(mlp(), solvers.SGD(0.1, comm=comm), batch_size=4, progress=False,
                      report=False, comm=comm)
    trainer.fit(data(16), epochs=100)
    print(f"rank {comm.rank} finished training", flush=True)


def scaler(backend: str) -> None:
    """Step 0: rank 1's input holds an inf, so only its gradients are not finite; step 1
    is finite everywhere. Rank 0 prints ``scaler {json}`` per rank and step: whether the
    step ran, the scale after ``update`` and the parameters."""
    comm = dist.init(backend=backend)
    with nna.context_scope(comm.ctx):
        model = nn.Linear(4, 2, rng=np.random.default_rng(comm.rank))
        solver = solvers.Momentum(0.1, comm=comm)
        solver.set_parameters(model.parameters())  # rank 0's weights everywhere
        ls = solvers.LossScaler(init_scale=2.0 ** 10)
        seen = []
        x = np.random.default_rng(5 + comm.rank).standard_normal((3, 4)).astype(np.float32)
        with nna.grad.auto_forward():
            for step in range(2):
                xs = x.copy()
                if step == 0 and comm.rank == 1:
                    xs[0, 0] = np.inf
                solver.zero_grad()
                loss = nna.functions.sum(model(nna.array(xs)) ** 2)
                ls.scale(loss).backward()
                t = solver.t
                ls.step(solver)
                ls.update()
                seen.append({"rank": comm.rank, "step": step, "scale": ls.get_scale(),
                             "params": {k: p.d.tolist() for k, p in
                                        model.parameters().items()},
                             "ran": solver.t > t})
    for records in comm.allgather_obj(seen):  # rank 0 prints them all: no interleaving
        for d in records if comm.rank == 0 else ():
            print("scaler " + json.dumps(d), flush=True)


def local_check() -> None:
    """Rank 0's arguments fail its own check (``mean`` of int32), rank 1's pass: both
    raise, then both are still in step."""
    comm = dist.init(backend="numpy")
    r = comm.rank
    try:
        comm.all_reduce([nna.zeros(3, np.float32 if r else np.int32)], op="mean")
        print(f"rank {r}: the all-reduce passed", flush=True)
    except Exception as e:  # noqa: BLE001 - the type is what is printed
        print(f"rank {r} caught {type(e).__name__}: {e}", flush=True)
    x = nna.array(np.full(3, r + 1.0, np.float32))
    comm.all_reduce([x], op="sum")
    print(f"rank {r} in step: {x.numpy().tolist()}", flush=True)


def loop(how: str) -> None:
    """A manual loop of all-reduces; rank 1 leaves at its fourth step (``how``) while
    rank 0 would loop for minutes. The grace rank 0 gives a collective still finishing
    after rank 1's departure is cut from 3 s to 0.5 s: the same abort, 2.5 s sooner per
    case (the collectives here finish in microseconds)."""
    faults.GRACE_S = 0.5
    comm = dist.init(backend="numpy")
    x = nna.zeros(3)
    deadline = time.monotonic() + 900  # past the test's limit: only an abort ends it
    i = 0
    while time.monotonic() < deadline:
        if comm.rank == 1 and i == 3:
            if how == "raise":
                raise SystemExit(3)
            if how == "exit":
                exit(3)  # noqa: PLR1722 - the site builtin is the case
            if how == "os_exit":
                os._exit(0)
            if how == "uneven":
                break  # fewer steps than rank 0: the script ends normally
        comm.all_reduce([x], op="sum")
        i += 1
    if comm.rank == 0:
        print("rank 0 was never stopped", flush=True)


def example(name: str, *args: str) -> None:
    """``examples/NAME``'s ``main(ARGS)`` on this rank, as ``mpiexec python
    examples/NAME ARGS`` runs it; a non-zero status raises (aborting the job)."""
    examples = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "examples")
    sys.path.insert(0, examples)  # its _cli and digits_cnn
    try:
        main = runpy.run_path(os.path.join(examples, name), run_name=name[:-3])["main"]
        status = main(list(args))
    finally:
        sys.path.remove(examples)
    if status:
        raise RuntimeError(f"{name} {' '.join(args)} ended with status {status}")


#: The modes by name: ``python tests/mpi_worker.py MODE ARGS...`` calls ``MODES[MODE](*ARGS)``.
MODES = {"ops": check_ops, "train": lambda out, *backends: train(out, list(backends)),
         "mismatch": mismatch, "fault": fault, "exit": exit_early,
         "checks": mismatched_collectives, "leave": leave, "scaler": scaler,
         "local_check": local_check, "loop": loop, "example": example}


class Tagged(io.TextIOBase):
    """A text stream writing each whole line to ``out`` as ``TAG| line``."""

    def __init__(self, out: io.TextIOBase, tag: str) -> None:
        self.out, self.tag, self.part = out, tag, ""

    def write(self, s: str) -> int:
        *lines, self.part = (self.part + s).split("\n")
        for line in lines:
            self.out.write(f"{self.tag}| {line}\n")
        return len(s)

    def flush(self) -> None:
        self.out.flush()


def sections(specs: list[str]) -> None:
    """Run each ``"MODE ARGS..."`` of ``specs`` in turn in this one job (the modes that end
    normally: one mpiexec start serves all their tests); every line a mode prints is
    tagged ``SPEC| ``, and each ends with ``SPEC| section ended on rank R``."""
    rank = dist.init(backend="numpy").rank
    for spec in specs:
        mode, *args = shlex.split(spec)
        with contextlib.redirect_stdout(Tagged(sys.stdout, spec)):
            MODES[mode](*args)
            print(f"section ended on rank {rank}", flush=True)


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "sections":
        sections(args)
    elif mode in MODES:
        MODES[mode](*args)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
