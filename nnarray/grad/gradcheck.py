"""Numerical (central differences) versus analytic gradients, on the current context."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import modes
from .variable import Variable


def _scalarize(y: Any, w: np.ndarray) -> float:
    return float(np.sum(np.asarray(y.data, dtype=np.float64) * w))


def gradcheck(fn: Callable[..., Any], inputs: Sequence[Variable], eps: float = 1e-3,
              atol: float = 1e-3, rtol: float = 1e-2, seed: int = 0) -> bool:
    """Compare ``fn``'s analytic gradients (``backward`` with a random upstream gradient)
    with central differences for every floating ``need_grad`` input. Returns True or
    raises ``AssertionError`` naming the worst element."""
    inputs = list(inputs)
    checked = [i for i, x in enumerate(inputs)
               if isinstance(x, Variable) and x.need_grad and x.dtype.kind == "f"]
    if not checked:
        raise ValueError("gradcheck: no floating-point input has need_grad=True")
    with modes.auto_forward():
        y = fn(*inputs)
    w = np.random.default_rng(seed).standard_normal(y.shape)
    saved = [inputs[i].grad.numpy() for i in checked]
    for i in checked:
        inputs[i].grad.zero()
    with modes.auto_forward():
        y.backward(w.astype(y.dtype))
    analytic = [inputs[i].grad.numpy().astype(np.float64) for i in checked]
    for i, g in zip(checked, saved):
        inputs[i].grad.data = g
    worst = (0.0, None)
    for k, i in enumerate(checked):
        x = inputs[i]
        base = x.data.numpy()
        num = np.zeros(x.shape, np.float64)
        flat = base.reshape(-1)
        for j in range(flat.size):
            vals = []
            for sgn in (1, -1):
                p = flat.copy()
                p[j] += sgn * eps
                x.data.data = p.reshape(x.shape)
                with modes.no_grad():
                    vals.append(_scalarize(fn(*inputs), w))
            num.reshape(-1)[j] = (vals[0] - vals[1]) / (2 * eps)
        x.data.data = base
        err = np.abs(analytic[k] - num) - (atol + rtol * np.abs(num))
        if err.size and err.max() > worst[0]:
            j = int(np.argmax(err))
            idx = np.unravel_index(j, x.shape)
            worst = (float(err.max()), (i, idx, float(analytic[k].reshape(-1)[j]),
                                        float(num.reshape(-1)[j])))
    if worst[1] is not None:
        i, idx, a, n = worst[1]
        raise AssertionError(f"gradcheck: input {i} element {tuple(int(t) for t in idx)}: "
                             f"analytic {a:.6g} vs numerical {n:.6g} (atol={atol}, "
                             f"rtol={rtol}, eps={eps})")
    return True
