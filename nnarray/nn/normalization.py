"""``BatchNorm``: batch normalization with running statistics for evaluation."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import functions as F
from .module import Module
from .parameter import parameter, upload


class BatchNorm(Module):
    """Normalize over every axis but the channel axis (1) of ``(N, C)`` or ``(N, C, H, W)``.

    Training uses batch statistics and updates ``running_mean``/``running_var``
    (NdArrays, saved with the module) by ``decay``; evaluation uses the running ones.
    """

    def __init__(self, num_features: int, decay: float = 0.9, eps: float = 1e-5) -> None:
        c = self.num_features = int(num_features)
        self.decay, self.eps = float(decay), float(eps)
        self.gamma = parameter(np.ones(c, np.float32))
        self.beta = parameter(np.zeros(c, np.float32))
        self.running_mean = upload(np.zeros(c, np.float32))
        self.running_var = upload(np.ones(c, np.float32))

    def forward(self, x: Any) -> Any:
        return F.batch_normalization(x, self.gamma, self.beta, self.running_mean,
                                     self.running_var, axes=(1,), decay=self.decay,
                                     eps=self.eps, training=self.training)

    def extra_repr(self) -> str:
        return f"{self.num_features}, decay={self.decay}, eps={self.eps}"


class LayerNorm(Module):
    """``F.layer_norm`` over the trailing ``normalized_shape`` axes, with a learned
    ``weight`` (ones) and ``bias`` (zeros) when ``elementwise_affine``."""

    def __init__(self, normalized_shape: Any, eps: float = 1e-5,
                 elementwise_affine: bool = True) -> None:
        self.normalized_shape = (int(normalized_shape),) if isinstance(normalized_shape, int) \
            else tuple(int(s) for s in normalized_shape)
        self.eps = float(eps)
        affine = bool(elementwise_affine)
        self.weight = parameter(np.ones(self.normalized_shape, np.float32)) if affine else None
        self.bias = parameter(np.zeros(self.normalized_shape, np.float32)) if affine else None

    def forward(self, x: Any) -> Any:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"
