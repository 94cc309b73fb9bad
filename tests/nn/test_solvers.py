"""Solvers: updates against hand-computed references, weight decay, state checkpoints,
and updates that stay on the parameters' device."""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, nn, solvers

W0 = np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)
GRADS = [np.array([[0.1, -0.2], [0.3, 0.4]], np.float32),
         np.array([[-0.5, 0.1], [0.0, 2.0]], np.float32),
         np.array([[0.2, 0.2], [-0.1, -1.0]], np.float32)]


def param(value=W0):
    v = grad.Variable.from_numpy_array(value.copy(), need_grad=True)
    v.data.get_data("rw")  # onto the current context
    return v


def host(a) -> np.ndarray:
    return np.array(a.get_data("r", "numpy"))


def run(solver, steps, decay=0.0):
    w = param()
    solver.set_parameters({"w": w})
    for g in GRADS[:steps]:
        solver.zero_grad()
        w.grad.data = g
        w.grad.get_data("rw")
        if decay:
            solver.weight_decay(decay)
        solver.update()
    return w


def test_sgd_matches_reference(backend):
    w = run(solvers.SGD(0.1), 3)
    ref = W0.astype(np.float64) - 0.1 * sum(g.astype(np.float64) for g in GRADS)
    np.testing.assert_allclose(host(w.data), ref, rtol=1e-6)
    assert w.data.head == f"{backend}:0"


def test_momentum_matches_reference(backend):
    w = run(solvers.Momentum(0.1, 0.9), 3)
    ref, b = W0.astype(np.float64), 0.0
    for g in GRADS:
        b = 0.9 * b + g
        ref = ref - 0.1 * b
    np.testing.assert_allclose(host(w.data), ref, rtol=1e-6)


def _torch_schedules(torch):
    """(name, nnarray schedule maker, torch scheduler maker) for every schedule."""
    lr_s = torch.optim.lr_scheduler

    def warm(o):  # linear warmup over 3 steps, then a cosine over 5 to 0.01
        return lr_s.SequentialLR(o, [lr_s.LinearLR(o, 1 / 3, 1.0, total_iters=2),
                                     lr_s.CosineAnnealingLR(o, 5, eta_min=0.01)], [3])
    return [("none", lambda s: None, lambda o: None),
            ("step", lambda s: solvers.StepSchedule(s, 2, 0.1), lambda o: lr_s.StepLR(o, 2, 0.1)),
            ("cosine", lambda s: solvers.CosineSchedule(s, 8, min_lr=0.01),
             lambda o: lr_s.CosineAnnealingLR(o, 8, eta_min=0.01)),
            ("warmup", lambda s: solvers.CosineSchedule(s, 8, warmup_steps=3, min_lr=0.01),
             warm)]


@pytest.mark.parametrize("schedule", ["none", "step", "cosine", "warmup"])
@pytest.mark.parametrize("kw", [{}, {"weight_decay": 0.05}, {"nesterov": True}],
                         ids=["plain", "decay", "nesterov"])
@pytest.mark.parametrize("make", [lambda lr, **kw: solvers.Momentum(lr, 0.9, **kw),
                                  lambda lr, **kw: solvers.SGD(lr, momentum=0.9, **kw)],
                         ids=["Momentum", "SGD"])
