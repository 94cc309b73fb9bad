"""Elementwise op specs: numpy broadcasting and promotion, Python scalars weak.

Every function is declared once, as a row of ``ops/ufuncs.py`` (dtype rule, derivative,
numpy function, C expressions, ONNX op, Array API names); ``BINARY`` and ``UNARY`` here
are the ops' view of those rows (inference and backward rules), and each backend builds
its kernels from the same rows. Adding a function is one row there plus its tests. The
ops' classes and ``F``'s fast functions for them are ``ops/hot_path.py``; in-place writes
``ops/inplace.py``.

Kernel contract (native arrays or Python/numpy scalars in, a new C-contiguous native
array out): binary ``name(a, b, out=None)``; unary ``name(x, out=None)``;
``leaky_relu(x, alpha)``; ``clip(x, a_min, a_max)``; ``cast(x, dtype, out=None)``;
``where(cond, x, y)``. When ``out`` is given the kernel writes into it (it has the
broadcast shape and its own dtype, possibly narrower: cast same_kind) and returns it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..errors import DTypeError
from . import autocast as _autocast
from . import ufuncs as _ufuncs
from .backward import backward as _backward
from .backward import fit as _fit
from .common import broadcast, check_int_pow, require_array, require_ordered
from .hot_path import BinaryOp, UnaryOp, check_int_fits
from .op import Op

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
        d = _promote(name, a, b)
        check_int_fits(name, a, b, d)
        return ((broadcast(name, inputs), d),)
    return infer


def _infer_compare(name: str):
    def infer(inputs, attrs):
        a, b = inputs
        _array_operand(name, a, b)
        check_int_fits(name, a, b, _promote(name, a, b))  # BinaryOp answers them first
        return ((broadcast(name, inputs), _BOOL),)
    return infer



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
    require_ordered("clip", (x, lo, hi), ("x", "a_min", "a_max"))
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



def _infer_div(inputs, attrs):
    a, b = inputs
    _array_operand("div", a, b)
    d = _promote("div", a, b)
    if d not in dtypes.INEXACT:
        d = np.dtype(np.float64)
    return ((broadcast("div", inputs), d),)


def _infer_float2(name: str):
    def infer(inputs, attrs):
        a, b = inputs
        _array_operand(name, a, b)
        return ((broadcast(name, inputs), binary_dtype(name, _promote(name, a, b))),)
    return infer


def _infer_kinds(name: str, kinds: str, what: str):
    base = _infer_binary(name)

    def infer(inputs, attrs):
        (meta,) = base(inputs, attrs)
        for arg, v in zip("ab", inputs):
            d = getattr(v, "dtype", None)
            if d is None:
                d = np.dtype({bool: np.bool_, int: np.int64}.get(type(v), np.float64))
            if d.kind not in kinds:
                raise DTypeError(f"{name}: argument '{arg}' must be {what}, got {d} (shapes "
                                 f"{getattr(inputs[0], 'shape', ())}, "
                                 f"{getattr(inputs[1], 'shape', ())})")
        if meta[1].kind not in kinds:  # uint64 with a signed integer promotes to float64
            a, b = (getattr(v, "dtype", type(v).__name__) for v in inputs)
            raise DTypeError(f"{name}: arguments 'a' ({a}) and 'b' ({b}) have no common "
                             f"integer type (they promote to {meta[1]}; the standard leaves "
                             "uint64 with signed integers undefined): cast one of them")
        return (meta,)
    return infer


def binary_dtype(name: str, d: np.dtype) -> np.dtype:
    """The result dtype of binary function ``name`` whose operands promote to ``d``
    (backends building kernels use this rather than rederiving it)."""
    rule = BINARY[name][0]
    if rule in ("compare", "logical"):
        return _BOOL
    if rule == "div" and d not in dtypes.INEXACT:
        return np.dtype(np.float64)
    if rule == "float" and d in dtypes.COMPLEX:
        raise DTypeError(f"{name}: complex operands are not supported (got {d})")
    if rule == "float" and d not in dtypes.FLOATS:
        return dtypes.ufunc_dtype(np.exp, d, name)
    return d


def _infer_pow(name: str):
    base = _infer_no_bool(name)

    def infer(inputs, attrs):
        check_int_pow(*inputs)  # a scalar exponent fails while a graph is built; kernels
        return base(inputs, attrs)  # check array exponents (the fast path skips infer)
    return infer


_BINARY_RULES = {"arith": _infer_binary, "no_bool": _infer_no_bool, "compare": _infer_compare,
                 "logical": _infer_compare, "div": lambda name: _infer_div, "pow": _infer_pow,
                 "float": _infer_float2,
                 "integral": lambda name: _infer_kinds(name, "biu", "an integer or bool"),
                 "int": lambda name: _infer_kinds(name, "iu", "an integer")}

#: Binary elementwise functions: name -> (dtype rule, retained values, d/da, d/db), read
#: from their declarations (``ops/ufuncs.py``). Rules: "arith" numpy promotion; "no_bool"
#: the same, bool refused; "pow" that, and no integer to a negative integer power; "div"
#: float results (integers give float64); "compare" bool results; "logical" the same for
#: any operands; "float" numpy's floating result (like the unary "float"); "integral"
#: integer or bool operands; "int" integer operands. Each derivative maps the retained
#: operands ``a``, ``b`` (listed as "ab"; else ``None``), the output ``y`` (listed as
#: "y") and the output gradient ``g`` to that operand's gradient, before broadcasting is
#: undone; ``None``: not differentiable.
BINARY: dict[str, tuple] = {r.name: (r.rule, r.keep, *(r.grad or (None, None)))
                            for r in _ufuncs.ROWS if r.arity == 2}

#: Unary elementwise functions: name -> (dtype rule, retained values, derivative), read
#: from their declarations. Rules: "any" the input's dtype; "numeric" the same, bool
#: refused; "float" numpy's floating result (float16 stays, integers give float64);
#: "integral" the input's dtype, floats refused; "pred" bool results. The derivative maps
#: the retained input ``x`` and output ``y`` (named in the second field) and the output
#: gradient ``g`` to the input gradient; ``None``: not differentiable.
UNARY: dict[str, tuple] = {r.name: (r.rule, r.keep, r.grad[0] if r.grad else None)
                           for r in _ufuncs.ROWS if r.arity == 1}


def unary_dtype(name: str, dtype: np.dtype) -> np.dtype:
    """The result dtype of unary function ``name`` on ``dtype`` (``DTypeError`` if none);
    backends building kernels use this rather than rederiving it."""
    rule = UNARY[name][0]
    if rule == "float":
        return dtypes.ufunc_dtype(np.exp, dtype, name)
    if rule == "numeric" and dtype == _BOOL:
        raise DTypeError(f"{name}: argument 'x' must be numeric, got bool")
    if rule == "integral" and dtype.kind == "f":
        raise DTypeError(f"{name}: argument 'x' must be an integer or bool, got {dtype}")
    if rule == "pred":
        return _BOOL
    if name in _MODULUS and dtype.kind == "c":  # |z|: the real dtype of that precision
        return dtypes.real_of(dtype)
    return dtype


#: Unary rows real-valued on complex input (``abs``: the modulus).
_MODULUS = ("abs",)


def _infer_unary(name: str):
    rule = UNARY[name][0]
    if rule == "float":
        return _infer_float(name, np.exp)
    if rule in ("pred", "integral") or name in _MODULUS:
        def infer(inputs, attrs):
            (x,) = inputs
            require_array(name, "x", x)
            try:
                return ((x.shape, unary_dtype(name, x.dtype)),)
            except DTypeError as err:
                raise DTypeError(f"{err} (shape {x.shape})") from None
        return infer
    return _infer_same(name, allow_bool=rule == "any")


def _binary_rule(da: Any, db: Any, diag: Any = None) -> Any:
    """The rule of a row's derivatives; ``diag`` (the row's) where both operands are one
    value (``x * x``: one gradient, not two summed)."""
    def rule(c, g):
        a, b = (_cj(v) for v in c.inputs) if c.inputs else (None, None)
        y = _cj(c.outputs[0]) if c.outputs else None
        if diag is not None and c.args[0] is c.args[1] and c.need[0]:
            return _fit(c, 0, diag(a, y, g)), None
        return (_fit(c, 0, da(a, b, y, g)) if c.need[0] else None,
                _fit(c, 1, db(a, b, y, g)) if c.need[1] else None)
    return rule


def _unary_rule(fn: Any, holomorphic: bool = True) -> Any:
    """The rule of a row's derivative ``fn``; a ``holomorphic`` row's runs on conjugated
    operands (``_cj``); ``abs`` (real-valued) gives ``g * sign(z)`` as it is (PyTorch)."""
    cj = _cj if holomorphic else (lambda v: v)

    def rule(c, g):
        x = cj(c.inputs[0]) if c.inputs else None
        y = cj(c.outputs[0]) if c.outputs else None
        return (_fit(c, 0, fn(x, y, g)),)
    return rule


def _cj(v: Any) -> Any:
    """``conj(v)`` of a complex value, else ``v``. The rows' derivatives ``f'`` are those of
    holomorphic functions with real Taylor coefficients, for which PyTorch's gradient
    ``g * conj(f'(z))`` is ``g * f'(conj(z))``: the rules run on conjugated operands."""
    if isinstance(v, (complex, np.complexfloating)):
        return v.conjugate()
    if getattr(v, "dtype", None) is not None and v.dtype.kind == "c":
        from .complex import conj
        return conj(v)
    return v


#: Binary rows that order their operands: ``DTypeError`` for complex ones on every backend
#: (the standard leaves complex ordering unspecified), before any kernel is looked up.
ORDERED = frozenset({"less", "less_equal", "greater", "greater_equal", "maximum", "minimum"})


def _ordered(name: str, infer: Any) -> Any:
    def checked(inputs, attrs):
        require_ordered(name, inputs, ("a", "b"))
        return infer(inputs, attrs)
    return checked


#: pow's inference reads a scalar exponent's value (``check_int_pow``): not ``pure``.
_binary_ops = {n: BinaryOp(n, (_ordered(n, _BINARY_RULES[rule](n)) if n in ORDERED else
                               _BINARY_RULES[rule](n)), differentiable=da is not None,
                           pure=rule != "pow")
               for n, (rule, _, da, _) in BINARY.items()}
_unary_ops = {n: UnaryOp(n, _infer_unary(n), differentiable=d is not None, pure=True)
              for n, (_, _, d) in UNARY.items()}
#: Every table-declared elementwise op by name (``nnarray.functions`` exports them).
ops: dict[str, Op] = {**_binary_ops, **_unary_ops}
#: What ``F`` exports for them: their fast functions (``fn.op`` is the op).
functions: dict[str, Any] = {n: o.function() for n, o in ops.items()}

add, sub, mul, div, pow = (_binary_ops[n] for n in ("add", "sub", "mul", "div", "pow"))
maximum, minimum = _binary_ops["maximum"], _binary_ops["minimum"]
equal, not_equal, less, less_equal, greater, greater_equal = (
    _binary_ops[n] for n in ("equal", "not_equal", "less", "less_equal", "greater",
                             "greater_equal"))
neg, abs, sign, relu, exp, log, sqrt, tanh, sigmoid = (
    _unary_ops[n] for n in ("neg", "abs", "sign", "relu", "exp", "log", "sqrt", "tanh",
                            "sigmoid"))
sin, cos, sinh, cosh = (_unary_ops[n] for n in ("sin", "cos", "sinh", "cosh"))
signbit, floor_divide = _unary_ops["signbit"], _binary_ops["floor_divide"]
leaky_relu = Op("leaky_relu", _infer_leaky_relu)
clip = Op("clip", _infer_clip)
cast = Op("cast", _infer_cast)
_autocast.cast_op[0] = cast
where = Op("where", _infer_where, pure=True)

for _n, (_, _keep, _da, _db) in BINARY.items():
    if _da is not None:
        _backward(ops[_n], inputs=(0, 1) if "ab" in _keep else (),
                  outputs=(0,) if "y" in _keep else ())(
            _binary_rule(_da, _db, _ufuncs.BY_NAME[_n].diag))
for _n, (_, _keep, _d) in UNARY.items():
    if _d is not None:
        _backward(ops[_n], inputs=(0,) if "x" in _keep else (),
                  outputs=(0,) if "y" in _keep else ())(_unary_rule(_d, _n not in _MODULUS))


# -- backward rules of the functions outside the tables (written with F) -----------
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
