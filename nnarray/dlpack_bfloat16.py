"""bfloat16 over DLPack, which numpy cannot carry: numpy's ``__dlpack__`` and
``from_dlpack`` know no bfloat16 (``ml_dtypes``' dtype has no DLPack type code), while
DLPack itself has one (``kDLBfloat``, code 4) and PyTorch, JAX and CuPy use it.

Export hands numpy the array's bits as ``uint16`` and relabels the capsule's
``DLDataType`` as ``(kDLBfloat, 16, 1)`` before the consumer sees it; import relabels a
``(kDLBfloat, 16, 1)`` capsule as ``uint16`` for numpy and views the result as bfloat16.
Either way the memory is shared exactly as for any other dtype: only the 4-byte type
field of a capsule nnarray holds is rewritten, before anyone else reads it.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from . import dtypes

UINT, BFLOAT = 1, 4  # dlpack.h DLDataTypeCode: kDLUInt, kDLBfloat
_LEGACY, _VERSIONED = b"dltensor", b"dltensor_versioned"
#: Byte offset of ``DLTensor.dtype`` inside the capsule's struct: ``DLManagedTensor``
#: starts with its ``DLTensor`` (data, device, ndim precede the dtype: 8 + 8 + 4 bytes);
#: ``DLManagedTensorVersioned`` puts version, manager_ctx, deleter and flags (32 bytes)
#: before it.
_DTYPE_AT = {_LEGACY: 20, _VERSIONED: 52}

_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype, _is_valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_pointer.restype, _pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


def _dtype_field(capsule: Any) -> _DataType | None:
    """The ``DLDataType`` inside an unconsumed DLPack capsule (None: not one)."""
    for name, at in _DTYPE_AT.items():
        if _is_valid(capsule, name):
            return _DataType.from_address(_pointer(capsule, name) + at)
    return None


def _relabel(capsule: Any, src: int, dst: int) -> bool:
    """Rewrite a 16-bit ``src``-coded capsule's type code to ``dst``; whether it was one."""
    t = _dtype_field(capsule)
    if t is None or (t.code, t.bits, t.lanes) != (src, 16, 1):
        return False
    t.code = dst
    return True


def export(dev: Any, x: np.ndarray, stream: Any, max_version: Any) -> Any:
    """``dev.export_dlpack`` of the bfloat16 native array ``x``: a ``kDLBfloat`` capsule
    sharing its memory."""
    capsule = dev.export_dlpack(x.view(np.uint16), stream, max_version)
    _relabel(capsule, UINT, BFLOAT)
    return capsule


class _Bits:
    """A DLPack producer handing numpy one relabelled (``uint16``) capsule."""

    def __init__(self, capsule: Any, device: tuple[int, int]) -> None:
        self.capsule, self.device = capsule, device

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device


def import_bits(dev: Any, obj: Any) -> np.ndarray | None:
    """``dev.import_dlpack`` of ``obj`` read as bfloat16 where ``obj`` exports a
    ``(kDLBfloat, 16, 1)`` tensor (shared or copied as for any dtype); None where it
    exports anything else."""
    try:  # versioned: its flags say whether the memory is writable (shared if so)
        capsule = obj.__dlpack__(max_version=(1, 0))
    except TypeError:  # an older producer: numpy reads a legacy capsule as read-only
        capsule = obj.__dlpack__()
    if not _relabel(capsule, BFLOAT, UINT):
        return None
    x = dev.import_dlpack(_Bits(capsule, tuple(obj.__dlpack_device__())))
    return x.view(dtypes.bfloat16)  # imports ml_dtypes
