"""Elementwise ops: numpy broadcasting and promotion, Python scalars weak.

Every function is declared once, as a row of ``ops/ufuncs.py`` (dtype rule, derivative,
numpy function, C expression, ONNX op, Array API names); ``BINARY`` and ``UNARY`` here
are the ops' view of those rows, and each backend builds its kernels from the same rows.
Adding a function is one row there plus its tests.

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
from .. import dtypes, late
from ..context import dispatch_context, scope_var
from ..errors import DTypeError, ShapeError
from ..ndarray import NdArray
from ..registry import dispatch
from . import autocast as _autocast
from . import ufuncs as _ufuncs
from .backward import backward as _backward
from .backward import fit as _fit
from .common import broadcast, check_int_pow, require_array, require_ordered
from .op import CACHE_LIMIT, GraphValue, Op, name_result

_F: Any = late.bind(__name__, "_F", "nnarray.functions")
_protocol: Any = late.bind(__name__, "_protocol", "nnarray.numpy_protocol")

_promote = dtypes.promote
_BOOL = np.dtype(np.bool_)


def _array_operand(op: str, a: Any, b: Any) -> None:
    if dtypes.is_scalar(a) and dtypes.is_scalar(b):
        raise TypeError(f"{op}: at least one operand must be an NdArray or Variable")


#: ``{integer dtype: (min, max)}``: the Python ints an op computing in it can take.
_INT_RANGES = {np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
               for t in (np.int8, np.int16, np.int32, np.int64,
                         np.uint8, np.uint16, np.uint32, np.uint64)}


def _wide_int(a: Any, b: Any, d: np.dtype) -> int | None:
    """The Python int among ``a``, ``b`` outside the range of ``d`` (the integer dtype
    the op computes in), else ``None``."""
    r = _INT_RANGES.get(d)
    if r is None:
        return None
    for v in (a, b):
        if type(v) is int and not r[0] <= v <= r[1]:
            return v
    return None


def _check_int_fits(name: str, a: Any, b: Any, d: np.dtype) -> None:
    """numpy 2's ``OverflowError`` for a Python int ``d`` cannot hold (NEP 50: it is
    never wrapped, in eager calls, graphs and fused kernels alike)."""
    v = _wide_int(a, b, d)
    if v is not None:
        shapes = ", ".join(str(getattr(x, "shape", ())) for x in (a, b))
        raise OverflowError(f"{name}: Python integer {v} out of bounds for {d} "
                            f"(operand shapes {shapes})")


def _infer_binary(name: str):
    def infer(inputs, attrs):
        a, b = inputs
        sa = getattr(a, "shape", None)
        if sa is not None and sa == getattr(b, "shape", None):
            return ((sa, _promote(name, a, b)),)
        _array_operand(name, a, b)
        d = _promote(name, a, b)
        _check_int_fits(name, a, b, d)
        return ((broadcast(name, inputs), d),)
    return infer


def _infer_compare(name: str):
    def infer(inputs, attrs):
        a, b = inputs
        _array_operand(name, a, b)
        _check_int_fits(name, a, b, _promote(name, a, b))  # BinaryOp answers them first
        return ((broadcast(name, inputs), _BOOL),)
    return infer


#: ``x OP c`` for an integer ``x`` and a Python int ``c`` above (first) or below
#: (second) every value of ``x``'s dtype: the same for every element.
_CONSTANT_COMPARE = {"equal": (False, False), "not_equal": (True, True),
                     "less": (True, False), "less_equal": (True, False),
                     "greater": (False, True), "greater_equal": (False, True)}


def _out_of_range(op: Any, a: Any, b: Any) -> Any:
    """``op(a, b)`` where a Python int operand is outside the integer dtype the op would
    compute in, else ``None``: numpy 2's answer for a comparison (constant: ``x == x`` or
    ``x != x`` of the array operand, so graphs record it like any other),
    ``OverflowError`` for any other op whose result is an integer (a float result takes
    any int). A logical op takes any int's truth (``0`` or ``1`` in its place)."""
    rule = BINARY[op.name][0]
    if rule in ("div", "float"):
        return None
    x = b if type(a) is int else a
    if type(x) is int or type(x) is bool or getattr(x, "dtype", None) is None:
        return None
    if rule == "logical":  # only its truth counts (any int, the widest included)
        if type(a) is int and a not in (0, 1):
            return op(int(bool(a)), b)
        return op(a, int(bool(b))) if type(b) is int and b not in (0, 1) else None
    d = _promote(op.name, a, b)
    v = _wide_int(a, b, d)
    if v is None:
        return None
    if rule != "compare":
        _check_int_fits(op.name, a, b, d)
    above, below = _CONSTANT_COMPARE[op.name]
    truth = above if v > 0 else below
    if a is v:  # ``c OP x`` is ``x OP' c`` with the order reversed
        truth = (below if v > 0 else above) if op.name not in ("equal", "not_equal") \
            else truth
    return (ops["equal"] if truth else ops["not_equal"])(x, x)


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


