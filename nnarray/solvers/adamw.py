"""AdamW (Loshchilov & Hutter): Adam with weight decay decoupled from the gradient."""

from __future__ import annotations

from typing import Any

from ..ndarray import NdArray
from .adam import Adam


class AdamW(Adam):
    """``w *= 1 - lr * weight_decay``, then Adam's step: torch's ``AdamW`` formula."""

    def __init__(self, lr: float = 0.001, beta1: float | None = None,
                 beta2: float | None = None, eps: float = 1e-8, weight_decay: float = 0.01,
                 *, betas: tuple[float, float] | None = None, comm: Any = None) -> None:
        super().__init__(lr, beta1, beta2, eps, betas=betas, comm=comm)
        if weight_decay < 0:
            raise ValueError(f"AdamW: weight_decay must be >= 0, got {weight_decay}")
        self.decay = float(weight_decay)

    def update_one(self, w: NdArray, g: NdArray, state: dict[str, NdArray]) -> None:
        if self.decay:
            w *= 1.0 - self.lr * self.decay
        super().update_one(w, g, state)
