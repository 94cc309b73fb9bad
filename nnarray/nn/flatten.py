"""``Flatten``: merge a range of axes (torch's ``nn.Flatten``)."""

from __future__ import annotations

from typing import Any

from .. import functions as F
from .module import Module


class Flatten(Module):
    """Merge axes ``start_dim`` to ``end_dim`` (inclusive; negative from the end)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        self.start_dim, self.end_dim = int(start_dim), int(end_dim)

    def forward(self, x: Any) -> Any:
        nd = x.ndim
        s = self.start_dim + nd if self.start_dim < 0 else self.start_dim
        e = self.end_dim + nd if self.end_dim < 0 else self.end_dim
        if not 0 <= s <= e < nd:
            raise ValueError(f"Flatten: axes {self.start_dim}..{self.end_dim} are out of "
                             f"range for shape {x.shape}")
        return F.reshape(x, tuple(x.shape[:s]) + (-1,) + tuple(x.shape[e + 1:]))

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
