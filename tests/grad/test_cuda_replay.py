"""CUDA-graph replay of static schedules, the host side (issue 39 item 1): the
``grad.cuda_graphs`` switch, the capture key of a graph's run and the pure decision to
run plainly, capture, replay or capture again. The capture itself:
tests/backends/cuda/test_cuda_graphs.py (GPU only)."""

from __future__ import annotations

import contextvars
import os
import threading

import forked
import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad
from nnarray.grad import Variable, cuda_replay, executor
from nnarray.grad.cuda_replay import CAPTURE, PLAIN, REPLAY, CaptureKey, Replay, key_of

K = CaptureKey("cuda:0", (((4, 3), "float32"), ((3, 2), "float32")), (1234,), 4)


def test_the_switch_is_per_thread_and_a_with_block_restores_it():
    assert cuda_replay.cuda_graphs_enabled() is cuda_replay.DEFAULT
    ctx = contextvars.copy_context()
    with grad.cuda_graphs(False):
        assert not cuda_replay.cuda_graphs_enabled()
        seen = []
        t = threading.Thread(target=lambda: seen.append(cuda_replay.cuda_graphs_enabled()))
        t.start()
        t.join()
        assert seen == [cuda_replay.DEFAULT]  # another thread keeps its own
        with grad.cuda_graphs(True):
            assert cuda_replay.cuda_graphs_enabled()
        assert not cuda_replay.cuda_graphs_enabled()
    assert cuda_replay.cuda_graphs_enabled() is cuda_replay.DEFAULT

    def switch():  # called, it switches for the rest of the (thread's) context
        grad.cuda_graphs(not cuda_replay.DEFAULT)
        return cuda_replay.cuda_graphs_enabled()
    assert ctx.run(switch) is (not cuda_replay.DEFAULT)
    with pytest.raises(TypeError, match="cuda_graphs: enabled must be a bool, got 'no'"):
        grad.cuda_graphs("no")


@pytest.mark.parametrize("value, on", [("0", False), ("off", False), ("1", True),
                                       (None, True)])
