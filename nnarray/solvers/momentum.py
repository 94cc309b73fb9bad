"""SGD with momentum (Chainer's MomentumSGD)."""

from __future__ import annotations

from typing import Any

from ..ndarray import NdArray
from .solver import Solver


class Momentum(Solver):
    """``v = momentum * v - lr * g``; ``w += v``."""

    state_names = ("v",)

    def __init__(self, lr: float = 0.01, momentum: float = 0.9, *, comm: Any = None) -> None:
        super().__init__(lr, comm=comm)
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"Momentum: momentum must be in [0, 1), got {momentum}")
        self.momentum = float(momentum)

    def update_one(self, w: NdArray, g: NdArray, state: dict[str, NdArray]) -> None:
        v = state["v"]
        v *= self.momentum
        v -= g * self.lr
        w += v