def _short_key(a: Any, b: Any) -> Any:
    """The meta cache's short key of two elementwise operands whose result has ``a``'s
    shape: their dtypes where both are NdArrays or graph values of one shape (one dtype
    when they share it), ``(dtype, type)`` for ``b`` a Python float or int; else ``None``
    (the full key, ``op.meta_key``). The key maps to the result dtype."""
    if type(a) is not NdArray and not isinstance(a, GraphValue):
        return None
    tb = type(b)
    if tb is float or tb is int:
        return (a.dtype, tb)
    if (tb is not NdArray and not isinstance(b, GraphValue)) or a.shape != b.shape:
        return None
    da, db = a.dtype, b.dtype
    return da if da is db else (da, db)


class BinaryOp(Op):
    """A two-operand elementwise op. ``F`` exposes it through ``function()``: a plain
    function (cheaper to call than an object) whose fast path serves NdArrays of equal
    shape, or an NdArray and a Python scalar: F.add on tiny arrays is all dispatch, so it
    reads the result dtype from the op's meta cache under the short key (``_short_key``,
    filled by ``out_metas``); broadcast NdArrays read their metas under the full key
    (``meta_key``; pure ops only), as ``Op.out_metas`` filled it, and run through
    ``Kernel.run`` where ``a`` is not of the result's shape. It runs the Kernel
    ``registry.dispatch`` gives for the operands' context through ``Kernel.fast``,
    skipping validation it already did once (pow's kernels check its exponent's value).
    Inside a ``context_scope`` the Kernel is ``registry.dispatch``'s memo, read inline
    (two calls less: 80 ns of tiny add (2,3) f32 on OpenCL's 4.1 us; under 1% on numpy's
    1.45 us); elsewhere ``dispatch`` finds it."""

    __slots__ = ()
    elementwise = True

    def __call__(self, a, b, name=None):  # type: ignore[override]
        if name is not None:  # a graph node's name (see Op.__call__)
            return name_result(self(a, b), name, (a, b))
        if type(a) is np.ndarray or type(b) is np.ndarray:  # uploaded where the op runs
            a, b = _protocol.operands(a, b)
        if type(a) is int or type(b) is int:
            r = _out_of_range(self, a, b)
            if r is not None:
                return r
        if isinstance(a, GraphValue):
            return a._record_binary(self, a, b)
        if isinstance(b, GraphValue):
            return b._record_binary(self, a, b)
        metas = self.out_metas((a, b), {})
        return self.kernel((a, b)).run((a, b), {}, metas)

    def out_metas(self, inputs: Any, attrs: dict) -> tuple:
        """``Op.out_metas`` with the short key (``_short_key``) first; a miss fills it
        for the fast paths (pow's too, whose inference reads a scalar exponent's value:
        it is not ``pure`` and infers every call here)."""
        a, b = inputs
        k = _short_key(a, b)
        if k is None:
            return Op.out_metas(self, inputs, attrs)
        if self.pure:
            d = self.metas.get(k)
            if d is not None:
                return ((a.shape, d),)
        metas = self.infer(inputs, attrs)
        if len(self.metas) < CACHE_LIMIT:
            self.metas[k] = metas[0][1]
        return metas

    def function(self) -> Any:
        """The public ``F`` function of this op (``fn.op`` is the op)."""
        op, opname, metas, last = self, self.name, self.metas, self.last
        ranges = _INT_RANGES
        cast = opname in _autocast.POLICY  # then under autocast: the inputs cast first
        active = _autocast.ACTIVE

        def fn(a: Any, b: Any, name: Any = None) -> Any:
            if cast and active[0]:
                a, b = _autocast.cast_inputs(opname, (a, b))
            if name is not None:  # a graph node's name (``nnarray.grad.naming``)
                return op(a, b, name=name)
            if type(a) is NdArray:
                tb = type(b)
                # the slots behind ``shape``/``dtype`` (properties: checked setters)
                sa, da = a._shape, a._dtype
                if tb is NdArray:  # the short key (``_short_key``), inlined
                    if sa == b._shape:
                        db = b._dtype
                        d = metas.get(da) if da is db else metas.get((da, db))
                    else:  # a broadcast: the full key (``meta_key``), inlined
                        m = metas.get(((sa, da), (b._shape, b._dtype)))
                        if m is not None:
                            k = dispatch(op, dispatch_context((a, b), opname))
                            if m[0][0] == sa:  # ``fast`` sizes the result by a's
                                return k.fast(a, b, m[0])
                            return k.run((a, b), {}, m)
                        d = None
                elif tb is float:
                    d = metas.get((da, tb))
                elif tb is int:  # one that a's integer dtype cannot hold: ``op``
                    r = ranges.get(da)
                    d = metas.get((da, tb)) if r is None or r[0] <= b <= r[1] else None
                else:
                    d = None
                if d is not None:
                    c = scope_var.get(None)  # ``dispatch``'s memo hit, inlined
                    p = last[0]
                    if p[0] is c and c is not None and p[1].valid:
                        return p[1].fast(a, b, (sa, d))
                    return dispatch(op, dispatch_context((a, b), opname)).fast(
                        a, b, (sa, d))
            elif isinstance(a, GraphValue) and type(b) is not int:
                return a._record_binary(op, a, b)
            return op(a, b)
        fn.__name__ = fn.__qualname__ = opname
        fn.__doc__ = f"Elementwise ``{opname}`` with numpy broadcasting (see ``BINARY``)."
        fn.op = op  # type: ignore[attr-defined]
        return fn