def test_environment_sets_the_default(value, on):
    env = {k: v for k, v in os.environ.items() if k != "NNARRAY_CUDA_GRAPHS"}
    if value is not None:
        env["NNARRAY_CUDA_GRAPHS"] = value
    out = forked.run("from nnarray import grad; from nnarray.grad import cuda_replay as r; "
                     "print(r.cuda_graphs_enabled())", env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(on)


def test_decide_captures_once_then_replays_and_starts_over_on_a_new_key():
    r = Replay()
    assert r.decide(K, cuda=True, enabled=True) == PLAIN  # the first run warms up
    assert r.decide(K, True, True) == CAPTURE
    r.captured("graph")
    assert [r.decide(K, True, True) for _ in range(3)] == [REPLAY] * 3
    smaller = CaptureKey("cuda:0", (((2, 3), "float32"), ((3, 2), "float32")), (1234,), 2)
    assert r.decide(smaller, True, True) == PLAIN and r.graph is None
    assert r.reason == "batch size changed from 4 to 2"
    assert r.decide(smaller, True, True) == CAPTURE and r.captures == 2
    assert r.decide(smaller, cuda=True, enabled=False) == PLAIN
    assert r.decide(smaller, cuda=False, enabled=True) == PLAIN
    r.captured("graph 2")
    assert r.decide(smaller, True, True) == REPLAY  # nothing changed while off


@pytest.mark.parametrize("new, reason", [
    (CaptureKey("cuda:1", K.leaves, K.params, 4), "context changed from cuda:0 to cuda:1"),
    (CaptureKey("cuda:0", (((4, 5), "float32"), ((5, 2), "float32")), (1234,), 4),
     "input 0 changed shape from (4, 3) to (4, 5)"),
    (CaptureKey("cuda:0", (((4, 3), "float16"), ((3, 2), "float32")), (1234,), 4),
     "input 0 changed dtype from float32 to float16"),
    (CaptureKey("cuda:0", K.leaves, (999,), 4), "parameter 0's buffer was replaced"),
    (K, None)])
def test_what_changed_is_named(new, reason):
    assert new.changes(K) == reason


def _mlp(batch: int, w: Variable) -> tuple[Variable, Variable]:
    x = Variable.from_numpy_array(np.ones((batch, 3), np.float32))
    y = F.sum(F.tanh(F.matmul(x, w)))
    y.forward()
    return x, y


def _key(y: Variable, backend: str) -> CaptureKey:
    ctx = nna.get_current_context()
    dev = nna.backends.get_device(ctx.backend, ctx.device_id)
    return key_of(ctx, executor.plan_of(y).leaves, dev)


def test_key_of_a_graph_run(backend):
    """From a static graph's leaves: new batch values keep the key (replay); a re-bind
    to another batch size, another feature size, or a parameter the user replaced each
    give a new key, named."""
    rng = np.random.default_rng(0)
    w = Variable.from_numpy_array(rng.standard_normal((3, 2)).astype(np.float32),
                                  need_grad=True)
    x, y = _mlp(4, w)
    k = _key(y, backend)
    assert k.ctx == f"{backend}:0" and k.batch == 4 and len(k.params) == 1
    assert k.leaves == (((4, 3), "float32"), ((3, 2), "float32"))
    x.d = rng.standard_normal((4, 3))  # a new batch, fed as a training loop does
    y.forward()
    assert _key(y, backend) == k
    _, y8 = _mlp(8, w)
    assert _key(y8, backend).changes(k) == "batch size changed from 4 to 8"
    w5 = Variable.from_numpy_array(np.ones((5, 2), np.float32), need_grad=True)
    x5 = Variable.from_numpy_array(np.ones((4, 5), np.float32))
    y5 = F.sum(F.tanh(F.matmul(x5, w5)))
    y5.forward()
    assert _key(y5, backend).changes(k) == "input 0 changed shape from (4, 3) to (4, 5)"
    old = w.data  # kept: its buffer's address cannot be handed to the new one
    w.data = nna.NdArray.from_numpy_array(np.zeros((3, 2), np.float32))
    y.forward()
    assert _key(y, backend).changes(k) == "parameter 0's buffer was replaced"
    assert old.shape == (3, 2)


def test_print_schedule_says_whether_it_replays_as_a_cuda_graph(backend, capsys):
    w = Variable.from_numpy_array(np.ones((3, 2), np.float32), need_grad=True)
    _, y = _mlp(4, w)
    y.forward()
    grad.print_schedule(y)
    line = capsys.readouterr().out.strip().splitlines()[-1]
    if backend != "cuda":
        assert line == (f"cuda graph: no (runs on {backend}:0; graphs replay on CUDA "
                        "only)")
        return
    assert line.startswith("cuda graph: yes, would replay as one graph")
    with grad.cuda_graphs(False):
        grad.print_schedule(y)
    assert capsys.readouterr().out.strip().splitlines()[-1] == (
        "cuda graph: no (grad.cuda_graphs(False) or NNARRAY_CUDA_GRAPHS=0)")


def test_decision_on_a_cuda_schedule():
    """On CUDA (GPU only): a static graph's schedule warms up, captures, replays; a new
    batch of the same shape replays; a parameter the user replaced starts over."""
    from conftest import needs
    needs("cuda")
    with nna.context_scope("cuda"):
        dev = nna.backends.get_device("cuda", 0)
        w = Variable.from_numpy_array(np.ones((3, 2), np.float32), need_grad=True)
        x, y = _mlp(4, w)
        plan = executor.plan_of(y)
        s = grad.schedule_of(y)
        assert cuda_replay.decision(s, plan.leaves, dev) == PLAIN
        assert cuda_replay.decision(s, plan.leaves, dev) == CAPTURE
        cuda_replay.state_of(s).captured("graph")
        x.d = np.zeros((4, 3), np.float32)
        y.forward()
        assert cuda_replay.decision(s, plan.leaves, dev) == REPLAY
        old = w.data
        w.data = nna.NdArray.from_numpy_array(np.zeros((3, 2), np.float32))
        y.forward()
        assert cuda_replay.decision(s, plan.leaves, dev) == PLAIN
        assert cuda_replay.state_of(s).reason == "parameter 0's buffer was replaced"
        with grad.cuda_graphs(False):
            assert cuda_replay.decision(s, plan.leaves, dev) == PLAIN
        assert old.shape == (3, 2)


def test_decision_off_cuda_is_plain(backend):
    w = Variable.from_numpy_array(np.ones((3, 2), np.float32), need_grad=True)
    _, y = _mlp(4, w)
    s, leaves = grad.schedule_of(y), executor.plan_of(y).leaves
    dev = nna.backends.get_device(backend, 0)
    assert [cuda_replay.decision(s, leaves, dev) for _ in range(3)] == [PLAIN] * 3
    assert cuda_replay.state_of(s).key is None
