"""Optimizers: ``SGD``, ``Momentum``, ``Adam`` over ``module.parameters()``; each update
runs on the parameters' device with no host transfer."""

from __future__ import annotations

from .adam import Adam
from .momentum import Momentum
from .sgd import SGD
from .solver import Solver

__all__ = ["SGD", "Adam", "Momentum", "Solver"]
