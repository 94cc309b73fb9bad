"""``logsumexp``: ``log(sum(exp(x)))`` over axes, computed without overflow.

Kernel contract: ``logsumexp(x, axis: tuple[int, ...], keepdims: bool)`` with ``axis``
sorted, non-negative and empty only for a 0-d ``x``; real floating ``x``, the result of
its dtype. A zero-size reduction gives ``-inf`` (the log of an empty sum). One composite
kernel (below) serves every backend: the largest finite value is subtracted before
``exp``, so nothing overflows and only terms that would not change the sum underflow.
"""

from __future__ import annotations

from typing import Any

from ..registry import register_composite
from .common import norm_axes, require_float
from .op import Op
from .surfaces import declare


def _infer(inputs: tuple, attrs: dict) -> tuple:
    (x,) = inputs
    require_float("logsumexp", "x", x)
    axes = attrs["axis"] = norm_axes("logsumexp", attrs.get("axis"), x.shape)
    keep = attrs["keepdims"] = bool(attrs.get("keepdims", False))
    shape = tuple(1 if i in axes else s for i, s in enumerate(x.shape)) if keep else \
        tuple(s for i, s in enumerate(x.shape) if i not in axes)
    return ((shape, x.dtype),)


_logsumexp = Op("logsumexp", _infer)


def _onnx(ex: Any, n: Any, outs: list) -> None:
    """ONNX's ``ReduceLogSumExp`` (the exporter: ``grad/onnx_export.py``)."""
    x = ex.value(n.inputs[0])
    if not n.attrs["axis"]:  # a 0-d input
        ex.emit("Identity", [x], outs)
        return
    ex.reduce("ReduceLogSumExp", x, n.attrs["axis"], n.attrs["keepdims"], outs[0])


@declare(_logsumexp, onnx=_onnx)
def logsumexp(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``log(sum(exp(x)))`` over ``axis`` (``None``: every axis), without overflow;
    ``-inf`` over no elements. Its gradient is ``softmax(x)`` over those axes."""
    return _logsumexp(x, axis=axis, keepdims=keepdims)


# -- the composite kernel and the backward rule ------------------------------------------
# Both call the ops below this one (``ops``' layers), as ``F`` exposes them.
from . import elementwise as _ew  # noqa: E402
from . import reduction as _red  # noqa: E402
from . import shape as _sh  # noqa: E402
from .backward import backward as _backward  # noqa: E402
from .backward import fit as _fit  # noqa: E402
from .backward import unreduce as _unreduce  # noqa: E402

_add, _sub, _mul, _equal, _isfinite, _exp, _log = (
    _ew.functions[n] for n in ("add", "sub", "mul", "equal", "isfinite", "exp", "log"))
_where, _cast = _ew.where, _ew.cast


def _compose(x: Any, axis: tuple, keepdims: bool) -> Any:
    if not axis:  # a 0-d input: the value itself
        return _cast(x, dtype=x.dtype)
    if any(x.shape[a] == 0 for a in axis):  # an empty sum: log(0)
        return _add(_red.sum(x, axis, keepdims), float("-inf"))
    m = _red.max(x, axis, True)
    shift = _where(_isfinite(m), m, 0.0)  # all -inf, or an inf: nothing to shift
    s = _red.sum(_exp(_sub(x, shift)), axis, True)
    none = _equal(m, float("-inf"))  # every term -inf: -inf, without taking log(0)
    y = _where(none, float("-inf"), _add(_log(_where(none, 1.0, s)), shift))
    return y if keepdims else _sh.reshape(y, _infer((x,), {"axis": axis})[0][0])


register_composite("logsumexp", _compose)


@_backward(_logsumexp, inputs=(0,), outputs=(0,))
def _logsumexp_grad(c: Any, g: Any) -> tuple:
    """``g * exp(x - y)`` (softmax over the axes): 0 where ``x`` is ``-inf``, also where
    every term is (``y`` is then taken as 0, not ``-inf``: ``x - y`` would be NaN)."""
    x, y = c.inputs[0], c.outputs[0]
    axes, keep = c.attrs["axis"], c.attrs["keepdims"]
    shape = c.in_meta[0][0]
    y = _where(_equal(y, float("-inf")), 0.0, y)
    p = _exp(_sub(x, _unreduce(y, shape, axes, keep)))
    return (_fit(c, 0, _mul(_unreduce(g, shape, axes, keep), p)),)
