"""Layers (``Module`` and friends), initializers and checkpoints, written on ``F`` and
``grad`` only."""

from __future__ import annotations

from ..functions import (
    leaky_relu,
    log_softmax,
    relu,
    sigmoid,
    softmax,
    tanh,
)
from . import initializers
from .container import Sequential
from .conv import Conv2d
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import BatchNorm
from .serialization import CheckpointError

__all__ = [
    "BatchNorm", "CheckpointError", "Conv2d", "Dropout", "Linear", "Module", "Sequential",
    "initializers", "leaky_relu", "log_softmax", "relu", "sigmoid", "softmax", "tanh",
]
