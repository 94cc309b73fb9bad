"""Stochastic gradient descent, with torch's momentum, Nesterov and weight decay."""

from __future__ import annotations

from typing import Any

from .. import functions as F
from ..ndarray import NdArray
from .solver import Solver


class SGD(Solver):
    """torch's ``SGD``: ``g += weight_decay * w``; with ``momentum`` the buffer
    ``b = momentum * b + g`` (``g`` itself on the first step), and ``g = b`` (Nesterov:
    ``g += momentum * b``); then ``w -= lr * g``. The rate multiplies the step, not the
    buffer, so a rate schedule acts as torch's does. Plain SGD updates every parameter of
    a device in one fused ``F.sgd_update``."""

    def __init__(self, lr: float, momentum: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False, *, comm: Any = None) -> None:
        super().__init__(lr, comm=comm)
        name = type(self).__name__
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"{name}: momentum must be in [0, 1), got {momentum}")
        if weight_decay < 0:
            raise ValueError(f"{name}: weight_decay must be >= 0, got {weight_decay}")
        if nesterov and not momentum:
            raise ValueError(f"{name}: nesterov=True needs a momentum > 0 (as torch)")
        self.momentum, self.decay = float(momentum), float(weight_decay)
        self.nesterov = bool(nesterov)
        if self.momentum:
            self.state_names = ("momentum_buffer",)

    def update_group(self, items: list[tuple[NdArray, NdArray, dict]]) -> None:
        if self.momentum or self.decay:
            super().update_group(items)
            return
        ws, gs, _ = zip(*items)
        F.sgd_update(ws, gs, self.lr)

    def update_one(self, w: NdArray, g: NdArray, state: dict[str, NdArray]) -> None:
        if self.decay:
            g = g + w * self.decay
        if self.momentum:
            b = state["momentum_buffer"]
            b *= self.momentum
            b += g
            g = g + b * self.momentum if self.nesterov else b
        w -= g * self.lr
