"""Activation modules (for ``Sequential``) over the ``F`` functions."""

from __future__ import annotations

from typing import Any

from .. import functions as F
from .module import Module


class GELU(Module):
    """``F.gelu(x, approximate)`` (``"none"`` or ``"tanh"``)."""

    def __init__(self, approximate: str = "none") -> None:
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: Any) -> Any:
        return F.gelu(x, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class ReLU(Module):
    """``F.relu`` (torch's ``nn.ReLU``); ``inplace`` is accepted and the result computed
    out of place (the same values; a graph keeps its input)."""

    def __init__(self, inplace: bool = False) -> None:
        self.inplace = bool(inplace)

    def forward(self, x: Any) -> Any:
        return F.relu(x)


class Tanh(Module):
    """``F.tanh`` (torch's ``nn.Tanh``)."""

    def forward(self, x: Any) -> Any:
        return F.tanh(x)


class Sigmoid(Module):
    """``F.sigmoid`` (torch's ``nn.Sigmoid``)."""

    def forward(self, x: Any) -> Any:
        return F.sigmoid(x)
