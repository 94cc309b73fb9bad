"""nnabla's custom-function examples, written with ``grad.PythonFunction``.

* ``Scale``: ``y = c * x`` (and ``dx = c * dy``);
* ``GradientReversal``: the identity forward, ``dx = -lambda * dy`` backward (DANN);
* ``ShakeShake``: ``y = a x1 + (1-a) x2`` forward, ``dx1 = b dy``, ``dx2 = (1-b) dy``
  backward with independent per-sample ``a, b ~ U(0, 1)`` (``0.5`` in evaluation).

The impls use ``F`` on the Variables' NdArrays, so they run on the current context.
Each function is checked against a numpy reference and prints ``ok`` or ``FAIL``.

    python examples/custom_functions.py --backend opencl
"""

from __future__ import annotations

import sys

import _cli
import numpy as np

import nnarray as nna
import nnarray.functions as F
from nnarray import grad


def write_grad(v: grad.Variable, value: nna.NdArray, accum: bool) -> None:
    """Add ``value`` to ``v.grad`` (``accum``) or overwrite it."""
    if accum:
        g = v.grad
        g += value
    else:
        v.grad.copy_from(value)


class Scale(grad.PythonFunction):
    """``y = scale * x``."""

    def __init__(self, scale: float, ctx=None) -> None:
        super().__init__(ctx)
        self.scale = float(scale)

    def setup_impl(self, inputs, outputs):
        outputs[0].reset_shape(inputs[0].shape, True)

    def forward_impl(self, inputs, outputs):
        outputs[0].data.copy_from(inputs[0].data * self.scale)

    def backward_impl(self, inputs, outputs, propagate_down, accum):
        if propagate_down[0]:
            write_grad(inputs[0], outputs[0].grad * self.scale, accum[0])


class GradientReversal(Scale):
    """The identity forward; the gradient multiplied by ``-lambda`` backward."""

    def __init__(self, lam: float = 1.0, ctx=None) -> None:
        super().__init__(-lam, ctx)

    def forward_impl(self, inputs, outputs):
        outputs[0].data.copy_from(inputs[0].data)


class ShakeShake(grad.PythonFunction):
    """Blend two branches with ``a`` forward and with an independent ``b`` backward;
    ``a`` and ``b`` (shape ``(N, 1, ...)``) are kept for inspection."""

    def __init__(self, training: bool = True, seed: int | None = None, ctx=None) -> None:
        super().__init__(ctx)
        self.training = training
        self.rng = np.random.default_rng(seed)
        self.alpha = self.beta = None

    def min_outputs(self):
        return 1

    def setup_impl(self, inputs, outputs):
        x1, x2 = inputs
        if x1.shape != x2.shape:
            raise nna.ShapeError(f"ShakeShake: branches differ: {x1.shape} vs {x2.shape}")
        outputs[0].reset_shape(x1.shape, True)

    def _coefficient(self, shape) -> nna.NdArray:
        s = (shape[0],) + (1,) * (len(shape) - 1)
        if not self.training:
            return nna.full(s, 0.5, np.float32)
        return F.rand(s, seed=int(self.rng.integers(2**31)))  # drawn on the device

    def forward_impl(self, inputs, outputs):
        x1, x2 = inputs[0].data, inputs[1].data
        self.alpha = self._coefficient(x1.shape)
        outputs[0].data.copy_from(x2 + (x1 - x2) * self.alpha)

    def backward_impl(self, inputs, outputs, propagate_down, accum):
        dy = outputs[0].grad
        self.beta = self._coefficient(dy.shape)
        if propagate_down[0]:
            write_grad(inputs[0], dy * self.beta, accum[0])
        if propagate_down[1]:
            write_grad(inputs[1], dy * (1.0 - self.beta), accum[1])


def _host(a) -> np.ndarray:
    return np.array((a if isinstance(a, nna.NdArray) else a.data).get_data("r", "numpy"))


def _report(name: str, ok: bool) -> bool:
    print(f"{name:<40} {'ok' if ok else 'FAIL'}")
    return ok


def _leaf(a: np.ndarray) -> grad.Variable:
    v = grad.Variable.from_numpy_array(a, need_grad=True)
    v.data.get_data("rw")  # explicit upload to the current context
    return v


def check_scale(rng) -> bool:
    x_np = rng.standard_normal((3, 4)).astype(np.float32)
    x = _leaf(x_np)
    with grad.auto_forward():
        y = Scale(2.5)(x) + x  # x used twice: the PythonFunction's gradient accumulates
        loss = F.sum(y * y)
    loss.backward()
    dy = 2 * 3.5 * x_np
    ok = np.allclose(_host(y), 3.5 * x_np, rtol=1e-5) and \
        np.allclose(_host(x.grad), dy * 3.5, rtol=1e-4)
    return _report("Scale(2.5): forward, accumulated grad", ok)


def check_gradient_reversal(rng) -> bool:
    x_np = rng.standard_normal((5, 3)).astype(np.float32)
    w_np = rng.standard_normal((5, 3)).astype(np.float32)
    x = _leaf(x_np)
    with grad.auto_forward():
        y = GradientReversal(0.3)(x)
        loss = F.sum(y * _leaf(w_np))
    loss.backward()
    ok = np.array_equal(_host(y), x_np) and np.allclose(_host(x.grad), -0.3 * w_np, rtol=1e-6)
    return _report("GradientReversal(0.3): identity, -0.3 dy", ok)


def check_shake_shake(rng) -> bool:
    x1_np, x2_np = (rng.standard_normal((4, 2, 3, 3)).astype(np.float32) for _ in range(2))
    dy_np = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    x1, x2 = _leaf(x1_np), _leaf(x2_np)
    fn = ShakeShake(seed=0)
    with grad.auto_forward():
        y = fn(x1, x2)
    y.backward(nna.array(dy_np))
    a, b = _host(fn.alpha), _host(fn.beta)
    ok = (a.shape == (4, 1, 1, 1) and not np.allclose(a, b)
          and np.allclose(_host(y), a * x1_np + (1 - a) * x2_np, rtol=1e-5, atol=1e-6)
          and np.allclose(_host(x1.grad), b * dy_np, rtol=1e-5, atol=1e-6)
          and np.allclose(_host(x2.grad), (1 - b) * dy_np, rtol=1e-5, atol=1e-6))
    with grad.no_grad():
        y_eval = ShakeShake(training=False)(x1, x2)
    ok &= np.allclose(_host(y_eval), 0.5 * (x1_np + x2_np), rtol=1e-5)
    return _report("ShakeShake: blend a forward, b backward", ok)


def main(argv: list[str] | None = None) -> int:
    ap = _cli.parser(__doc__)
    ap.add_argument("--seed", type=int, default=0, help="seed of the test inputs")
    args = ap.parse_args(argv)
    if _cli.unavailable(args.backend):
        return 2
    rng = np.random.default_rng(args.seed)
    with nna.context_scope(args.backend):
        results = [check(rng) for check in (check_scale, check_gradient_reversal,
                                            check_shake_shake)]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
