"""Elementwise ops: numpy broadcasting and promotion, Python scalars weak.

Kernel contract (native arrays or Python/numpy scalars in, a new C-contiguous native
array out): binary ``name(a, b, out=None)``; unary ``name(x, out=None)``;
``leaky_relu(x, alpha)``; ``clip(x, a_min, a_max)``; ``cast(x, dtype, out=None)``;
``where(cond, x, y)``. When ``out`` is given the kernel writes into it (it has the
broadcast shape and its own dtype, possibly narrower: cast same_kind) and returns it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import context as _context
from .. import dtypes
from ..context import _current, get_current_context
from ..errors import DTypeError, ShapeError
from ..ndarray import NdArray
from ..registry import _cache as _dispatch_cache
from ..registry import resolve
from . import op as _opmod
from .common import broadcast, require_array
from .op import GraphValue, Op, execute

_promote = dtypes.promote
_BOOL = np.dtype(np.bool_)


def _array_operand(op: str, a: Any, b: Any) -> None:
    if dtypes.is_scalar(a) and dtypes.is_scalar(b):
        raise TypeError(f"{op}: at least one operand must be an NdArray or Variable")


def _infer_binary(name: str):
    def infer(inputs, attrs):
        a, b = inputs
        sa = getattr(a, "shape", None)
        if sa is not None and sa == getattr(b, "shape", None):
            return ((sa, _promote(name, a, b)),)
        _array_operand(name, a, b)
        return ((broadcast(name, inputs), _promote(name, a, b)),)
    return infer


def _infer_compare(name: str):
    def infer(inputs, attrs):
        a, b = inputs
        _array_operand(name, a, b)
        _promote(name, a, b)
        return ((broadcast(name, inputs), _BOOL),)
    return infer


def _infer_div(inputs, attrs):
    a, b = inputs
    _array_operand("div", a, b)
    d = _promote("div", a, b)
    if d not in dtypes.FLOATS:
        d = np.dtype(np.float64)
    return ((broadcast("div", inputs), d),)


def _infer_no_bool(name: str):
    base = _infer_binary(name)

    def infer(inputs, attrs):
        (meta,) = base(inputs, attrs)
        if meta[1] == _BOOL:  # numpy refuses bool ``-`` and ``**`` too
            raise DTypeError(f"{name}: bool operands are not supported (shapes "
                             f"{getattr(inputs[0], 'shape', ())}, "
                             f"{getattr(inputs[1], 'shape', ())})")
        return (meta,)
    return infer


_infer_pow = _infer_no_bool("pow")


def _infer_same(name: str, allow_bool: bool = True):
    def infer(inputs, attrs):
        (x,) = inputs
        require_array(name, "x", x)
        if not allow_bool and x.dtype == _BOOL:
            raise DTypeError(f"{name}: argument 'x' must be numeric, got bool (shape {x.shape})")
        return ((x.shape, x.dtype),)
    return infer


def _infer_float(name: str, ufunc: np.ufunc):
    def infer(inputs, attrs):
        (x,) = inputs
        require_array(name, "x", x)
        return ((x.shape, dtypes.ufunc_dtype(ufunc, x.dtype, name)),)
    return infer


def _infer_leaky_relu(inputs, attrs):
    (x,) = inputs
    require_array("leaky_relu", "x", x)
    alpha = attrs.setdefault("alpha", 0.1)
    if not isinstance(alpha, (int, float)):
        raise TypeError(f"leaky_relu: argument 'alpha' must be a number, got {alpha!r}")
    alpha = attrs["alpha"] = float(alpha)  # an int alpha must not keep an int x integral
    return ((x.shape, _promote("leaky_relu", x, alpha)),)


def _infer_clip(inputs, attrs):
    (x,) = inputs
    require_array("clip", "x", x)
    lo, hi = attrs.get("a_min"), attrs.get("a_max")
    if lo is None and hi is None:
        raise ValueError("clip: at least one of 'a_min' and 'a_max' must be given")
    d = x.dtype
    for n, v in (("a_min", lo), ("a_max", hi)):
        if v is not None:
            if not dtypes.is_scalar(v):
                raise TypeError(f"clip: argument '{n}' must be a scalar, got {type(v).__name__}")
            d = _promote("clip", np.empty(0, d), v)
    return ((x.shape, d),)


def _infer_cast(inputs, attrs):
    (x,) = inputs
    require_array("cast", "x", x)
    d = attrs["dtype"] = dtypes.normalize(attrs.get("dtype"), "cast")
    return ((x.shape, d),)


def _infer_where(inputs, attrs):
    c, x, y = inputs
    require_array("where", "condition", c)
    if c.dtype != _BOOL:
        raise DTypeError(f"where: argument 'condition' must be bool, got {c.dtype} "
                         f"(shape {c.shape})")
    d = _promote("where", x, y, args=("x", "y"))
    return ((broadcast("where", inputs, ("condition", "x", "y")), d),)


class BinaryOp(Op):
    """A two-operand elementwise op with a fast path for NdArrays of equal shape: F.add
    on tiny arrays is dominated by dispatch, so it skips argument packing and goes
    straight to the cached kernel."""

    __slots__ = ("_pcache",)

    def __init__(self, name, infer, differentiable=True):
        super().__init__(name, infer, differentiable)
        self._pcache: dict = {}

    def __call__(self, a, b):  # type: ignore[override]
        if type(a) is NdArray:
            tb = type(b)
            if tb is NdArray:
                key = (a.dtype, b.dtype) if a.shape == b.shape else None
            else:
                key = (a.dtype, tb) if tb is float or tb is int else None
            d = self._pcache.get(key) if key is not None else None
            if d is not None:
                t = _dispatch_cache.get(_current.get(_context._default))
                e = t.get(self.name) if t is not None else None
                if e is not None and e[2] is None and not e[3]:
                    dev = e[1]
                    ca = a._copies.get(dev)
                    cb = b._copies.get(dev) if tb is NdArray else b
                    if ca is not None and cb is not None:
                        return NdArray._wrap(e[0](ca, cb), dev, (a.shape, d))
        if isinstance(a, GraphValue) or isinstance(b, GraphValue):
            return _opmod.graph_binary(self, a, b)
        metas = self.infer((a, b), {})
        if type(a) is NdArray:
            tb = type(b)
            if tb is NdArray and a.shape == b.shape:
                self._pcache[(a.dtype, b.dtype)] = metas[0][1]
            elif tb is float or tb is int:
                self._pcache[(a.dtype, tb)] = metas[0][1]
        return execute(self.name, (a, b), {}, metas)


_BINARY = ("add", "mul", "maximum", "minimum")
_COMPARE = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")

add, mul, maximum, minimum = (BinaryOp(n, _infer_binary(n)) for n in _BINARY)
sub = BinaryOp("sub", _infer_no_bool("sub"))
div = BinaryOp("div", _infer_div)
pow = BinaryOp("pow", _infer_pow)
equal, not_equal, less, less_equal, greater, greater_equal = (
    BinaryOp(n, _infer_compare(n), differentiable=False) for n in _COMPARE)
neg = Op("neg", _infer_same("neg", allow_bool=False))
abs = Op("abs", _infer_same("abs"))
sign = Op("sign", _infer_same("sign", allow_bool=False), differentiable=False)
relu = Op("relu", _infer_same("relu"))
exp = Op("exp", _infer_float("exp", np.exp))
log = Op("log", _infer_float("log", np.log))
sqrt = Op("sqrt", _infer_float("sqrt", np.sqrt))
tanh = Op("tanh", _infer_float("tanh", np.tanh))
sigmoid = Op("sigmoid", _infer_float("sigmoid", np.exp))
leaky_relu = Op("leaky_relu", _infer_leaky_relu)
clip = Op("clip", _infer_clip)
cast = Op("cast", _infer_cast)
where = Op("where", _infer_where)


def inplace(op: Op, a: Any, b: Any) -> Any:
    """``a op= b`` really in place: the result is written into ``a``'s storage."""
    if type(a) is not NdArray:
        return a._inplace(op, b)  # graph values define their own in-place semantics
    if type(b) is NdArray and b.shape == a.shape and isinstance(op, BinaryOp) and \
            op._pcache.get((a.dtype, b.dtype)) == a.dtype:
        # Fast path (solver updates): same shape, result dtype already a's, cached kernel.
        t = _dispatch_cache.get(_current.get(_context._default))
        e = t.get(op.name) if t is not None else None
        if e is not None and e[2] is None and not e[3]:
            bn = b._copies.get(e[1])
            if bn is not None:
                an = a._access("rw", e[1])
                e[0](an, bn, out=an)
                return a
    ((shape, dt),) = op.infer((a, b), {})
    if type(b) is NdArray and b.shape == a.shape and isinstance(op, BinaryOp):
        op._pcache[(a.dtype, b.dtype)] = dt
    if shape != a.shape:
        raise ShapeError(f"{op.name} (in place): result shape {shape} differs from the "
                         f"target's shape {a.shape}")
    if not np.can_cast(dt, a.dtype, "same_kind"):
        raise DTypeError(f"{op.name} (in place): cannot store a {dt} result in a {a.dtype} "
                         "array (same_kind casting)")
    fn, dev, _, composite = resolve(op.name, get_current_context())
    bn = b._read(dev) if type(b) is NdArray else b
    if composite:
        a.copy_from(op(a, b))
        return a
    an = a._access("rw", dev)
    fn(an, bn, out=an)
    return a


