"""Creating parameters on the current context and moving arrays between host and device.

Every move here is an explicit ``get_data`` call, so it is allowed (and counted) inside
``strict_transfers()``; after it the device copy is the array's head, which is where
solvers run their updates.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import grad
from ..context import Context, get_current_context
from ..ndarray import NdArray


def storage(x: Any) -> NdArray:
    """The NdArray behind a Variable (its ``.data``) or an NdArray itself."""
    return x if isinstance(x, NdArray) else x.data


def place(a: NdArray, ctx: Context | str | None = None) -> NdArray:
    """Make ``ctx``'s copy of ``a`` current and its head (explicit transfer if needed)."""
    a.get_data("rw", ctx if ctx is not None else get_current_context())
    return a


def upload(value: np.ndarray, ctx: Context | str | None = None) -> NdArray:
    """A new NdArray holding ``value`` on ``ctx`` (default: the current context)."""
    return place(NdArray.from_numpy_array(value), ctx)


def parameter(value: np.ndarray, need_grad: bool = True) -> Any:
    """A ``grad.Variable`` holding ``value`` on the current context."""
    v = grad.Variable.from_numpy_array(np.ascontiguousarray(value), need_grad=need_grad)
    place(v.data)
    return v


def to_host(a: Any) -> np.ndarray:
    """A host copy of a Variable's data or an NdArray (explicit read)."""
    return storage(a).numpy()


def write(a: Any, value: np.ndarray, ctx: Context | str | None = None) -> None:
    """Overwrite a Variable's data or an NdArray with ``value``, keeping it on the device
    that held it (if it was never materialized: ``ctx``, else the current context)."""
    nd = storage(a)
    where = nd.head or ctx
    nd.data = value
    place(nd, where)