def test_momentum_matches_torch_under_every_schedule(backend, schedule, kw, make):
    """Issue 42: with nnabla's ``v = m v - lr g; w += v`` a schedule's rate change
    reached the weights through the velocity, and ``StepSchedule(2, 0.1)`` against
    ``StepLR`` differed by up to 0.47 after 6 steps; torch's ``b = m b + g; w -= lr b``
    now gives torch's weights, step for step, with every schedule."""
    torch = pytest.importorskip("torch", reason="torch is the oracle of this test")
    name, ours, theirs = next(t for t in _torch_schedules(torch) if t[0] == schedule)
    rng = np.random.default_rng(7)
    grads = [rng.standard_normal(W0.shape).astype(np.float32) * 3 for _ in range(8)]
    opt = make(1.0, **kw)
    w = param()
    opt.set_parameters({"w": w})
    sched = ours(opt)
    tw = torch.tensor(W0.copy(), requires_grad=True)
    topt = torch.optim.SGD([tw], lr=1.0, momentum=0.9, **kw)
    tsched = theirs(topt)
    for g in grads:
        w.grad.data = g
        w.grad.get_data("rw")
        opt.update()
        tw.grad = torch.tensor(g)
        topt.step()
        for s in (sched, tsched):
            if s is not None:
                s.step()
        assert opt.lr == pytest.approx(topt.param_groups[0]["lr"], rel=1e-12)
        np.testing.assert_allclose(host(w.data), tw.detach().numpy(), rtol=1e-5, atol=1e-5)
    assert w.data.head == f"{backend}:0"


def test_momentum_refuses_a_checkpoint_of_the_earlier_velocity(tmp_path):
    """A state file saved by the earlier formula ('w/v' = -lr times torch's buffer) is
    refused, naming the conversion, rather than loaded with the wrong sign."""
    opt = solvers.Momentum(0.1)
    opt.set_parameters({"w": param()})
    np.savez(tmp_path / "old.npz", **{"w/v": -0.1 * W0, "t": np.array(3, np.int64)})
    with pytest.raises(nn.CheckpointError, match=r"momentum_buffer' = -v / lr"):
        opt.load_states(tmp_path / "old.npz")
    assert opt.t == 0


