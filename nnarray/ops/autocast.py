"""Automatic mixed precision, torch's ``autocast`` for nnarray.

Inside ``with nna.autocast(dtype=nna.bfloat16):`` (thread-local, nests, restored on
exceptions) each op named in ``POLICY`` casts its floating inputs before it runs:

- ``"low"`` ops (products and convolutions) run in the autocast dtype: every floating
  input that is not already of it is cast to it;
- ``"float32"`` ops (precision-sensitive: exponentials and logarithms, ``pow``, softmax
  and the losses, normalization statistics, sums and means) run in float32: 16-bit
  inputs are cast up (float64 stays float64).

Every other op runs on its inputs as given (numpy's promotion decides, so ``bf16 + f32``
is float32, as torch's "promote" list). The casts are ``cast`` ops: on Variables they are
graph nodes, so backward computes each gradient in its forward's dtype and casts it back
to the input's, and a static graph built under autocast records them (its schedule runs
them whether or not autocast is on later). ``POLICY`` is the one table;
``nna.autocast.policy()`` prints it. The context manager itself is ``nnarray/autocast_block.py``.

The hook costs next to nothing outside autocast: ``Op.__call__`` and the ``F`` functions
of the elementwise ops in ``POLICY`` test one counter (``ACTIVE``) first.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..dtypes import LOW as _LOW16
from ..dtypes import is_floating

LOW, FLOAT32 = "low", "float32"

#: The op table: op name -> ``"low"`` (runs in the autocast dtype) or ``"float32"``.
#: Composite functions follow through the ops they call: ``einsum`` and
#: ``scaled_dot_product_attention`` run their products through ``matmul`` (low) and
#: their softmax in float32; ``nn.Linear`` calls ``affine``, ``nn.Conv2d`` ``conv2d``.
POLICY: dict[str, str] = {
    # torch's lower_precision_fp list (the products)
    "matmul": LOW, "affine": LOW, "conv2d": LOW,
    # torch's fp32 list (what loses accuracy or overflows in 16 bits)
    "exp": FLOAT32, "expm1": FLOAT32, "log": FLOAT32, "log1p": FLOAT32, "log2": FLOAT32,
    "log10": FLOAT32, "pow": FLOAT32, "sinh": FLOAT32, "cosh": FLOAT32, "tan": FLOAT32,
    "acos": FLOAT32, "asin": FLOAT32,
    "softmax": FLOAT32, "log_softmax": FLOAT32, "softmax_cross_entropy": FLOAT32,
    "mean_squared_error": FLOAT32, "layer_norm": FLOAT32, "batch_normalization": FLOAT32,
    "sum": FLOAT32, "mean": FLOAT32, "prod": FLOAT32, "cumulative_sum": FLOAT32,
    "cumulative_prod": FLOAT32,
}

#: Threads inside an enabled autocast block (a fast test before the thread-local one).
ACTIVE = [0]
_lock = threading.Lock()
#: The autocast dtype in force in this thread (``None``: none).
DTYPE: contextvars.ContextVar[np.dtype | None] = contextvars.ContextVar(
    "nnarray_autocast", default=None)
_F32 = np.dtype(np.float32)
#: The ``cast`` op (``ops/elementwise.py`` sets it: that module imports this one).
cast_op: list[Any] = [None]


def count(n: int) -> None:
    """Add ``n`` to the threads inside an enabled block (``ACTIVE``)."""
    if n:
        with _lock:
            ACTIVE[0] += n


def cast_inputs(op: str, inputs: Sequence[Any]) -> tuple:
    """``inputs`` cast as ``POLICY`` says for ``op`` under the autocast in force (as
    they are when there is none, or ``op`` is not in the table)."""
    d = DTYPE.get()
    rule = POLICY.get(op)
    if d is None or rule is None:
        return tuple(inputs)
    target = d if rule == LOW else _F32
    return tuple(_cast(x, target, rule) for x in inputs)


def _cast(x: Any, target: np.dtype, rule: str) -> Any:
    d = getattr(x, "dtype", None)
    if d is None or d == target or not hasattr(x, "shape") or not is_floating(d):
        return x
    if rule == FLOAT32 and d not in _LOW16:
        return x  # float64 stays float64, float32 is already float32
    return cast_op[0](x, dtype=target)


def result_dtype(op: str, dtype: np.dtype) -> np.dtype:
    """The dtype ``op`` gives on inputs of ``dtype`` under the autocast in force: float32
    for a 16-bit ``dtype`` where ``POLICY`` runs ``op`` in float32, else ``dtype``
    (``xp.sum``/``xp.prod`` keep their input's dtype outside autocast)."""
    if ACTIVE[0] and dtype in _LOW16 and POLICY.get(op) == FLOAT32 and DTYPE.get():
        return _F32
    return dtype


def operator(op: str, fn: Callable) -> Callable:
    """``fn(a, b)``, a Python operator form of ``op`` that bypasses ``Op.__call__`` (a
    Variable's ``v ** p``, ``p ** v``), with its operands cast as ``POLICY`` says under
    autocast; ``fn`` itself where ``op`` is not in the table."""
    if op not in POLICY:
        return fn

    def run(a: Any, b: Any) -> Any:
        if ACTIVE[0]:
            a, b = cast_inputs(op, (a, b))
        return fn(a, b)
    return run
