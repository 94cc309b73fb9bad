"""Seed ``004_ca0a8307890b5a5b.txt``: the kuu essay on designing a DNN framework's
functions in C++: parameters live in a holder class (PyTorch's ``Module``, Chainer's
``Link``) apart from the functions; a function's forward and backward are either methods
of one class (pattern A: Chainer's ``FunctionNode``, wrapped by a plain ``relu(x)``) or a
forward function with its backward declared elsewhere and paired to it (pattern B:
PyTorch's ``derivatives.yaml``; kuu's choice, for ``F::func1(F::func2(F::func3(x)))``).

nnarray has both: ``grad.PythonFunction`` is pattern A, the ``F`` functions are pattern B
(each op's backward rule is declared beside its spec in ``nnarray/ops/``, ``@backward``),
and ``nn.Module`` holds parameters for the functions. The essay's C++ cannot be run; its
small example (three functions composed, then a Linear defined as holder + function) is
written here in Python and both patterns are checked to agree, on every backend.
"""

from __future__ import annotations

import inspect

import numpy as np

import nnarray.functions as F
from nnarray import grad, nn
from nnarray.grad import PythonFunction, Variable
from nnarray.ops import elementwise, shape

X = np.array([[-1.5, -0.2, 0.3], [0.8, 1.7, -2.4]], np.float32)


# -- pattern A: forward and backward as methods of one class --------------------------

class Func3(PythonFunction):
    """``y = tanh(x)``; its backward beside its forward."""

    def setup_impl(self, inputs, outputs):
        outputs[0].reset_shape(inputs[0].shape, True)

    def forward_impl(self, inputs, outputs):
        outputs[0].data.copy_from(F.tanh(inputs[0].data))

    def backward_impl(self, inputs, outputs, propagate_down, accum):
        y = outputs[0].data
        g = outputs[0].grad * (1.0 - y * y)
        if accum[0]:
            inputs[0].grad += g
        else:
            inputs[0].grad.copy_from(g)


class Func2(Func3):
    """``y = relu(x)``."""

    def forward_impl(self, inputs, outputs):
        outputs[0].data.copy_from(F.relu(inputs[0].data))

    def backward_impl(self, inputs, outputs, propagate_down, accum):
        g = F.where(inputs[0].data > 0, outputs[0].grad, 0.0 * outputs[0].grad)
        if accum[0]:
            inputs[0].grad += g
        else:
            inputs[0].grad.copy_from(g)


class Func1(Func3):
    """``y = 2 x``."""

    def forward_impl(self, inputs, outputs):
        outputs[0].data.copy_from(inputs[0].data * 2.0)

    def backward_impl(self, inputs, outputs, propagate_down, accum):
        g = outputs[0].grad * 2.0
        if accum[0]:
            inputs[0].grad += g
        else:
            inputs[0].grad.copy_from(g)


def relu(x):
    """Chainer's answer to pattern A's verbose call: ``y, = ReLU().apply((x,))``
    wrapped in a function."""
    return Func2()(x)


def reference():
    t = np.tanh(X)
    y = 2 * np.maximum(t, 0)
    dx = 2 * (t > 0) * (1 - t * t)
    return y, dx


def run(chain):
    x = Variable.from_numpy_array(X, need_grad=True)
    with grad.auto_forward():
        y = chain(x)
    x.grad.zero()
    y.backward()
    return y.d, x.g


def test_pattern_a_methods_of_one_class(backend):
    # auto y = Func1{}(Func2{}(Func3{}(x))): an instance per call
    y, dx = run(lambda x: Func1()(Func2()(Func3()(x))))
    y_ref, dx_ref = reference()
    np.testing.assert_allclose(y, y_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx, dx_ref, rtol=1e-5, atol=1e-6)
    # the wrapper function reads like pattern B
    y2, dx2 = run(lambda x: Func1()(relu(Func3()(x))))
    np.testing.assert_array_equal(y2, y)
    np.testing.assert_array_equal(dx2, dx)


def test_pattern_b_forward_functions_with_paired_backward(backend):
    # namespace F = forward; auto y = F::func1(F::func2(F::func3(x)));
    y, dx = run(lambda x: F.relu(F.tanh(x)) * 2.0)
    y_ref, dx_ref = reference()
    np.testing.assert_allclose(y, y_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx, dx_ref, rtol=1e-5, atol=1e-6)
    # F's functions are plain functions; each op's backward is declared apart and
    # paired to the op (ReluBackward0 registered for relu), not a method of a class.
    assert inspect.isfunction(F.relu) and inspect.isfunction(F.tanh)
    for op in (elementwise.relu, elementwise.tanh, elementwise.mul, shape.reshape_op):
        assert op.backward is not None, op.name


def test_both_patterns_agree(backend):
    a = run(lambda x: Func1()(Func2()(Func3()(x))))
    b = run(lambda x: F.relu(F.tanh(x)) * 2.0)
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=1e-6, atol=1e-7)


# -- parameters in a holder, operations in functions ----------------------------------

def test_linear_as_holder_and_function(backend):
    # "Why do PyTorch and Chainer define Linear twice?" The holder keeps W and b; the
    # function is stateless and takes them as arguments.
    layer = nn.Linear(3, 4)
    assert list(layer.parameters()) == ["W", "b"]
    assert list(inspect.signature(F.affine).parameters)[:3] == ["x", "W", "b"]
    x = Variable.from_numpy_array(X)
    with grad.auto_forward():
        y_module = layer(x)
        y_function = F.affine(x, layer.W, layer.b)
        loss = F.sum(y_module)
    np.testing.assert_array_equal(y_module.d, y_function.d)
    np.testing.assert_allclose(y_module.d, X @ layer.W.d + layer.b.d, rtol=1e-5, atol=1e-6)
    layer.zero_grad()
    loss.backward()  # the function's backward fills the holder's parameters' gradients
    np.testing.assert_allclose(layer.W.g, X.T @ np.ones((2, 4), np.float32), rtol=1e-6)
    np.testing.assert_allclose(layer.b.g, np.full(4, 2.0), rtol=1e-6)
