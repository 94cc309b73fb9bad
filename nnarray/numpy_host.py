"""numpy functions and ufunc calls with no nnarray counterpart: numpy runs them on host
views of the NdArray operands, as it does on torch's CPU tensors through ``__array__``.

An operand on the host lends its zero-copy writable handle (``np.asarray(x)``: a write
through it, such as a ufunc's ``out=``, reaches the array); an operand on another device
is read to the host (one counted transfer; under ``strict_transfers(implicit_reads=True)``
that read raises ``TransferError`` before numpy runs). The result is numpy's (numpy
arrays and scalars), except that an NdArray given as ``out=`` receives it on its own
device and is returned, as numpy returns ``out``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import dtypes, late
from . import functions as F
from .context import dispatch_context
from .errors import DTypeError, ShapeError
from .ndarray import NdArray
from .operators import ArrayOperators

#: the ``nnarray`` namespace (the package imports this module first)
nna: Any = late.bind(__name__, "nna", "nnarray")


class HostOnly(TypeError):
    """Raised by a counterpart for arguments it does not take (``where=``, a numpy
    ``out=``, ``np.unique(axis=)``, ...): numpy runs the call on the host instead."""


def _is_array(x: Any) -> bool:
    return isinstance(x, ArrayOperators)


def _kept(x: Any) -> bool:
    return _is_array(x) or x is None or dtypes.is_scalar(x)


def operands(*xs: Any) -> list:
    """``xs`` with numpy arrays and (nested) sequences made NdArrays where the NdArrays and
    Variables among ``xs`` would run (one explicit, counted upload each); scalars, NdArrays
    and Variables are kept."""
    if all(_kept(x) for x in xs):
        return list(xs)
    nds = [x if isinstance(x, NdArray) else x._data for x in xs if _is_array(x)]
    ctx = dispatch_context([d for d in nds if d is not None])
    return [x if _kept(x) else nna.asarray(x, device=ctx) for x in xs]


def host(x: Any) -> Any:
    """``x`` with every NdArray or Variable (in tuples, lists and dicts too) replaced by
    its host view ``np.asarray(x)``."""
    if _is_array(x):
        return np.asarray(x)
    if isinstance(x, (tuple, list)):
        return type(x)(host(y) for y in x)
    if isinstance(x, dict):
        return {k: host(v) for k, v in x.items()}
    return x


def call(func: Callable, args: tuple, kwargs: dict) -> Any:
    """``func(*args, **kwargs)`` by numpy on host views of the NdArray operands."""
    kwargs = dict(kwargs)
    out = kwargs.pop("out", None)
    if out is None or not _has_array(out):
        if out is not None:
            kwargs["out"] = out
        return func(*host(args), **host(kwargs))
    return _into(func.__name__, out, func(*host(args), **host(kwargs)))


def ufunc(uf: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """``uf.method(*inputs, **kwargs)`` by numpy on host views of the NdArray operands."""
    return call(getattr(uf, method), inputs, kwargs)


def _has_array(out: Any) -> bool:
    outs = out if isinstance(out, tuple) else (out,)
    return any(_is_array(o) for o in outs)


def _into(what: str, out: Any, result: Any) -> Any:
    """numpy's ``result`` written into ``out`` (NdArrays on their own devices, numpy
    arrays in place; numpy's ``same_kind`` casting), returning ``out`` as numpy does."""
    outs = out if isinstance(out, tuple) else (out,)
    results = result if isinstance(result, tuple) else (result,)
    for o, r in zip(outs, results):
        if o is None:
            continue
        r = np.asarray(r)
        if o.shape != r.shape:
            raise ShapeError(f"np.{what}: out= has shape {o.shape}, the result {r.shape}")
        if not np.can_cast(r.dtype, o.dtype, "same_kind"):
            raise DTypeError(f"np.{what}: cannot write the {r.dtype} result into out= of "
                             f"{o.dtype} (shape {o.shape})")
        if isinstance(o, np.ndarray):
            o[...] = r
        else:
            F.assign(o, nna.asarray(r.astype(o.dtype, copy=False), device=o.device))
    return outs[0] if len(outs) == 1 else outs
