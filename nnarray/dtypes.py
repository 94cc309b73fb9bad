"""Supported dtypes and numpy's promotion rules, with Python scalars weak (NEP 50).

``bfloat16`` is ``ml_dtypes``'s numpy dtype (the one JAX and TensorFlow use); its numpy
``kind`` is ``"V"``, so floating checks go through ``is_floating`` or ``FLOATS``, never
``dtype.kind == "f"``. Promotion is numpy's with ``ml_dtypes`` loaded: bfloat16 with
float16 gives float32 (as torch), with float32 float32.

``ml_dtypes`` (~0.5 s to import) is imported on first use: ``dtypes.bfloat16`` (a module
``__getattr__``), the name ``"bfloat16"`` given as a dtype, or a bfloat16 file or DLPack
tensor. No array can have its dtype before someone imported it, so the tables below
(``DTypeSet``) and ``is_bfloat16`` answer without importing it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from .errors import DTypeError

#: The class of bfloat16's dtype once ``ml_dtypes`` is loaded (``_load_bfloat16``).
_bf16_class: type | None = None


def is_bfloat16(dtype: Any) -> bool:
    """Whether ``dtype`` is bfloat16, without importing ``ml_dtypes`` (no dtype is before
    someone did)."""
    if _bf16_class is None:
        if "ml_dtypes" not in sys.modules:
            return False
        _load_bfloat16()  # loaded by its owner (a user's bfloat16 array): only look it up
    return type(dtype) is _bf16_class and dtype.isnative


def _load_bfloat16() -> np.dtype:
    """Import ``ml_dtypes``; its bfloat16 becomes this module's ``bfloat16``."""
    global _bf16_class
    import ml_dtypes
    d = np.dtype(ml_dtypes.bfloat16)
    assert d.char in LOW_CODES, d.char
    globals()["bfloat16"] = d
    _bf16_class = type(d)
    return d


def __getattr__(name: str) -> Any:
    """``bfloat16`` (brain floating point: float32's exponent range, 8 bits of
    significand) imports ``ml_dtypes`` on first use."""
    if name == "bfloat16":
        return _load_bfloat16()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class DTypeSet:
    """A frozen set of dtypes, bfloat16 among them where ``bf16``, which answers ``in``
    without importing ``ml_dtypes`` (iterating imports it)."""

    __slots__ = ("base", "bf16", "_set")

    def __init__(self, base: Iterable[Any] = (), bf16: bool = False) -> None:
        self.base = tuple(dict.fromkeys(np.dtype(d) for d in base))  # ordered, no repeats
        self.bf16 = bf16
        self._set = frozenset(self.base)

    def __contains__(self, dtype: Any) -> bool:
        return dtype in self._set or (self.bf16 and is_bfloat16(dtype))

    def __iter__(self) -> Iterator[np.dtype]:
        yield from self.base
        if self.bf16:
            yield _load_bfloat16()

    def __len__(self) -> int:
        return len(self.base) + self.bf16

    def __or__(self, other: Any) -> DTypeSet:
        if isinstance(other, DTypeSet):
            return DTypeSet(self.base + other.base, self.bf16 or other.bf16)
        return DTypeSet((*self.base, *other), self.bf16)

    __ror__ = __or__

    @property
    def names(self) -> str:
        """The members' names, ``", "``-separated."""
        return ", ".join([*(d.name for d in self.base), *(["bfloat16"] if self.bf16 else [])])

    def __repr__(self) -> str:
        return f"DTypeSet({self.names})"


#: numpy type codes of the 16-bit floats: float16's and bfloat16's.
LOW_CODES = "eE"
SUPPORTED = DTypeSet((np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
                      np.uint8, np.uint16, np.uint32, np.uint64, np.bool_, np.complex64,
                      np.complex128), bf16=True)
FLOATS = DTypeSet((np.float16, np.float32, np.float64), bf16=True)
#: The 16-bit floating dtypes (stored in 16 bits, computed in float32 where it matters).
LOW = DTypeSet((np.float16,), bf16=True)
SIGNED: frozenset[np.dtype] = frozenset(np.dtype(t) for t in (np.int8, np.int16, np.int32,
                                                             np.int64))
UNSIGNED: frozenset[np.dtype] = frozenset(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32,
                                                               np.uint64))
INTEGERS: frozenset[np.dtype] = SIGNED | UNSIGNED
COMPLEX: frozenset[np.dtype] = frozenset(np.dtype(t) for t in (np.complex64, np.complex128))
#: Real and complex floating dtypes: those that carry gradients.
INEXACT = FLOATS | COMPLEX
_norm_cache: dict[Any, np.dtype] = {}
_promote_cache: dict[tuple, np.dtype] = {}
_WEAK = {float: 0.0, int: 0, bool: False, complex: 0j}
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_COMPLEX_OF = {_F32: np.dtype(np.complex64), _F64: np.dtype(np.complex128)}


def _float_from_environment() -> np.dtype:
    """``NNARRAY_DEFAULT_FLOAT`` (``float32`` or ``float64``), else float32."""
    spec = os.environ.get("NNARRAY_DEFAULT_FLOAT", "").strip()
    if not spec:
        return _F32
    try:
        d = np.dtype(spec)
    except TypeError:
        d = None
    if d not in _COMPLEX_OF:
        raise DTypeError(f"NNARRAY_DEFAULT_FLOAT={spec!r}: expected float32 or float64")
    return d


