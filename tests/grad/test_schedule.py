"""The one schedule: every graph run (static forward, bound executors, backward replay of
static and define-by-run graphs) executes a ``grad.schedule.Schedule`` built by one
builder, run by one interpreter or its generated code."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import tol

import nnarray as nna
import nnarray.functions as F
from nnarray import grad
from nnarray.grad import Graph, Variable, schedule


@pytest.fixture
def unfused():
    """Schedules built without fusion (the tests below pin the unfused steps)."""
    with grad.fusion_enabled(False):
        yield


@pytest.fixture
def built(monkeypatch) -> list:
    """``[(kind, [op, ...])]`` of every schedule built while the test runs."""
    seen: list = []
    monkeypatch.setattr(schedule, "passes",
                        [lambda s: seen.append((s.kind, [st.op for st in s.steps]))])
    return seen


def _mlp(rng, n: int = 4) -> tuple:
    x = Variable.from_numpy_array(rng.standard_normal((n, 3)))
    w = Variable.from_numpy_array(rng.standard_normal((3, 2)), need_grad=True)
    return x, w


def test_static_forward_and_backward_are_schedules(backend: str, built: list) -> None:
    rng = np.random.default_rng(0)
    x, w = _mlp(rng)
    y = F.sum(F.tanh(x @ w))
    y.forward()
    w.grad.zero()
    y.backward()
    y.forward()
    y.backward()  # replayed: no new schedule
    assert built[0] == ("forward", ["matmul", "tanh", "sum"])
    assert [k for k, _ in built] == ["forward", "backward"]
    assert "matmul" in built[1][1]
    hn = np.tanh(x.d @ w.d)
    np.testing.assert_allclose(w.g, 2 * x.d.T @ (1 - hn * hn), **tol(np.float64))


def test_executor_runs_schedules(backend: str, built: list) -> None:
    rng = np.random.default_rng(1)
    x, w = _mlp(rng)
    ex = Graph(F.sum(F.tanh(x @ w))).bind(backend, grad_req={"arg1": "write"})
    for _ in range(2):
        ex.forward()
        ex.backward()
    assert [k for k, _ in built] == ["forward", "backward"]
    assert ex.schedule().kind == "forward" and len(ex.schedule().steps) == 3
    hn = np.tanh(x.d @ w.d)
    np.testing.assert_allclose(ex.grad_dict["arg1"].numpy(), x.d.T @ (1 - hn * hn),
                               **tol(np.float64))


def test_define_by_run_replay_is_a_schedule(backend: str, built: list, monkeypatch) -> None:
    """The first sighting of a define-by-run graph runs its rules recording nothing; the
    second runs them as it tapes its backward, which replays as a schedule from the
    third on."""
    monkeypatch.setattr(grad.backward._local, "programs", {}, raising=False)
    rng = np.random.default_rng(2)
    w = Variable.from_numpy_array(rng.standard_normal((3, 2)), need_grad=True)
    for it in range(4):
        xn = rng.standard_normal((4, 3))
        with grad.auto_forward():
            y = F.sum(F.tanh(Variable.from_numpy_array(xn) @ w))
        w.grad.zero()
        y.backward()
        hn = np.tanh(xn @ w.d)
        np.testing.assert_allclose(w.g, xn.T @ (1 - hn * hn), **tol(np.float64))
        assert [k for k, _ in built] == ([] if it < 2 else ["backward"])


@pytest.mark.parametrize("clear_buffer", [False, True])
def test_every_sighting_of_a_define_by_run_graph_computes_the_same(
        backend: str, clear_buffer: bool, monkeypatch) -> None:
    """Untaped (1st), traced as it runs (2nd), replayed by new generated code (3rd) and
    again (4th): the same leaf and intermediate gradients, where an intermediate feeds
    three uses and a leaf two."""
    monkeypatch.setattr(grad.backward._local, "programs", {}, raising=False)
    rng = np.random.default_rng(5)
    xn, wn = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    x = Variable.from_numpy_array(xn)
    w = Variable.from_numpy_array(wn, need_grad=True)
    hn = xn @ wn
    dh = (1 - np.tanh(hn) ** 2) * hn + np.tanh(hn) + 1
    for _ in range(4):
        with grad.auto_forward():
            h = x @ w
            y = F.sum(F.tanh(h) * h + h) + F.sum(w * w)
        w.grad.zero()
        y.backward(clear_buffer=clear_buffer)
        np.testing.assert_allclose(w.g, xn.T @ dh + 2 * wn, **tol(np.float64))
        if not clear_buffer:
            np.testing.assert_allclose(h.g, dh, **tol(np.float64))


def test_a_leaf_never_adopts_a_gradient_another_value_holds(backend: str,
                                                             monkeypatch) -> None:
    """``sum(2w + w)``: add hands its output gradient to both operands; the leaf copies
    it before the intermediate's share is added in, at every sighting."""
    monkeypatch.setattr(grad.backward._local, "programs", {}, raising=False)
    w = Variable.from_numpy_array(np.arange(3.0), need_grad=True)
    for _ in range(4):
        with grad.auto_forward():
            z = w * 2.0
            y = F.sum(z + w)
        w.grad.zero()
        y.backward()
        np.testing.assert_array_equal(w.g, [3.0, 3.0, 3.0])
        np.testing.assert_array_equal(z.g, [1.0, 1.0, 1.0])


