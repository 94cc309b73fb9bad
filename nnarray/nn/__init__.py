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
from .activation import GELU, ReLU, Sigmoid, Tanh
from .attention import MultiheadAttention
from .clip import clip_grad_norm
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv2d
from .dropout import Dropout
from .embedding import Embedding
from .flatten import Flatten
from .linear import Linear
from .loss import CrossEntropyLoss, MSELoss
from .module import Module
from .normalization import BatchNorm, LayerNorm
from .parameters import ParameterName, Parameters
from .pooling import AvgPool2d, MaxPool2d
from .serialization import CheckpointError

__all__ = [
    "AvgPool2d", "BatchNorm", "CheckpointError", "Conv2d", "CrossEntropyLoss", "Dropout",
    "Embedding", "Flatten", "GELU", "LayerNorm", "Linear", "MSELoss", "MaxPool2d", "Module",
    "ModuleDict", "ModuleList", "MultiheadAttention", "ParameterName", "Parameters", "ReLU",
    "Sequential", "Sigmoid", "Tanh",
    "clip_grad_norm", "initializers", "leaky_relu", "log_softmax", "relu", "sigmoid",
    "softmax", "tanh",
]
