"""Optimizers over ``module.parameters()`` (``SGD``, ``Momentum``, ``Adam``, ``AdamW``,
``RMSprop``, ``Adagrad``), each update on the parameters' device with no host transfer,
learning-rate schedules (``CosineSchedule``, ``StepSchedule``), dynamic loss scaling
(``LossScaler``) and float32 master weights (``master_dtype=``, ``master.py``)."""

from __future__ import annotations

from .adagrad import Adagrad
from .adam import Adam
from .adamw import AdamW
from .loss_scaler import LossScaler
from .momentum import Momentum
from .rmsprop import RMSprop
from .schedule import CosineSchedule, Schedule, StepSchedule
from .sgd import SGD
from .solver import Solver

__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "CosineSchedule", "LossScaler", "Momentum", "RMSprop",
           "Schedule", "Solver", "StepSchedule"]