def assign(dst: Any, src: Any) -> None:
    """Write ``src`` (same shape, any dtype) into ``dst`` on the current context."""
    if src.shape != dst.shape:
        raise ShapeError(f"assign: source shape {src.shape} differs from target {dst.shape}")
    fn, dev, _, _ = resolve("cast", get_current_context())
    sn = src._read(dev) if type(src) is NdArray else src
    fn(sn, dst.dtype, out=dst._access("w", dev))


# -- backward rules (written with F, so every backend differentiates) ------------------
from .backward import F as _F  # noqa: E402
from .backward import backward as _backward  # noqa: E402
from .backward import fit as _fit  # noqa: E402


@_backward(add)
def _add_grad(c, g):
    return (_fit(c, 0, g) if c.need[0] else None, _fit(c, 1, g) if c.need[1] else None)


@_backward(sub)
def _sub_grad(c, g):
    return (_fit(c, 0, g) if c.need[0] else None, _fit(c, 1, -g) if c.need[1] else None)


@_backward(mul, inputs=(0, 1))
def _mul_grad(c, g):
    a, b = c.inputs
    if c.args[0] is c.args[1] and c.need[0]:  # x * x: one gradient, 2 * g * x
        return _fit(c, 0, g * (a * 2.0)), None
    return (_fit(c, 0, g * b) if c.need[0] else None,
            _fit(c, 1, g * a) if c.need[1] else None)


