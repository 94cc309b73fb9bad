"""``Linear``: a fully connected layer, ``x @ W + b`` over the axes from ``base_axis``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import functions as F
from ..errors import ShapeError
from . import initializers as I
from .module import Module
from .parameter import parameter


class Linear(Module):
    """``y = x.reshape(x.shape[:base_axis] + (-1,)) @ W + b`` with ``W`` of shape
    ``(in, out)``, ``b`` ``(out,)``: the output has shape ``x.shape[:base_axis] + (out,)``.

    ``base_axis=1`` (default; Chainer's and nnabla's convention) flattens every axis after
    the first; ``base_axis=-1`` applies the product to the last axis only, as torch's
    ``Linear``. The axes flattened must hold ``in_features`` values (``ShapeError``
    otherwise). ``w_init``/``b_init`` are initializers (default Glorot uniform and
    zeros); ``rng`` a numpy Generator (default: ``initializers.default_rng()``).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 base_axis: int = 1, w_init: I.Initializer | None = None,
                 b_init: I.Initializer | None = None,
                 rng: np.random.Generator | None = None) -> None:
        if isinstance(base_axis, bool) or not isinstance(base_axis, int):
            raise TypeError(f"Linear: base_axis must be an int, got {base_axis!r} (it is "
                            "the 4th argument, as the API fixes it: pass w_init= by keyword)")
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.base_axis = base_axis
        shape = (self.in_features, self.out_features)
        self.W = parameter((w_init or I.glorot_uniform)(shape, *shape, rng))
        self.b = parameter((b_init or I.zeros)(self.out_features, *shape, rng)) if bias else None

    def forward(self, x: Any) -> Any:
        lead, k = self._split(tuple(x.shape))
        if len(lead) == 1:
            return F.affine(x, self.W, self.b)  # one batch axis: affine flattens the rest
        y = F.affine(F.reshape(x, (math.prod(lead), k)), self.W, self.b)
        return F.reshape(y, lead + (self.out_features,))

    def _split(self, shape: tuple) -> tuple[tuple, int]:
        """The batch axes ``shape[:base_axis]`` and the flattened size of the rest,
        checked against ``in_features``."""
        nd, b = len(shape), self.base_axis
        axis = b + nd if b < 0 else b
        if not 0 <= axis <= nd:
            raise ShapeError(f"Linear({self.in_features}, {self.out_features}): base_axis "
                             f"{b} is out of range for an input of shape {shape}")
        k = math.prod(shape[axis:])
        if k != self.in_features:
            hint = ""
            if nd and shape[-1] == self.in_features and axis != nd - 1:
                hint = " (base_axis=-1 applies the layer to the last axis, as torch's Linear)"
            raise ShapeError(
                f"Linear({self.in_features}, {self.out_features}): input of shape {shape} "
                f"flattens from base_axis={b} to {shape[axis:]} = {k} features, but "
                f"in_features is {self.in_features}{hint}")
        return shape[:axis], k

    def extra_repr(self) -> str:
        axis = "" if self.base_axis == 1 else f", base_axis={self.base_axis}"
        return f"{self.in_features}, {self.out_features}, bias={self.b is not None}{axis}"
