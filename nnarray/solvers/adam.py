"""Adam (Kingma & Ba), with bias correction as in PyTorch."""

from __future__ import annotations

import math
from typing import Any

from .. import functions as F
from ..ndarray import NdArray
from .solver import Solver


class Adam(Solver):
    """``g += weight_decay * w`` (torch's ``Adam``: an L2 term; ``AdamW`` decouples it);
    ``m = b1 m + (1-b1) g``; ``v = b2 v + (1-b2) g^2``;
    ``w -= lr / (1-b1^t) * m / (sqrt(v / (1-b2^t)) + eps)``. ``betas=(b1, b2)`` is
    torch's spelling of ``beta1``, ``beta2``."""

    state_names = ("m", "v")

    def __init__(self, lr: float = 0.001, beta1: float | None = None,
                 beta2: float | None = None, eps: float = 1e-8, *,
                 betas: tuple[float, float] | None = None, weight_decay: float = 0.0,
                 comm: Any = None) -> None:
        super().__init__(lr, comm=comm)
        name = type(self).__name__
        beta1, beta2 = _betas(name, beta1, beta2, betas)
        for n, b in (("beta1", beta1), ("beta2", beta2)):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"{name}: {n} must be in [0, 1), got {b}")
        if eps <= 0:
            raise ValueError(f"{name}: eps must be > 0, got {eps}")
        if weight_decay < 0:
            raise ValueError(f"{name}: weight_decay must be >= 0, got {weight_decay}")
        self.beta1, self.beta2, self.eps = float(beta1), float(beta2), float(eps)
        self.l2 = float(weight_decay)

    def update_one(self, w: NdArray, g: NdArray, state: dict[str, NdArray]) -> None:
        m, v = state["m"], state["v"]
        if self.l2:
            g = g + w * self.l2
        m *= self.beta1
        m += g * (1.0 - self.beta1)
        v *= self.beta2
        v += g * g * (1.0 - self.beta2)
        bc1 = 1.0 - self.beta1 ** self.t
        bc2 = 1.0 - self.beta2 ** self.t
        denom = F.sqrt(v) * (1.0 / math.sqrt(bc2)) + self.eps
        w -= m / denom * (self.lr / bc1)


def _betas(name: str, beta1: float | None, beta2: float | None,
           betas: tuple[float, float] | None) -> tuple[float, float]:
    """``(beta1, beta2)`` from either spelling (default ``(0.9, 0.999)``); both given:
    ``ValueError``."""
    if betas is None:
        return 0.9 if beta1 is None else beta1, 0.999 if beta2 is None else beta2
    if beta1 is not None or beta2 is not None:
        raise ValueError(f"{name}: give betas=(b1, b2) or beta1/beta2, not both")
    try:
        b1, b2 = betas
    except (TypeError, ValueError):
        raise ValueError(f"{name}: betas must be a pair (b1, b2), got {betas!r}") from None
    return b1, b2
