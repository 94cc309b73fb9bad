"""Float32 master weights (``solvers.*(..., master_dtype=nna.float32)``) and
``Module.to(dtype)`` / ``half()`` / ``bfloat16()``: a float16 model trained through
master weights tracks the float32 run, while plain float16 updates are lost to rounding;
with the loss scaler, float16 gradients that would underflow survive."""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, nn, solvers

RNG = np.random.default_rng(7)
X = RNG.standard_normal((32, 8)).astype(np.float32)
T = (X @ (1.0 + 0.05 * RNG.standard_normal((8, 1)))).astype(np.float32)  # W* near 1


def model(dtype) -> nn.Module:
    nna.seed(3)
    m = nn.Linear(8, 1, bias=False)
    m.W.d = np.full((8, 1), 1.0, np.float32)  # weights near 1: float16's ulp there is 2^-10
    return m.to(dtype=dtype) if dtype != np.float32 else m


def train(dtype, master, solver=solvers.SGD, steps=100, lr=1e-3, scaler=None, x=X, t=T):
    m = model(dtype)
    opt = solver(m.parameters(), lr=lr, master_dtype=master)
    xs, ts = nna.array(x.astype(dtype)), nna.array(t.astype(dtype))
    with grad.auto_forward():
        for _ in range(steps):
            opt.zero_grad()
            loss = F.mean_squared_error(m(xs), ts)
            if scaler is None:
                loss.backward()
                opt.step()
            else:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
    return m.W.d.astype(np.float32), opt


@pytest.mark.parametrize("solver", [solvers.SGD, solvers.Adam])
def test_master_weights_track_float32_where_plain_float16_loses_the_updates(backend, solver):
    lr = 1e-3 if solver is solvers.SGD else 1e-4  # every step below half a float16 ulp
    w32, _ = train(np.float32, None, solver, lr=lr)
    w16, _ = train(np.float16, None, solver, lr=lr)
    w16m, opt = train(np.float16, np.float32, solver, lr=lr)
    moved = np.abs(w32 - 1.0).max()
    assert moved > 4e-3  # float32 learned something
    if solver is solvers.SGD:  # float16 alone: every update rounds away
        np.testing.assert_array_equal(w16, np.ones_like(w16))
    else:  # Adam's eps and squared gradients underflow in float16: NaN
        assert not np.allclose(w16, w32, atol=2.0 ** -10)
    # through the float32 copy: float32's weights, rounded once to float16
    np.testing.assert_allclose(w16m, w32, atol=2.0 ** -10, rtol=0)
    st = opt.states["W"]
    assert st["master_weight"].dtype == np.float32
    assert all(a.dtype == np.float32 for a in st.values())
    np.testing.assert_array_equal(st["master_weight"].numpy().astype(np.float16),
                                  opt.params["W"].d)


def test_loss_scaler_keeps_underflowing_float16_gradients(backend):
    x, t = X * 1e-4, T * 1e-4  # float16 weight gradients of ~1e-9 flush to zero unscaled
    kw = {"steps": 5, "lr": 3e6, "x": x, "t": t}
    w_plain, _ = train(np.float16, np.float32, **kw)
    w_scaled, _ = train(np.float16, np.float32, scaler=solvers.LossScaler(), **kw)
    w32, _ = train(np.float32, None, **kw)
    moved = np.abs(w32 - 1.0).max()
    assert moved > 5e-3
    np.testing.assert_array_equal(w_plain, np.ones_like(w_plain))  # no gradient survived
    # scaled: float32's steps, to the precision of a float16 forward on values ~1e-4
    assert np.abs(w_scaled - w32).max() < 0.3 * moved


def test_master_state_round_trips_and_refreshes_from_the_parameters(backend, tmp_path):
    _, opt = train(np.float16, np.float32, solvers.Adam, steps=3, lr=1e-3)
    sd = {k: {s: a.numpy() for s, a in st.items()} for k, st in opt.state_dict()["state"].items()}
    opt.save_states(tmp_path / "s.npz")
    other = solvers.Adam(opt.params, lr=1e-3, master_dtype=nna.float32)
    other.load_states(tmp_path / "s.npz")
    for k, st in other.states.items():
        for s, a in st.items():
            np.testing.assert_array_equal(a.numpy(), sd[k][s])
    # set_parameters takes the parameters' current values as the new master copies
    opt.params["W"].d = np.zeros((8, 1), np.float16)
    opt.set_parameters(opt.params)
    assert not opt.states["W"]["master_weight"].numpy().any()


def test_float32_parameters_need_no_copy_and_master_dtype_is_checked():
    m = model(np.float32)
    opt = solvers.SGD(m.parameters(), lr=0.1, master_dtype=nna.float32)
    assert all("master_weight" not in st for st in opt.states.values())
    with pytest.raises(nna.DTypeError, match="master_dtype"):
        solvers.SGD(lr=0.1, master_dtype=np.float16)
    with pytest.raises(nna.DTypeError, match="master_dtype"):
        solvers.Adam(lr=0.1, master_dtype=np.int32)


def test_module_to_dtype_casts_variables_and_keeps_statistics(backend):
    m = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm(3))
    before = {k: v.d.copy() for k, v in m.parameters().items()}
    assert m.half() is m
    params = m.parameters()
    assert {v.dtype for v in params.values()} == {np.dtype(np.float16)}
    assert all(v.data.head == nna.get_current_context().key for v in params.values())
    for k, v in params.items():
        np.testing.assert_array_equal(v.d, before[k].astype(np.float16))
    assert {a.dtype for a in m.state().values()} <= {np.dtype(np.float32)}
    m.to(np.float32)
    assert {v.dtype for v in m.parameters().values()} == {np.dtype(np.float32)}
    with pytest.raises(nna.DTypeError, match="floating"):
        m.to(dtype=np.int32)
    assert {v.dtype for v in m.parameters().values()} == {np.dtype(np.float32)}


def test_module_to_dtype_keeps_tied_weights_tied():
    m = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
    m[1].W = m[0].W
    m.half()
    assert m[1].W is m[0].W and m[0].W.dtype == np.float16
