"""Plain stochastic gradient descent."""

from __future__ import annotations

from .. import functions as F
from ..ndarray import NdArray
from .solver import Solver


class SGD(Solver):
    """``w -= lr * g``: every parameter of a device in one fused ``F.sgd_update``."""

    def update_group(self, items: list[tuple[NdArray, NdArray, dict]]) -> None:
        ws, gs, _ = zip(*items)
        F.sgd_update(ws, gs, self.lr)

    def update_one(self, w: NdArray, g: NdArray, state: dict[str, NdArray]) -> None:
        w -= g * self.lr
