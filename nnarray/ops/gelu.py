"""GELU (torch's ``gelu``): ``x * Phi(x)``, exact (``approximate="none"``) or with the tanh
approximation; one graph node composed from F on NdArrays (every backend has it).

Kernel contract: ``gelu(x, approximate)``. The exact form's ``erf`` is Abramowitz and
Stegun's 7.1.26 (absolute error below 1.5e-7, float32's resolution near 1), so it needs
no ``erf`` kernel.
"""

from __future__ import annotations

import math
from typing import Any

from ..registry import register_composite
from .common import require_float
from .op import Op

_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
_P = 0.3275911
_C = math.sqrt(2.0 / math.pi)
_K = 0.044715


def _infer(inputs, attrs):
    (x,) = inputs
    require_float("gelu", "x", x)
    a = attrs["approximate"] = attrs.get("approximate", "none")
    if a not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {a!r}")
    return ((x.shape, x.dtype),)


gelu_op = Op("gelu", _infer)


def erf(x: Any) -> Any:
    """``erf(x)`` from F functions (absolute error below 1.5e-7)."""
    ax = _F.abs(x)
    t = 1.0 / (1.0 + _P * ax)
    poly = t * (_A[0] + t * (_A[1] + t * (_A[2] + t * (_A[3] + t * _A[4]))))
    return _F.sign(x) * (1.0 - poly * _F.exp(-(ax * ax)))


def _tanh_inner(x: Any) -> Any:
    return _F.tanh((x + x * x * x * _K) * _C)


def _compose(x: Any, approximate: str) -> Any:
    if approximate == "tanh":
        return x * 0.5 * (1.0 + _tanh_inner(x))
    return x * 0.5 * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))


register_composite("gelu", _compose)


def gelu(x: Any, approximate: str = "none") -> Any:
    """``x * Phi(x)`` (``approximate="tanh"``: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715
    x^3)))``), as torch's ``gelu``."""
    return gelu_op(x, approximate=approximate)


# -- backward rule --------------------------------------------------------------------
from .. import late  # noqa: E402
from .backward import backward as _backward  # noqa: E402

_F: Any = late.bind(__name__, "_F", "nnarray.functions")


@_backward(gelu_op, inputs=(0,))
def _gelu_grad(c, g):
    (x,) = c.inputs
    if c.attrs["approximate"] == "tanh":
        t = _tanh_inner(x)
        d = 0.5 * (1.0 + t) + x * 0.5 * (1.0 - t * t) * _C * (1.0 + x * x * (3.0 * _K))
    else:
        cdf = 0.5 * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))
        d = cdf + x * _F.exp(x * x * -0.5) * (1.0 / math.sqrt(2.0 * math.pi))
    return (g * d,)
