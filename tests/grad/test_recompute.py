"""Recomputation (``grad/recompute_pass.py``): a fused forward on OpenCL and CUDA no longer
writes or saves the retained values backward can recompute cheaply from what it keeps;
backward's first fused group computes them again. Values and gradients stay those of the
unfused schedules and of numpy; the arrays kept for backward shrink (``grad.saved_arrays``);
numpy schedules save what they did.

The tests run with ``recompute="all"`` (the default ``"auto"`` recomputes math functions
such as ``tanh`` on GPUs only, arithmetic everywhere), so that the CPU OpenCL devices
this project tests on exercise the machinery; ``test_auto_policy`` checks the default.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import tol

import nnarray as nna
import nnarray.functions as F
from nnarray import grad
from nnarray.grad import Graph, Variable, fusion_pass

F32 = np.dtype(np.float32)


@pytest.fixture(autouse=True)
def _recompute_all():
    with grad.fusion_enabled(True, recompute="all"):
        yield


def _fuses(backend: str) -> bool:
    return backend.split(":")[0] in fusion_pass.FUSING_BACKENDS


def _x(shape: tuple, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _chain(xn: np.ndarray) -> tuple[Variable, Variable]:
    x = Variable.from_numpy_array(xn, need_grad=True)
    return x, F.tanh(0.5 * x + 0.1) * F.sigmoid(x) + x * x


def _chain_ref(xn: np.ndarray, dy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t, s = np.tanh(0.5 * xn + 0.1), 1 / (1 + np.exp(-xn))
    return t * s + xn * xn, dy * ((1 - t * t) * 0.5 * s + t * s * (1 - s) + 2 * xn)


def _run(build, xns: list, dyn: np.ndarray, on: bool, clear_buffer: bool = False) -> tuple:
    """``build(*leaves) -> output`` run forward and backward (twice: the second replays)
    with fusion ``on``: ``(y, leaf gradients, arrays saved after the forward, schedule)``."""
    with grad.fusion_enabled(on):
        xs = [Variable.from_numpy_array(xn, need_grad=True) for xn in xns]
        y = build(*xs)
        dy = nna.NdArray.from_numpy_array(dyn)
        for _ in range(2):
            y.forward(clear_buffer=clear_buffer)
            saved = grad.saved_arrays(y)
            for x in xs:
                x.grad.zero()
            y.backward(dy, clear_buffer=clear_buffer)
        (sched,) = [s for (_, cb), s in grad.executor.plan_of(y).schedules.items()
                    if cb == clear_buffer]  # the forward schedule that ran
        return y.d.copy(), [x.g.copy() for x in xs], saved, sched


def _same_as_unfused(build, xns: list, dyn: np.ndarray, **kw) -> tuple:
    """Fused and unfused runs of ``build`` agree: the fused run's saved arrays and
    forward schedule, and the unfused run's saved arrays."""
    y, gs, saved, sched = _run(build, xns, dyn, True, **kw)
    uy, ugs, usaved, _ = _run(build, xns, dyn, False, **kw)
    np.testing.assert_allclose(y, uy, **tol(F32))
    for g, ug in zip(gs, ugs):
        np.testing.assert_allclose(g, ug, **tol(F32))
    return saved, sched, usaved


@pytest.mark.parametrize("clear_buffer", [False, True], ids=["keep", "clear_buffer"])
def test_chain_saves_x_alone(backend: str, clear_buffer: bool) -> None:
    """The issue's chain: fused, the forward keeps only ``x`` for backward (not ``tanh``
    and ``sigmoid``, which it no longer writes) and writes only ``y``; unfused and on numpy
    it keeps all three. Values and gradients are numpy's either way."""
    xn, dyn = _x((64, 32)), _x((64, 32), 2)
    y, (g,), saved, sched = _run(lambda x: _chain_build(x), [xn], dyn, True, clear_buffer)
    want_y, want_g = _chain_ref(xn, dyn)
    np.testing.assert_allclose(y, want_y, **tol(F32))
    np.testing.assert_allclose(g, want_g, **tol(F32))
    _, _, usaved, usched = _run(lambda x: _chain_build(x), [xn], dyn, False, clear_buffer)
    assert len(usaved) == 3 and usched.recompute is None
    if _fuses(backend):
        assert [s.shape for s in saved] == [xn.shape]
        np.testing.assert_array_equal(saved[0].numpy(), xn)  # the leaf's own array
        assert sched.recompute is not None and len(sched.recompute.values) == 2
        (step,) = sched.steps
        assert len(step.metas) == 1  # y alone is written
        assert "not saved: backward recomputes" in sched.describe()
    else:
        assert len(saved) == 3 and sched.recompute is None


def _chain_build(x: Variable) -> Variable:
    return F.tanh(0.5 * x + 0.1) * F.sigmoid(x) + x * x


