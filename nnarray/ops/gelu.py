"""GELU (torch's ``gelu``): ``x * Phi(x)``, exact (``approximate="none"``) or with the tanh
approximation. Each form is an elementwise function declared in ``ops/ufuncs.py``
(``gelu`` and ``gelu_tanh``: one kernel per backend, derivative, ONNX export); this
module is the public signature choosing between them.
"""

from __future__ import annotations

from typing import Any

from .elementwise import functions as _functions

_FORMS = {"none": _functions["gelu"], "tanh": _functions["gelu_tanh"]}


def gelu(x: Any, approximate: str = "none") -> Any:
    """``x * Phi(x)`` (``approximate="tanh"``: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715
    x^3)))``), as torch's ``gelu``."""
    fn = _FORMS.get(approximate) if isinstance(approximate, str) else None
    if fn is None:
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return fn(x)