def test_interpreter_and_generated_code_agree(backend: str) -> None:
    rng = np.random.default_rng(3)
    x, w = _mlp(rng)
    y = F.sum(F.exp(F.tanh(x @ w) * 0.5))
    y.forward()
    s = grad.schedule_of(y)
    assert s.program is not None and "def program" in s.program.source
    gen = y.d.copy()
    x.d = rng.standard_normal((4, 3))
    s.run(y, interpret=True)
    ref = np.exp(np.tanh(x.d @ w.d) * 0.5).sum()
    np.testing.assert_allclose(y.d, ref, **tol(np.float64))
    assert not np.allclose(gen, ref)


def test_describe_lists_steps_retains_and_frees(backend: str, unfused) -> None:
    rng = np.random.default_rng(4)
    x, w = _mlp(rng)
    y = F.sum(F.tanh(x @ w))
    y.forward()
    text = grad.schedule_of(y).describe()
    lines = text.splitlines()
    assert lines[0].startswith("forward schedule on ") and lines[0].endswith("3 steps")
    assert "matmul" in lines[1] and "retain in[0, 1]" in lines[1]
    assert "tanh" in lines[2] and "retain in[] out[0]" in lines[2]
    assert lines[-1] == "generated: yes"
    with pytest.raises(grad.GraphError, match="backward"):
        grad.schedule_of(y, backward=True)
    y.backward()
    back = grad.schedule_of(y, backward=True).describe()
    assert back.startswith("backward schedule") and "free" in back


def test_a_pass_may_rewrite_the_steps(backend: str, unfused) -> None:
    """``Schedule.rewrite``: a pass replacing the step list changes what runs (here: the
    last step dropped, so the output keeps its old value)."""
    rng = np.random.default_rng(5)
    x, w = _mlp(rng)
    h = F.tanh(x @ w)
    y = F.sum(h)
    y.forward()
    old = y.d.copy()
    s = grad.schedule_of(y)
    s.rewrite(lambda sc: setattr(sc, "steps", sc.steps[:-1]))
    assert len(s.steps) == 2 and "sum" not in s.describe()
    x.d = rng.standard_normal((4, 3))
    y.forward()
    np.testing.assert_allclose(h.d, np.tanh(x.d @ w.d), **tol(np.float64))
    np.testing.assert_allclose(y.d, old)


def test_invariant_steps_skipped_while_their_leaves_are_unchanged(backend: str) -> None:
    """``x ** w``'s backward needs ``log(x)``: with ``x`` a constant leaf, that step runs
    on the first replay and again only after ``x`` changed."""
    x = Variable.from_numpy_array(np.full((4, 3), 1.5))
    w = Variable.from_numpy_array(np.ones((4, 3)), need_grad=True)
    y = F.sum(x ** w)
    y.forward()
    y.backward()
    assert "[invariant]" in grad.schedule_of(y, backward=True).describe()
    for xv, logs in ((1.5, 0), (1.5, 0), (2.0, 1)):
        if logs:
            x.d = np.full((4, 3), xv)
        y.forward()
        w.grad.zero()
        nna.reset_kernel_stats()
        y.backward()
        assert nna.kernel_stats()["by_op"].get("log", 0) == logs
        np.testing.assert_allclose(w.g, np.full((4, 3), xv * np.log(xv)), **tol(np.float64))


@pytest.mark.allow_fallback("eigh runs on the host on OpenCL (an opaque step there)")
def test_a_step_of_several_outputs(backend: str) -> None:
    """``eigh`` is one node of two outputs (eigenvalues, and eigenvectors kept for
    backward though no Variable holds them): one step, generated where its kernel is
    plain, with each output stored or retained."""
    a = np.array([[4.0, 1, 0], [1, 3, 1], [0, 1, 2]])
    x = Variable.from_numpy_array(a, need_grad=True)
    w = nna.linalg.eigh(x)[0]
    y = F.sum(w * w)
    for k in range(2):
        x.d = a + k
        y.forward()
        x.grad.zero()
        y.backward()
        ev, vec = np.linalg.eigh(a + k)
        np.testing.assert_allclose(y.d, (ev * ev).sum(), **tol(np.float64))
        np.testing.assert_allclose(x.g, (vec * (2 * ev)) @ vec.T, rtol=1e-8, atol=1e-8)
    s = grad.schedule_of(y)
    assert len(s.steps[0].metas) == 2 and s.steps[0].op == "eigh"
    if s.steps[0].kernel is not None:
        assert s.program is not None and "t0_0, t0_1, = k0(" in s.program.source