#: ``(real floating, complex floating)`` defaults of creation, replaced whole (one
#: assignment, so a thread never sees half of a change): ``set_default_dtype``.
_defaults: tuple[np.dtype, np.dtype] = (_float_from_environment(),
                                        _COMPLEX_OF[_float_from_environment()])


def defaults() -> tuple[np.dtype, np.dtype]:
    """``(real floating, complex floating)`` defaults, read together (one read: a thread
    switching them meanwhile never splits the pair)."""
    return _defaults


def default_float() -> np.dtype:
    """The default real floating dtype of creation (float32 unless set)."""
    return _defaults[0]


def default_complex() -> np.dtype:
    """The default complex dtype: complex64 with float32, complex128 with float64."""
    return _defaults[1]


def set_default_dtype(dtype: Any) -> None:
    """Make ``dtype`` (float32 or float64) the default floating dtype of creation
    functions, of Python floats in ``asarray`` and of ``default_dtypes()`` (process-wide,
    as ``torch.set_default_dtype``; the complex default follows: complex64/complex128)."""
    global _defaults
    d = normalize(dtype, "set_default_dtype")
    if d not in _COMPLEX_OF:
        raise DTypeError(f"set_default_dtype: argument 'dtype' must be float32 or float64, "
                         f"got {d}")
    _defaults = (d, _COMPLEX_OF[d])


def get_default_dtype() -> np.dtype:
    """The default real floating dtype (``set_default_dtype``)."""
    return _defaults[0]


def normalize(dtype: Any, op: str = "dtype", arg: str = "dtype") -> np.dtype:
    """``np.dtype(dtype)`` restricted to the supported set, else ``DTypeError``."""
    d = _norm_cache.get(dtype)
    if d is not None:
        return d
    try:
        d = _load_bfloat16() if isinstance(dtype, str) and dtype == "bfloat16" else \
            np.dtype(dtype)
    except TypeError:
        raise DTypeError(f"{op}: argument '{arg}': {dtype!r} is not a dtype") from None
    if d not in SUPPORTED:
        raise DTypeError(f"{op}: argument '{arg}': dtype {d} is not supported "
                         f"(supported: {SUPPORTED.names})")
    try:
        _norm_cache[dtype] = d
    except TypeError:
        pass
    return d


def is_floating(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is a real floating dtype (bfloat16 included)."""
    return dtype in FLOATS


def is_scalar(x: Any) -> bool:
    """True for Python and numpy scalars (operands that do not need an array)."""
    t = type(x)
    return t is float or t is int or t is bool or t is complex or isinstance(x, np.generic)


def _key(x: Any, op: str, arg: str) -> Any:
    t = type(x)
    if t is float or t is int or t is bool or t is complex:
        return t
    d = getattr(x, "dtype", None)
    if d is None:
        raise DTypeError(f"{op}: argument '{arg}': expected an array or a real scalar, "
                         f"got {t.__name__}")
    if isinstance(x, np.generic) and d not in SUPPORTED:
        raise DTypeError(f"{op}: argument '{arg}': scalar dtype {d} is not supported")
    return d


def promote(op: str, *xs: Any, args: tuple[str, ...] = ("a", "b", "c")) -> np.dtype:
    """numpy's result dtype of ``xs`` (arrays strong, Python scalars weak)."""
    if len(xs) == 2:  # fast path: two arrays whose dtypes were seen before
        d = _promote_cache.get((getattr(xs[0], "dtype", None), getattr(xs[1], "dtype", None)))
        if d is not None:
            return d
    key = tuple([_key(x, op, a) for x, a in zip(xs, args)])
    d = _promote_cache.get(key)
    if d is None:
        parts = [_WEAK[k] if k in _WEAK else k for k in key]
        if all(k in _WEAK for k in key):  # Python scalars only: the defaults (not cached)
            d = np.result_type(*[np.asarray(p) for p in parts])
            if d == np.float64:
                return _defaults[0]
            if d == np.complex128:
                return _defaults[1]
        else:
            d = np.result_type(*parts)
        _promote_cache[key] = d
    return d


def real_of(dtype: np.dtype) -> np.dtype:
    """The real dtype of a complex ``dtype`` (complex64 -> float32); others unchanged."""
    return _REAL.get(dtype, dtype)


def complex_of(dtype: np.dtype) -> np.dtype:
    """The complex dtype holding ``dtype``'s values: float64 -> complex128, any other real
    dtype -> complex64 (numpy's rule for float16/float32; integers follow the default)."""
    if dtype.kind == "c":
        return dtype
    return np.dtype(np.complex128 if dtype == np.float64 else np.complex64)


_REAL = {np.dtype(np.complex64): np.dtype(np.float32),
         np.dtype(np.complex128): np.dtype(np.float64)}


def ufunc_dtype(ufunc: np.ufunc, dtype: np.dtype, op: str) -> np.dtype:
    """The dtype numpy's ``ufunc`` gives for one input of ``dtype`` (cached)."""
    key = (ufunc, dtype)
    d = _promote_cache.get(key)
    if d is None:
        try:
            d = ufunc(np.ones(1, dtype)).dtype
        except TypeError:
            raise DTypeError(f"{op}: dtype {dtype} is not supported by this op") from None
        if d not in SUPPORTED:
            d = np.dtype(np.complex64 if d.kind == "c" else np.float32)
        _promote_cache[key] = d
    return d