def test_adam_matches_reference_with_bias_correction(backend):
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-8
    w = run(solvers.Adam(lr, b1, b2, eps), 3)
    ref, m, v = W0.astype(np.float64), 0.0, 0.0
    for t, g in enumerate(GRADS, 1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        ref = ref - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    np.testing.assert_allclose(host(w.data), ref, rtol=1e-5, atol=1e-7)
    # the first step moves every weight by lr (bias correction makes m/sqrt(v) = sign(g))
    w1 = run(solvers.Adam(lr), 1)
    np.testing.assert_allclose(host(w1.data), W0 - lr * np.sign(GRADS[0]), rtol=1e-5)


def test_weight_decay_adds_rate_times_weights():
    w = run(solvers.SGD(0.1), 1, decay=0.5)
    np.testing.assert_allclose(host(w.data), W0 - 0.1 * (GRADS[0] + 0.5 * W0), rtol=1e-6)


def test_zero_grad_and_frozen_parameters():
    a, b = param(), param()
    opt = solvers.SGD(1.0)
    opt.set_parameters([a, b])
    a.grad.data = np.ones_like(W0)
    b.grad.data = np.ones_like(W0)
    b.need_grad = False
    opt.update()
    np.testing.assert_array_equal(host(a.data), W0 - 1)
    np.testing.assert_array_equal(host(b.data), W0)
    opt.zero_grad()
    assert not host(a.grad).any()


def test_set_parameters_validates_and_takes_module_parameters():
    with pytest.raises(TypeError, match="'x' is a ndarray, expected a grad.Variable"):
        solvers.SGD(0.1).set_parameters({"x": np.zeros(2)})
    with pytest.raises(ValueError, match="lr must be"):
        solvers.SGD(-1)
    with pytest.raises(ValueError, match="beta1"):
        solvers.Adam(beta1=1.0)
    opt = solvers.Momentum(0.1)
    opt.set_parameters(nn.Linear(3, 2).parameters())
    assert list(opt.params) == ["W", "b"] and opt.states["b"]["momentum_buffer"].shape == (2,)


def test_updates_move_nothing_between_devices(backend):
    opt = solvers.Adam(0.01)
    w = param()
    opt.set_parameters({"w": w})
    w.grad.data = GRADS[0]
    w.grad.get_data("rw")
    nna.reset_transfer_stats()
    with nna.strict_transfers():
        opt.weight_decay(1e-4)
        opt.update()
        opt.zero_grad()
    assert nna.transfer_stats()["count"] == 0
    assert w.data.head == f"{backend}:0"
    assert opt.states["w"]["m"].head == f"{backend}:0"


def test_state_round_trip_continues_identically(backend, tmp_path):
    a, b = solvers.Adam(0.01), solvers.Adam(0.01)
    wa, wb = param(), param()
    a.set_parameters({"w": wa})
    b.set_parameters({"w": wb})
    for g in GRADS[:2]:
        wa.grad.data = g
        a.update()
    a.save_states(tmp_path / "adam.npz")
    b.load_states(tmp_path / "adam.npz")
    assert b.t == 2
    wb.data.data = host(wa.data)
    wb.data.get_data("rw")
    for s in ("m", "v"):
        assert host(b.states["w"][s]).tobytes() == host(a.states["w"][s]).tobytes()
        assert b.states["w"][s].head == f"{backend}:0"
    for opt, w in ((a, wa), (b, wb)):
        w.grad.data = GRADS[2]
        opt.update()
    assert host(wa.data).tobytes() == host(wb.data).tobytes()


def test_state_load_rejects_other_parameters(tmp_path):
    a = solvers.Adam()
    a.set_parameters({"w": param()})
    a.save_states(tmp_path / "s.npz")
    b = solvers.Adam()
    b.set_parameters({"v": param()})
    with pytest.raises(nn.CheckpointError, match=r"missing entries \['v/m', 'v/v'\]"):
        b.load_states(tmp_path / "s.npz")
    assert b.t == 0


@pytest.mark.parametrize("make", [lambda: solvers.SGD(0.1), lambda: solvers.Momentum(0.1),
                                  lambda: solvers.Adam(0.01)], ids=["sgd", "momentum", "adam"])
def test_parameter_set_from_host_trains_without_transfers(backend, make):
    """A parameter written on the host (``p.d = value``, as after loading weights by
    hand) and then used on a device: after the first step nothing moves. The update used
    to run on the host (the data's head) and move gradient and data every step."""
    lin = nn.Linear(4, 3)
    lin.W.d = np.ones((4, 3), np.float32)  # head: the host; the device copy is stale
    opt = make()
    opt.set_parameters(lin.parameters())
    x = grad.Variable.from_numpy_array(np.ones((2, 4), np.float32))
    x.data.get_data("rw")
    for step in range(3):
        nna.reset_transfer_stats()
        opt.zero_grad()
        with grad.auto_forward():
            loss = F.sum(lin(x))
        loss.backward()
        opt.update()
        if step:
            assert nna.transfer_stats()["count"] == 0, (step, nna.transfer_stats())
    assert lin.W.data.head == f"{backend}:0"


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_fused_sgd_update_matches_numpy(backend, dtype):
    rng = np.random.default_rng(3)
    ws = [rng.standard_normal(s).astype(dtype) for s in ((5, 3), (7,), ())]
    gs = [rng.standard_normal(w.shape).astype(dtype) for w in ws]
    a = [nna.array(w) for w in ws]
    b = [nna.array(g) for g in gs]
    for x in a + b:
        x.get_data("rw")  # current on the backend only
    versions = [x.version for x in a]
    F.sgd_update(a, b, 0.125)
    for x, w, g, v in zip(a, ws, gs, versions):
        assert x.head == nna.get_current_context().key and x.version > v
        np.testing.assert_allclose(host(x), w - dtype(0.125) * g,
                                   rtol=1e-3 if dtype == np.float16 else 1e-6)
    np.testing.assert_array_equal(host(b[0]), gs[0])  # gradients untouched


def test_fused_sgd_update_validates_before_running(backend):
    w, g = nna.array(np.ones((2, 3), np.float32)), nna.array(np.ones((3, 2), np.float32))
    with pytest.raises(nna.ShapeError, match=r"sgd_update: parameter 0 has shape \(2, 3\)"):
        F.sgd_update([w], [g], 0.1)
    with pytest.raises(nna.DTypeError, match="sgd_update: parameter 0 is float32"):
        F.sgd_update([w], [nna.array(np.ones((2, 3)))], 0.1)
    with pytest.raises(nna.ShapeError, match="1 parameters but 0 gradients"):
        F.sgd_update([w], [], 0.1)
    np.testing.assert_array_equal(host(w), 1.0)  # nothing ran


def test_adamw_rmsprop_adagrad_match_references(backend):
    lr, wd = 0.01, 0.1
    w = run(solvers.AdamW(lr, weight_decay=wd), 3)
    ref, m, v = W0.astype(np.float64), 0.0, 0.0
    for t, g in enumerate(GRADS, 1):
        ref = ref * (1 - lr * wd)  # decoupled: the weights shrink, the gradient is untouched
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        ref = ref - lr / (1 - 0.9 ** t) * m / (np.sqrt(v) / np.sqrt(1 - 0.999 ** t) + 1e-8)
    np.testing.assert_allclose(host(w.data), ref, rtol=1e-5, atol=1e-7)

    w = run(solvers.RMSprop(lr, alpha=0.9), 3)
    ref, v = W0.astype(np.float64), 0.0
    for g in GRADS:
        v = 0.9 * v + 0.1 * g * g
        ref = ref - lr * g / (np.sqrt(v) + 1e-8)
    np.testing.assert_allclose(host(w.data), ref, rtol=1e-5, atol=1e-7)

    w = run(solvers.Adagrad(lr, lr_decay=0.5), 3)
    ref, s = W0.astype(np.float64), 0.0
    for t, g in enumerate(GRADS, 1):
        s = s + g * g
        ref = ref - lr / (1 + (t - 1) * 0.5) * g / (np.sqrt(s) + 1e-10)
    np.testing.assert_allclose(host(w.data), ref, rtol=1e-5, atol=1e-7)


def test_solvers_take_torch_spelling_and_refuse_update_without_parameters():
    m = nn.Linear(2, 3)
    for make in (lambda: solvers.SGD(m.parameters(), lr=0.1),
                 lambda: solvers.Adam(m.parameters()),
                 lambda: solvers.AdamW(list(m.parameters().values()), lr=0.1,
                                       weight_decay=0.0)):
        opt = make()
        assert len(opt.params) == 2
    assert solvers.SGD(m.parameters(), lr=0.1).lr == 0.1
    for opt in (solvers.SGD(0.1), solvers.AdamW(), solvers.RMSprop(), solvers.Adagrad()):
        with pytest.raises(RuntimeError, match=r"no parameters; call set_parameters"):
            opt.update()
        assert opt.t == 0


def test_cosine_schedule_follows_the_formula_and_warms_up():
    T, base, low = 10, 0.5, 0.01
    opt = solvers.SGD([param()], lr=base)
    sched = solvers.CosineSchedule(opt, T, min_lr=low)
    seen = [opt.lr] + [sched.step() for _ in range(T + 3)]
    want = [low + (base - low) * (1 + np.cos(np.pi * min(k, T) / T)) / 2 for k in range(T + 4)]
    np.testing.assert_allclose(seen, want, rtol=1e-12)  # then it stays at min_lr
    opt = solvers.SGD([param()], lr=base)
    sched = solvers.CosineSchedule(opt, T, warmup_steps=4)
    seen = [opt.lr] + [sched.step() for _ in range(T)]
    np.testing.assert_allclose(seen[:4], [base * k / 4 for k in (1, 2, 3, 4)])
    np.testing.assert_allclose(seen[4:], [base * (1 + np.cos(np.pi * k / 6)) / 2
                                          for k in range(7)], atol=1e-12)
    with pytest.raises(ValueError, match="warmup_steps < total_steps"):
        solvers.CosineSchedule(opt, 4, warmup_steps=4)
    with pytest.raises(TypeError, match="expected a Solver"):
        solvers.StepSchedule(object(), 2)


def test_step_schedule_multiplies_every_step_size():
    opt = solvers.Adam([param()], lr=1.0)
    sched = solvers.StepSchedule(opt, step_size=2, gamma=0.5)
    assert [opt.lr] + [sched.step() for _ in range(5)] == [1, 1, 0.5, 0.5, 0.25, 0.25]
    assert sched.lr == opt.lr == 0.25


# -- torch's names (issue 42 item 6) --------------------------------------------------------
def _pair(torch, n=2, seed=11):
    """``n`` nnarray parameters and torch copies of them."""
    rng = np.random.default_rng(seed)
    vals = [rng.standard_normal((3, 2)).astype(np.float32) for _ in range(n)]
    return [param(v) for v in vals], [torch.tensor(v, requires_grad=True) for v in vals]


def _feed(ours, theirs, g):
    for w, tw, gi in zip(ours, theirs, g):
        w.grad.data = gi
        w.grad.get_data("rw")
        tw.grad = __import__("torch").tensor(gi)


def _grads(k, n=2):
    rng = np.random.default_rng(100 + k)
    return [rng.standard_normal((3, 2)).astype(np.float32) for _ in range(n)]


def _close(ours, theirs):
    for w, tw in zip(ours, theirs):
        np.testing.assert_allclose(host(w.data), tw.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["Adam", "AdamW"])
def test_adam_takes_torch_betas_and_weight_decay(backend, kind):
    """``Adam(betas=(b1, b2), weight_decay=)`` is torch's Adam (weight decay an L2 term
    added to the gradient); ``AdamW(betas=)`` torch's decoupled AdamW."""
    torch = pytest.importorskip("torch", reason="torch is the oracle of this test")
    ours, theirs = _pair(torch)
    opt = getattr(solvers, kind)(ours, lr=0.05, betas=(0.8, 0.99), weight_decay=0.1)
    topt = getattr(torch.optim, kind)(theirs, lr=0.05, betas=(0.8, 0.99), weight_decay=0.1)
    assert (opt.beta1, opt.beta2) == (0.8, 0.99)
    for k in range(4):
        _feed(ours, theirs, _grads(k))
        opt.step()
        topt.step()
        _close(ours, theirs)
    with pytest.raises(ValueError, match="betas=.* or beta1/beta2, not both"):
        getattr(solvers, kind)(0.1, 0.9, betas=(0.8, 0.9))
    with pytest.raises(ValueError, match="betas must be a pair"):
        getattr(solvers, kind)(betas=0.9)


def test_step_closure_and_zero_grad_as_torch(backend):
    """``step()`` is ``update()``; ``step(closure)`` calls the closure first and returns its
    loss; ``zero_grad(set_to_none=...)`` leaves gradients that the next backward writes
    afresh: a training loop written with torch's names gives torch's weights."""
    torch = pytest.importorskip("torch", reason="torch is the oracle of this test")
    ours, theirs = _pair(torch, 1)
    x = np.random.default_rng(5).standard_normal((4, 3)).astype(np.float32)
    opt = solvers.SGD(ours, lr=0.1, momentum=0.5)
    topt = torch.optim.SGD(theirs, lr=0.1, momentum=0.5)
    xv = grad.Variable.from_numpy_array(x)
    for set_to_none in (True, False, True):
        def closure():
            opt.zero_grad(set_to_none=set_to_none)
            with grad.auto_forward():
                loss = F.sum(F.tanh(F.matmul(xv, ours[0])))
            loss.backward()
            return loss

        def tclosure():
            topt.zero_grad(set_to_none=set_to_none)
            loss = torch.tanh(torch.tensor(x) @ theirs[0]).sum()
            loss.backward()
            return loss
        loss, tloss = opt.step(closure), topt.step(tclosure)
        assert float(loss) == pytest.approx(tloss.item(), rel=1e-5)
        _close(ours, theirs)
    assert opt.t == 3


def test_param_groups_have_their_own_rates_as_torch(backend):
    """torch's groups: ``SGD([{"params": a}, {"params": b, "lr": ...}], lr=...)``, each
    group at its rate; writing ``group["lr"]`` changes the next update; a schedule scales
    every group from its own base rate (``StepLR``'s rule)."""
    torch = pytest.importorskip("torch", reason="torch is the oracle of this test")
    ours, theirs = _pair(torch)
    opt = solvers.SGD([{"params": {"a": ours[0]}}, {"params": [ours[1]], "lr": 0.5}],
                      lr=0.1, momentum=0.9)
    topt = torch.optim.SGD([{"params": [theirs[0]]}, {"params": [theirs[1]], "lr": 0.5}],
                           lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert list(opt.params) == ["0.a", "1.0"] and opt.param_groups[1]["params"][0] is ours[1]
    sched = solvers.StepSchedule(opt, 2, 0.5)
    tsched = torch.optim.lr_scheduler.StepLR(topt, 2, 0.5)
    for k in range(8):
        if k == 5:  # by hand, the schedules no longer stepped (ours would set it again)
            sched = tsched = None
            for g, tg in zip(opt.param_groups, topt.param_groups):
                g["lr"] = tg["lr"] = g["lr"] * 3
        _feed(ours, theirs, _grads(k))
        opt.step()
        topt.step()
        if sched is not None:
            sched.step()
            tsched.step()
        assert [g["lr"] for g in opt.param_groups] == \
            pytest.approx([g["lr"] for g in topt.param_groups], rel=1e-12)
        _close(ours, theirs)
    assert opt.lr == opt.param_groups[0]["lr"]
    with pytest.raises(ValueError, match="more than one parameter group"):
        solvers.SGD([{"params": [ours[0]]}, {"params": [ours[0]]}], lr=0.1)
    with pytest.raises(ValueError, match="'lr' only .*'momentum'"):
        solvers.SGD([{"params": [ours[0]], "momentum": 0.9}], lr=0.1)


def test_state_dict_round_trip_continues_as_torch(backend):
    """``load_state_dict(state_dict())`` into a fresh solver continues as the original
    and as torch's (whose layout it follows, with names for indices); a state_dict of
    other parameters is refused before anything changes."""
    torch = pytest.importorskip("torch", reason="torch is the oracle of this test")
    ours, theirs = _pair(torch)
    opt = solvers.Adam({"a": ours[0], "b": ours[1]}, lr=0.05)
    topt = torch.optim.Adam(theirs, lr=0.05)
    for k in range(2):
        _feed(ours, theirs, _grads(k))
        opt.step()
        topt.step()
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups", "t"} and sd["t"] == 2
    assert sd["param_groups"] == [{"lr": 0.05, "params": ["a", "b"]}]
    assert set(sd["state"]["a"]) == {"m", "v"}
    fresh = solvers.Adam({"a": ours[0], "b": ours[1]}, lr=0.5)
    fresh.load_state_dict(sd)
    tfresh = torch.optim.Adam(theirs, lr=0.5)
    tfresh.load_state_dict(topt.state_dict())
    assert fresh.t == 2 and fresh.lr == 0.05
    for k in range(2, 4):
        _feed(ours, theirs, _grads(k))
        fresh.step()
        tfresh.step()
        _close(ours, theirs)
    other = solvers.Adam({"a": ours[0]}, lr=0.5)
    with pytest.raises(nn.CheckpointError, match=r"parameter groups .* differ.*unexpected "
                       r"states \['b/m', 'b/v'\]"):
        other.load_state_dict(sd)
    assert other.t == 0 and other.lr == 0.5
