"""Transcendental elementwise math: ``sin``, ``exp``, ``tanh``, ``sinh``, ``expm1`` on 2^22
float32, and the chain ``y = tanh(0.5x + 0.1) * sigmoid(x) + x * x`` forward plus backward
on 4096x1024 as a static graph, against numpy by hand.

On OpenCL CPU devices these take the inline math of ``backends/opencl/inline_math.py``;
``NNARRAY_OPENCL_MATH=builtin`` measures the OpenCL builtins instead (docs/backends.md).
"""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F

from .conftest import expect, measure, require, small

CHAIN = "chain tanh(0.5x+0.1)*sigmoid(x)+x*x fwd+bwd 4096x1024 f32"
FUNCS = ["sin", "exp", "tanh", "sinh", "expm1"]


def _group(name: str) -> str:
    return f"math {name} 2^22 f32"


def _x(benchmark, n: int) -> np.ndarray:
    n = 1 << 12 if small(benchmark) else n
    return (np.random.default_rng(0).standard_normal(n) * 3).astype(np.float32)


@pytest.mark.parametrize("name", FUNCS)
def test_math_nnarray(benchmark, backend, name):
    benchmark.group = _group(name)
    xn = _x(benchmark, 1 << 22)
    x = nna.NdArray.from_numpy_array(xn)
    fn = getattr(F, name)
    measure(benchmark, backend, lambda: fn(x), check=expect(getattr(np, name)(xn)))


@pytest.mark.parametrize("name", FUNCS)
def test_math_reference(benchmark, ref, name):
    if ref.name != "numpy":
        pytest.skip("numpy is this group's reference")
    benchmark.group = _group(name)
    xn = _x(benchmark, 1 << 22)
    fn = getattr(np, name)
    measure(benchmark, ref, lambda: fn(xn), baseline=True, check=expect(fn(xn)))


def _chain_inputs(benchmark) -> tuple[np.ndarray, np.ndarray]:
    shape = (64, 1024) if small(benchmark) else (4096, 1024)
    rng = np.random.default_rng(0)
    return (rng.standard_normal(shape, dtype=np.float32),
            rng.standard_normal(shape, dtype=np.float32))


def chain_by_hand(x: np.ndarray, dy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """numpy by hand: the forward and its backward written out, no temporaries kept."""
    t = np.tanh(x * np.float32(0.5) + np.float32(0.1))
    s = np.exp(-x)
    s += 1
    np.reciprocal(s, out=s)
    y = t * s
    y += x * x
    # dx = dy * (0.5 (1 - t^2) s + t s (1 - s) + 2x)
    ds = 1 - s
    ds *= t
    t *= t
    np.subtract(1, t, out=t)
    t *= 0.5
    t += ds
    t *= s
    t += x + x
    t *= dy
    return y, t


@pytest.mark.benchmark(group=CHAIN)
@pytest.mark.parametrize("recompute", ["auto", "all"])
def test_chain_nnarray_static(benchmark, backend, recompute):
    """The static graph; ``all``: backward recomputes ``tanh`` and ``sigmoid`` from
    ``x`` instead of the forward saving them, on any device that fuses (``auto``, the
    default, does so on GPUs only: docs/graphs.md *Recomputation in backward*)."""
    grad = require("nnarray.grad", "Variable")
    if recompute == "all" and backend.name.split(":")[0] not in ("opencl", "cuda"):
        pytest.skip("recomputation needs fusion (OpenCL, CUDA)")
    xn, dyn = _chain_inputs(benchmark)
    with grad.fusion_enabled(grad.fusion_adapter.enabled(), recompute=recompute):
        x = grad.Variable.from_numpy_array(xn, need_grad=True)
        dy = nna.NdArray.from_numpy_array(dyn)
        y = F.tanh(0.5 * x + 0.1) * F.sigmoid(x) + x * x

        def step():
            y.forward()
            x.grad.zero()
            y.backward(dy)
            return y, x.grad

        measure(benchmark, backend, step,
                variant="static graph" + (" · recompute all" if recompute == "all" else ""),
                check=expect(*chain_by_hand(xn, dyn), rtol=1e-4, atol=1e-5))


@pytest.mark.benchmark(group=CHAIN)
def test_chain_reference(benchmark, ref):
    if ref.name != "numpy":
        pytest.skip("numpy by hand is this group's reference")
    xn, dyn = _chain_inputs(benchmark)
    measure(benchmark, ref, lambda: chain_by_hand(xn, dyn), baseline=True,
            check=expect(*chain_by_hand(xn, dyn), rtol=1e-5, atol=1e-6))
