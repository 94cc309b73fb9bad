"""Loss modules with torch's names and ``reduction``: ``CrossEntropyLoss``, ``MSELoss``."""

from __future__ import annotations

from typing import Any

from .. import functions as F
from .module import Module

_REDUCTIONS = ("mean", "sum", "none")


class _Loss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        if reduction not in _REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: reduction must be one of "
                             f"{_REDUCTIONS}, got {reduction!r}")
        self.reduction = reduction

    def _reduce(self, per_element: Any) -> Any:
        if self.reduction == "mean":
            return F.mean(per_element)
        return F.sum(per_element) if self.reduction == "sum" else per_element

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"


class CrossEntropyLoss(_Loss):
    """torch's ``nn.CrossEntropyLoss`` on logits ``(N, C)`` or ``(N, C, d1, ...)``
    (classes on axis 1; ``(C,)`` alone too) and integer class labels of the shape without
    that axis: ``F.softmax_cross_entropy`` per sample, then ``reduction``."""

    def forward(self, input: Any, target: Any) -> Any:
        axis = 1 if input.ndim >= 2 else 0
        return self._reduce(F.softmax_cross_entropy(input, target, axis=axis))


class MSELoss(_Loss):
    """torch's ``nn.MSELoss``: ``(input - target) ** 2``, then ``reduction``
    (``"mean"``: ``F.mean_squared_error``, one graph node)."""

    def forward(self, input: Any, target: Any) -> Any:
        if self.reduction == "mean":
            return F.mean_squared_error(input, target)
        d = input - target
        return self._reduce(d * d)
