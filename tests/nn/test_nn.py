"""nn: parameter registration, layers, train/eval switching, initializers, checkpoints."""

from __future__ import annotations

import os

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, nn
from nnarray.nn import initializers as I


class Net(nn.Module):
    def __init__(self, rng=None):
        self.l1 = nn.Linear(4, 3, rng=rng)
        self.bn = nn.BatchNorm(3)
        self.head = nn.Sequential(nn.Linear(3, 2, rng=rng), nn.relu, nn.Dropout(0.5))

    def forward(self, x):
        return self.head(nn.relu(self.bn(self.l1(x))))


def host(a) -> np.ndarray:
    return np.array((a if isinstance(a, nna.NdArray) else a.data).get_data("r", "numpy"))


def run_step(model, x):
    with grad.auto_forward():
        loss = F.sum(model(grad.Variable.from_numpy_array(x)))
    loss.backward()
    return loss


# -- registration ---------------------------------------------------------------------
def test_parameters_are_ordered_dotted_names():
    m = Net()
    assert list(m.parameters()) == ["l1.W", "l1.b", "bn.gamma", "bn.beta", "head.0.W",
                                    "head.0.b"]
    assert all(isinstance(v, grad.Variable) and v.need_grad for v in m.parameters().values())
    assert list(m.state()) == ["bn.running_mean", "bn.running_var"]
    assert [n for n, _ in m.named_modules()] == ["", "l1", "bn", "head", "head.0", "head.2"]


def test_attribute_kinds_and_reassignment():
    m = nn.Module()
    m.w = grad.Variable((2,), need_grad=True)
    m.frozen = grad.Variable((2,), need_grad=False)
    m.buf = nna.zeros(3)
    m.plain = np.zeros(3)
    assert list(m.parameters()) == ["w"]
    assert list(m.state()) == ["frozen", "buf"]
    m.w = None
    del m.buf
    assert m.parameters() == {} and list(m.state()) == ["frozen"]
    m.frozen.need_grad = True
    assert list(m.parameters()) == ["frozen"]


def test_call_is_forward_and_missing_forward_is_clear():
    class Twice(nn.Module):
        def forward(self, x):
            return x * 2
    assert float(Twice()(nna.array(3.0))) == 6.0
    with pytest.raises(NotImplementedError, match="Module does not define forward"):
        nn.Module()(1)


def test_module_on_ndarrays_runs_now_and_returns_ndarrays(backend):
    """Outside auto_forward a Module called on NdArrays computes at once and returns
    NdArrays (as F functions on NdArrays do); on Variables it still records."""
    rng = np.random.default_rng(0)
    model = Net(rng)
    model.eval()
    x = rng.standard_normal((5, 4)).astype(np.float32)
    y = model(nna.asarray(x))
    assert type(y) is nna.NdArray and y.shape == (5, 2)
    with grad.no_grad():
        assert type(model(nna.asarray(x))) is nna.NdArray
    with grad.auto_forward():
        want = host(model(grad.Variable.from_numpy_array(x)))
    np.testing.assert_allclose(host(y), want, rtol=1e-5, atol=1e-6)
    lin = nn.Linear(4, 3, rng=rng)
    y = lin(nna.asarray(x))
    np.testing.assert_allclose(host(y), x @ host(lin.W) + host(lin.b), rtol=1e-5, atol=1e-5)
    static = lin(grad.Variable.from_numpy_array(x))
    assert isinstance(static, grad.Variable) and static.parent is not None
    assert all(p._grad is None for p in lin.parameters().values())  # nothing recorded


def test_activations_are_the_F_functions():
    assert nn.relu is F.relu and nn.sigmoid is F.sigmoid and nn.tanh is F.tanh
    assert nn.softmax is F.softmax and nn.leaky_relu is F.leaky_relu