def test_chain_launches_and_backward_fuses_the_recomputation(backend: str) -> None:
    """Recomputing costs no launch: the chain forward plus backward stays at 2 kernels per
    step on OpenCL (at most 4 elsewhere that fuses); backward's one fused step runs
    ``tanh`` and ``sigmoid`` again."""
    xn, dyn = _x((64, 32)), _x((64, 32), 2)
    x, y = _chain(xn)
    dy = nna.NdArray.from_numpy_array(dyn)
    for _ in range(2):
        nna.reset_kernel_stats()
        y.forward()
        x.grad.zero()
        y.backward(dy)
    launches = nna.kernel_stats()["count"]
    np.testing.assert_allclose(x.g, _chain_ref(xn, dyn)[1], **tol(F32))
    if not _fuses(backend):
        return
    assert launches <= 4
    if backend.split(":")[0] == "opencl":
        assert launches == 2
    bwd = grad.schedule_of(y, backward=True)
    fused = [st for st in bwd.steps if st.op == "fused_elementwise"]
    assert len(fused) == 1
    ops = [m[0].name for m in fused[0].node.members]
    assert ops[:4] == ["mul", "add", "tanh", "sigmoid"]


def test_broadcast_operands(backend: str) -> None:
    """A recomputed value read through broadcasts (a row vector, an explicit
    ``broadcast_to`` of a column): the row and column are kept instead, gradients equal."""
    def build(x: Variable, w: Variable, c: Variable) -> Variable:
        t = F.tanh(x * w + F.broadcast_to(c, x.shape))
        return t * x + w

    xns = [_x((16, 8)), _x((1, 8), 3), _x((16, 1), 4)]
    saved, sched, usaved = _same_as_unfused(build, xns, _x((16, 8), 5))
    t = np.tanh(xns[0] * xns[1] + xns[2])
    if _fuses(backend):
        assert sched.recompute is not None
        assert sorted(s.shape for s in saved) == [(1, 8), (16, 1), (16, 8)]  # x, w, c
        assert not any(s.shape == (16, 8) and np.allclose(s.numpy(), t) for s in saved)
    else:
        assert sched.recompute is None and len(saved) == len(usaved)


def test_an_output_used_by_backward_is_written_and_saved(backend: str) -> None:
    """A retained value that is also a graph output (an executor's first output ``t``)
    is written and saved as before; only ``sigmoid`` is recomputed. Both outputs' seeds
    give numpy's gradient."""
    xn = _x((8, 5))
    x = Variable.from_numpy_array(xn, need_grad=True)
    t = F.tanh(x)
    z = t * F.sigmoid(x) + 1.0
    ex = Graph([t, z]).bind(backend, grad_req={"arg0": "write"})
    ones, twos = np.ones_like(xn), np.full_like(xn, 2.0)
    for _ in range(2):
        ot, oz = (o.numpy() for o in ex.forward())
        ex.backward([nna.NdArray.from_numpy_array(ones), nna.NdArray.from_numpy_array(twos)])
    tn, sn = np.tanh(xn), 1 / (1 + np.exp(-xn))
    np.testing.assert_allclose(ot, tn, **tol(F32))
    np.testing.assert_allclose(oz, tn * sn + 1.0, **tol(F32))
    want = ones * (1 - tn * tn) + twos * ((1 - tn * tn) * sn + tn * sn * (1 - sn))
    np.testing.assert_allclose(ex.grad_dict["arg0"].numpy(), want, **tol(F32))
    r = ex.schedule().recompute
    if _fuses(backend):
        assert r is not None and len(r.values) == 1  # sigmoid's output
    else:
        assert r is None


def test_a_held_intermediate_is_still_written(backend: str) -> None:
    """An intermediate the user holds (read once) keeps its values after a fused forward
    and stays saved; the rest of the chain is still recomputed (``x`` and it kept)."""
    xn, dyn = _x((32, 16)), _x((32, 16), 2)
    x = Variable.from_numpy_array(xn, need_grad=True)
    h = F.tanh(0.5 * x + 0.1)
    y = h * F.sigmoid(x) + x * x
    y.forward()
    np.testing.assert_allclose(h.d, np.tanh(0.5 * xn + 0.1), **tol(F32))  # read: held
    y.forward()
    x.grad.zero()
    y.backward(nna.NdArray.from_numpy_array(dyn))
    want_y, want_g = _chain_ref(xn, dyn)
    np.testing.assert_allclose(h.d, np.tanh(0.5 * xn + 0.1), **tol(F32))
    np.testing.assert_allclose(y.d, want_y, **tol(F32))
    np.testing.assert_allclose(x.g, want_g, **tol(F32))
    saved = grad.saved_arrays(y)
    assert any(s is h.data for s in saved)
    assert len(saved) == (2 if _fuses(backend) else 3)


