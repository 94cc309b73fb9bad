"""Kernel launch counting (``nna.kernel_stats``): every run of a backend kernel counts
once, wherever it is launched from (eager calls, compiled schedules, generated code)."""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad
from nnarray.grad import Graph, Variable


@pytest.fixture
def unfused():
    """Schedules built without fusion (the tests below pin the unfused steps)."""
    with grad.fusion_enabled(False):
        yield


def _launches() -> tuple[int, dict]:
    s = nna.kernel_stats()
    assert s["count"] == sum(s["by_op"].values()) == sum(s["by_device"].values())
    return s["count"], s["by_op"]


def test_eager_chain_counts_one_launch_per_op(backend: str) -> None:
    a = nna.asarray(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    nna.reset_kernel_stats()
    assert nna.kernel_stats() == {"count": 0, "by_op": {}, "by_device": {}}
    b = F.exp(a) + a
    c = b * 2.0
    d = F.tanh(c)
    count, by_op = _launches()
    assert count == 4
    assert by_op == {"exp": 1, "add": 1, "mul": 1, "tanh": 1}
    assert list(nna.kernel_stats()["by_device"]) == [nna.get_current_context().key]
    an = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(d.numpy(), np.tanh((np.exp(an) + an) * 2), rtol=1e-5)


def _static_step() -> tuple[Variable, Variable, Variable]:
    rng = np.random.default_rng(0)
    x = Variable.from_numpy_array(rng.standard_normal((3, 4)).astype(np.float32))
    w = Variable.from_numpy_array(rng.standard_normal((4, 2)).astype(np.float32),
                                  need_grad=True)
    y = F.sum(F.tanh(x @ w + 1.0))
    return x, w, y


def test_static_step_launch_count(backend: str, unfused) -> None:
    """A static forward launches one kernel per node, generated or interpreted; the
    backward replay one per step of its schedule, the same on every replay."""
    x, w, y = _static_step()
    y.forward()
    nna.reset_kernel_stats()
    y.forward()
    assert _launches() == (4, {"matmul": 1, "add": 1, "tanh": 1, "sum": 1})
    nna.reset_kernel_stats()
    y.forward(clear_buffer=True)  # the interpreter: the same launches
    assert _launches()[0] == 4
    y.forward()
    w.grad.zero()
    y.backward()
    steps = len(nna.grad.schedule_of(y, backward=True).steps)
    for _ in range(2):
        y.forward()
        w.grad.zero()  # a lazily zero .grad adopts the gradient: no accumulation
        nna.reset_kernel_stats()
        y.backward()
        assert _launches()[0] == steps
    nna.reset_kernel_stats()
    y.backward()  # accumulated into w.grad: one add more
    count, by_op = _launches()
    assert count == steps + 1 and by_op["add"] >= 1
    assert steps == 5  # broadcast_to, mul, sub (tanh's derivative), mul, matmul
    hn = np.tanh(x.d @ w.d + 1.0)
    np.testing.assert_allclose(y.d, hn.sum(), rtol=1e-5)


def test_executor_counts_like_variable_forward(backend: str, unfused) -> None:
    x, w, y = _static_step()
    ex = Graph(y).bind(backend, grad_req="null")
    ex.forward(is_train=False)
    nna.reset_kernel_stats()
    ex.forward(is_train=False)
    assert _launches() == (4, {"matmul": 1, "add": 1, "tanh": 1, "sum": 1})
