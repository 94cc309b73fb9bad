"""``Linear``: a fully connected layer, ``x @ W + b``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import functions as F
from . import initializers as I
from .module import Module
from .parameter import parameter


class Linear(Module):
    """``y = x.reshape(N, -1) @ W + b`` with ``W`` of shape ``(in, out)``, ``b`` ``(out,)``.

    ``w_init``/``b_init`` are initializers (default Glorot uniform and zeros); ``rng``
    a numpy Generator (default: ``initializers.default_rng()``).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 w_init: I.Initializer | None = None, b_init: I.Initializer | None = None,
                 rng: np.random.Generator | None = None) -> None:
        self.in_features, self.out_features = int(in_features), int(out_features)
        shape = (self.in_features, self.out_features)
        self.W = parameter((w_init or I.glorot_uniform)(shape, *shape, rng))
        self.b = parameter((b_init or I.zeros)(self.out_features, *shape, rng)) if bias else None

    def forward(self, x: Any) -> Any:
        return F.affine(x, self.W, self.b)

    def extra_repr(self) -> str:
        return f"{self.in_features}, {self.out_features}, bias={self.b is not None}"
