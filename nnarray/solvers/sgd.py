"""Plain stochastic gradient descent."""

from __future__ import annotations

from .. import functions as F
from ..ndarray import NdArray
from .solver import Solver


class SGD(Solver):
    """``w -= lr * g``: every parameter of a device in one fused ``F.sgd_update``."""

    def update_group(self, items: list[tuple[NdArray, NdArray, dict]]) -> None:
        F.sgd_update([w for w, _, _ in items], [g for _, g, _ in items], self.lr)

    def update_one(self, w: NdArray, g: NdArray, state: dict[str, NdArray]) -> None:
        w -= g * self.lr