# -- layers ---------------------------------------------------------------------------
def test_linear_shapes_device_and_forward(backend):
    lin = nn.Linear(5, 3, rng=np.random.default_rng(0))
    assert lin.W.shape == (5, 3) and lin.b.shape == (3,)
    assert lin.W.data.head == f"{backend}:0"
    x = np.random.default_rng(1).standard_normal((2, 5)).astype(np.float32)
    with grad.auto_forward():
        y = lin(grad.Variable.from_numpy_array(x))
    np.testing.assert_allclose(host(y), x @ host(lin.W) + host(lin.b), rtol=1e-5, atol=1e-5)
    assert list(nn.Linear(5, 3, bias=False).parameters()) == ["W"]


@pytest.mark.parametrize("shape,base_axis,bias", [
    ((2, 1, 8), -1, True), ((2, 3, 4, 8), -1, False), ((8,), -1, True), ((5, 8), -1, True),
    ((2, 8), 1, True), ((2, 2, 4), 1, True), ((3, 2, 2, 2), 1, False), ((2, 3, 2, 4), 2, True),
    ((2, 2, 2), 0, True)])
def test_linear_base_axis_matches_torch_linear(backend, shape, base_axis, bias):
    """Issue 42: ``Linear(8, 3)`` flattened a (2, 1, 8) input to (2, 3) with no way to ask
    for torch's last axis: ``base_axis=-1`` applies it there (torch's
    ``F.linear``), the default 1 flattens as nnabla, any ``base_axis`` keeps
    ``x.shape[:base_axis]``; values and gradients against torch."""
    torch = pytest.importorskip("torch", reason="torch is the oracle of this test")
    lin = nn.Linear(8, 3, bias=bias, rng=np.random.default_rng(2), base_axis=base_axis)
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    ax = base_axis % len(shape) if base_axis < 0 else base_axis
    W, b = (torch.tensor(host(p), requires_grad=True) if p is not None else None
            for p in (lin.W.data, lin.b.data if bias else None))
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.nn.functional.linear(tx.reshape(shape[:ax] + (-1,)), W.T, b)
    xv = grad.Variable.from_numpy_array(x, need_grad=True)
    with grad.auto_forward():
        y = lin(xv)
    assert y.shape == tuple(ty.shape) == shape[:ax] + (3,)
    np.testing.assert_allclose(y.d, ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    gy = np.random.default_rng(4).standard_normal(y.shape).astype(np.float32)
    for p in lin.parameters().values():
        p.grad.zero()
    y.backward(gy)
    ty.backward(torch.tensor(gy))
    np.testing.assert_allclose(xv.g, tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(lin.W.g, W.grad.numpy(), rtol=1e-5, atol=1e-5)
    if bias:
        np.testing.assert_allclose(lin.b.g, b.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_linear_refuses_another_flattened_size_naming_in_features(backend):
    """The flattened size must be ``in_features``: the error names both shapes, and
    the last-axis ``base_axis=-1`` where that is what the input fits."""
    x = nna.asarray(np.ones((2, 2, 4), np.float32))
    with pytest.raises(nna.ShapeError, match=r"Linear\(4, 3\): input of shape \(2, 2, 4\) "
                       r"flattens from base_axis=1 to \(2, 4\) = 8 features, but in_features "
                       r"is 4 \(base_axis=-1"):
        nn.Linear(4, 3)(x)
    with pytest.raises(nna.ShapeError, match=r"base_axis=-1 to \(4,\) = 4 .* in_features is 8$"):
        nn.Linear(8, 3, base_axis=-1)(x)
    with pytest.raises(nna.ShapeError, match="base_axis 4 is out of range for an input of "
                       r"shape \(2, 2, 4\)"):
        nn.Linear(4, 3, base_axis=4)(x)
    with pytest.raises(TypeError, match="base_axis must be an int"):
        nn.Linear(4, 3, base_axis=1.0)
    assert nn.Linear(8, 3)(x).shape == (2, 3)  # flattened to 8: nnabla's convention
    assert "base_axis=-1" in repr(nn.Linear(8, 3, base_axis=-1))


def _conv_ref(x, W, b, stride, pad):
    """Direct numpy convolution in float64 (independent of F.conv2d)."""
    n, _, h, w = x.shape
    o, _, kh, kw = W.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    out = np.empty((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.tensordot(win, W, axes=((1, 2, 3), (1, 2, 3))) + b
    return out


def test_conv2d_shapes_and_forward():
    conv = nn.Conv2d(2, 4, 3, stride=2, pad=1, rng=np.random.default_rng(0))
    assert conv.W.shape == (4, 2, 3, 3) and conv.b.shape == (4,)
    conv.b.d = np.random.default_rng(2).standard_normal(4)  # not the zeros it starts with
    xn = np.random.default_rng(1).standard_normal((2, 2, 5, 6)).astype(np.float32)
    with grad.auto_forward():
        y = conv(grad.Variable.from_ndarray(nna.array(xn)))
    assert y.shape == (2, 4, 3, 3)
    np.testing.assert_allclose(host(y), _conv_ref(xn, host(conv.W), host(conv.b), 2, 1),
                               rtol=1e-5, atol=1e-5)
    assert nn.Conv2d(1, 1, (3, 2), bias=False).W.shape == (1, 1, 3, 2)


def test_train_eval_propagates_to_children():
    m = Net()
    assert all(mod.training for _, mod in m.named_modules())
    assert m.eval() is m
    assert not any(mod.training for _, mod in m.named_modules())
    m.train()
    assert m.head[2].training


def test_dropout_only_in_training():
    d = nn.Dropout(0.5)
    x = nna.ones((100, 100))
    y = host(d(x))
    assert set(np.unique(y)) == {0.0, 2.0} and 0.4 < (y == 0).mean() < 0.6
    d.eval()
    np.testing.assert_array_equal(host(d(x)), 1.0)
    with pytest.raises(ValueError, match="p must be"):
        nn.Dropout(1.0)


def test_batchnorm_training_updates_statistics_eval_uses_them():
    bn = nn.BatchNorm(3, decay=0.9)
    x = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32) * 2 + 1
    with grad.auto_forward():
        y = bn(grad.Variable.from_numpy_array(x))
    np.testing.assert_allclose(host(y).mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(host(bn.running_mean), 0.1 * x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(host(bn.running_var), 0.9 + 0.1 * x.var(0, ddof=1), rtol=1e-5)
    bn.eval()
    rm, rv = host(bn.running_mean), host(bn.running_var)
    with grad.auto_forward():
        y = bn(grad.Variable.from_numpy_array(x))
    np.testing.assert_allclose(host(y), (x - rm) / np.sqrt(rv + 1e-5), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(host(bn.running_mean), rm)  # eval leaves them alone


def test_zero_grad():
    nna.seed(0)  # the dropout mask and weights: unseeded, they can cut every path to l1
    I.seed(0)
    m = Net()
    run_step(m, np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32))
    assert np.abs(host(m.l1.W.grad)).sum() > 0
    m.zero_grad()
    assert all(np.all(host(p.grad) == 0) for p in m.parameters().values())


# -- initializers ---------------------------------------------------------------------
def _uniform_on(a, lim):
    """``a`` fills [-lim, lim) like a uniform sample: bounded, reaching both ends, mean 0,
    variance lim^2 / 3 (an all-zeros or a shrunken sample fails)."""
    assert a.dtype == np.float32 and np.abs(a).max() <= lim
    assert a.min() < -0.95 * lim and a.max() > 0.95 * lim
    assert abs(a.mean()) < 0.05 * lim
    assert abs(a.var() / (lim * lim / 3) - 1) < 0.05


def _normal_with(a, sigma):
    assert a.dtype == np.float32
    assert abs(a.mean()) < 0.05 * sigma and abs(a.std() / sigma - 1) < 0.03


def test_initializers_are_seeded_and_scaled():
    a = I.glorot_uniform((100, 50), 100, 50, np.random.default_rng(3))
    b = I.glorot_uniform((100, 50), 100, 50, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)
    _uniform_on(a, np.sqrt(6 / 150))
    _uniform_on(I.he_uniform((200, 100), 200, 100, np.random.default_rng(1)), np.sqrt(6 / 200))
    _uniform_on(I.HeUniform()((100, 100), 10, 10), np.sqrt(6 / 10))
    _uniform_on(I.HeUniform(gain=0.5)((100, 100), 10, 10), 0.5 * np.sqrt(6 / 10))
    _uniform_on(I.GlorotUniform()((100, 100), 30, 70), np.sqrt(6 / 100))
    _uniform_on(I.Uniform(0.2)((100, 100)), 0.2)
    _normal_with(I.he_normal((400, 400), 400, 400, np.random.default_rng(0)), np.sqrt(2 / 400))
    _normal_with(I.GlorotNormal()((300, 300), 300, 300), np.sqrt(1 / 300))
    _normal_with(I.glorot_normal((300, 300), 100, 200, np.random.default_rng(2)),
                 np.sqrt(2 / 300))
    _normal_with(I.Normal(0.3)((300, 300)), 0.3)
    # Layers use these with their fans: Linear(in, out), Conv2d(in * kh * kw, out * kh * kw).
    _uniform_on(nn.Linear(300, 200, w_init=I.HeUniform()).W.d, np.sqrt(6 / 300))
    _uniform_on(nn.Conv2d(16, 32, 3, w_init=I.HeUniform()).W.d, np.sqrt(6 / (16 * 9)))
    np.testing.assert_array_equal(I.Constant(0.5)((2, 2)), 0.5)
    I.seed(7)
    w1 = nn.Linear(3, 3).W.d.copy()
    I.seed(7)
    np.testing.assert_array_equal(nn.Linear(3, 3).W.d, w1)


# -- devices ----------------------------------------------------------------------------
def test_module_to_moves_every_array_explicitly(backend):
    """``to(ctx)`` makes every parameter and state array current on ``ctx`` (explicit,
    counted transfers; values unchanged); training there then moves nothing."""
    with nna.context_scope("numpy"):
        m = trained_net(0)  # parameters, running statistics and gradients on the host
    params = m.parameters()
    before = {k: host(a).copy() for k, a in m.named_arrays().items()}
    grads = {k: host(p.grad).copy() for k, p in params.items()}
    nna.reset_transfer_stats()
    assert m.to(backend) is m
    arrays = m.named_arrays()
    for k, a in arrays.items():
        nd = a if isinstance(a, nna.NdArray) else a.data
        assert nd.head == f"{backend}:0", k
    for k, p in params.items():
        assert p.grad.head == f"{backend}:0", k
    moved = nna.transfer_stats()["count"]
    assert moved == (0 if backend == "numpy" else len(arrays) + len(params))
    for k, a in arrays.items():
        np.testing.assert_array_equal(host(a), before[k], err_msg=k)
    for k, p in params.items():
        np.testing.assert_array_equal(host(p.grad), grads[k], err_msg=k)
    x = grad.Variable.from_ndarray(nna.zeros((6, 4)))
    x.data.get_data("w")  # a fresh input written on the device
    with nna.strict_transfers():  # nothing left on the host that a step would need
        with grad.auto_forward():
            loss = F.sum(m(x))
        loss.backward()  # accumulates into the moved gradients


# -- checkpoints ----------------------------------------------------------------------
def trained_net(seed):
    m = Net(np.random.default_rng(seed))
    run_step(m, np.random.default_rng(seed).standard_normal((6, 4)).astype(np.float32))
    return m


def snapshot(m):
    return {k: host(a).tobytes() for k, a in m.named_arrays().items()}


def test_save_load_round_trip_is_bit_exact(backend, tmp_path):
    src, dst = trained_net(0), trained_net(1)
    path = tmp_path / "net.npz"
    src.save(path)
    assert snapshot(src) != snapshot(dst)
    nna.reset_transfer_stats()
    dst.load(path)
    assert snapshot(dst) == snapshot(src)
    for a in dst.named_arrays().values():
        assert (a if isinstance(a, nna.NdArray) else a.data).head == f"{backend}:0"
    assert [n for n in os.listdir(tmp_path)] == ["net.npz"]  # no temporary left behind


def test_save_is_atomic_when_writing_fails(tmp_path, monkeypatch):
    path = tmp_path / "net.npz"
    m = Net()
    m.save(path)
    before = path.read_bytes()

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(np, "savez", boom)
    with pytest.raises(OSError, match="disk full"):
        Net().save(path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["net.npz"]


def _write(path, arrays):
    np.savez(path, **arrays)


@pytest.mark.parametrize("case, match", [
    ("missing", r"missing entries \['head.0.b'\]"),
    ("extra", r"unexpected entries \['bogus'\]"),
    ("shape", r"entry 'l1.W' has shape \(3, 4\), expected \(4, 3\)"),
    ("dtype", r"entry 'bn.running_var' has dtype float64, expected float32"),
])
def test_load_rejects_bad_entries_and_changes_nothing(tmp_path, case, match):
    good = {k: host(a) for k, a in trained_net(0).named_arrays().items()}
    if case == "missing":
        del good["head.0.b"]
    elif case == "extra":
        good["bogus"] = np.zeros(1)
    elif case == "shape":
        good["l1.W"] = good["l1.W"].T.copy()
    else:
        good["bn.running_var"] = good["bn.running_var"].astype(np.float64)
    path = tmp_path / "bad.npz"
    _write(path, good)
    m = trained_net(1)
    before = snapshot(m)
    with pytest.raises(nn.CheckpointError, match=match):
        m.load(path)
    assert snapshot(m) == before


@pytest.mark.parametrize("content", [b"not a zip file at all", b"PK\x03\x04garbage"])
def test_load_rejects_corrupt_files(tmp_path, content):
    path = tmp_path / "corrupt.npz"
    path.write_bytes(content)
    m = Net()
    before = snapshot(m)
    with pytest.raises(nn.CheckpointError, match="corrupt.npz.*corrupt"):
        m.load(path)
    assert snapshot(m) == before


def test_load_rejects_truncated_file_and_missing_path(tmp_path):
    path = tmp_path / "net.npz"
    Net().save(path)
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(nn.CheckpointError, match="corrupt"):
        Net().load(path)
    with pytest.raises(FileNotFoundError, match="nope.npz"):
        Net().load(tmp_path / "nope.npz")


# -- containers, state dicts, seeds --------------------------------------------------------
class Holder(nn.Module):
    def __init__(self):
        self.blocks = nn.ModuleList([nn.Linear(2, 3), nn.Linear(3, 2)])
        self.heads = nn.ModuleDict({"a": nn.Linear(2, 1), "b": nn.LayerNorm(2)})
        self.emb = nn.Embedding(4, 2)


def test_module_list_and_dict_register_their_modules(backend):
    m = Holder()
    assert list(m.parameters()) == ["blocks.0.W", "blocks.0.b", "blocks.1.W", "blocks.1.b",
                                    "heads.a.W", "heads.a.b", "heads.b.weight", "heads.b.bias",
                                    "emb.W"]
    m.blocks.append(nn.Linear(2, 2))
    m.heads["c"] = nn.Linear(1, 1)
    assert "blocks.2.W" in m.parameters() and "heads.c.b" in m.parameters()
    assert len(m.blocks) == 3 and [type(b) for b in m.blocks][0] is nn.Linear
    assert m.blocks[-1] is m.blocks[2] and list(m.heads) == ["a", "b", "c"]
    assert "a" in m.heads and isinstance(m.heads["b"], nn.LayerNorm)
    del m.heads["c"]
    assert "heads.c.W" not in m.parameters() and len(m.heads) == 2
    m.blocks[0] = nn.Linear(2, 5)
    assert m.parameters()["blocks.0.W"].shape == (2, 5)
    with pytest.raises(TypeError, match="expected a Module"):
        m.blocks.append(F.relu)
    with pytest.raises(KeyError, match="without '.'"):
        m.heads["x.y"] = nn.Linear(1, 1)


def test_plain_list_or_dict_of_modules_warns():
    class Bad(nn.Module):
        def __init__(self, kind):
            layers = [nn.Linear(2, 2)]
            self.layers = layers if kind == "list" else {"l": layers[0]}

    with pytest.warns(UserWarning, match=r"Bad.layers: a plain list holding Modules.*ModuleList"):
        Bad("list")
    with pytest.warns(UserWarning, match=r"plain dict.*nn.ModuleDict"):
        Bad("dict")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.Sequential(nn.Linear(2, 2), F.relu)
        m = nn.Module()
        m.sizes = [1, 2]  # no Modules: nothing to say


def test_state_dict_round_trips_between_models(backend):
    a, b = Holder(), Holder()
    for p in a.parameters().values():
        p.d = np.random.default_rng(0).standard_normal(p.shape).astype(np.float32)
    bn = nn.BatchNorm(3)
    sd = a.state_dict()
    assert list(sd) == list(a.parameters()) and all(isinstance(v, nna.NdArray)
                                                     for v in sd.values())
    assert sd["emb.W"] is a.emb.W.data  # the arrays themselves, as torch
    assert list(bn.state_dict()) == ["gamma", "beta", "running_mean", "running_var"]
    assert b.load_state_dict(sd) == ([], [])
    assert {p.data.head for p in b.parameters().values()} == {f"{backend}:0"}
    for k, p in b.parameters().items():
        np.testing.assert_array_equal(p.d, a.parameters()[k].d)
    b.load_state_dict({k: v.numpy() for k, v in sd.items()})  # numpy values too
    sd["emb.W"].fill(0)  # the copy is a copy
    assert b.emb.W.d.any()


def test_load_state_dict_checks_names_shapes_dtypes_before_writing():
    m = Holder()
    before = {k: v.numpy() for k, v in m.state_dict().items()}
    good = dict(before)
    cases = [
        ({k: v for k, v in good.items() if k != "emb.W"}, "missing key 'emb.W'"),
        ({**good, "extra": np.ones(1)}, "unexpected key 'extra'"),
        ({**good, "emb.W": np.ones((4, 3), np.float32)}, r"emb.W: shape \(4, 3\) in the state"),
        ({**good, "emb.W": np.ones((4, 2), np.float64)}, "emb.W: dtype float64"),
    ]
    for sd, match in cases:
        sd = {k: (v + 1 if isinstance(v, np.ndarray) and v.dtype == np.float32 else v)
              for k, v in sd.items()}
        with pytest.raises(nn.CheckpointError, match=match):
            m.load_state_dict(sd)
        for k, v in m.state_dict().items():
            np.testing.assert_array_equal(v.numpy(), before[k])  # nothing written
    partial = {"emb.W": np.full((4, 2), 7, np.float32), "extra": np.ones(1)}
    res = m.load_state_dict(partial, strict=False)
    assert "blocks.0.W" in res.missing_keys and res.unexpected_keys == ["extra"]
    assert (m.emb.W.d == 7).all()
    with pytest.raises(nn.CheckpointError, match="shape"):  # shapes count without strict
        m.load_state_dict({"emb.W": np.ones(3, np.float32)}, strict=False)


def test_nna_seed_makes_initialization_reproducible():
    nna.seed(5)
    a = [nn.Linear(3, 4).W.d, nn.Embedding(3, 2).W.d, F.rand((3,)).numpy()]
    nna.seed(5)
    b = [nn.Linear(3, 4).W.d, nn.Embedding(3, 2).W.d, F.rand((3,)).numpy()]
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    nna.seed(6)
    assert not np.array_equal(nn.Linear(3, 4).W.d, a[0])
