"""The Array API namespace's kernels (``import nnarray as xp``) on every backend beside
raw numpy: elementwise, scan and reduction rows on 1e6 float32, and the namespace's
tiny-op cost (``xp.add`` is ``F.add``'s function: same cost by construction)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import nnarray as nna

from .conftest import expect, measure, small

TINY = "tiny add (2,3) f32"

#: group -> (nnarray call, numpy call, inputs' shape); both calls take the module.
WORKLOADS: dict[str, tuple[Callable, Callable, tuple]] = {
    "xp sin 1e6 f32": (lambda m, x, y: m.sin(x), lambda x, y: np.sin(x), (1_000_000,)),
    "xp logaddexp 1e6 f32": (lambda m, x, y: m.logaddexp(x, y),
                             lambda x, y: np.logaddexp(x, y), (1_000_000,)),
    "xp cumulative_sum 1e6 f32": (lambda m, x, y: m.cumulative_sum(x),
                                  lambda x, y: np.cumsum(x), (1_000_000,)),
    "xp std axis=0 1024x1024 f32": (lambda m, x, y: m.std(x, axis=0),
                                    lambda x, y: np.std(x, axis=0), (1024, 1024)),
    "xp where 1e6 f32": (lambda m, x, y: m.where(x > y, x, y),
                         lambda x, y: np.where(x > y, x, y), (1_000_000,)),
}


def _inputs(benchmark: Any, shape: tuple) -> tuple[np.ndarray, np.ndarray]:
    if small(benchmark):
        shape = tuple(min(s, 64) for s in shape)
    rng = np.random.default_rng(0)
    return tuple(rng.standard_normal(shape, dtype=np.float32) for _ in range(2))


@pytest.mark.parametrize("group", list(WORKLOADS))
def test_namespace_nnarray(benchmark, backend, group):
    benchmark.group = group
    call, ref, shape = WORKLOADS[group]
    xs, ys = _inputs(benchmark, shape)
    x, y = nna.NdArray.from_numpy_array(xs), nna.NdArray.from_numpy_array(ys)
    # float32 scans and reductions: compare with float64 numpy at float32's accuracy
    want = ref(xs.astype(np.float64), ys.astype(np.float64))
    measure(benchmark, backend, lambda: call(nna, x, y),
            check=expect(want, rtol=2e-4, atol=2e-3 if "cumulative" in group else 1e-5))


@pytest.mark.parametrize("group", list(WORKLOADS))
def test_namespace_reference(benchmark, ref, group):
    if ref.name != "numpy":
        pytest.skip("the namespace rows compare nnarray with raw numpy")
    benchmark.group = group
    _, call, shape = WORKLOADS[group]
    xs, ys = _inputs(benchmark, shape)
    want = call(xs.astype(np.float64), ys.astype(np.float64))
    measure(benchmark, ref, lambda: call(xs, ys), baseline=True,
            check=expect(want, rtol=2e-4, atol=2e-3 if "cumulative" in group else 1e-5))


@pytest.mark.benchmark(group=TINY)
def test_tiny_add_namespace(benchmark, backend):
    """``xp.add`` beside ``F.add`` in the tiny-op group."""
    rng = np.random.default_rng(0)
    an, bn = (rng.random((2, 3), dtype=np.float32) for _ in range(2))
    a, b = (nna.NdArray.from_numpy_array(v) for v in (an, bn))
    measure(benchmark, backend, lambda: nna.add(a, b), variant="xp.add",
            check=expect(an + bn))
