"""Seed ``003_3d3dc167a39d4408.txt``: the Chainer tutorial that trains one two-layer MLP
(64 samples, 1000 -> 100 -> 10, ReLU, mean squared error, SGD at 1e-4) five ways: numpy by
hand (``sample_1``), Variables and ``F`` (``sample_2``), a ``Chain`` (``sample_3``), an
optimizer (``sample_4``) and the trainer (``sample_5``).

The post's data and weights (``np.random.seed(1)``, then ``X, Y, W1, W2`` from ``randn``)
are used as they are; the post trains 300 epochs, the tests a few. Its closing claim is
checked: every sample's loss per epoch agrees with the numpy sample's ("(ほぼ)一致する":
exactly where the same parameters are trained; closely where Chainer's ``Linear`` adds a
bias that the optimizer trains too).
"""

from __future__ import annotations

import numpy as np
import pytest

import nnarray.functions as F
from nnarray import grad, nn, solvers
from nnarray.grad import Variable
from nnarray.nn import initializers as I
from nnarray.training import Trainer

EPOCHS = 8  # 300 in the post
M = 64
N_I = 1000
N_H = 100
N_O = 10
LEARNING_RATE = 1.0e-04

_rs = np.random.RandomState(1)  # np.random.seed(1) in the post, without the global state
X = _rs.randn(M, N_I).astype(np.float32)
Y = _rs.randn(M, N_O).astype(np.float32)
W1 = _rs.randn(N_I, N_H).astype(np.float32)
W2 = _rs.randn(N_H, N_O).astype(np.float32)

SAME = {"rtol": 2e-4}  # float32 sums of 1000 terms, in another order on another device


def sample_1() -> list[float]:
    """numpy by hand: the reference (the post's code, losses collected, not printed)."""
    x, y = X, Y
    w1, w2 = W1.copy(), W2.copy()
    y_size = np.float32(M * N_O)
    losses = []
    for _ in range(EPOCHS):
        h = x.dot(w1)
        h_r = np.maximum(h, 0)
        y_p = h_r.dot(w2)
        losses.append(float(np.square(y_p - y).sum() / y_size))
        grad_y_p = 2.0 * (y_p - y) / y_size
        grad_w2 = h_r.T.dot(grad_y_p)
        grad_h_r = grad_y_p.dot(w2.T)
        grad_h = grad_h_r
        grad_h[h < 0] = 0
        grad_w1 = x.T.dot(grad_h)
        w1 -= LEARNING_RATE * grad_w1
        w2 -= LEARNING_RATE * grad_w2
    return losses


@pytest.fixture(scope="module")
def reference() -> list[float]:
    losses = sample_1()
    assert losses[-1] < losses[0]  # the post: the loss falls as the epochs go by
    return losses


def test_sample_2_variables(backend, reference):
    x = Variable.from_numpy_array(X)
    y = Variable.from_numpy_array(Y)
    # Chainer's Variable always carries a gradient; nnarray's leaves ask for one.
    w1 = Variable.from_numpy_array(W1.copy(), need_grad=True)
    w2 = Variable.from_numpy_array(W2.copy(), need_grad=True)
    losses = []
    for _ in range(EPOCHS):
        with grad.auto_forward():  # Chainer is define-by-run
            h = F.matmul(x, w1)
            h_r = F.relu(h)
            y_p = F.matmul(h_r, w2)
            loss = F.mean_squared_error(y_p, y)
        losses.append(float(loss.data))  # print(loss.data)
        w1.grad.zero()  # w1.zerograd()
        w2.grad.zero()
        loss.backward()
        w1.data -= LEARNING_RATE * w1.grad  # NdArray arithmetic on the device
        w2.data -= LEARNING_RATE * w2.grad
    np.testing.assert_allclose(losses, reference, **SAME)


