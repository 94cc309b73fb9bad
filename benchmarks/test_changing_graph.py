"""Define-by-run steps whose graph is new at (almost) every call: what a backward pass
costs before any program of it can be replayed (issue 37 item 0).

A define-by-run graph's backward runs its rules untaped the first time its signature
(ops, shapes, wiring) is seen, traces them as they run at the second sighting and
replays that program from the third (``grad/backward.py``); these rows time the
workloads where no program is ever replayed, so a change to how backward runs a graph
seen once shows here:

- *changing graph*: matmul-relu-matmul-tanh over 40 batch sizes in turn (more
  signatures than the 32 programs kept, so each call is a first sighting);
- *one-off graph*: tanh(x @ W) summed, on 400 batch sizes in turn.

Each step zeroes the weights' gradients, records the graph under ``auto_forward``, runs
``backward()`` and returns the first weight's gradient; torch's rows do the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F

from .conftest import Reference, expect, measure, require

CHANGING = "changing graph: dbr matmul-relu-matmul-tanh, 40 batch sizes, fwd+bwd"
ONE_OFF = "one-off graph: dbr sum(tanh(x @ W)), 400 batch sizes, fwd+bwd"


def _data(kind: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The batches (rows 8.. or 1..) and the weights of ``kind``."""
    rng = np.random.default_rng(0)
    if kind == "changing":
        ws = [rng.standard_normal((100, 50)).astype(np.float32) * 0.1,
              rng.standard_normal((50, 10)).astype(np.float32) * 0.1]
        xs = [rng.standard_normal((8 + i, 100)).astype(np.float32) for i in range(40)]
    else:
        ws = [rng.standard_normal((30, 20)).astype(np.float32) * 0.1]
        xs = [rng.standard_normal((1 + i, 30)).astype(np.float32) for i in range(400)]
    return xs, ws


def _numpy_grad(kind: str) -> np.ndarray:
    """The first weight's gradient for the first batch, by hand."""
    xs, ws = _data(kind)
    x = xs[0].astype(np.float64)
    if kind == "changing":
        h = x @ ws[0]
        t = np.tanh(np.maximum(h, 0) @ ws[1])
        return x.T @ (((0.5 * (1 - t * t)) @ ws[1].T) * (h > 0))
    t = np.tanh(x @ ws[0])
    return x.T @ (1 - t * t)


def _loss(kind: str, x: Any, ws: list) -> Any:
    if kind == "changing":
        return F.sum(F.tanh(F.relu(x @ ws[0]) @ ws[1]) * 0.5)
    return F.sum(F.tanh(x @ ws[0]))


def nnarray_step(kind: str) -> Any:
    grad = require("nnarray.grad", "Variable", "auto_forward")
    xn, wn = _data(kind)
    ws = [grad.Variable.from_numpy_array(w, need_grad=True) for w in wn]
    xs = [grad.Variable.from_numpy_array(x) for x in xn]
    here = nna.get_current_context()
    for v in (*ws, *xs):
        v.data.get_data("r", here)  # on the device, as a loader would put them
    it = [0]

    def step() -> Any:
        x = xs[it[0] % len(xs)]
        it[0] += 1
        for w in ws:
            w.grad.zero()
        with grad.auto_forward():
            y = _loss(kind, x, ws)
        y.backward()
        return ws[0].grad
    return step


def torch_step(ref: Reference, kind: str) -> Any:
    torch = ref.xp
    xn, wn = _data(kind)
    ws = [ref.asarray(w).requires_grad_() for w in wn]
    xs = [ref.asarray(x) for x in xn]
    it = [0]

    def step() -> Any:
        x = xs[it[0] % len(xs)]
        it[0] += 1
        for w in ws:
            w.grad = None
        if kind == "changing":
            y = (torch.tanh(torch.relu(x @ ws[0]) @ ws[1]) * 0.5).sum()
        else:
            y = torch.tanh(x @ ws[0]).sum()
        y.backward()
        return ws[0].grad
    return step


KINDS = pytest.mark.parametrize("kind", ["changing", "one-off"])


def _group(kind: str) -> str:
    return CHANGING if kind == "changing" else ONE_OFF


@KINDS
def test_changing_nnarray(benchmark, backend, kind):
    benchmark.group = _group(kind)
    measure(benchmark, backend, nnarray_step(kind), variant="define-by-run",
            check=expect(_numpy_grad(kind), rtol=1e-4, atol=1e-5))


@KINDS
def test_changing_torch(benchmark, ref, kind):
    benchmark.group = _group(kind)
    if not ref.name.startswith("torch"):
        pytest.skip("a torch row (the graph is recorded by the framework)")
    measure(benchmark, ref, torch_step(ref, kind), baseline=ref.name == "torch-cpu",
            variant="eager", check=expect(_numpy_grad(kind), rtol=1e-4, atol=1e-5))
