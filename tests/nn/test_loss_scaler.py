"""Loss scaling (``solvers.LossScaler``): torch's ``GradScaler`` scale sequence and
parameters step for step with injected non-finite gradients, the skipped step, the fused
device check, state round trips and argument checks."""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, solvers
from nnarray.ops.unscale import unscale_

X = np.array([0.5, -2.0, 3.0, 0.25], np.float32)
W0 = np.array([1.0, 2.0, -1.0, 0.5], np.float32)
BAD = {1: np.inf, 4: np.nan, 5: -np.inf, 9: np.inf}  # step -> injected gradient value
KW = {"init_scale": 1024.0, "growth_factor": 2.0, "backoff_factor": 0.25,
      "growth_interval": 3}


def torch_run(steps: int) -> tuple[list[float], list[np.ndarray]]:
    torch = pytest.importorskip("torch")  # the oracle (the README's test extras lack it)
    w = torch.tensor(W0, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    scaler = torch.amp.GradScaler("cpu", **KW)
    scales, ws = [], []
    for step in range(steps):
        opt.zero_grad()
        scaler.scale((w * torch.tensor(X)).sum()).backward()
        if step in BAD:
            with torch.no_grad():
                w.grad[2] = BAD[step]
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        ws.append(w.detach().numpy().copy())
    return scales, ws


def nna_run(steps: int, scaler: solvers.LossScaler | None = None):
    w = grad.Variable.from_numpy_array(W0.copy(), need_grad=True)
    w.data.get_data("rw")
    x = nna.array(X)
    opt = solvers.SGD({"w": w}, lr=0.1)
    scaler = scaler or solvers.LossScaler(**KW)
    scales, ws, counts = [], [], []
    with grad.auto_forward():
        for step in range(steps):
            opt.zero_grad()
            scaler.scale(F.sum(w * x)).backward()
            if step in BAD:
                w.grad[2] = float(BAD[step])  # on the gradient's device
            nna.reset_transfer_stats()
            scaler.step(opt)
            counts.append(nna.transfer_stats()["count"])
            scaler.update()
            scales.append(scaler.get_scale())
            ws.append(w.d.copy())
    return scales, ws, counts, opt


def test_scale_sequence_and_parameters_match_torch_grad_scaler(backend):
    t_scales, t_ws = torch_run(14)
    scales, ws, counts, opt = nna_run(14)
    assert scales == t_scales
    for a, b in zip(ws, t_ws):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    # the skipped steps changed nothing and were not counted as solver steps
    assert opt.t == 14 - len(BAD)
    # one scalar read per step on a device (the flag), none on the host
    assert counts == [0 if backend == "numpy" else 1] * 14


def test_inf_gradient_skips_the_step_and_lowers_the_scale(backend):
    scaler = solvers.LossScaler(init_scale=8.0, growth_interval=2)
    w = grad.Variable.from_numpy_array(W0.copy(), need_grad=True)
    w.data.get_data("rw")
    opt = solvers.Adam({"w": w}, lr=0.1)
    with grad.auto_forward():
        scaler.scale(F.sum(w * nna.array(X))).backward()
    w.grad[0] = float("inf")
    assert scaler.step(opt) is None
    scaler.update()
    np.testing.assert_array_equal(w.d, W0)  # skipped: weights and Adam's state untouched
    assert opt.t == 0 and not opt.states["w"]["m"].numpy().any()
    assert scaler.get_scale() == 4.0
    # a finite step after it unscales: the update is that of the true gradient
    opt.zero_grad()
    with grad.auto_forward():
        scaler.scale(F.sum(w * nna.array(X))).backward()
    np.testing.assert_allclose(w.g, X * 4.0)
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(w.d, W0 - 0.1 * np.sign(X), rtol=1e-5)  # Adam's first step


def test_unscale_before_clipping_is_not_repeated_by_step(backend):
    scaler = solvers.LossScaler(init_scale=16.0)
    w = grad.Variable.from_numpy_array(W0.copy(), need_grad=True)
    w.data.get_data("rw")
    opt = solvers.SGD({"w": w}, lr=1.0)
    with grad.auto_forward():
        scaler.scale(F.sum(w * nna.array(X))).backward()
    scaler.unscale_(opt)
    np.testing.assert_allclose(w.g, X)
    with pytest.raises(RuntimeError, match="already called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(w.d, W0 - X)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, nna.bfloat16])
def test_fused_unscale_flags_any_non_finite_element(backend, dtype):
    rng = np.random.default_rng(0)
    gs = [rng.standard_normal(n).astype(dtype) for n in (1, 300, 4097)]
    for bad_grad, bad in ((None, None), (2, np.nan), (1, -np.inf), (0, np.inf)):
        vals = [g.copy() for g in gs]
        if bad_grad is not None:
            vals[bad_grad][-1] = bad
        arrays = [nna.array(v) for v in vals]
        for a in arrays:
            a.get_data("rw")
        flag = nna.zeros((1,), np.float32)
        unscale_(arrays, 0.125, flag)
        assert flag.item() == (0.0 if bad_grad is None else 1.0)
        for a, v in zip(arrays, vals):
            want = (v.astype(np.float32) * np.float32(0.125)).astype(dtype)
            np.testing.assert_array_equal(a.numpy(), want)


def test_state_dict_round_trip_and_torch_keys():
    scaler = solvers.LossScaler(**KW)
    nna_run(5, scaler)
    sd = scaler.state_dict()
    torch = pytest.importorskip("torch")
    t = torch.amp.GradScaler("cpu", **KW)
    assert set(sd) == set(t.state_dict())
    other = solvers.LossScaler()
    other.load_state_dict(sd)
    assert other.state_dict() == sd
    with pytest.raises(ValueError, match="missing"):
        other.load_state_dict({"scale": 2.0})
    assert other.state_dict() == sd  # unchanged by the refused load


def test_disabled_scaler_is_a_pass_through():
    scaler = solvers.LossScaler(enabled=False)
    scales, ws, _, _ = nna_run(3, scaler)
    assert scales == [1.0] * 3 and scaler.state_dict() == {}


@pytest.mark.parametrize("kw, match", [({"init_scale": 0}, "init_scale"),
                                       ({"growth_factor": 1.0}, "growth_factor"),
                                       ({"backoff_factor": 1.0}, "backoff_factor"),
                                       ({"growth_interval": 0}, "growth_interval")])
def test_arguments_are_checked(kw, match):
    with pytest.raises(ValueError, match=match):
        solvers.LossScaler(**kw)


def test_update_without_a_step_raises_and_unscale_checks_its_flag():
    with pytest.raises(RuntimeError, match="no step"):
        solvers.LossScaler().update()
    with pytest.raises(nna.ShapeError, match="found"):
        unscale_([nna.zeros((2,))], 1.0, nna.zeros((2,)))
    with pytest.raises(nna.DTypeError, match="gradient 0"):
        unscale_([nna.zeros((2,), np.int32)], 1.0, nna.zeros((1,)))