def test_fusion_off_between_forward_and_backward(backend: str) -> None:
    """A forward that left values to backward, then a backward built with fusion off:
    the backward still recomputes them (unfused), with numpy's gradients; the reverse
    (forward unfused, backward fused) reads what was saved."""
    xn, dyn = _x((16, 8)), _x((16, 8), 2)
    dy = nna.NdArray.from_numpy_array(dyn)
    want = _chain_ref(xn, dyn)[1]
    for fwd_on, bwd_on in [(True, False), (False, True), (True, True)]:
        x, y = _chain(xn)
        with grad.fusion_enabled(fwd_on):
            y.forward()
        with grad.fusion_enabled(bwd_on):
            y.backward(dy)
        np.testing.assert_allclose(x.g, want, **tol(F32), err_msg=f"{fwd_on}, {bwd_on}")


def test_a_modified_source_is_detected(backend: str) -> None:
    """The array backward recomputes from is saved with its version: changing ``x`` in
    place after the forward raises, as for any saved data."""
    xn = _x((8, 4))
    x, y = _chain(xn)
    y.forward()
    x.data += 1.0
    with pytest.raises(grad.GraphError, match="modified in place"):
        y.backward(nna.NdArray.from_numpy_array(np.ones_like(xn)))


def test_plan_invalidated_between_forward_and_backward(backend: str) -> None:
    """A ``need_grad`` change after the forward rebuilds the graph's plan: the new plan
    still knows what its nodes saved, and backward gives numpy's gradient."""
    xn, dyn = _x((16, 8)), _x((16, 8), 2)
    x, y = _chain(xn)
    w = Variable.from_numpy_array(xn)
    y.forward()
    w.need_grad = True  # invalidates every cached plan
    y.backward(nna.NdArray.from_numpy_array(dyn))
    np.testing.assert_allclose(x.g, _chain_ref(xn, dyn)[1], **tol(F32))


def test_pure_pass_keeps_values_others_need() -> None:
    """``fusion_pass.recompute``: a retained value another recomputed value is computed from
    (across a shape change) stays kept; ``only`` limits the candidates."""
    dev = "opencl:0"
    m_big, m_row = ((4, 3), F32), ((1, 3), F32)
    steps = [fusion_pass.Step("exp", ("w",), ("e",), (m_row,), (m_row,), dev),
             fusion_pass.Step("mul", ("x", "e"), ("p",), (m_big, m_row), (m_big,), dev),
             fusion_pass.Step("tanh", ("p",), ("t",), (m_big,), (m_big,), dev)]
    r = fusion_pass.recompute(steps, {"e", "t", "x"})
    assert r.values == {"t"} and r.needs == {"x", "e"}
    assert fusion_pass.recompute(steps, {"e", "t", "x"}, only={"e"}).values == {"e"}
    assert fusion_pass.recompute(steps, {"e", "t", "x"}, only=set()).values == frozenset()


def _arith(x: Variable) -> Variable:
    u = x * 0.5 + 0.1
    return u * u * x + u


def test_auto_policy(backend: str) -> None:
    """``recompute="auto"``: on a CPU device (its memory the host's) backward recomputes
    values computed by arithmetic (``u = 0.5x + 0.1`` and ``u*u``: ``x`` alone kept) but
    not ``tanh`` or ``sigmoid`` (the chain keeps all three); on a GPU both; ``"off"``
    nothing. Gradients are the unfused ones in every mode."""
    xn, dyn = _x((16, 8)), _x((16, 8), 2)
    name, _, dev = backend.partition(":")
    cpu = nna.backends.get_device(name, int(dev or 0)).host_memory
    for build, math in [(_arith, False), (_chain_build, True)]:
        _, ugs, usaved, _ = _run(build, [xn], dyn, False)
        for mode in ("auto", "off"):
            with grad.fusion_enabled(True, recompute=mode):
                _, gs, saved, sched = _run(build, [xn], dyn, True)
            np.testing.assert_allclose(gs[0], ugs[0], **tol(F32))
            recomputes = _fuses(backend) and mode == "auto" and not (math and cpu)
            assert (sched.recompute is not None) == recomputes, (build.__name__, mode)
            assert len(saved) == (1 if recomputes else len(usaved))


def test_recompute_mode_is_checked() -> None:
    with pytest.raises(ValueError, match="recompute must be one of"):
        with grad.fusion_enabled(True, recompute="some"):
            pass


def test_backward_over_data_saved_otherwise_raises(backend: str) -> None:
    """A backward expecting saved data a forward left to be recomputed (its plan lost the
    record: here cleared by hand) raises ``GraphError`` naming the node, before any
    gradient is delivered."""
    xn = _x((8, 4))
    x, y = _chain(xn)
    y.forward()
    if grad.schedule_of(y).recompute is None:
        return  # nothing left to backward (numpy)
    grad.executor.plan_of(y).recompute = None
    with pytest.raises(grad.GraphError, match="holds no saved data"):
        y.backward(nna.NdArray.from_numpy_array(np.ones_like(xn)))
    assert np.all(x.g == 0)
