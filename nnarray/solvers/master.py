"""Master weights: a solver's ``master_dtype=nna.float32`` keeps, for every 16-bit
parameter (float16, bfloat16), a float32 copy and float32 optimizer state; each update
widens the gradient (times the loss scaler's ``grad_factor``), updates the copy and writes
it back rounded into the parameter. Updates smaller than half a 16-bit ulp, lost when
added to a float16 weight, accumulate in the copy (Micikevicius et al., "Mixed Precision
Training").

The copy is the parameter's state entry ``KEY``, so ``state_dict``, ``save_states`` and
``load_states`` carry it. ``set_parameters`` makes it from the parameter's current values:
call it again after writing the parameters from outside (a loaded checkpoint).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from .. import functions as F
from ..dtypes import LOW, normalize
from ..errors import DTypeError
from ..ndarray import NdArray

#: The state entry holding a parameter's master copy.
KEY = "master_weight"


def is_low(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is a 16-bit floating dtype (float16, bfloat16)."""
    return dtype in LOW


def check_dtype(solver: str, dtype: Any) -> np.dtype | None:
    """``master_dtype`` normalized: ``None`` (off), float32 or float64, else
    ``DTypeError``."""
    if dtype is None:
        return None
    d = normalize(dtype, solver, "master_dtype")
    if d not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise DTypeError(f"{solver}: argument 'master_dtype' must be float32 or float64, "
                         f"got {d}")
    return d


def make(p: Any, master_dtype: np.dtype | None,
         scope: AbstractContextManager) -> NdArray | None:
    """The master copy of parameter ``p`` (on its device), or ``None`` where it needs none
    (no ``master_dtype``, or ``p`` not 16-bit)."""
    if master_dtype is None or not is_low(p.data.dtype):
        return None
    with scope:
        return F.cast(p.data, master_dtype)


def widen(items: list[tuple[NdArray, NdArray, dict]], factor: float
          ) -> tuple[list[tuple[NdArray, NdArray, dict]], list[tuple[NdArray, NdArray]]]:
    """The ``(data, grad, state)`` items with each master-weight parameter's data replaced
    by its copy and its gradient widened (times ``factor``); and the ``(parameter,
    copy)`` pairs to write back after the update."""
    out, written = [], []
    for w, g, st in items:
        m = st.get(KEY)
        if m is None:
            out.append((w, g, st))
            continue
        g = F.cast(g, m.dtype)
        if factor != 1.0:
            g *= factor
        out.append((m, g, st))
        written.append((w, m))
    return out, written


def write_back(written: list[tuple[NdArray, NdArray]]) -> None:
    """Each parameter takes its updated copy, rounded to nearest into its dtype."""
    for w, m in written:
        w.copy_from(m)
