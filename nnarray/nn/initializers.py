"""Seeded weight initializers (Glorot/He uniform and normal, constant, ...).

An initializer is called as ``init(shape, fan_in, fan_out, rng)`` and returns a float32
numpy array; layers pass their fans (``Linear``: in/out features; ``Conv2d``: channels
times the kernel area). Numbers are drawn on the host, so a seed gives the same weights on
every backend: from ``rng`` (a numpy ``Generator``) or, when none is given, from the
initializers' Philox stream (``ops.random.Generator``: the ``c``-th draw after ``seed(s)``
equals ``F.rand``/``F.randn`` in float64 with seed ``philox.derive(s, c, lane, 2)``, cast
to float32); ``seed(s)`` restarts that stream.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from ..ops import random as _random


def seed(s: int) -> None:
    """Restart the initializers' default stream under ``s``."""
    _random.seed_initializers(s)


def default_rng() -> _random.Generator:
    """The generator used when a layer is given none (the initializers' Philox stream)."""
    return _random.initializer_rng()


class Initializer(ABC):
    """Base class: ``__call__(shape, fan_in, fan_out, rng=None, dtype=float32)``."""

    @abstractmethod
    def sample(self, shape: tuple[int, ...], fan_in: int, fan_out: int,
               rng: np.random.Generator) -> np.ndarray:
        """Draw an array of ``shape`` (any float dtype; the caller casts)."""

    def __call__(self, shape: Any, fan_in: int = 1, fan_out: int = 1,
                 rng: np.random.Generator | None = None, dtype: Any = np.float32) -> np.ndarray:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        a = self.sample(shape, max(int(fan_in), 1), max(int(fan_out), 1), rng or default_rng())
        return np.ascontiguousarray(a, dtype=dtype)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


class Constant(Initializer):
    """Every element is ``value``."""

    def __init__(self, value: float = 0.0) -> None:
        self.value = value

    def sample(self, shape, fan_in, fan_out, rng):
        return np.full(shape, self.value)


class Uniform(Initializer):
    """Uniform on ``[-lim, lim)``."""

    def __init__(self, lim: float = 0.05) -> None:
        self.lim = lim

    def sample(self, shape, fan_in, fan_out, rng):
        return rng.uniform(-self.lim, self.lim, shape)


class Normal(Initializer):
    """Normal with mean 0 and standard deviation ``sigma``."""

    def __init__(self, sigma: float = 0.01) -> None:
        self.sigma = sigma

    def sample(self, shape, fan_in, fan_out, rng):
        return rng.normal(0.0, self.sigma, shape)


class GlorotUniform(Initializer):
    """Glorot/Xavier uniform: ``lim = gain * sqrt(6 / (fan_in + fan_out))``."""

    def __init__(self, gain: float = 1.0) -> None:
        self.gain = gain

    def sample(self, shape, fan_in, fan_out, rng):
        lim = self.gain * math.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-lim, lim, shape)


class GlorotNormal(Initializer):
    """Glorot/Xavier normal: ``sigma = gain * sqrt(2 / (fan_in + fan_out))``."""

    def __init__(self, gain: float = 1.0) -> None:
        self.gain = gain

    def sample(self, shape, fan_in, fan_out, rng):
        return rng.normal(0.0, self.gain * math.sqrt(2.0 / (fan_in + fan_out)), shape)


class HeUniform(Initializer):
    """He/Kaiming uniform for ReLU nets: ``lim = gain * sqrt(6 / fan_in)``."""

    def __init__(self, gain: float = 1.0) -> None:
        self.gain = gain

    def sample(self, shape, fan_in, fan_out, rng):
        lim = self.gain * math.sqrt(6.0 / fan_in)
        return rng.uniform(-lim, lim, shape)


class HeNormal(Initializer):
    """He/Kaiming normal for ReLU nets: ``sigma = gain * sqrt(2 / fan_in)``."""

    def __init__(self, gain: float = 1.0) -> None:
        self.gain = gain

    def sample(self, shape, fan_in, fan_out, rng):
        return rng.normal(0.0, self.gain * math.sqrt(2.0 / fan_in), shape)


glorot_uniform, glorot_normal = GlorotUniform(), GlorotNormal()
he_uniform, he_normal = HeUniform(), HeNormal()
zeros, ones = Constant(0.0), Constant(1.0)
