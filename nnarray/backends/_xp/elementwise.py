"""The elementwise functions of the numpy-compatible backends, from their declarations
(``ops/ufuncs.py``): each row's numpy function (CuPy has the same names), a
``scipy.special`` function (``cupyx.scipy.special`` on CuPy) or a composite of them.
``relu`` and ``sigmoid`` are written out in ``kernels.py``."""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ...dtypes import promote
from ...ops.elementwise import BINARY as _RULES
from ...ops.elementwise import binary_dtype, unary_dtype
from ...ops.ufuncs import ROWS


class _Functions:
    """The functions of array module ``xp`` by row ``xp`` name, for composites
    (``m.erf``, ``m.tanh``)."""

    def __init__(self, xp: Any) -> None:
        self.xp = xp

    def __getattr__(self, name: str) -> Any:
        return getattr(self.xp, name)


def _special(xp: Any, name: str) -> Callable:
    """``scipy.special``'s function ``name`` (``cupyx.scipy.special``'s for CuPy); without
    scipy, numpy gets Python's ``math`` function per element."""
    module = "cupyx.scipy.special" if xp.__name__ == "cupy" else "scipy.special"
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError:
        if xp is not np:
            raise
        slow = np.frompyfunc(getattr(math, name), 1, 1)

        def f(x, out=None):
            r = slow(x).astype(x.dtype if x.dtype.kind == "f" else np.float64)
            if out is None:
                return r
            np.copyto(out, r, casting="same_kind")
            return out
        return f


def _composite(name: str, build: Callable, m: _Functions) -> Callable:
    """A composite row as a unary kernel: computed in the row's result dtype."""
    f = build(m)

    def k(x, out=None):
        d = unary_dtype(name, x.dtype)
        r = f(x if x.dtype == d else x.astype(d))
        if r.dtype != d:  # scipy's float16 loops give float32
            r = r.astype(d)
        if out is None:
            return r
        m.xp.copyto(out, r, casting="same_kind")
        return out
    return k


def functions(xp: Any) -> tuple[dict[str, Callable], dict[str, Callable]]:
    """(binary, unary): op name -> ``xp``'s function, for every row it has one."""
    m = _Functions(xp)
    binary: dict[str, Callable] = {}
    unary: dict[str, Callable] = {}
    for r in ROWS:
        if r.xp is None:
            continue
        if callable(r.xp):
            f = _composite(r.name, r.xp, m)
        elif r.xp.startswith("scipy.special."):
            special = _special(xp, r.xp.rsplit(".", 1)[1])
            f = _composite(r.name, lambda m, special=special: special, m)
        else:
            f = getattr(xp, r.xp)
        (binary if r.arity == 2 else unary)[r.name] = f
        setattr(m, r.name, f)
    return binary, unary


def in_result_dtype(name: str, uf: Callable) -> Callable:
    """``uf(a, b, out=None)`` computed in op ``name``'s result dtype, for ops whose
    result is floating whatever the operands ("float" rule; ``uf`` itself elsewhere).
    The ufunc alone picks the smallest float loop both operands cast to: float16 for
    int8 with uint8, where the op's rule (the float of their promoted type, int16) says
    float32; casting the operands first makes the data what ``.dtype`` says."""
    if _RULES[name][0] != "float":
        return uf
    seen: dict[tuple, Any] = {}

    def f(a: Any, b: Any, out: Any = None) -> Any:
        key = (getattr(a, "dtype", type(a)), getattr(b, "dtype", type(b)))
        d = seen.get(key)
        if d is None:
            d = seen[key] = binary_dtype(name, promote(name, a, b))
        a = a.astype(d, copy=False) if hasattr(a, "astype") else d.type(a)
        b = b.astype(d, copy=False) if hasattr(b, "astype") else d.type(b)
        return uf(a, b) if out is None else uf(a, b, out=out)
    return f
