"""One exception hierarchy for nnarray.

Every error names the op (or API call), the argument and the shapes involved, and is
raised before any kernel runs or any state changes.
"""

from __future__ import annotations


class NnarrayError(Exception):
    """Base class of every nnarray error."""


class BackendError(NnarrayError):
    """An unknown backend name, or a backend that cannot serve the request."""


class BackendUnavailableError(BackendError):
    """A known backend that cannot run here (library missing, no device, ...)."""


class KernelNotFoundError(NnarrayError):
    """No backend on the context's fallback chain implements the op."""


class TransferError(NnarrayError):
    """An implicit device-to-device transfer inside ``strict_transfers()``."""


class DeviceMismatchError(NnarrayError, ValueError):
    """An op's inputs on two different non-host devices with no context chosen (API.md
    §7); names both devices and the op."""


class ShapeError(NnarrayError, ValueError):
    """Incompatible or invalid shapes."""


class AttributeShapeError(ShapeError, AttributeError):
    """A shape assignment refused: ``NdArray.shape = s`` on a view whose layout needs a copy
    for ``s`` (numpy's ``AttributeError``), ``Variable.shape = s`` (``reset_shape``)."""


class DTypeError(NnarrayError, TypeError):
    """An unsupported or incompatible dtype."""


class GraphError(NnarrayError):
    """An autograd graph that cannot be evaluated correctly."""


class InvalidValueError(NnarrayError, ValueError):
    """An argument value an op cannot take: an integer to a negative integer power, a
    label out of range, a fill value its dtype cannot hold, a negative ``sigma``."""


class OutOfMemoryError(NnarrayError, MemoryError):
    """An allocation that failed even after the memory pools gave their cached blocks
    back; names the op (where known), the shape, the dtype and the bytes."""
