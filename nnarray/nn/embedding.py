"""``Embedding``: a lookup table of learned vectors (torch's ``nn.Embedding``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import functions as F
from . import initializers as I
from .module import Module
from .parameter import parameter


class Embedding(Module):
    """``W[indices]`` with ``W`` of shape ``(num_embeddings, dim)``, initialized
    ``Normal(1.0)`` as torch does (``w_init``, ``rng`` as in ``Linear``)."""

    def __init__(self, num_embeddings: int, dim: int, w_init: I.Initializer | None = None,
                 rng: np.random.Generator | None = None) -> None:
        self.num_embeddings, self.dim = int(num_embeddings), int(dim)
        shape = (self.num_embeddings, self.dim)
        self.W = parameter((w_init or I.Normal(1.0))(shape, *shape, rng))

    def forward(self, indices: Any) -> Any:
        return F.embedding(indices, self.W)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.dim}"
