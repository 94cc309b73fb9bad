"""Numerical (central differences) versus analytic gradients, on the current context."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import modes
from .variable import Variable


def _scalarize(y: Any, w: np.ndarray) -> float:
    """The real loss ``Re(sum(conj(w) * y))`` (``sum(w * y)`` for real ``y``)."""
    v = np.asarray(y.data)
    return float(np.sum(v.real.astype(np.float64) * w.real)
                 + np.sum(v.imag.astype(np.float64) * w.imag) * (v.dtype.kind == "c"))


def _checked(inputs: list, op: str) -> list[int]:
    """Indices of the floating ``need_grad`` Variables of ``inputs`` (``ValueError`` if
    none)."""
    checked = [i for i, x in enumerate(inputs)
               if isinstance(x, Variable) and x.need_grad and x.dtype.kind in "fc"]
    if not checked:
        raise ValueError(f"{op}: no floating-point input has need_grad=True")
    return checked


def _random_like(y: Any, seed: int) -> np.ndarray:
    """Standard normal values of ``y``'s shape (complex parts each normal if ``y`` is)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(y.shape)
    if y.dtype.kind == "c":
        w = w + 1j * rng.standard_normal(y.shape)
    return w


def gradcheck(fn: Callable[..., Any], inputs: Sequence[Variable], eps: float = 1e-3,
              atol: float = 1e-3, rtol: float = 1e-2, seed: int = 0) -> bool:
    """Compare ``fn``'s analytic gradients (``backward`` with a random upstream gradient)
    with central differences for every floating ``need_grad`` input. Returns True or
    raises ``AssertionError`` naming the worst element. Complex inputs and outputs follow
    PyTorch: for the real loss ``Re(sum(conj(w) * y))`` a complex input's gradient is
    ``dL/d(real) + i dL/d(imag)``, each part checked by its own differences."""
    inputs = list(inputs)
    checked = _checked(inputs, "gradcheck")
    with modes.auto_forward():
        y = fn(*inputs)
    w = _random_like(y, seed)
    saved = [inputs[i].grad.numpy() for i in checked]
    for i in checked:
        inputs[i].grad.zero()
    with modes.auto_forward():
        y.backward(w.astype(y.dtype))
    analytic = [inputs[i].grad.numpy().astype(np.complex128 if inputs[i].dtype.kind == "c"
                                               else np.float64) for i in checked]
    for i, g in zip(checked, saved):
        inputs[i].grad.data = g
    worst = (0.0, None)
    for k, i in enumerate(checked):
        x = inputs[i]
        base = x.data.numpy()
        num = _numerical(fn, inputs, x, base, w, eps)
        x.data.data = base
        err = np.abs(analytic[k] - num) - (atol + rtol * np.abs(num))
        if err.size and err.max() > worst[0]:
            j = int(np.argmax(err))
            idx = np.unravel_index(j, x.shape)
            worst = (float(err.max()), (i, idx, analytic[k].reshape(-1)[j],
                                        num.reshape(-1)[j]))
    if worst[1] is not None:
        i, idx, a, n = worst[1]
        raise AssertionError(f"gradcheck: input {i} element {tuple(int(t) for t in idx)}: "
                             f"analytic {a:.6g} vs numerical {n:.6g} (atol={atol}, "
                             f"rtol={rtol}, eps={eps})")
    return True


def _numerical(fn: Callable[..., Any], inputs: list, x: Variable, base: np.ndarray,
               w: np.ndarray, eps: float) -> np.ndarray:
    """Central differences of the loss in each element of ``x`` (and, for a complex ``x``,
    in its imaginary part, giving ``d/d(real) + i d/d(imag)``)."""
    steps = (1,) if base.dtype.kind != "c" else (1, 1j)
    num = np.zeros(x.shape, np.complex128 if base.dtype.kind == "c" else np.float64)
    flat = base.reshape(-1)
    for j in range(flat.size):
        for unit in steps:
            vals = []
            for sgn in (1, -1):
                p = flat.copy()
                p[j] += sgn * eps * unit
                x.data.data = p.reshape(x.shape)
                with modes.no_grad():
                    vals.append(_scalarize(fn(*inputs), w))
            num.reshape(-1)[j] += unit * (vals[0] - vals[1]) / (2 * eps)
    return num


def gradgradcheck(fn: Callable[..., Any], inputs: Sequence[Variable],
                  grad_outputs: Any = None, eps: float = 1e-3, atol: float = 1e-3,
                  rtol: float = 1e-2, seed: int = 0) -> bool:
    """Second-order check (torch's ``gradgradcheck``, Chainer's ``check_double_backward``):
    ``gradcheck`` of the vector-Jacobian product ``(x, u) -> d(fn(x))/dx^T u`` taken with
    ``grad.grad(..., create_graph=True)``, in every ``need_grad`` input ``x`` and in the
    output gradient ``u`` (random unless ``grad_outputs`` gives it). Returns True or raises
    ``AssertionError`` naming the worst element."""
    from .gradient import grad
    inputs = list(inputs)
    checked = _checked(inputs, "gradgradcheck")
    with modes.enable_grad():
        y = fn(*inputs)
    if grad_outputs is None:
        u = _random_like(y, seed + 1)
        grad_outputs = Variable.from_numpy_array(u.astype(y.dtype), need_grad=True)

    def vjp(*args: Any) -> Any:
        xs, u = list(args[:-1]), args[-1]
        graph = modes.mode.get() != modes.NO_GRAD
        with modes.enable_grad():
            out = fn(*xs)
            gs = grad(out, [xs[i] for i in checked], grad_outputs=u, create_graph=graph,
                      allow_unused=True)
            from .. import functions as F
            flat = [F.reshape(g, (-1,)) if g is not None else
                    Variable.from_numpy_array(np.zeros(int(np.prod(xs[i].shape)), xs[i].dtype))
                    for g, i in zip(gs, checked)]
            return flat[0] if len(flat) == 1 else F.concatenate(flat)

    return gradcheck(vjp, [*inputs, grad_outputs], eps, atol, rtol, seed)
