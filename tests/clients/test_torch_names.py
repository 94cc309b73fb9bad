"""torch's names beside nnarray's (issue 42 item 6): modules, losses and array methods a
torch user types, each against torch; where a name cannot mean torch's (``parameters()``
is nnabla's dict), the error a torch habit meets says so. Solvers' names are tested in
test_solvers.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, nn, solvers

torch = pytest.importorskip(
    "torch", reason="torch is not installed: it is the oracle of this test (pip install torch)")


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _run(module, *arrays, need_grad=True):
    """``module`` on Variables of ``arrays`` (define-by-run): output and inputs."""
    vs = [grad.Variable.from_numpy_array(a, need_grad=need_grad and a.dtype.kind == "f")
          for a in arrays]
    with grad.auto_forward():
        return module(*vs), vs


# -- modules ---------------------------------------------------------------------------------
def test_iterating_parameters_gives_names_that_say_so():
    """``for p in model.parameters(): p.size(0)`` (torch's habit) used to fail with
    ``'str' object has no attribute 'size'``; the names now say what they are and where
    the Variables are, and stay strings everywhere else."""
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    params = m.parameters()
    for attr in ("size", "grad", "numel", "shape", "requires_grad"):
        with pytest.raises(AttributeError, match=r"'0.W' is a parameter's name, not the "
                           r"parameter: .*\.values\(\), \.items\(\) or model.named_parameters"):
            getattr(next(iter(params)), attr)
    names = list(params)
    assert names == ["0.W", "0.b", "2.W", "2.b"] and names[0].upper() == "0.W"
    assert json.dumps(names) == '["0.W", "0.b", "2.W", "2.b"]' and params[names[2]] is m[2].W
    assert len(solvers.SGD(m.parameters(), lr=0.1).params) == 4  # torch's spelling works


def test_named_parameters_follow_torch():
    """``named_parameters()`` yields ``(name, parameter)`` in registration order, as
    torch's, with ``prefix`` and ``recurse``."""
    class Net(nn.Module):
        def __init__(self):
            self.scale = grad.Variable.from_numpy_array(np.ones(2, np.float32), need_grad=True)
            self.body = nn.Linear(2, 2)

    class TNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(2))
            self.body = torch.nn.Linear(2, 2)

    ours, theirs = Net(), TNet()
    got = [(k, v) for k, v in ours.named_parameters()]
    assert [k for k, _ in got] == ["scale", "body.W", "body.b"]
    assert [k.split(".")[0] for k, _ in got] == \
        [k.split(".")[0] for k, _ in theirs.named_parameters()]
    assert got[1][1] is ours.body.W
    assert [k for k, _ in ours.named_parameters(recurse=False)] == \
        [k for k, _ in theirs.named_parameters(recurse=False)] == ["scale"]
    assert [k for k, _ in ours.named_parameters(prefix="net")][0] == "net.scale"


def test_module_zero_grad_takes_set_to_none(backend):
    """``model.zero_grad(set_to_none=...)``: either way the next backward gives torch's
    fresh gradient (not one accumulated onto the last)."""
    lin = nn.Linear(3, 2, rng=np.random.default_rng(1))
    tlin = torch.nn.Linear(3, 2)
    with torch.no_grad():
        tlin.weight.copy_(torch.tensor(lin.W.d.T))
        tlin.bias.copy_(torch.tensor(lin.b.d))
    x = _x((4, 3), 2)
    for set_to_none in (True, False, True):
        lin.zero_grad(set_to_none=set_to_none)
        tlin.zero_grad(set_to_none=set_to_none)
        with grad.auto_forward():
            y = lin(grad.Variable.from_numpy_array(x))
            loss = F.sum(y * y)
        loss.backward()
        (tlin(torch.tensor(x)) ** 2).sum().backward()
        np.testing.assert_allclose(lin.W.g, tlin.weight.grad.numpy().T, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["ReLU", "Tanh", "Sigmoid", "GELU"])
def test_activation_modules_match_torch(backend, name):
    x = _x((3, 5), 1)
    y, (xv,) = _run(getattr(nn, name)(), x)
    ty = getattr(torch.nn, name)()(torch.tensor(x))
    np.testing.assert_allclose(y.d, ty.numpy(), rtol=1e-5, atol=1e-6)
    assert nn.ReLU(inplace=True).inplace  # torch's argument, computed out of place
    assert isinstance(nn.Sequential(nn.Linear(5, 2), getattr(nn, name)())(
        nna.asarray(x)), nna.NdArray)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 5), (4,)], ids=["NC", "NCL", "C"])
