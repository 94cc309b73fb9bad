"""Higher-order gradients: ``grad.grad`` (``create_graph``, ``allow_unused``, static and
define-by-run), ``backward(create_graph=True)``, the functional helpers, a static graph of
a gradient and the PythonFunction rule (``GraphError``, never a silent zero). Every op's
double backward (``gradgradcheck`` and torch's second derivatives) is in
``test_gradgrad_*.py``, one module per op family."""

from __future__ import annotations

import numpy as np
import pytest
from double_backward import vals

import nnarray as nna
import nnarray.functions as F
from nnarray import grad
from nnarray.errors import GraphError
from nnarray.grad import Variable, gradgradcheck

_RNG = np.random.default_rng(7)


def _vals(shape, dom="any"):
    return vals(_RNG, shape, dom)


def _var(shape, dom="any", need_grad=True):
    return Variable.from_numpy_array(_vals(shape, dom), need_grad=need_grad)


# -- grad.grad ------------------------------------------------------------------------------
def test_grad_leaves_grad_untouched_and_seeds_ones(backend):
    x = _var((2, 3))
    x.g = np.full((2, 3), 5.0)
    with grad.auto_forward():
        (g,) = grad.grad(F.sin(x) * 2.0, x)  # a (2, 3) output: ones seeded (nnabla's rule)
    np.testing.assert_allclose(g.d, 2 * np.cos(x.d), rtol=1e-12)
    np.testing.assert_array_equal(x.g, 5.0)
    assert g.parent is None and not g.need_grad


def test_grad_create_graph_gives_second_derivative(backend):
    x = _var((4,))
    with grad.auto_forward():
        (g,) = grad.grad(F.sum(x ** 3), x, create_graph=True)
        assert g.need_grad
        (h,) = grad.grad(F.sum(g), x)
    np.testing.assert_allclose(g.d, 3 * x.d ** 2, rtol=1e-12)
    np.testing.assert_allclose(h.d, 6 * x.d, rtol=1e-12)


def test_grad_static_graph_is_a_graph(backend):
    x = _var((3,))
    y = F.sum(F.exp(x) * x)
    (g,) = grad.grad(y, x, create_graph=True)
    (h,) = grad.grad(F.sum(g * g), x)
    h.forward()
    e = np.exp(x.d)
    np.testing.assert_allclose(h.d, 2 * (e * x.d + e) * (e * x.d + 2 * e), rtol=1e-12)
    x.d = x.d + 1.0  # a static graph runs again on new data
    h.forward()
    e = np.exp(x.d)
    np.testing.assert_allclose(h.d, 2 * (e * x.d + e) * (e * x.d + 2 * e), rtol=1e-12)


def test_grad_static_without_create_graph_stops_there(backend):
    x = _var((3,))
    (g,) = grad.grad(F.sum(F.sin(x)), x)
    g.forward()
    np.testing.assert_allclose(g.d, np.cos(x.d), rtol=1e-12)
    assert not g.need_grad


def test_grad_several_outputs_and_intermediate_input(backend):
    x = _var((3,))
    with grad.auto_forward():
        h = F.tanh(x)
        y1, y2 = F.sum(h * h), F.sum(F.exp(x))
        gh, gx = grad.grad([y1, y2], [h, x], grad_outputs=[2.0, 1.0], retain_graph=True)
    t = np.tanh(x.d)
    np.testing.assert_allclose(gh.d, 4 * t, rtol=1e-12)
    np.testing.assert_allclose(gx.d, 4 * t * (1 - t * t) + np.exp(x.d), rtol=1e-12)


def test_grad_unused_input(backend):
    x, z = _var((2,)), _var((2,))
    with grad.auto_forward():
        y = F.sum(F.sin(x))
        with pytest.raises(GraphError, match="input 1 .*not used"):
            grad.grad(y, [x, z], retain_graph=True)
        gx, gz = grad.grad(y, [x, z], allow_unused=True)
    assert gz is None and gx is not None


def test_grad_refuses_input_without_need_grad(backend):
    x = _var((2,), need_grad=False)
    w = _var((2,))
    with grad.auto_forward():
        with pytest.raises(GraphError, match="input 0 .*does not require"):
            grad.grad(F.sum(x * w), [x])


