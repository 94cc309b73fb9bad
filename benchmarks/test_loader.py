"""Training fed from host data (issue 39 item 3): one pass of the MLP step (64x1000 ->
100 -> 10, relu, MSE, SGD, define-by-run) over host batches from ``data.DataLoader``,
each batch uploaded when it is handed out (``plain``) or one batch ahead while the step
runs (``device=``: OpenCL's second queue, CUDA's side stream; ``pinned``: with
``pin_memory=True``, CUDA only). The first pass's last loss is checked against the same
pass on the numpy backend.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F

from .conftest import expect, measure, small
from .test_training import LR, _layers, build_mlp, eager_step, mlp_params

LOADER = "mlp epoch 16 batches of 64x1000 from host DataLoader"
HOW = ["plain", "prefetch", "prefetch pinned"]


def _data(benchmark: Any) -> tuple[np.ndarray, np.ndarray]:
    n = 64 * (4 if small(benchmark) else 16)
    rng = np.random.default_rng(5)
    return (rng.standard_normal((n, 1000)).astype(np.float32),
            rng.standard_normal((n, 10)).astype(np.float32))


def _epoch_fn(xs: np.ndarray, ts: np.ndarray, **loader: Any) -> Any:
    """A pass over ``(xs, ts)`` in batches of 64 training a fresh MLP on the current
    context; returns the last loss."""
    from nnarray.data import DataLoader
    grad, nn, solvers = _layers()
    model = build_mlp(nn)
    for name, value in mlp_params().items():
        model.parameters()[name].d = value
    solver = solvers.SGD(LR)
    solver.set_parameters(model.parameters())
    batches = DataLoader((xs, ts), 64, **loader)

    def epoch() -> Any:
        loss = None
        for x, t in batches:
            loss = eager_step(grad, solver, lambda: F.mean_squared_error(model(x), t))
        return loss
    return epoch, len(batches)


@pytest.mark.benchmark(group=LOADER)
@pytest.mark.parametrize("how", HOW)
def test_loader_epoch(benchmark, backend, how):
    kind = backend.name.split(":")[0]
    if how == "prefetch pinned" and kind != "cuda":
        pytest.skip("pin_memory pins host batches on CUDA only")
    xs, ts = _data(benchmark)
    with nna.context_scope("numpy"):
        want = np.array(_epoch_fn(xs, ts)[0]().d)
    extra = {} if how == "plain" else {"device": backend.name,
                                       "pin_memory": how == "prefetch pinned"}
    epoch, n = _epoch_fn(xs, ts, **extra)
    measure(benchmark, backend, epoch, baseline=kind == "numpy" and how == "plain",
            variant=None if how == "plain" else how, check=expect(want, rtol=1e-4),
            transfers=0 if kind == "numpy" else 2 * n)