class UnaryOp(Op):
    """A one-operand elementwise op, exposed in ``F`` through ``function()`` as
    ``BinaryOp`` is: the result dtype read from the meta cache under the input's dtype
    (the short key), the Kernel from ``registry.dispatch`` run through ``Kernel.fast``."""

    __slots__ = ()
    elementwise = True

    def __call__(self, x, name=None):  # type: ignore[override]
        if name is not None:
            return super().__call__(x, name=name)
        metas = self.out_metas((x,), {})
        if isinstance(x, GraphValue):
            return x._record(self, (x,), {}, metas)
        return self.kernel((x,)).run((x,), {}, metas)

    def out_metas(self, inputs: Any, attrs: dict) -> tuple:
        """``Op.out_metas`` keyed by the input's dtype (its shape is the result's)."""
        (x,) = inputs
        if type(x) is not NdArray and not isinstance(x, GraphValue):
            return self.infer(inputs, attrs)
        d = self.metas.get(x.dtype)
        if d is not None:
            return ((x.shape, d),)
        metas = self.infer(inputs, attrs)
        if len(self.metas) < CACHE_LIMIT:
            self.metas[x.dtype] = metas[0][1]
        return metas

    def function(self) -> Any:
        """The public ``F`` function of this op (``fn.op`` is the op)."""
        op, metas, last = self, self.metas, self.last
        cast = op.name in _autocast.POLICY  # then under autocast: the input cast first
        active = _autocast.ACTIVE

        def fn(x: Any, name: Any = None) -> Any:
            if cast and active[0]:
                (x,) = _autocast.cast_inputs(op.name, (x,))
            if type(x) is NdArray and name is None:
                d = metas.get(x._dtype)  # the slot behind ``dtype`` (a checked property)
                if d is not None:
                    c = scope_var.get(None)  # ``dispatch``'s memo hit, inlined
                    p = last[0]
                    if p[0] is c and c is not None and p[1].valid:
                        return p[1].fast(x, None, (x._shape, d))
                    return dispatch(op, dispatch_context((x,), op.name)).fast(
                        x, None, (x._shape, d))
            return op(x, name)
        fn.__name__ = fn.__qualname__ = op.name
        fn.__doc__ = f"Elementwise ``{op.name}`` (see ``UNARY``)."
        fn.op = op  # type: ignore[attr-defined]
        return fn


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

