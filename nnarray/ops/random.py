"""Random numbers on the current device, and dropout.

Kernel contract: ``rand(shape, low, high, seed, dtype)`` and ``randn(shape, mu, sigma,
seed, dtype)``: the same seed gives the same numbers on a backend, run to run.
``dropout(x, p, seed) -> (y, mask)`` where ``mask`` holds ``0`` or ``1/(1-p)`` in
``x.dtype`` (``seed=None``: draw one with ``next_seed()`` when it runs); a composition
over ``rand`` serves every backend without the kernel.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..errors import DTypeError, InvalidValueError
from ..ndarray import normalize_shape
from ..registry import register_composite
from .common import require_float
from .op import Op

_seeds = np.random.default_rng()
#: The default generator of the layers' initializers (``nn.initializers``), kept here so
#: that ``seed`` reaches it without importing the layers above.
_initializers = [np.random.default_rng(0)]


def seed(s: int) -> None:
    """Seed everything random in nnarray: the generator that picks a seed for every
    unseeded random op (and ``data.DataLoader`` shuffle), and the layers' initializers
    (``nn.initializers.seed``)."""
    global _seeds
    _seeds = np.random.default_rng(s)
    seed_initializers(s)


def seed_initializers(s: int) -> None:
    """Reseed the default generator of every initializer."""
    _initializers[0] = np.random.default_rng(s)


def initializer_rng() -> np.random.Generator:
    """The initializers' default generator."""
    return _initializers[0]


def next_seed() -> int:
    return int(_seeds.integers(0, 2**63 - 1))


def _infer_random(name: str, params: tuple[str, str]):
    def infer(inputs, attrs):
        shape = attrs["shape"] = normalize_shape(attrs.get("shape"), name)
        d = attrs["dtype"] = dtypes.normalize(attrs.get("dtype", np.float32), name)
        if d not in dtypes.FLOATS:
            raise DTypeError(f"{name}: dtype must be floating point, got {d}")
        for p in params:
            attrs[p] = float(attrs[p])
            if not math.isfinite(attrs[p]):
                raise InvalidValueError(f"{name}: argument '{p}' must be finite, got "
                                        f"{attrs[p]}")
        a, b = (attrs[p] for p in params)
        if name == "randn" and b < 0:
            raise InvalidValueError(f"randn: argument 'sigma' must be >= 0, got {b}")
        if name == "rand" and a > b:
            raise InvalidValueError(f"rand: argument 'low' ({a}) must not exceed 'high' ({b})")
        if attrs.get("seed") is None:
            attrs["seed"] = next_seed()
        return ((shape, d),)
    return infer


rand = Op("rand", _infer_random("rand", ("low", "high")), differentiable=False)
randn = Op("randn", _infer_random("randn", ("mu", "sigma")), differentiable=False)


def _infer_dropout(inputs, attrs):
    (x,) = inputs
    require_float("dropout", "x", x)
    p = attrs["p"] = float(attrs.get("p", 0.5))
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout: p must be in [0, 1), got {p}")
    attrs.setdefault("seed", None)  # drawn when it runs: a static graph re-draws each forward
    return ((x.shape, x.dtype), (x.shape, x.dtype))


dropout_op = Op("dropout", _infer_dropout)


def _dropout_compose(x, p, seed):
    if seed is None:
        seed = next_seed()
    keep = _F.greater_equal(_F.rand(x.shape, seed=seed, dtype=x.dtype), p)
    mask = _F.cast(keep, x.dtype) * (1.0 / (1.0 - p))
    return x * mask, mask


register_composite("dropout", _dropout_compose)


def dropout(x: Any, p: float = 0.5, training: bool = True, seed: int | None = None) -> Any:
    """Inverted dropout: zero each element with probability ``p``, scale the rest by
    ``1/(1-p)``; the identity when not training or ``p == 0``."""
    if not training or p == 0:
        require_float("dropout", "x", x)
        return x
    return dropout_op(x, p=p, seed=seed)[0]


# -- backward rules -------------------------------------------------------------------
from .. import late  # noqa: E402
from .backward import backward as _backward  # noqa: E402

_F: Any = late.bind(__name__, "_F", "nnarray.functions")

# The mask (second output) is not differentiable; x's gradient is g * mask.
_backward(dropout_op, outputs=(1,))(lambda c, g: (g * c.outputs[1],))
