"""Elementwise workloads: dispatch overhead on a tiny op, and the memory-bound seed workload."""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F

from .conftest import Reference, expect, measure, require, small

TINY = "tiny add (2,3) f32"
SEED = "seed y=2x, dx=2dy 64x3x224x224 f32"


def _seed_shape(benchmark) -> tuple[int, ...]:
    return (2, 3, 224, 224) if small(benchmark) else (64, 3, 224, 224)


def _inputs(shape: tuple[int, ...], n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.random(shape, dtype=np.float32) for _ in range(n)]


@pytest.mark.benchmark(group=TINY)
def test_tiny_add_nnarray(benchmark, backend):
    an, bn = _inputs((2, 3), 2)
    a, b = (nna.NdArray.from_numpy_array(v) for v in (an, bn))
    measure(benchmark, backend, lambda: F.add(a, b), check=expect(an + bn))


@pytest.mark.benchmark(group=TINY)
def test_tiny_add_reference(benchmark, ref):
    an, bn = _inputs((2, 3), 2)
    a, b = (ref.asarray(v) for v in (an, bn))
    add = ref.xp.add
    measure(benchmark, ref, lambda: add(a, b), baseline=ref.name == "numpy",
            check=expect(an + bn))


@pytest.mark.benchmark(group=SEED)
def test_seed_nnarray(benchmark, backend):
    xn, dyn = _inputs(_seed_shape(benchmark), 2)
    x, dy = (nna.NdArray.from_numpy_array(v) for v in (xn, dyn))

    def step():
        y = x * 2.0   # forward of y = 2x
        dx = dy * 2.0  # its backward, dx = 2 dy
        return y, dx

    measure(benchmark, backend, step, check=expect(2 * xn, 2 * dyn))


@pytest.mark.benchmark(group=SEED)
def test_seed_grad(benchmark, backend):
    grad = require("nnarray.grad", "Variable", "auto_forward")
    xs, dys = _inputs(_seed_shape(benchmark), 2)
    x = grad.Variable.from_numpy_array(xs, need_grad=True)
    dy = nna.NdArray.from_numpy_array(dys)

    def step():
        x.grad.zero()
        with grad.auto_forward():
            y = x * 2.0
        y.backward(dy)
        return y, x.grad

    measure(benchmark, backend, step, variant="grad.Variable, auto_forward",
            check=expect(2 * xs, 2 * dys))


@pytest.mark.benchmark(group=SEED)
def test_seed_reference(benchmark, ref):
    xn, dyn = _inputs(_seed_shape(benchmark), 2)
    x, dy = (ref.asarray(v) for v in (xn, dyn))
    measure(benchmark, ref, lambda: (x * 2.0, dy * 2.0), baseline=ref.name == "numpy",
            check=expect(2 * xn, 2 * dyn))


@pytest.mark.benchmark(group=SEED)
def test_seed_numpy_out(benchmark):
    """numpy into preallocated ``out=`` arrays: no page faults on fresh memory."""
    ref = Reference("numpy")
    x, dy = _inputs(_seed_shape(benchmark), 2)
    y, dx = np.empty_like(x), np.empty_like(dy)

    def step():
        np.multiply(x, 2.0, out=y)
        np.multiply(dy, 2.0, out=dx)
        return y, dx

    measure(benchmark, ref, step, label="numpy out=", check=expect(x + x, dy + dy))
