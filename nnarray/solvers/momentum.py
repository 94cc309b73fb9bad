"""SGD with momentum (Chainer's MomentumSGD by name, torch's ``SGD(momentum=)`` formula)."""

from __future__ import annotations

import os
from typing import Any

from ..nn.serialization import CheckpointError
from .sgd import SGD


class Momentum(SGD):
    """``SGD`` with ``momentum=0.9`` by default: ``b = momentum * b + g``;
    ``w -= lr * b`` (torch's formula; nnabla's and Chainer's ``v = momentum * v - lr * g;
    w += v`` agree only while the rate is constant)."""

    def __init__(self, lr: float = 0.01, momentum: float = 0.9, weight_decay: float = 0.0,
                 nesterov: bool = False, *, comm: Any = None) -> None:
        super().__init__(lr, momentum, weight_decay, nesterov, comm=comm)
        self.state_names = ("momentum_buffer",)

    def load_states(self, path: str | os.PathLike) -> None:
        try:
            super().load_states(path)
        except CheckpointError as e:
            if "/v'" not in str(e):
                raise
            raise CheckpointError(
                f"{e}; this file holds the velocity 'v' of nnarray's earlier Momentum "
                "(v = momentum * v - lr * g), not torch's buffer 'momentum_buffer' "
                "(b = momentum * b + g, w -= lr * b) that Momentum now keeps: write each "
                "'<name>/v' as '<name>/momentum_buffer' = -v / lr (lr: the rate of the "
                "last step saved)") from None