def test_cross_entropy_loss_matches_torch(backend, reduction, shape):
    """Classes on axis 1 as torch's (the ``F`` function's default is the last axis)."""
    x = _x(shape, 2)
    tshape = shape[:1] + shape[2:] if len(shape) > 1 else ()
    t = np.random.default_rng(3).integers(0, 4, tshape).astype(np.int64)
    loss, (xv, _) = _run(nn.CrossEntropyLoss(reduction=reduction), x, t)
    tx = torch.tensor(x, requires_grad=True)
    tl = torch.nn.CrossEntropyLoss(reduction=reduction)(tx, torch.tensor(t))
    np.testing.assert_allclose(loss.d, tl.detach().numpy(), rtol=1e-5, atol=1e-6)
    gy = _x(loss.shape, 4) if reduction == "none" else np.float32(1)
    loss.backward(gy)
    tl.backward(torch.tensor(gy))
    np.testing.assert_allclose(xv.g, tx.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_matches_torch(backend, reduction):
    x, t = _x((3, 4), 5), _x((3, 4), 6)
    loss, (xv, _) = _run(nn.MSELoss(reduction), x, t)
    tx = torch.tensor(x, requires_grad=True)
    tl = torch.nn.MSELoss(reduction=reduction)(tx, torch.tensor(t))
    np.testing.assert_allclose(loss.d, tl.detach().numpy(), rtol=1e-5, atol=1e-6)
    gy = _x(loss.shape, 7) if reduction == "none" else np.float32(1)
    loss.backward(gy)
    tl.backward(torch.tensor(gy))
    np.testing.assert_allclose(xv.g, tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="reduction must be one of"):
        nn.MSELoss("avg")


@pytest.mark.parametrize("padding,kernel,stride", [(1, 3, 1), ((2, 0), 3, 2), ("same", 5, 1),
                                                   ("valid", 3, 1), (0, (3, 1), 1)])
def test_conv2d_takes_torch_padding(backend, padding, kernel, stride):
    conv = nn.Conv2d(2, 3, kernel, stride=stride, padding=padding,
                     rng=np.random.default_rng(8))
    x = _x((2, 2, 7, 6), 9)
    y, _ = _run(conv, x)
    ty = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(conv.W.d),
                                    torch.tensor(conv.b.d), stride=stride, padding=padding)
    np.testing.assert_allclose(y.d, ty.numpy(), rtol=1e-4, atol=1e-5)


def test_conv2d_padding_refusals():
    with pytest.raises(ValueError, match="give pad=1 or padding=1 .*not both"):
        nn.Conv2d(1, 1, 3, pad=1, padding=1)
    with pytest.raises(ValueError, match="padding='same' needs stride 1 and an odd kernel"):
        nn.Conv2d(1, 1, 4, padding="same")
    with pytest.raises(ValueError, match="padding must be an int, a pair"):
        nn.Conv2d(1, 1, 3, padding="full")
    assert nn.Conv2d(1, 1, 3, pad=2).pad == nn.Conv2d(1, 1, 3, padding=2).pad == (2, 2)


# -- arrays ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [-4, -3, -2, -1, 0, 1, 2, 3])
def test_unsqueeze_matches_torch(backend, dim):
    x = _x((2, 3, 4)[:2], 10)
    a = nna.asarray(x)
    want = torch.tensor(x).unsqueeze(dim) if -4 < dim < 3 else None
    if want is None:
        with pytest.raises(IndexError, match=r"unsqueeze: dim .* is out of range \[-3, 2\]"):
            a.unsqueeze(dim)
        with pytest.raises(IndexError):
            torch.tensor(x).unsqueeze(dim)
        return
    u = a.unsqueeze(dim)
    assert u.shape == tuple(want.shape) and u.base is a  # a view, as torch's
    np.testing.assert_array_equal(u.numpy(), want.numpy())
    v = grad.Variable.from_numpy_array(x, need_grad=True)
    with grad.auto_forward():
        y = F.sum(v.unsqueeze(dim) * 2.0)
    y.backward()
    np.testing.assert_array_equal(v.g, 2.0)


def test_view_shares_storage_or_refuses_as_torch(backend):
    x = _x((4, 6), 11)
    a, t = nna.asarray(x), torch.tensor(x)
    for shape in ((24,), (2, -1), (3, 2, 4)):
        v, tv = a.view(*shape), t.view(*shape)
        assert v.shape == tuple(tv.shape) and v.base is a
        np.testing.assert_array_equal(v.numpy(), tv.numpy())
    a.view(-1)[5] = 100.0
    t.view(-1)[5] = 100.0
    np.testing.assert_array_equal(a.numpy(), t.numpy())  # written through, as torch
    with pytest.raises(RuntimeError):
        t.T.view(-1)
    with pytest.raises(ValueError, match=r"view: .*without copying.*reshape\(\) copies"):
        a.T.view(-1)
    vx = grad.Variable.from_numpy_array(x)
    with grad.auto_forward():
        assert vx.view(2, 12).shape == (2, 12)


def test_detach_shares_data_without_a_graph(backend):
    """torch's ``detach``: the same values, shared, outside the graph."""
    x = _x((2, 3), 12)
    v = grad.Variable.from_numpy_array(x, need_grad=True)
    with grad.auto_forward():
        y = v * 3.0
    d = y.detach()
    assert d.parent is None and not d.need_grad and d.data is y.data
    np.testing.assert_array_equal(d.d, 3 * x)
    a = nna.asarray(x)
    b = a.detach()
    b[0, 0] = 7.0
    tx = torch.tensor(x)
    tx.detach()[0, 0] = 7.0
    assert a.numpy()[0, 0] == tx[0, 0].item() == 7.0


def test_to_moves_and_casts_as_torch(backend):
    """``.to(device)`` and ``.to(dtype)``: itself where nothing changes (torch returns
    the same tensor), else a new array there."""
    x = _x((2, 3), 13)
    a = nna.asarray(x)
    here = nna.get_current_context().key
    assert a.to(here) is a and a.to(np.float32) is a
    assert a.to(here, copy=True) is not a
    b = a.to("numpy")
    assert str(b.device) == "numpy:0" and (b is a) == (a.head == "numpy:0")
    c = a.to(np.float64)
    assert c.dtype == np.float64 and c.device == a.device
    np.testing.assert_array_equal(c.numpy(), torch.tensor(x).to(torch.float64).numpy())
    d = nna.asarray(x, device="numpy").to(backend, np.float16)
    assert str(d.device) == f"{backend}:0" and d.dtype == np.float16