def test_grad_frees_define_by_run_graph_unless_retained(backend):
    x = _var((2,))
    with grad.auto_forward():
        y = F.sum(F.exp(x))
        grad.grad(y, x)
        with pytest.raises(GraphError, match="freed"):
            grad.grad(y, x)


def test_backward_create_graph_accumulates_a_graph(backend):
    x = _var((3,))
    x.grad.zero()
    with grad.auto_forward():
        y = F.sum(x ** 3)
        y.backward(create_graph=True)
        np.testing.assert_allclose(x.g, 3 * x.d ** 2, rtol=1e-12)
        gp = F.sum(x.grad_variable * x.grad_variable)
        (h,) = grad.grad(gp, x)
    np.testing.assert_allclose(h.d, 2 * 3 * x.d ** 2 * 6 * x.d, rtol=1e-12)


def test_backward_create_graph_static(backend):
    x = _var((3,))
    x.grad.zero()
    y = F.sum(F.sin(x))
    y.forward()
    y.backward(create_graph=True)
    np.testing.assert_allclose(x.g, np.cos(x.d), rtol=1e-12)
    (h,) = grad.grad(F.sum(x.grad_variable), x)
    h.forward()
    np.testing.assert_allclose(h.d, -np.sin(x.d), rtol=1e-12)


def test_scalar_base_power_gradient(backend):
    """``2.0 ** x``'s rule took ``F.log`` of the Python base (a TypeError)."""
    x = _var((3,))
    x.grad.zero()
    with grad.auto_forward():
        F.sum(2.0 ** x).backward()
    np.testing.assert_allclose(x.g, np.log(2.0) * 2.0 ** x.d, rtol=1e-12)


class _Cube(grad.PythonFunction):
    def setup_impl(self, inputs, outputs):
        outputs[0].reset_shape(inputs[0].shape, True)

    def forward_impl(self, inputs, outputs):
        outputs[0].d = inputs[0].d ** 3

    def backward_impl(self, inputs, outputs, propagate_down, accum):
        g = 3 * inputs[0].d ** 2 * outputs[0].g
        inputs[0].g = inputs[0].g + g if accum[0] else g


def test_python_function_first_order_and_refused_second(backend):
    x = _var((3,))
    x.g = np.ones(3)
    with grad.auto_forward():
        (g,) = grad.grad(F.sum(_Cube()(x)), x, create_graph=True)
        np.testing.assert_allclose(g.d, 3 * x.d ** 2, rtol=1e-12)
        np.testing.assert_array_equal(x.g, 1.0)  # untouched
        with pytest.raises(GraphError, match="_Cube.*not differentiable"):
            grad.grad(F.sum(g), x)


# -- the functional helpers -------------------------------------------------------------------
def _mlp(x, w):
    return F.sum(F.tanh(F.matmul(x, w)) ** 2)


def _torch_mlp(x, w):
    import torch
    return (torch.tanh(x @ w) ** 2).sum()


def _pair():
    return _vals((3, 4)), _vals((4, 2))


@pytest.mark.parametrize("what", ["vjp", "jvp", "hvp", "vhp"])
def test_products_match_torch(backend, what):
    torch = pytest.importorskip("torch")
    tf = torch.autograd.functional
    x, w = _pair()
    vx, vw = _vals(x.shape), _vals(w.shape)
    if what == "vjp":
        fn, tfn, v = (lambda a, b: F.tanh(F.matmul(a, b)),
                      lambda a, b: torch.tanh(a @ b), _vals((3, 2)))
    elif what == "jvp":
        fn, tfn, v = (lambda a, b: F.tanh(F.matmul(a, b)),
                      lambda a, b: torch.tanh(a @ b), (vx, vw))
    else:
        fn, tfn, v = _mlp, _torch_mlp, (vx, vw)
    out, res = getattr(grad, what)(fn, (nna.asarray(x), nna.asarray(w)), v)
    tv = tuple(torch.tensor(a) for a in v) if isinstance(v, tuple) else torch.tensor(v)
    tout, tres = getattr(tf, what)(tfn, (torch.tensor(x), torch.tensor(w)), tv)
    np.testing.assert_allclose(out.d, tout.numpy(), rtol=1e-12)
    tres = tres if isinstance(tres, tuple) else (tres,)
    res = res if isinstance(res, tuple) else (res,)
    for r, t in zip(res, tres):
        np.testing.assert_allclose(r.d, t.numpy(), rtol=1e-10, atol=1e-12)
        assert not r.need_grad


