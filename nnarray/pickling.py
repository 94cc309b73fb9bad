"""``pickle`` and ``copy.deepcopy`` of NdArrays, Variables and Contexts (so of Modules
and solvers, whose attributes they are): API.md §7.

An NdArray's data goes through the host (one explicit read), with the name of its device.
Loading puts it back on that device where it exists here (one explicit transfer). Where
it does not (no such backend or device), loading still succeeds: the data stays on the
host and the array's device is a ``MissingDevice``, so the first op that would run there
raises ``BackendUnavailableError`` naming it, while explicit host reads (``numpy()``,
``get_data(mode, "numpy")``) and ``to_device`` recover the data. A lazy fill stays lazy;
a Variable is pickled as a leaf (its data, gradient, ``need_grad`` and name; the graph
that made it is not kept).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import discovery as backends
from . import late
from .context import device_created
from .device import Device
from .errors import BackendError, BackendUnavailableError


class MissingDevice(Device):
    """Stands in for the device of an unpickled array that does not exist here: every
    allocation or copy on it raises ``BackendUnavailableError`` naming it."""

    def __init__(self, key: str, why: str) -> None:
        backend, _, dev_id = key.partition(":")
        self.backend = backend
        self.why = why
        super().__init__(int(dev_id or 0))

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise BackendUnavailableError(
            f"{self.key}: this array was pickled on {self.key}, which is not available here "
            f"({self.why}); read it with numpy() or move it with to_device(...)")

    empty = full = from_host = to_host = copy_from = _fail


_missing: dict[str, MissingDevice] = {}


def _device(key: str) -> Device:
    """The device named ``key`` here, else its ``MissingDevice`` (no error on load)."""
    backend, _, dev_id = key.partition(":")
    try:
        return backends.get_device(backend, int(dev_id or 0))
    except BackendError as e:
        dev = _missing.get(key)
        if dev is None:
            dev = _missing[key] = MissingDevice(key, str(e))
        device_created(backend)  # ops with no scope follow the data to it, and raise
        return dev


def reduce_ndarray(a: Any) -> tuple:
    """``NdArray.__reduce__``: ``(restore_ndarray, (shape, dtype, data, fill, device))``."""
    h = a.head_device
    key = None if h is None else h.key
    fill = a.lazy_fill
    data = None
    if fill is None and (h is not None or a.current_devices):
        data = a.native(backends.host_device(), "r", explicit=True)
    return restore_ndarray, (a.shape, a.dtype, data, fill, key)


def restore_ndarray(shape: tuple, dtype: np.dtype, data: Any, fill: Any,
                    key: str | None) -> Any:
    """The NdArray ``reduce_ndarray`` describes, on its device where that exists."""
    from .ndarray import NdArray
    if data is not None:
        a = NdArray.from_numpy_array(np.asarray(data, dtype=dtype).reshape(shape))
    else:
        a = NdArray(shape, dtype)
        if fill is not None:
            a.fill(fill)
    if key is None:
        return a
    dev = _device(key)
    if data is not None and not dev.is_host and not isinstance(dev, MissingDevice):
        a.native(dev, "r", explicit=True)  # the upload; the host copy stays a cache
    a.place_on(dev)
    return a


def restore_variable(shape: tuple, dtype: np.dtype, data: Any, grad: Any, need_grad: bool,
                     name: str | None) -> Any:
    from .grad import Variable
    if data is not None:
        v = Variable.from_ndarray(data, need_grad, name)
    else:
        v = Variable(shape, need_grad, dtype, name)
    if grad is not None:
        v.grad = grad
    return v

late.provide(__name__)  # bind the lower layers' slots (nnarray.late)
