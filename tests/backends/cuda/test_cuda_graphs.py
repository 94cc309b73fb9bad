"""CUDA graphs through CuPy (``nnarray.backends.cuda.graphs``, issue 39 item 1): launches
captured once replay the same numbers as launched one by one, new inputs are copied into
the captured buffers. Device tests skip with the backend's reason where no GPU is usable
(never a fake device); the host-side decision: tests/grad/test_cuda_replay.py."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import needs

import nnarray as nna


@pytest.fixture
def dev():
    needs("cuda")
    return nna.backends.get_device("cuda", 0)


def _sgd_step(cp, w, x, t, g, lr):
    """One least-squares SGD step on fixed buffers, written in place (capturable)."""
    cp.matmul(x, w, out=g["y"])
    cp.subtract(g["y"], t, out=g["y"])
    cp.matmul(x.T, g["y"], out=g["gw"])
    cp.multiply(g["gw"], lr, out=g["gw"])
    cp.subtract(w, g["gw"], out=w)


def test_replayed_graph_gives_the_plain_launches_parameters_after_100_steps(dev):
    cp = dev._cp
    from nnarray.backends.cuda.graphs import Captured
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((32, 4)).astype(np.float32)
    batches = [(rng.standard_normal((16, 32)).astype(np.float32),
                rng.standard_normal((16, 4)).astype(np.float32)) for _ in range(100)]
    lr = np.float32(1e-3)

    def buffers():
        return {"y": cp.empty((16, 4), cp.float32), "gw": cp.empty((32, 4), cp.float32)}

    w, g = cp.asarray(w0), buffers()
    for xb, tb in batches:
        _sgd_step(cp, w, cp.asarray(xb), cp.asarray(tb), g, lr)
    plain = cp.asnumpy(w)

    w, g = cp.asarray(w0), buffers()
    x, t = cp.empty((16, 32), cp.float32), cp.empty((16, 4), cp.float32)
    x.set(batches[0][0])
    t.set(batches[0][1])
    _sgd_step(cp, w, x, t, g, lr)  # the plain first run (compiles, warms the pool)
    graph = Captured(dev, lambda: _sgd_step(cp, w, x, t, g, lr))
    for xb, tb in batches[1:]:
        graph.copy_in(x, cp.asarray(xb))
        graph.copy_in(t, cp.asarray(tb))
        graph.launch()
    np.testing.assert_array_equal(cp.asnumpy(w), plain)


def test_copy_in_refuses_another_shape(dev):
    cp = dev._cp
    from nnarray.backends.cuda.graphs import Captured
    x = cp.zeros(4, cp.float32)
    graph = Captured(dev, lambda: cp.add(x, 1, out=x))
    graph.launch()
    graph.launch()
    np.testing.assert_array_equal(cp.asnumpy(x), [2, 2, 2, 2])
    with pytest.raises(nna.ShapeError, match=r"cuda graph copy_in: the captured buffer is "
                                             r"\(4,\) float32, the new value \(5,\)"):
        graph.copy_in(x, cp.zeros(5, cp.float32))