def test_jacobian_and_hessian_match_torch(backend):
    torch = pytest.importorskip("torch")
    tf = torch.autograd.functional
    x, w = _pair()
    J = grad.jacobian(lambda a, b: F.tanh(F.matmul(a, b)), (x, w))
    tJ = tf.jacobian(lambda a, b: torch.tanh(a @ b), (torch.tensor(x), torch.tensor(w)))
    for r, t in zip(J, tJ):
        assert r.shape == tuple(t.shape)
        np.testing.assert_allclose(r.d, t.numpy(), rtol=1e-10, atol=1e-12)
    H = grad.hessian(_mlp, (nna.asarray(x), nna.asarray(w)))
    tH = tf.hessian(_torch_mlp, (torch.tensor(x), torch.tensor(w)))
    for i in range(2):
        for j in range(2):
            assert H[i][j].shape == tuple(tH[i][j].shape)
            np.testing.assert_allclose(H[i][j].d, tH[i][j].numpy(), rtol=1e-10, atol=1e-12)
    h1 = grad.hessian(lambda a: F.sum(F.exp(a) * a), nna.asarray(x[0]))  # one input: an array
    np.testing.assert_allclose(h1.d, np.diag(np.exp(x[0]) * (x[0] + 2)), rtol=1e-12)


def test_helpers_create_graph_stay_differentiable(backend):
    """MAML-like: an hvp taken with create_graph differentiates with respect to the
    Variables that went in."""
    x = _var((3,))
    with grad.auto_forward():
        _, hv = grad.hvp(lambda a: F.sum(a ** 4), x, np.ones(3), create_graph=True)
        (g,) = grad.grad(F.sum(hv), x)
    np.testing.assert_allclose(hv.d, 12 * x.d ** 2, rtol=1e-12)
    np.testing.assert_allclose(g.d, 24 * x.d, rtol=1e-12)


def test_helpers_refuse_bad_input(backend):
    x = nna.asarray(_vals((3,)))
    with pytest.raises(nna.errors.ShapeError, match="hvp|vhp"):
        grad.hvp(lambda a: a * 2.0, x, np.ones(3))
    with pytest.raises(nna.errors.ShapeError, match="v: shape"):
        grad.jvp(lambda a: a * 2.0, x, np.ones(4))
    with pytest.raises(TypeError, match="inputs"):
        grad.vjp(lambda a: a, [1.0])


# -- a static graph of a gradient ---------------------------------------------------------------
def _penalty_graph(w1, w2, x):
    (g,) = grad.grad(F.sum(F.tanh(F.matmul(F.tanh(F.matmul(x, w1)), w2))), x,
                     create_graph=True)
    return F.mean((F.sqrt(F.sum(g * g, axis=1)) - 1.0) ** 2) + F.mean(F.matmul(x, w1))


def test_static_gradient_penalty_compiles_and_stays_flat(backend):
    import tracemalloc
    w1, w2 = _var((2, 8)), _var((8, 1))
    x = Variable((5, 2), need_grad=True)
    loss = _penalty_graph(w1, w2, x)  # static: one graph, the gradient's nodes included
    rng = np.random.default_rng(3)
    tracemalloc.start()
    try:
        for step in range(40):
            x.d = rng.standard_normal((5, 2))
            w1.grad.zero()
            loss.forward()
            loss.backward()
            if step == 10:
                base = tracemalloc.get_traced_memory()[0]
            # the reference replays unfused: each op's own kernels, no programs of its own
            with grad.auto_forward(), grad.fusion_enabled(False):
                a, b = (Variable.from_numpy_array(w.d, need_grad=True) for w in (w1, w2))
                ref = _penalty_graph(a, b, Variable.from_numpy_array(x.d, need_grad=True))
                ref.backward()
            np.testing.assert_allclose(loss.d, ref.d, rtol=1e-12)
            np.testing.assert_allclose(w1.g, a.g, rtol=1e-10)
            w1.d = w1.d - 0.01 * w1.g
        grew = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert grew < 64 * 1024, grew
    text = grad.schedule_of(loss).describe()
    assert text.count("matmul") >= 4 and "tanh" in text  # forward and its backward, one list



