"""Plain stochastic gradient descent."""

from __future__ import annotations

from ..ndarray import NdArray
from .solver import Solver


class SGD(Solver):
    """``w -= lr * g``."""

    def update_one(self, w: NdArray, g: NdArray, state: dict[str, NdArray]) -> None:
        w -= g * self.lr