class TwoLayerNet(nn.Module):
    """The post's Chain. Chainer's ``L.Linear`` holds ``W`` as ``(out, in)`` (hence the
    post's ``W1.transpose()``); nnarray's ``nn.Linear`` holds ``(in, out)``, so the
    initial weights go in as they are. ``initialW=`` is ``w_init=I.Constant(array)``."""

    def __init__(self, d_in, h, d_out, bias=True):
        super().__init__()
        self.linear1 = nn.Linear(d_in, h, bias=bias, w_init=I.Constant(W1))
        self.linear2 = nn.Linear(h, d_out, bias=bias, w_init=I.Constant(W2))

    def forward(self, x):  # Chainer's __call__
        g = self.linear1(x)
        h_r = F.relu(g)
        y_p = self.linear2(h_r)
        return y_p


def test_sample_3_chain(backend, reference):
    x = Variable.from_numpy_array(X)
    y = Variable.from_numpy_array(Y)
    model = TwoLayerNet(N_I, N_H, N_O)
    assert list(model.parameters()) == ["linear1.W", "linear1.b", "linear2.W", "linear2.b"]
    losses = []
    for _ in range(EPOCHS):
        with grad.auto_forward():
            y_p = model(x)
            loss = F.mean_squared_error(y_p, y)
        losses.append(float(loss.data))
        model.zero_grad()  # model.cleargrads()
        loss.backward()
        # Only the weights are updated by hand, as in the post; the biases stay zero,
        # so this is the numpy sample exactly.
        model.linear1.W.data -= LEARNING_RATE * model.linear1.W.grad
        model.linear2.W.data -= LEARNING_RATE * model.linear2.W.grad
    np.testing.assert_allclose(losses, reference, **SAME)
    assert not model.linear1.b.d.any()


def train_with_optimizer(model) -> list[float]:
    x = Variable.from_numpy_array(X)
    y = Variable.from_numpy_array(Y)
    optimizer = solvers.SGD(lr=LEARNING_RATE)
    optimizer.set_parameters(model.parameters())  # optimizer.setup(model)
    losses = []
    for _ in range(EPOCHS):
        with grad.auto_forward():
            y_p = model(x)
            loss = F.mean_squared_error(y_p, y)
        losses.append(float(loss.data))
        model.zero_grad()
        loss.backward()
        optimizer.update()
    return losses


def test_sample_4_optimizer(backend, reference):
    # The optimizer trains the biases too, which the numpy sample has not: "almost" equal.
    losses = train_with_optimizer(TwoLayerNet(N_I, N_H, N_O))
    assert losses[0] == pytest.approx(reference[0], rel=2e-4)  # the same start
    np.testing.assert_allclose(losses, reference, rtol=2e-3)
    assert not np.allclose(losses[1:], reference[1:], rtol=1e-5)  # the biases did move
    assert losses[-1] < losses[0]


def test_sample_4_optimizer_without_bias_is_exact(backend, reference):
    losses = train_with_optimizer(TwoLayerNet(N_I, N_H, N_O, bias=False))
    np.testing.assert_allclose(losses, reference, **SAME)


class LossCalculator(nn.Module):
    """The post's ``LossCalculator`` chain of sample 5 (its ``reporter.report`` is the
    Trainer's per-epoch record here)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)


def test_sample_5_trainer(backend, reference):
    # TupleDataset + SerialIterator(batch_size=M, shuffle=False) + StandardUpdater +
    # Trainer((EPOCHS, 'epoch')): nnarray's Trainer takes the arrays, batch size and loss.
    model = LossCalculator(TwoLayerNet(N_I, N_H, N_O))
    trainer = Trainer(model, solvers.SGD(lr=LEARNING_RATE), loss_fn=F.mean_squared_error,
                      batch_size=M, shuffle=False, progress=False, report=False)
    records = trainer.fit((X, Y), epochs=EPOCHS)
    losses = [r["loss"] for r in records]  # PrintReport(['epoch', 'main/loss', ...])
    assert [r["epoch"] for r in records] == list(range(1, EPOCHS + 1))
    np.testing.assert_allclose(losses, train_with_optimizer(TwoLayerNet(N_I, N_H, N_O)),
                               **SAME)
    np.testing.assert_allclose(losses, reference, rtol=2e-3)