#: Unary elementwise functions: name -> (dtype rule, retained value, derivative), read
#: from their declarations. Rules: "any" the input's dtype; "numeric" the same, bool
#: refused; "float" numpy's floating result (float16 stays, integers give float64);
#: "integral" the input's dtype, floats refused; "pred" bool results. The derivative maps
#: the retained input ``x`` or output ``y`` (named in the second field) and the output
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


def _binary_rule(da: Any, db: Any) -> Any:
    def rule(c, g):
        a, b = (_cj(v) for v in c.inputs) if c.inputs else (None, None)
        y = _cj(c.outputs[0]) if c.outputs else None
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
                  outputs=(0,) if "y" in _keep else ())(_binary_rule(_da, _db))
for _n, (_, _keep, _d) in UNARY.items():
    if _d is not None:
        _backward(ops[_n], inputs=(0,) if _keep == "x" else (),
                  outputs=(0,) if _keep == "y" else ())(_unary_rule(_d, _n not in _MODULUS))


def inplace(op: Op, a: Any, b: Any) -> Any:
    """``a op= b`` really in place: the result is written into ``a``'s storage."""
    op = getattr(op, "op", op)  # F.add is the function of the op
    if type(a) is not NdArray:
        return a._inplace(op, b)  # graph values define their own in-place semantics
    k = dispatch(op, _context.dispatch_into(a, (a, b), op.name))
    if type(b) is NdArray and k.plain and isinstance(op, BinaryOp) and \
            op.metas.get(_short_key(a, b)) == a.dtype:
        return k.run_into(a, (a, b), {})  # the cached fast path (solver updates)
    ((shape, dt),) = op.out_metas((a, b), {})
    if shape != a.shape:
        raise ShapeError(f"{op.name} (in place): result shape {shape} differs from the "
                         f"target's shape {a.shape}")
    if not np.can_cast(dt, a.dtype, "same_kind"):
        raise DTypeError(f"{op.name} (in place): cannot store a {dt} result in a {a.dtype} "
                         "array (same_kind casting)")
    if k.composite:
        a.copy_from(op(a, b))
        return a
    return k.run_into(a, (a, b), {})


def assign(dst: Any, src: Any) -> None:
    """Write ``src`` (same shape, any dtype) into ``dst`` where ``dst`` is (or in the
    current scope)."""
    if src.shape != dst.shape:
        raise ShapeError(f"assign: source shape {src.shape} differs from target {dst.shape}")
    dispatch(cast, _context.dispatch_into(dst, (dst, src), "assign")).run_into(
        dst, (src,), {"dtype": dst.dtype}, mode="w")


# -- backward rules of the functions outside the tables (written with F) -----------
@_backward(mul, inputs=(0, 1))
def _mul_grad(c, g):
    a, b = (_cj(v) for v in c.inputs)
    if c.args[0] is c.args[1] and c.need[0]:  # x * x: one gradient, 2 * g * x
        return _fit(c, 0, g * (a * 2.0)), None
    return (_fit(c, 0, g * b) if c.need[0] else None,
            _fit(c, 1, g * a) if c.need[1] else None)


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
