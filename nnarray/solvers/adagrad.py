"""Adagrad (Duchi et al.), as torch's (accumulator starting at 0)."""

from __future__ import annotations

from typing import Any

from .. import functions as F
from ..ndarray import NdArray
from .solver import Solver


class Adagrad(Solver):
    """``s += g^2``; ``w -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps)``."""

    state_names = ("s",)

    def __init__(self, lr: float = 0.01, lr_decay: float = 0.0, eps: float = 1e-10, *,
                 comm: Any = None) -> None:
        super().__init__(lr, comm=comm)
        if lr_decay < 0 or eps <= 0:
            raise ValueError(f"Adagrad: need lr_decay >= 0 and eps > 0, got "
                             f"lr_decay={lr_decay}, eps={eps}")
        self.lr_decay, self.eps = float(lr_decay), float(eps)

    def update_one(self, w: NdArray, g: NdArray, state: dict[str, NdArray]) -> None:
        s = state["s"]
        s += g * g
        rate = self.lr / (1.0 + (self.t - 1) * self.lr_decay)
        w -= g / (F.sqrt(s) + self.eps) * rate
