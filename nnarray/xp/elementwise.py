"""The standard's elementwise functions: the declared ``F`` ops under the standard's names
(``Ufunc.api``; no wrapper, the same tiny-op cost) and the few that adapt one
(``reciprocal``, ``clip``, ``conj``, ``real``, ``imag``, ``angle``).
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import dtypes as _dtypes
from .. import functions as F
from ..ops import elementwise as _ew
from ..ops import ufuncs as _ufuncs
from ._common import _require

_BOOL = np.dtype(np.bool_)

globals().update({api: _ew.functions[r.name] for r in _ufuncs.ROWS for api in r.api_names})


def reciprocal(x: Any, /) -> Any:
    """``1 / x`` (floating results, like ``divide``)."""
    return _ew.functions["div"](1.0, x)


def clip(x: Any, /, min: Any = None, max: Any = None) -> Any:  # noqa: A002
    """``x`` limited to ``[min, max]`` (scalars or arrays; either may be ``None``); the
    result keeps ``x``'s dtype."""
    _require("clip", x)
    if min is None and max is None:
        return F.cast(x, x.dtype)
    if (min is None or _dtypes.is_scalar(min)) and (max is None or _dtypes.is_scalar(max)):
        if x.dtype.kind in "iu":  # out-of-range bounds: clamp them to the dtype first
            info = np.iinfo(x.dtype)
            min = None if min is None else builtins.max(builtins.min(min, info.max), info.min)
            max = None if max is None else builtins.max(builtins.min(max, info.max), info.min)
        y = _ew.clip(x, a_min=min, a_max=max)
    else:
        y = x
        if min is not None:
            y = _ew.where(_ew.less(y, min), min, y)
        if max is not None:
            y = _ew.where(_ew.greater(y, max), max, y)
    return y if y.dtype == x.dtype else F.cast(y, x.dtype)


def conj(x: Any, /) -> Any:
    """The complex conjugate: a copy for a real dtype."""
    _require("conj", x)
    return F.conj(x) if x.dtype.kind == "c" else F.cast(x, x.dtype)


def real(x: Any, /) -> Any:
    """The real part (of the real dtype of that precision): a copy for a real dtype."""
    _require("real", x)
    return F.real(x) if x.dtype.kind == "c" else F.cast(x, x.dtype)


def imag(x: Any, /) -> Any:
    """The imaginary part: zeros for a real dtype."""
    _require("imag", x)
    if x.dtype.kind == "c":
        return F.imag(x)
    return F.mul(x, 0) if x.dtype != _BOOL else F.logical_and(x, False)


def angle(x: Any, /) -> Any:
    """The argument of each element (``atan2(imag, real)``), of the real dtype."""
    _require("angle", x)
    if x.dtype.kind == "c":
        return F.angle(x)
    xf = x if _dtypes.is_floating(x.dtype) else F.cast(x, _dtypes.default_float())
    return F.atan2(F.mul(F.abs(xf), 0.0), xf)  # +0 imaginary parts, as numpy


__all__ = sorted({api for r in _ufuncs.ROWS for api in r.api_names}
                 | {"angle", "clip", "conj", "imag", "real", "reciprocal"})
