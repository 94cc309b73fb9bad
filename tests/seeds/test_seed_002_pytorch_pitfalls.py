"""Seed ``002_7e935b9e33291c48.txt``: "PyTorch: implementation pitfalls worth knowing"
(define-by-run memory when summing losses, ``volatile``/no graph for validation,
``view`` and ``contiguous()``, dropout as a class versus a function under
``train()``/``eval()``, a per-forward dropout rate, MC dropout, and defining a layer whose
parameters must ask for gradients).

Each test shows the pitfall's code in nnarray's API and asserts nnarray's behaviour, on
every backend: ``grad.no_grad()`` for ``volatile=True``, ``reshape``/``view`` on any
layout (no ``contiguous()`` step exists or is needed), ``nn.Dropout`` following the
module's mode while ``F.dropout`` follows its ``training=`` argument, and a parameter
being a Variable with ``need_grad=True`` (torch's ``Parameter``/``requires_grad``).
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, nn, solvers
from nnarray.data import DataLoader
from nnarray.grad import Variable

RNG = np.random.default_rng(7)
DATA = RNG.standard_normal((8, 1, 28, 28)).astype(np.float32)
TARGET = RNG.integers(0, 10, 8)


def nll_loss(logp, target):
    """torch's ``F.nll_loss``: the mean of ``-logp[i, target[i]]``."""
    onehot = np.eye(logp.shape[1], dtype=np.float32)[np.asarray(target.get_data("r", "numpy"))]
    return -F.sum(logp * nna.array(onehot)) / logp.shape[0]


class Net(nn.Module):
    """The post's MNIST net. ``nn.Dropout2d`` (whole channels) has no nnarray
    counterpart; the element-wise ``nn.Dropout`` is the closest step."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pooling(self.conv1(x), 2))
        x = F.relu(F.max_pooling(self.conv2_drop(self.conv2(x)), 2))  # the class
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)  # the function: told the mode
        x = self.fc2(x)
        return F.log_softmax(x, axis=1)


@pytest.fixture
def model(backend):
    nna.seed(0)
    return Net()


# -- define-by-run memory ---------------------------------------------------------------

def test_running_loss_is_a_number_and_batches_are_freed(model):
    optimizer = solvers.SGD(model.parameters(), lr=0.01)
    train_loader = DataLoader((DATA, TARGET), batch_size=4)
    model.train()
    running_loss = 0
    kept, batches = [], []
    for _batch_idx, (data, target) in enumerate(train_loader):
        optimizer.zero_grad()
        x = Variable.from_ndarray(data)  # Variable(data) in the post
        batches.append(weakref.ref(x))
        with grad.auto_forward():
            output = model(x)
            loss = nll_loss(output, target)
        del x, output
        gc.collect()
        assert batches[-1]() is not None  # the loss's graph holds the batch...
        loss.backward()
        optimizer.step()
        running_loss += loss.item()  # loss.data[0] in the post's torch: a Python float
        kept.append(loss)
    gc.collect()
    # ...until backward: afterwards the define-by-run graph is freed, as torch frees it,
    # so keeping the losses (for logging) keeps nothing behind them.
    assert all(r() is None for r in batches)
    assert isinstance(running_loss, float)
    assert running_loss == pytest.approx(sum(float(v.d) for v in kept), rel=1e-6)
    with pytest.raises(grad.GraphError, match="retain_graph"):
        kept[-1].backward()  # the graph is gone


def test_validation_records_no_graph(model):
    model.eval()  # dropout off
    data, target = nna.array(DATA), nna.array(TARGET)
    with grad.no_grad():  # Variable(data, volatile=True)
        output = model(Variable.from_ndarray(data))
        loss = nll_loss(output, target)
    assert output.parent is None and loss.parent is None and not loss.need_grad
    with grad.auto_forward():  # the same numbers with a graph
        ref = nll_loss(model(Variable.from_ndarray(data)), target)
    assert float(loss.d) == pytest.approx(float(ref.d), rel=1e-5)


# -- the rank of a Variable: view, reshape, contiguous -------------------------------------

def test_view_and_reshape(backend):
    X = np.random.randn(10, 8)
    assert X.reshape(10, 4, 2).shape == (10, 4, 2)
    Xn = nna.array(X.astype(np.float32))
    np.testing.assert_array_equal(Xn.view(10, 4, 2).numpy(), X.astype(np.float32).reshape(
        10, 4, 2))
    np.testing.assert_array_equal(Xn.view(-1, 4, 2).numpy(), X.astype(np.float32).reshape(
        -1, 4, 2))
    Xv = Variable.from_numpy_array(X.astype(np.float32))
    with grad.auto_forward():
        assert Xv.view(-1, 4, 2).shape == (10, 4, 2)


def test_reshape_of_a_transposed_array_needs_no_contiguous(backend):
    # torch's view raises "input is not contiguous" after a transpose, and the post adds
    # X.contiguous(); nnarray's reshape takes any layout (API.md section 3).
    X = np.random.default_rng(3).standard_normal((10, 8)).astype(np.float32)
    x = Variable.from_numpy_array(X, need_grad=True)
    with grad.auto_forward():
        t = F.transpose(x, (1, 0))  # (8, 10), not contiguous in torch's sense
        y = F.reshape(t, (-1, 4, 2))
        loss = F.sum(y * nna.array(np.arange(80, dtype=np.float32).reshape(10, 4, 2)))
    np.testing.assert_array_equal(y.d, X.T.reshape(-1, 4, 2))
    loss.backward()
    np.testing.assert_array_equal(x.g, np.arange(80, dtype=np.float32).reshape(8, 10).T)
    nd = nna.array(X).T  # an NdArray view with swapped strides
    np.testing.assert_array_equal(nd.reshape(-1, 4, 2).numpy(), X.T.reshape(-1, 4, 2))
    assert not hasattr(x, "contiguous")  # no such step exists to forget


# -- dropout: the class and the function -----------------------------------------------

def test_dropout_default_rate_is_one_half(backend):
    assert nn.Dropout().p == 0.5
    x = nna.ones((100, 100))
    y = F.dropout(x, seed=0).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0}  # inverted dropout: kept values scaled by 2
    assert abs((y == 0).mean() - 0.5) < 0.03


def test_dropout_class_follows_train_and_eval(backend):
    drop = nn.Dropout()
    x = Variable.from_numpy_array(np.ones((50, 50), np.float32))
    drop.train()
    with grad.auto_forward():
        assert (drop(x).d == 0).any()
    drop.eval()
    with grad.auto_forward():
        np.testing.assert_array_equal(drop(x).d, x.d)


def test_dropout_function_ignores_the_module_mode(model):
    # torch.nn.functional.dropout does not see model.eval(): its training argument does.
    model.eval()
    x = nna.ones((50, 50))
    assert (F.dropout(x).numpy() == 0).any()  # training=True by default
    np.testing.assert_array_equal(F.dropout(x, training=model.training).numpy(), x.numpy())
    data = Variable.from_ndarray(nna.array(DATA))
    with grad.no_grad():
        a, b = model(data).d, model(data).d
    np.testing.assert_array_equal(a, b)  # eval: deterministic
    model.train()
    with grad.no_grad():
        a, b = model(data).d, model(data).d
    assert not np.array_equal(a, b)  # train: both dropouts are active


class RandomRateNet(nn.Module):
    """A different dropout rate at every forward, as in the post."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)
        self.rates = []

    def forward(self, x):
        x = F.relu(self.fc1(x))
        p = float(np.random.default_rng(len(self.rates)).random())  # torch.rand(1)
        self.rates.append(p)
        x = F.dropout(x, p, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, axis=1)


