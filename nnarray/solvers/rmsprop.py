"""RMSprop (Tieleman & Hinton), as torch's default (not centered, no momentum)."""

from __future__ import annotations

from typing import Any

from .. import functions as F
from ..ndarray import NdArray
from .solver import Solver


class RMSprop(Solver):
    """``v = alpha v + (1 - alpha) g^2``; ``w -= lr g / (sqrt(v) + eps)``."""

    state_names = ("v",)

    def __init__(self, lr: float = 0.01, alpha: float = 0.99, eps: float = 1e-8, *,
                 comm: Any = None) -> None:
        super().__init__(lr, comm=comm)
        if not 0.0 <= alpha < 1.0 or eps <= 0:
            raise ValueError(f"RMSprop: need 0 <= alpha < 1 and eps > 0, got alpha={alpha}, "
                             f"eps={eps}")
        self.alpha, self.eps = float(alpha), float(eps)

    def update_one(self, w: NdArray, g: NdArray, state: dict[str, NdArray]) -> None:
        v = state["v"]
        v *= self.alpha
        v += g * g * (1.0 - self.alpha)
        w -= g / (F.sqrt(v) + self.eps) * self.lr
