"""The MPI job behind ``test_distributed.py``: ``mpiexec -n N python -m
benchmarks.data_parallel_job BACKEND STEPS OUT.json`` (from the repository root).

Every rank trains the benchmark MLP (64x1000 -> 100 -> 10, MSE, SGD) on its shard of the
64-row batch with ``solvers.SGD(comm=...)``, so N ranks share one global batch. Rank 0
times each step (``perf_counter`` around it, device synchronized, after a barrier and
three warm-up steps) and then each all-reduce variant on the model's gradients and on a
20-layer gradient list (40 arrays, 5.3 MB): bucketed (``comm.all_reduce(grads)``) and one
call per array. It writes the per-call durations, the collective-call counts and the
transfers of one warm step as JSON.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

import nnarray as nna
import nnarray.functions as F
from nnarray import distributed as dist
from nnarray import grad, nn, solvers
from nnarray.training import shard

from .test_training import LR, build_mlp, mlp_data, mlp_params


def timed(fn, n: int, comm) -> list[float]:
    out = []
    for _ in range(n):
        comm.barrier()
        t0 = time.perf_counter()
        fn()
        nna.device_synchronize()
        out.append(time.perf_counter() - t0)
    return out


def main(backend: str, steps: int, path: str) -> None:
    comm = dist.init(backend=backend)
    res: dict = {"ranks": comm.size, "ctx": comm.ctx.key}
    with nna.context_scope(comm.ctx):
        model = build_mlp(nn)
        for name, value in mlp_params().items():
            model.parameters()[name].d = value
            nna.nn.parameter.place(model.parameters()[name].data)
        xs, ts = mlp_data()
        lo, hi = shard(len(xs), comm.rank, comm.size)
        x = grad.Variable.from_numpy_array(xs[lo:hi])
        t = grad.Variable.from_numpy_array(ts[lo:hi])
        for v in (x, t):
            v.data.get_data("rw")
        solver = solvers.SGD(LR, comm=comm)
        solver.set_parameters(model.parameters())

        def step() -> None:
            solver.zero_grad()
            with grad.auto_forward():
                loss = F.mean_squared_error(model(x), t)
            loss.backward()
            solver.update()

        t0 = time.perf_counter()
        step()
        res["first_call_s"] = time.perf_counter() - t0
        for _ in range(2):
            step()
        nna.reset_transfer_stats()
        calls = comm.calls
        step()
        res["step_transfers"] = nna.transfer_stats()["count"]
        res["step_calls"] = comm.calls - calls
        res["step"] = timed(step, steps, comm)

        rng = np.random.default_rng(0)
        deep = [nna.array(rng.standard_normal(s).astype(np.float32))
                for _ in range(20) for s in ((256, 256), (256,))]
        for a in deep:
            a.get_data("rw")
        mlp_grads = [p.grad for p in model.parameters().values()]
        for name, arrays in (("mlp", mlp_grads), ("deep", deep)):
            if comm.size == 1:
                break
            variants = {"bucketed": lambda a=arrays: comm.all_reduce(a),
                        "per array": lambda a=arrays: [comm.all_reduce([g]) for g in a]}
            for label, fn in variants.items():
                fn()
                calls = comm.calls
                nna.reset_transfer_stats()
                fn()
                res[f"{name} {label} calls"] = comm.calls - calls
                res[f"{name} {label} transfers"] = nna.transfer_stats()["count"]
                res[f"{name} {label}"] = timed(fn, steps, comm)
            res[f"{name} arrays"] = len(arrays)
            res[f"{name} bytes"] = sum(a.nbytes for a in arrays)
    if comm.rank == 0:
        with open(path, "w") as f:
            json.dump(res, f)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
