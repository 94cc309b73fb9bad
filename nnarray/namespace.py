"""The Array API standard's dtypes, constants and data-type functions (API.md §7).

``nnarray`` re-exports every public name here, so ``import nnarray as xp`` is a namespace
of the standard, revision 2023.12. Complex dtypes are not part of this revision of the
contract. Promotion follows numpy 2 (NEP 50), which is the standard's table wherever the
standard defines one.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from . import discovery as backends
from . import dtypes as _dtypes
from .context import Context, as_context, creation_context
from .errors import DTypeError

__array_api_version__ = "2023.12"

bool = np.dtype(np.bool_)  # noqa: A001  (the standard's name)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32,
                                                       np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)
bfloat16 = _dtypes.bfloat16  # an extension (ml_dtypes' numpy dtype), like float16

e = math.e
inf = math.inf
nan = math.nan
pi = math.pi
newaxis = None

#: The standard's dtype kinds -> the dtypes of each.
_KINDS: dict[str, frozenset] = {
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


def _contexts() -> list[Context]:
    """Every available context: one per device of every usable backend."""
    out = []
    for name, descs in backends.available():
        out += [Context(name, i) for i in range(len(descs))]
    return out


class Info:
    """``nnarray.__array_namespace_info__()``: what this namespace supports, as revision
    ``api_version`` of the standard defines it (default: ``__array_api_version__``)."""

    def __init__(self, api_version: str | None = None) -> None:
        self.api_version = api_version or __array_api_version__

    def capabilities(self) -> dict:
        caps = {"boolean indexing": True, "data-dependent shapes": True}
        if self.api_version >= "2024.12":  # the key 2024.12 added (None: no limit)
            caps["max dimensions"] = None
        return caps

    def default_device(self) -> Context:
        """Where creation functions make arrays (``set_default_device``)."""
        return creation_context()

    def default_dtypes(self, *, device: Any = None) -> dict:
        if device is not None:
            as_context(device)
        real, cplx = _dtypes.defaults()
        return {"real floating": real, "complex floating": cplx, "integral": int64,
                "indexing": int64}

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict:
        if device is not None:
            as_context(device)
        ds = [bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32,
              float64, complex64, complex128]  # the standard's dtypes (float16 is a numpy extra)
        if kind is not None:
            ds = [d for d in ds if isdtype(d, kind)]
        return {d.name: d for d in ds}

    def devices(self) -> list[Context]:
        return _contexts()


def __array_namespace_info__(*, api_version: str | None = None) -> Info:
    """The inspection object of the standard (``capabilities``, ``default_device``,
    ``default_dtypes``, ``dtypes``, ``devices``) of revision ``api_version`` (an nnarray
    extension; default ``__array_api_version__``)."""
    return Info(api_version)


__all__ = [
    "__array_api_version__", "__array_namespace_info__", "bfloat16", "bool", "can_cast",
    "complex64",
    "complex128", "e",
    "finfo", "float16", "float32", "float64", "iinfo", "inf", "int16", "int32", "int64",
    "int8", "isdtype", "nan", "newaxis", "pi", "result_type", "uint16", "uint32", "uint64",
    "uint8",
]