def test_dropout_rate_per_forward(backend):
    nna.seed(1)
    net = RandomRateNet()
    x = Variable.from_ndarray(nna.array(np.random.default_rng(0).random((64, 320),
                                                                        np.float32)))
    with grad.no_grad():
        out = [net(x).d for _ in range(3)]
    assert len(set(net.rates)) == 3
    assert all(np.allclose(np.exp(o).sum(1), 1, rtol=1e-5) for o in out)
    h = nna.ones((200, 200))
    for p in (0.1, 0.7):
        assert abs((F.dropout(h, p, training=True).numpy() == 0).mean() - p) < 0.03


class BayesNet(nn.Module):
    """MC dropout: dropout always on, even after ``eval()``."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 50)
        self.fc2 = nn.Linear(50, 1)
        self.n_samples = 100

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=True)  # always
        return self.fc2(x)

    def bayes_forward(self, x):
        samples = F.stack([self(x) for _ in range(self.n_samples)])
        mean = F.mean(samples, axis=0)
        return mean, F.mean((samples - mean) ** 2, axis=0)


def test_mc_dropout_predictive_mean_and_variance(backend):
    nna.seed(2)
    net = BayesNet().eval()
    x = nna.array(np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32))
    with grad.no_grad():
        mean, var = net.bayes_forward(Variable.from_ndarray(x))
        no_drop = net.fc2(F.relu(net.fc1(Variable.from_ndarray(x))))
    assert mean.shape == (4, 1) and (var.d > 0).all()  # eval() did not stop it
    # inverted dropout keeps the expectation: the mean of 100 samples is near the net
    # without dropout (within 4 standard errors)
    assert (np.abs(mean.d - no_drop.d) < 4 * np.sqrt(var.d / net.n_samples) + 1e-6).all()


# -- defining a layer: its parameters must ask for gradients ---------------------------

class MyLinear(nn.Module):
    """The post's ``MyLinear``. nnarray keeps ``W`` as ``(in, out)`` (``x @ W + b``);
    torch's ``Parameter`` is a Variable with ``need_grad=True``."""

    def __init__(self, in_features, out_features, need_grad=True):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Variable((in_features, out_features), need_grad=need_grad)
        self.bias = Variable((out_features,), need_grad=True)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1. / np.sqrt(self.weight.shape[0])
        rng = np.random.default_rng(5)
        self.weight.d = rng.uniform(-stdv, stdv, self.weight.shape)
        self.bias.d = rng.uniform(-stdv, stdv, self.bias.shape)

    def forward(self, input):
        return F.affine(input, self.weight, self.bias)


@pytest.mark.parametrize("need_grad", [True, False], ids=["parameter", "forgot_need_grad"])
def test_my_linear_parameters(backend, need_grad):
    layer = MyLinear(4, 3, need_grad=need_grad)
    names = ["weight", "bias"] if need_grad else ["bias"]
    assert list(layer.parameters()) == names
    w0 = layer.weight.d.copy()
    solver = solvers.SGD(layer.parameters(), lr=0.5)
    x = Variable.from_numpy_array(np.ones((2, 4), np.float32))
    with grad.auto_forward():
        loss = F.sum(layer(x))
    solver.zero_grad()
    loss.backward()
    solver.step()
    moved = not np.allclose(layer.weight.d, w0)
    assert moved == need_grad  # without need_grad the weight is never updated
    if need_grad:
        np.testing.assert_allclose(layer.weight.d, w0 - 0.5 * 2.0, rtol=1e-6)
