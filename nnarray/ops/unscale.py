"""The loss scaler's device step: unscale gradients in place and flag non-finite ones.

``unscale_(gs, inv_scale, found)`` is torch's ``_amp_foreach_non_finite_check_and_unscale_``:
every ``g *= inv_scale`` (computed in float32, rounded once into ``g``'s dtype) and
``found[0] = 1`` if any element of any ``g`` is inf or NaN. The check is fused into the
unscale pass: no reduction and no host read per gradient; the caller reads ``found`` once
per step (``solvers.LossScaler``).

Kernel contract: ``amp_unscale(targets, inputs, inv_scale)`` with ``targets`` the native
gradients followed by ``found`` (a float32 array of one element, written only to set it
to 1), ``inputs`` empty, ``inv_scale`` a Python float.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..context import get_current_context
from ..dtypes import is_floating
from ..errors import DTypeError, ShapeError
from ..ndarray import NdArray
from ..registry import Entry, dispatch

#: The kernel's dispatch entry (no Op: nothing is inferred or recorded).
AMP_UNSCALE = Entry("amp_unscale")


def unscale_(gs: Sequence[NdArray], inv_scale: float, found: NdArray) -> None:
    """``g *= inv_scale`` in place for every gradient and ``found[0] = 1`` where any is
    non-finite, on the current context (``found`` keeps its value otherwise)."""
    if type(found) is not NdArray or found.shape != (1,) or found.dtype != np.float32:
        raise ShapeError("unscale_: argument 'found' must be a float32 NdArray of shape (1,)"
                         f", got {getattr(found, 'shape', None)} "
                         f"{getattr(found, 'dtype', type(found).__name__)}")
    for i, g in enumerate(gs):
        if type(g) is not NdArray:
            raise TypeError(f"unscale_: gradient {i} must be an NdArray, got "
                            f"{type(g).__name__}")
        if not is_floating(g.dtype):
            raise DTypeError(f"unscale_: gradient {i} is {g.dtype}; gradients to unscale "
                             "must be floating")
    if gs:
        dispatch(AMP_UNSCALE, get_current_context()).run(
            [], {"inv_scale": float(inv_scale)}, out=[*gs, found])

