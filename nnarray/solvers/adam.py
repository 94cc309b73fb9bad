"""Adam (Kingma & Ba), with bias correction as in PyTorch."""

from __future__ import annotations

import math
from typing import Any

from .. import functions as F
from ..ndarray import NdArray
from .solver import Solver


class Adam(Solver):
    """``m = b1 m + (1-b1) g``; ``v = b2 v + (1-b2) g^2``;
    ``w -= lr / (1-b1^t) * m / (sqrt(v / (1-b2^t)) + eps)``."""

    state_names = ("m", "v")

    def __init__(self, lr: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 eps: float = 1e-8, *, comm: Any = None) -> None:
        super().__init__(lr, comm=comm)
        for name, b in (("beta1", beta1), ("beta2", beta2)):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"Adam: {name} must be in [0, 1), got {b}")
        if eps <= 0:
            raise ValueError(f"Adam: eps must be > 0, got {eps}")
        self.beta1, self.beta2, self.eps = float(beta1), float(beta2), float(eps)

    def update_one(self, w: NdArray, g: NdArray, state: dict[str, NdArray]) -> None:
        m, v = state["m"], state["v"]
        m *= self.beta1
        m += g * (1.0 - self.beta1)
        v *= self.beta2
        v += g * g * (1.0 - self.beta2)
        bc1 = 1.0 - self.beta1 ** self.t
        bc2 = 1.0 - self.beta2 ** self.t
        denom = F.sqrt(v) * (1.0 / math.sqrt(bc2)) + self.eps
        w -= m / denom * (self.lr / bc1)