def _matmul_steps(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.split()[1:2] == ["matmul"])


def _check_penalty_against_define_by_run(loss, w1, w2, x):
    with grad.auto_forward():
        a, b = (Variable.from_numpy_array(w.d, need_grad=True) for w in (w1, w2))
        ref = _penalty_graph(a, b, Variable.from_numpy_array(x.d, need_grad=True))
        ref.backward()
    np.testing.assert_allclose(loss.d, ref.d, rtol=1e-12)
    np.testing.assert_allclose(w1.g, a.g, rtol=1e-10)
    np.testing.assert_allclose(w2.g, b.g, rtol=1e-10)


def test_static_gradient_penalty_schedules_show_double_backward(backend, capsys):
    """The forward schedule holds the critic and its input gradient (5 matmuls: 2 + 2 + 1);
    the backward schedule differentiates all five, the input gradient's two included (10
    matmuls: the backward-of-backward steps), fused and recomputed where the backend
    fuses, and its numbers are define-by-run's."""
    w1, w2, x = _var((2, 8)), _var((8, 1)), _var((5, 2))
    with grad.fusion_enabled(True, recompute="all"):
        loss = _penalty_graph(w1, w2, x)
        w1.grad.zero()
        w2.grad.zero()
        loss.forward()
        loss.backward()
        grad.print_schedule(loss)
        grad.print_schedule(loss, backward=True)
    fwd, bwd = capsys.readouterr().out.split("backward schedule")
    assert _matmul_steps(fwd) == 5 and _matmul_steps(bwd) == 10, (fwd, bwd)
    if backend != "numpy":  # the device backends fuse elementwise steps
        assert "fuses" in fwd and "fuses" in bwd and "not saved:" in fwd, (fwd, bwd)
    _check_penalty_against_define_by_run(loss, w1, w2, x)


def test_static_gradient_penalty_memory_flat_over_2000_steps(backend):
    """2000 steps of the static penalty graph on fresh batches: the device pool's bytes in
    use and its peak, the Python objects alive and the host memory allocated over the last
    steps do not grow."""
    import gc
    import tracemalloc
    w1, w2, x = _var((2, 8)), _var((8, 1)), _var((5, 2))
    loss = _penalty_graph(w1, w2, x)
    batches = [nna.asarray(_vals((5, 2))) for _ in range(4)]
    for step in range(2000):
        x.d = batches[step % 4]
        w1.grad.zero()
        w2.grad.zero()
        loss.forward()
        loss.backward()
        if step == 100:
            nna.reset_peak_memory()
        elif step == 200:
            mem, objs = nna.memory_stats(), len(gc.get_objects())
        elif step == 1800:
            tracemalloc.start()
        elif step == 1850:
            base = tracemalloc.get_traced_memory()[0]
    try:
        grew = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert nna.memory_stats() == mem
    assert len(gc.get_objects()) - objs < 100, (objs, len(gc.get_objects()))
    assert grew < 16 * 1024, grew
    _check_penalty_against_define_by_run(loss, w1, w2, x)


def test_python_function_refused_second_static(backend):
    x = _var((3,))
    (g,) = grad.grad(F.sum(_Cube()(x)), x, create_graph=True)  # static: graph values
    g.forward()
    np.testing.assert_allclose(g.d, 3 * x.d ** 2, rtol=1e-12)
    (h,) = grad.grad(F.sum(g), x)
    with pytest.raises(GraphError, match="_Cube.*not differentiable"):
        h.forward()


def test_gradgradcheck_refuses_python_function(backend):
    """``gradgradcheck`` through a PythonFunction without a differentiable rule meets the
    GraphError naming it (its second derivative is never taken as zero)."""
    x = _var((3,))
    with pytest.raises(GraphError, match="_Cube.*not differentiable"):
        gradgradcheck(lambda a: _Cube()(a) * a, [x], eps=1e-6, atol=1e-5, rtol=1e-4)