@_backward(div, inputs=(0, 1))
def _div_grad(c, g):
    a, b = c.inputs
    ga = g / b
    return (_fit(c, 0, ga) if c.need[0] else None,
            _fit(c, 1, -(ga * a) / b) if c.need[1] else None)


@_backward(pow, inputs=(0, 1), outputs=(0,))
def _pow_grad(c, g):
    a, b = c.inputs
    ga = _fit(c, 0, g * (b * a ** (b - 1))) if c.need[0] else None
    gb = _fit(c, 1, g * c.outputs[0] * _F.log(a)) if c.need[1] else None
    return ga, gb


def _select_grad(pick_a):
    def rule(c, g):
        a, b = c.inputs
        m = pick_a(a, b)
        return (_fit(c, 0, where(m, g, 0.0)) if c.need[0] else None,
                _fit(c, 1, where(m, 0.0, g)) if c.need[1] else None)
    return rule


_backward(maximum, inputs=(0, 1))(_select_grad(greater_equal))
_backward(minimum, inputs=(0, 1))(_select_grad(less_equal))
_backward(neg)(lambda c, g: (-g,))
_backward(abs, inputs=(0,))(lambda c, g: (g * sign(c.inputs[0]),))
_backward(exp, outputs=(0,))(lambda c, g: (_fit(c, 0, g * c.outputs[0]),))
_backward(log, inputs=(0,))(lambda c, g: (_fit(c, 0, g / c.inputs[0]),))
_backward(sqrt, outputs=(0,))(lambda c, g: (_fit(c, 0, g * 0.5 / c.outputs[0]),))
_backward(relu, outputs=(0,))(lambda c, g: (g * greater(c.outputs[0], 0),))


@_backward(tanh, outputs=(0,))
def _tanh_grad(c, g):
    y = c.outputs[0]
    return (_fit(c, 0, g * (1.0 - y * y)),)


@_backward(sigmoid, outputs=(0,))
def _sigmoid_grad(c, g):
    y = c.outputs[0]
    return (_fit(c, 0, g * (y * (1.0 - y))),)


@_backward(leaky_relu, inputs=(0,))
def _leaky_relu_grad(c, g):
    return (_fit(c, 0, where(greater(c.inputs[0], 0), g, g * c.attrs["alpha"])),)


@_backward(clip, inputs=(0,))
def _clip_grad(c, g):
    x = c.inputs[0]
    lo, hi = c.attrs.get("a_min"), c.attrs.get("a_max")
    if lo is not None:
        g = where(less(x, lo), 0.0, g)
    if hi is not None:
        g = where(greater(x, hi), 0.0, g)
    return (_fit(c, 0, g),)


_backward(cast)(lambda c, g: (_fit(c, 0, g),))


@_backward(where, inputs=(0,))
def _where_grad(c, g):
    m = c.inputs[0]
    return (None, _fit(c, 1, where(m, g, 0.0)) if c.need[1] else None,
            _fit(c, 2, where(m, 0.0, g)) if c.need[2] else None)
