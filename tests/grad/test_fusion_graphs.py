"""Fusion in compiled graphs (``grad/fusion_adapter.py``): static forward, executors and backward
replay run groups of elementwise steps as one ``fused_elementwise`` step on OpenCL and
CUDA, with the values and gradients of the unfused schedules (``grad.fusion_enabled``),
and fewer kernel launches. numpy schedules are left as they are.

The row graphs put every row into one group forward and one backward, so OpenCL compiles
few programs on a cold cache.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import tol
from helpers import fused_rows

import nnarray as nna
import nnarray.functions as F
from nnarray import grad
from nnarray.grad import Graph, Variable, fusion_pass
from nnarray.ops.elementwise import ops as row_ops

F32 = np.dtype(np.float32)


def _fuses(backend: str) -> bool:
    return backend.split(":")[0] in fusion_pass.FUSING_BACKENDS


def _on_host(backend: str) -> bool:
    """Whether ``backend``'s device computes in host memory (a CPU: backward recomputes
    only arithmetic there, ``grad.fusion_enabled(recompute="auto")``)."""
    name, _, dev = backend.partition(":")
    return nna.backends.get_device(name, int(dev or 0)).host_memory


def _fused_steps(s) -> list:
    return [st for st in s.steps if st.op == "fused_elementwise"]


def _row_graph(integral: bool) -> tuple[list, Variable]:
    """Every row with a C expression on two inputs of different dtypes and shapes (and a
    third >= 1 for ``acosh``), each result ``r * 0.5 + other``, all summed: ``(leaves,
    total)``. The rows read the (4,) and (3, 1) leaves through one ``broadcast_to`` each and
    the total adds the (4,) leaf itself once (a row's own broadcast): every row then has
    the output shape (3, 4) and joins one fused group forward and a few backward, where a
    (4,) row result made a group of its own and its gradient a reduction (24 fused
    programs forward and 14 backward, among 149 steps; each program a cold compile; now
    1 and 5, among 47 steps). A binary row takes the other
    input cast to its first's dtype, but for the first row of each operand order: each
    term ``r * 0.5 + other`` still mixes the dtypes, and the unfused oracle compiles a
    mixed-dtype kernel for two rows, not for each (every row's own, 30 programs)."""
    g = np.random.default_rng(0)
    if integral:
        hs = [(g.integers(1, 20, (3, 4)) * g.choice([-1, 1], (3, 4))).astype(np.int32),
              g.integers(1, 5, (4,)).astype(np.int64), g.integers(1, 5, (3, 1)).astype(np.int32)]
    else:
        hs = [g.uniform(0.1, 0.9, (3, 4)).astype(np.float32),
              g.uniform(0.1, 0.9, (4,)).astype(np.float64),
              g.uniform(1.5, 3.0, (3, 1)).astype(np.float32)]
    xs = [Variable.from_numpy_array(h, need_grad=not integral) for h in hs]
    x, y0, extra0 = xs
    y, extra = F.broadcast_to(y0, (3, 4)), F.broadcast_to(extra0, (3, 4))
    half = 2 if integral else 0.5
    total, mixed = None, set()
    for k, row in enumerate(fused_rows(integral)):
        first, other = (x, y) if k % 2 == 0 else (y, x)
        if row.name == "acosh":
            first = extra
        if row.arity == 1:
            r = row_ops[row.name](first)
        elif k % 3 == 2:
            r = row_ops[row.name](first, 3 if integral else 0.75)
        elif k % 2 not in mixed:
            mixed.add(k % 2)
            r = row_ops[row.name](first, other)
        else:
            r = row_ops[row.name](first, F.cast(other, first.dtype))
        term = r * half + other
        total = term if total is None else total + term
    return xs, F.sum(total + y0)


def _run_rows(integral: bool, on: bool) -> tuple[list, list, object, object]:
    with grad.fusion_enabled(on):
        xs, loss = _row_graph(integral)
        loss.forward()
        if not integral:
            loss.backward()
        return ([loss.d.copy()], [x.g.copy() for x in xs] if not integral else [],
                grad.schedule_of(loss),
                None if integral else grad.schedule_of(loss, backward=True))


@pytest.mark.filterwarnings("ignore:invalid value", "ignore:divide by zero")
@pytest.mark.parametrize("integral", [False, True], ids=["float", "integer"])
def test_every_row_fused_graph_equals_unfused(backend: str, integral: bool) -> None:
    """Values and gradients of a graph over every row, broadcasting and mixed dtypes:
    fused as unfused; on a fusing backend forward and backward run fused steps."""
    vals, grads, fwd, bwd = _run_rows(integral, True)
    want_vals, want_grads, ufwd, _ = _run_rows(integral, False)
    for got, want in zip(vals + grads, want_vals + want_grads):
        assert got.dtype == want.dtype and got.shape == want.shape
        if integral:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, **tol(F32))
    assert not _fused_steps(ufwd)
    if _fuses(backend):
        assert _fused_steps(fwd) and len(fwd.steps) < len(ufwd.steps)
        assert bwd is None or _fused_steps(bwd)
    else:
        assert not _fused_steps(fwd) and (bwd is None or not _fused_steps(bwd))


def _chain(shape: tuple = (64, 32)) -> tuple[Variable, Variable, np.ndarray]:
    xn = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    x = Variable.from_numpy_array(xn, need_grad=True)
    return x, F.tanh(0.5 * x + 0.1) * F.sigmoid(x) + x * x, xn


def _chain_ref(xn: np.ndarray, dy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t, s = np.tanh(0.5 * xn + 0.1), 1 / (1 + np.exp(-xn))
    return t * s + xn * xn, dy * ((1 - t * t) * 0.5 * s + t * s * (1 - s) + 2 * xn)


def _fwd_bwd(x: Variable, y: Variable, dy) -> object:
    """A static step: ``y.forward()``, then backward from ``dy`` into a zeroed ``x.grad``."""
    def step() -> None:
        y.forward()
        x.grad.zero()
        y.backward(dy)
    return step


def _launches(step) -> int:
    nna.reset_kernel_stats()
    step()
    return nna.kernel_stats()["count"]


def test_chain_forward_backward_launches(backend: str) -> None:
    """The issue's chain, forward plus backward as a static graph: on OpenCL one fused
    kernel forward (writing what backward retains and the output on a CPU device; the
    output alone on a GPU, where backward recomputes ``tanh`` and ``sigmoid`` from ``x``)
    and one backward, once ``2x`` (loop-invariant: it reads only the leaf) is computed;
    unfused 19."""
    x, y, xn = _chain()
    dyn = np.random.default_rng(2).standard_normal(xn.shape).astype(np.float32)
    dy = nna.NdArray.from_numpy_array(dyn)
    step = _fwd_bwd(x, y, dy)
    first, second = _launches(step), _launches(step)
    want_y, want_g = _chain_ref(xn, dyn)
    np.testing.assert_allclose(y.d, want_y, **tol(F32))
    np.testing.assert_allclose(x.g, want_g, **tol(F32))
    if backend.split(":")[0] == "opencl":
        assert (first, second) == (3, 2)
        (fwd,) = grad.schedule_of(y).steps
        assert fwd.op == "fused_elementwise"
        assert len(fwd.metas) == (3 if _on_host(backend) else 1)  # (tanh, sigmoid,) y
    elif _fuses(backend):
        assert second <= 4
    else:
        with grad.fusion_enabled(False):
            x2, y2, _ = _chain()
            unfused_step = _fwd_bwd(x2, y2, dy)
            unfused_step()
            assert second == _launches(unfused_step)  # numpy: nothing fused


def _chain_step(xn: np.ndarray, dyn: np.ndarray, recompute: str, fused: bool = True
                ) -> tuple:
    """The chain's static forward plus backward on ``xn`` with output gradient ``dyn``:
    ``(launches of the first and of a later step, y, dx)``."""
    with grad.fusion_enabled(fused, recompute=recompute):
        x = Variable.from_numpy_array(xn, need_grad=True)
        y = F.tanh(0.5 * x + 0.1) * F.sigmoid(x) + x * x
        step = _fwd_bwd(x, y, nna.NdArray.from_numpy_array(dyn))
        first, second = _launches(step), _launches(step)
    return (first, second), y.d.copy(), x.g.copy()


@pytest.mark.parametrize("low", [np.dtype(np.float16), nna.bfloat16], ids=str)
def test_16bit_chain_fuses_as_float32_does(backend: str, low) -> None:
    """The chain in float16/bfloat16 as a static graph runs as many kernels as in
    float32 (fused on OpenCL: 16-bit loads and stores, float32 in between). With backward
    recomputing the retained values (``recompute="all"``) y and dx are the unfused float32
    graph's values (on the same inputs) rounded once: within one 16-bit ulp (float32
    functions of the fused and the unfused kernels differ by a few float32 ulps). By
    default a CPU device keeps ``t = tanh`` and ``s = sigmoid`` for backward, stored in 16
    bits (half an ulp each): dx within one ulp plus ``2 eps |dy|`` (the bracket
    ``0.5 (1 - t^2) s + t s (1 - s) + 2 x`` changes by at most 1.25 |dt| + 1.5 |ds|).
    (Unfused, numpy rounds after every op: launches only.)"""
    eps = float(nna.finfo(low).eps)
    g = np.random.default_rng(1)
    xn, dyn = (g.standard_normal((64, 32)).astype(F32).astype(low) for _ in range(2))
    for mode, kept in (("all", 0), ("auto", 2 * eps * np.abs(dyn.astype(F32)))):
        launches, y, dx = _chain_step(xn, dyn, mode)
        assert launches == _chain_step(xn.astype(F32), dyn.astype(F32), mode)[0]
        assert y.dtype == dx.dtype == low
        if not _fuses(backend):
            continue
        _, y32, dx32 = _chain_step(xn.astype(F32), dyn.astype(F32), mode, fused=False)
        for got, want, more in ((y, y32, 0), (dx, dx32, kept)):
            want = want.astype(low).astype(F32)
            err = np.abs(got.astype(F32) - want)
            limit = eps * np.maximum(np.abs(want), 1e-3) + more
            assert np.all(err <= limit), (mode, float(np.max(err / limit)))
    if backend.split(":")[0] == "opencl":
        assert launches == (3, 2)


def _mlp_step() -> tuple:
    """The benchmarks' MLP training step (``benchmarks/test_training.py``: linear, relu,
    linear, mean squared error, SGD), smaller."""
    from nnarray import nn, solvers
    from nnarray.nn import initializers

    class MLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.l1, self.l2 = nn.Linear(20, 10), nn.Linear(10, 3)

        def forward(self, x: Variable) -> Variable:
            return self.l2(F.relu(self.l1(x)))

    rng = np.random.default_rng(3)
    initializers.seed(0)  # the same weights for the fused and the unfused model
    model = MLP()
    x = Variable.from_numpy_array(rng.standard_normal((8, 20)).astype(np.float32))
    t = Variable.from_numpy_array(rng.standard_normal((8, 3)).astype(np.float32))
    loss = F.mean_squared_error(model(x), t)
    solver = solvers.SGD(0.01)
    solver.set_parameters(model.parameters())

    def step() -> None:
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
    return step, loss, model


def test_mlp_static_step_launches(backend: str) -> None:
    """The MLP step's launches: 19 unfused; on OpenCL 16 (bias + relu forward; the loss
    gradient's sub and mul, relu's mask and mul, backward; the bias sums, on 10 and 100
    columns, stay the backend's own reductions: below ``fusion_adapter.REDUCE_MIN``)."""
    with grad.fusion_enabled(False):
        ustep, uloss, umodel = _mlp_step()
        ustep()
        unfused = _launches(ustep)
    step, loss, model = _mlp_step()
    step()
    fused = _launches(step)
    np.testing.assert_allclose(loss.d, uloss.d, **tol(F32))
    for (name, p), q in zip(model.parameters().items(), umodel.parameters().values()):
        np.testing.assert_allclose(p.d, q.d, **tol(F32), err_msg=name)
    if backend.split(":")[0] == "opencl":
        assert (unfused, fused) == (19, 16)
    elif _fuses(backend):
        assert fused < unfused
    else:
        assert fused == unfused


def test_executor_fuses(backend: str) -> None:
    """A bound executor fuses too and gives the static graph's values and gradients."""
    x, y, xn = _chain((8, 5))
    ex = Graph(y).bind(backend, grad_req={"arg0": "write"})
    out = ex.forward()[0].numpy()
    ex.backward(nna.NdArray.from_numpy_array(np.ones(xn.shape, np.float32)))
    want_y, want_g = _chain_ref(xn, np.ones_like(xn))
    np.testing.assert_allclose(out, want_y, **tol(F32))
    np.testing.assert_allclose(ex.grad_dict["arg0"].numpy(), want_g, **tol(F32))
    assert bool(_fused_steps(ex.schedule())) == _fuses(backend)


def test_an_executor_writes_every_output(backend: str) -> None:
    """An executor's outputs are given to its schedule (``Schedule.outputs``): an output
    that is also an intermediate of another (``h`` of ``y``) is written, not left in
    registers."""
    xn = np.linspace(-2, 2, 40, dtype=np.float32).reshape(8, 5)
    xv = Variable.from_numpy_array(xn)
    h = F.tanh(0.5 * xv + 0.1) * F.sigmoid(xv)
    y = h * h + xv
    ex = Graph([y, h]).bind(backend)
    got_y, got_h = (o.numpy() for o in ex.forward())
    want_h = np.tanh(0.5 * xn + 0.1) / (1 + np.exp(-xn))
    np.testing.assert_allclose(got_h, want_h, **tol(F32))
    np.testing.assert_allclose(got_y, want_h * want_h + xn, **tol(F32))
    sched = ex.schedule()
    assert bool(_fused_steps(sched)) == _fuses(backend)
    written = [r() for st in sched.steps for r in st.outs]
    assert any(v is h for v in written) and any(v is y for v in written)


def _written_by(v: Variable, out: Variable) -> bool:
    """Whether ``out``'s forward schedule writes ``v`` (a step's output, fused or not)."""
    return any(r() is v for st in grad.schedule_of(out).steps for r in st.outs)


def test_an_intermediate_read_after_forward_keeps_its_values(backend: str) -> None:
    """Which intermediates the user holds is known, not guessed from reference counts:
    ``h``, reached only after the first forward (through ``z.parent``), reads the values
    that forward computed in registers; from then on the schedule writes it, and it
    follows new inputs."""
    xn = np.linspace(-2, 2, 40, dtype=np.float32).reshape(8, 5)
    xv = Variable.from_numpy_array(xn)
    z = F.sum(F.tanh(0.5 * xv + 0.1) * F.sigmoid(xv) + xv * xv)
    z.forward()
    h = z.parent.inputs[0].parent.inputs[0]  # tanh(0.5 x + 0.1) * sigmoid(x)
    assert _written_by(h, z) == (not _fuses(backend))

    def want(a: np.ndarray) -> np.ndarray:
        return np.tanh(0.5 * a + 0.1) / (1 + np.exp(-a))
    np.testing.assert_allclose(h.d, want(xn), **tol(F32))
    xv.d = xn * 0.5
    z.forward()
    assert _written_by(h, z)
    np.testing.assert_allclose(h.d, want(xn * 0.5), **tol(F32))
    np.testing.assert_allclose(z.d, (want(xn * 0.5) + xn * xn / 4).sum(), **tol(F32))


def test_an_intermediate_nobody_holds_is_fused_away(backend: str) -> None:
    """``xv + 1.0``, which the user does not hold, is not written even though another
    graph's node references it (a reference count took that for the user's); reading it
    then computes it from the fused step's inputs; after an input is modified in place,
    reading it raises ``GraphError`` instead of giving other values, and the next forward
    writes it."""
    xn = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    xv = Variable.from_numpy_array(xn)
    u = xv + 1.0
    w = F.tanh(u) + 2.0
    other = F.exp(u)  # noqa: F841 - a second graph reading ``u``
    del u
    w.forward()
    inner = w.parent.inputs[0].parent.inputs[0]
    assert (inner._data is None) == _fuses(backend)
    np.testing.assert_allclose(w.d, np.tanh(xn + 1.0) + 2.0, **tol(F32))
    if not _fuses(backend):
        return
    np.testing.assert_allclose(inner.d, xn + 1.0, **tol(F32))
    w.forward()  # written now: it was read
    assert _written_by(inner, w)
    v = F.exp(xv * 3.0) - 1.0
    v.forward()
    gone = v.parent.inputs[0].parent.inputs[0]
    assert gone._data is None
    xv.d = xn  # a write into the fused step's input since it ran
    with pytest.raises(grad.GraphError, match="modified since it ran"):
        gone.d
    v.forward()  # read once, even in vain: written from now on
    assert _written_by(gone, v)
    np.testing.assert_allclose(gone.d, xn * 3.0, **tol(F32))


def test_a_fused_forward_leaves_no_stale_values(backend: str) -> None:
    """An intermediate an unfused forward wrote, then a fused forward (on new inputs) left
    in registers, reads the new values, not those of the earlier run."""
    xn = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    xv = Variable.from_numpy_array(xn)
    w = F.tanh(xv * 3.0) + 2.0
    with grad.fusion_enabled(False):
        w.forward()
    xv.d = xn + 1.0
    xv.need_grad = False  # plans built again: the unfused schedule's code goes
    w.forward()
    inner = w.parent.inputs[0].parent.inputs[0]  # xv * 3.0, held by no one until now
    np.testing.assert_allclose(w.d, np.tanh((xn + 1.0) * 3.0) + 2.0, **tol(F32))
    np.testing.assert_allclose(inner.d, (xn + 1.0) * 3.0, **tol(F32))


def test_dot_and_source_show_the_groups(backend: str, capsys) -> None:
    """``to_dot(..., fused=True)`` draws each group as a cluster; ``print_schedule(v,
    source=True)`` prints each fused step's program and generated kernel."""
    x, y, _ = _chain((4, 3))
    y.forward()
    dot = grad.to_dot(y, fused=True)
    grad.print_schedule(y, source=True)
    text = capsys.readouterr().out
    if _fuses(backend):
        assert "subgraph cluster_fused0" in dot and dot.count("cluster_fused") == 1
        assert "fuses mul add tanh sigmoid mul mul add" in text
        # tanh and sigmoid: saved on a CPU device, recomputed by backward on a GPU
        assert ("return t4, t5, t8" if _on_host(backend) else "return t8") in text
        if backend.split(":")[0] == "opencl":
            assert "__kernel" in text
    else:
        assert "cluster_fused" not in dot and "fused_elementwise" not in text
    assert dot == grad.to_dot(y) or _fuses(backend)


def test_define_by_run_backward_replay_fuses(backend: str) -> None:
    """A define-by-run graph seen again replays its traced backward as a schedule, which
    fuses: the gradients stay the numpy reference's."""
    xn = np.random.default_rng(4).standard_normal((16, 8)).astype(np.float32)
    x = Variable.from_numpy_array(xn, need_grad=True)
    for _ in range(3):
        with grad.auto_forward():
            y = F.sum(F.tanh(0.5 * x + 0.1) * F.sigmoid(x) + x * x)
        x.grad.zero()
        nna.reset_kernel_stats()
        y.backward()
        np.testing.assert_allclose(x.g, _chain_ref(xn, np.ones_like(xn))[1], **tol(F32))
    fused = nna.kernel_stats()["by_op"].get("fused_elementwise", 0)
    assert (fused > 0) == _fuses(backend)


@pytest.mark.parametrize("n", [8, 256])
def test_a_large_reduction_joins_its_group(backend: str, n: int) -> None:
    """On OpenCL a sum ending an elementwise chain joins its fused step where its operand
    has ``fusion_adapter.REDUCE_MIN`` elements or more (256x256), else runs on its own."""
    from nnarray.grad import fusion_adapter
    xn = np.random.default_rng(5).standard_normal((n, n)).astype(np.float32)
    x = Variable.from_numpy_array(xn)
    y = F.sum(x * x + 1.0)
    y.forward()
    np.testing.assert_allclose(y.d, (xn.astype(np.float64) ** 2 + 1).sum(), rtol=1e-4)
    ops = [st.op for st in grad.schedule_of(y).steps]
    if backend.split(":")[0] == "opencl":
        joins = n * n >= fusion_adapter.REDUCE_MIN
        assert ops == (["fused_elementwise"] if joins else ["fused_elementwise", "sum"])
    elif not _fuses(backend):
        assert ops == ["mul", "add", "sum"]


def test_fusion_switch_is_per_thread(backend: str) -> None:
    """``fusion_enabled`` holds in the thread that entered it, as the graph modes do: a
    graph another thread builds meanwhile fuses (where its backend fuses), with the same
    values."""
    import threading

    ctx = nna.get_current_context()  # the backend fixture's: thread-local too

    def build() -> tuple:
        with nna.context_scope(ctx):
            return _build()

    def _build() -> tuple:
        x = Variable.from_numpy_array(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
        y = F.tanh(x * 0.5 + 0.1) * F.sigmoid(x)
        y.forward()
        return y.d.copy(), _fused_steps(grad.schedule_of(y))

    got: dict = {}
    with grad.fusion_enabled(False):
        assert not grad.fusion_adapter.enabled()
        worker = threading.Thread(target=lambda: got.update(other=build(),
                                                            on=grad.fusion_adapter.enabled()))
        worker.start()
        worker.join(600)
        here = build()
    assert got["on"] and here[1] == []
    assert len(got["other"][1]) == (1 if _fuses(backend) else 0)
    np.testing.assert_allclose(got["other"][0], here[0], **tol(np.float32))


def test_frees_follow_the_final_steps(backend: str) -> None:
    """The last-use pass runs on the schedule's steps as the rewriting passes left them:
    with ``clear_buffer`` every intermediate a step reads is freed once, after the last
    step reading it (fused or not), and the values stay right."""
    from nnarray.grad import executor
    rng = np.random.default_rng(4)
    xn, wn = rng.standard_normal((8, 6)), rng.standard_normal((6, 6))
    x = Variable.from_numpy_array(xn.astype(np.float32), need_grad=True)
    w = Variable.from_numpy_array(wn.astype(np.float32), need_grad=True)
    h = F.matmul(x, w)
    a = F.tanh(h) * 2.0 + 1.0  # a fusable run reading h
    y = F.sum(F.matmul(a, w)) + F.sum(h * h)  # h read again after the run
    y.forward(clear_buffer=True)
    hn = xn @ wn
    want = np.sum((np.tanh(hn) * 2 + 1) @ wn) + np.sum(hn * hn)
    np.testing.assert_allclose(float(y.d), want, rtol=1e-4)
    s = executor.forward_schedule(executor.plan_of(y), nna.get_current_context(), True)
    last: dict = {}
    for k, st in enumerate(s.steps):
        for v in st.inputs:
            if isinstance(v, Variable) and v.parent is not None:
                last[id(v)] = k
    freed = [(id(v), k) for k, st in enumerate(s.steps) for v in st.free
             if not isinstance(v, int)]
    assert len(freed) == len(set(freed)) and set(freed) == set(last.items())
    if _fuses(backend):
        assert _fused_steps(s)


@pytest.mark.parametrize("low", [np.dtype(np.float16), nna.bfloat16], ids=str)
def test_a_16bit_nextafter_steps_by_its_own_ulp_in_a_graph(backend: str, low) -> None:
    """A fused 16-bit chain computes in float32, where ``nextafter`` would take float32's
    step and round back to its input: the fusion pass leaves that step out (the row's
    ``Hints.narrow``) and the graph gives numpy's one 16-bit step, as the eager call."""
    x = np.array([1.0, -2.0, 0.5, 0.0], low)
    y = np.array([2.0, 0.0, -1.0, -1.0], low)
    vx, vy = Variable.from_numpy_array(x), Variable.from_numpy_array(y)
    ex = Graph([F.nextafter(vx * 1.0, vy), F.exp(vx)]).bind(backend)
    got = ex.forward()[0].numpy()
    assert got.dtype == low
    np.testing.assert_array_equal(got.astype(np.float32), np.nextafter(x, y).astype(np.float32))
    if _fuses(backend):
        assert "nextafter" in [st.op for st in ex.schedule().steps]


def test_a_new_batch_size_reuses_the_fused_kernels(backend: str) -> None:
    """A define-by-run step over another batch size builds no new program once the first
    size's fused kernels exist: their code does not depend on the batch, nor do their
    comments (which named the shape of the backward's ``broadcast_to``)."""
    if not backend.startswith("opencl"):
        pytest.skip("counts OpenCL program builds")
    from nnarray.backends import opencl
    rng = np.random.default_rng(5)
    bn = rng.standard_normal(7).astype(np.float32)
    b = Variable.from_numpy_array(bn, need_grad=True)

    def step(n: int) -> None:
        xn = rng.standard_normal((n, 7)).astype(np.float32)
        x = Variable.from_numpy_array(xn, need_grad=True)
        loss = F.sum(F.tanh(x * 2.0 + b) * x)
        with grad.fusion_enabled(True):
            loss.forward()
            loss.backward()
        t = np.tanh(xn * 2 + bn)
        np.testing.assert_allclose(np.asarray(x.g), t + xn * 2 * (1 - t * t), **tol(np.float32))

    with nna.context_scope(backend):
        step(16)
        step(16)  # the second sighting replays its backward fused
        before = opencl.build_stats()
        step(24)
        assert opencl.build_stats() == before
