"""The standard's data type functions: ``astype``, ``can_cast``, ``finfo``, ``iinfo``,
``isdtype``, ``result_type``.
"""

from __future__ import annotations

import builtins
from collections.abc import Container
from typing import Any

import numpy as np

from .. import dtypes as _dtypes
from .. import functions as F
from ..context import as_context
from ..errors import DTypeError
from ..ndarray import NdArray
from ._common import _require
from .dtypes import bool

#: The standard's dtype kinds -> the dtypes of each.
_KINDS: dict[str, Container[np.dtype]] = {
    "bool": frozenset({bool}),
    "signed integer": _dtypes.SIGNED,
    "unsigned integer": _dtypes.UNSIGNED,
    "integral": _dtypes.INTEGERS,
    "real floating": _dtypes.FLOATS,
    "complex floating": _dtypes.COMPLEX,
    "numeric": _dtypes.INTEGERS | _dtypes.INEXACT,
}


def _dtype_of(x: Any, op: str, arg: str) -> np.dtype:
    """The supported dtype of ``x`` (a dtype or an array)."""
    d = getattr(x, "dtype", None)
    if d is not None and not isinstance(x, (type, np.dtype)):
        x = d
    return _dtypes.normalize(x, op, arg)


def isdtype(dtype: Any, kind: Any) -> builtins.bool:
    """Whether ``dtype`` is of ``kind``: a dtype, a kind name ("bool", "signed integer",
    "unsigned integer", "integral", "real floating", "complex floating", "numeric") or a
    tuple of those."""
    if not isinstance(dtype, np.dtype):
        raise TypeError(f"isdtype: argument 'dtype' must be a dtype, got {dtype!r}")
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        kinds = _KINDS.get(kind)
        if kinds is None:
            raise ValueError(f"isdtype: unknown kind {kind!r} (one of {', '.join(_KINDS)})")
        return dtype in kinds
    if isinstance(kind, np.dtype):
        return dtype == kind
    raise TypeError(f"isdtype: argument 'kind' must be a dtype, a kind name or a tuple, "
                    f"got {kind!r}")


def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    """The dtype the standard's promotion gives for arrays and dtypes (numpy 2's rules,
    Python scalars weak)."""
    if not arrays_and_dtypes:
        raise ValueError("result_type: at least one array or dtype is required")
    parts: list = []
    for i, x in enumerate(arrays_and_dtypes):
        if type(x) in (builtins.bool, int, float, complex):
            parts.append(x)
        else:
            parts.append(_dtype_of(x, "result_type", f"arrays_and_dtypes[{i}]"))
    if builtins.all(type(p) in (builtins.bool, int, float, complex) for p in parts):
        raise ValueError("result_type: at least one array or dtype is required")
    try:
        d = np.result_type(*parts)
    except TypeError as err:
        raise TypeError(f"result_type: {err}") from None
    if d not in _dtypes.SUPPORTED:
        raise DTypeError(f"result_type: the promoted dtype {d} is not supported")
    return d


def can_cast(from_: Any, to: Any, /) -> builtins.bool:
    """Whether ``from_`` (a dtype or an array) casts to ``to`` under the standard's
    promotion rules (numpy's ``safe`` casting)."""
    return builtins.bool(np.can_cast(_dtype_of(from_, "can_cast", "from_"),
                                     _dtypes.normalize(to, "can_cast", "to"), "safe"))


class finfo_object:
    """Machine limits of a floating dtype, as Python floats (those of the real part for a
    complex dtype, ``dtype`` included, as the standard and numpy say)."""

    def __init__(self, dtype: np.dtype) -> None:
        f = np.finfo(dtype)
        self.bits = int(f.bits)
        self.eps = float(f.eps)
        self.max = float(f.max)
        self.min = float(f.min)
        self.smallest_normal = float(f.smallest_normal)
        self.dtype = np.dtype(f.dtype)

    def __repr__(self) -> str:
        return f"finfo(dtype={self.dtype}, bits={self.bits}, eps={self.eps})"


class iinfo_object:
    """Limits of an integer dtype, as Python ints."""

    def __init__(self, dtype: np.dtype) -> None:
        i = np.iinfo(dtype)
        self.bits = int(i.bits)
        self.max = int(i.max)
        self.min = int(i.min)
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"iinfo(dtype={self.dtype}, bits={self.bits}, min={self.min}, max={self.max})"


def finfo(type: Any, /) -> finfo_object:  # noqa: A002  (the standard's name)
    """``bits``, ``eps``, ``max``, ``min``, ``smallest_normal`` and ``dtype`` of a
    floating dtype (or an array of one)."""
    d = _dtype_of(type, "finfo", "type")
    if d not in _dtypes.INEXACT:
        raise DTypeError(f"finfo: argument 'type' must be a floating dtype, got {d}")
    return finfo_object(d)


def iinfo(type: Any, /) -> iinfo_object:  # noqa: A002
    """``bits``, ``max``, ``min`` and ``dtype`` of an integer dtype (or an array of one)."""
    d = _dtype_of(type, "iinfo", "type")
    if d not in _dtypes.INTEGERS:
        raise DTypeError(f"iinfo: argument 'type' must be an integer dtype, got {d}")
    return iinfo_object(d)


def astype(x: Any, dtype: Any, /, *, copy: builtins.bool = True, device: Any = None) -> Any:
    """``x`` as ``dtype`` (``x`` itself when ``copy=False`` and nothing changes)."""
    _require("astype", x)
    d = _dtypes.normalize(dtype, "astype")
    if device is not None and type(x) is NdArray and as_context(device) != x.device:
        x = x.to_device(device)
        if d == x.dtype:
            return x
    if not copy and d == x.dtype:
        return x
    return F.cast(x, d)


__all__ = ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"]
