"""``Dropout``: inverted dropout, active only in training mode."""

from __future__ import annotations

from typing import Any

from .. import functions as F
from .module import Module


class Dropout(Module):
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)`` while
    training; the identity in evaluation mode."""

    def __init__(self, p: float = 0.5) -> None:
        if not 0.0 <= p < 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1), got {p}")
        self.p = float(p)

    def forward(self, x: Any) -> Any:
        return F.dropout(x, self.p, training=self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
