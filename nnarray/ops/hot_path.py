"""``F``'s hot paths: the elementwise Op classes and the functions ``F`` exports for them.

``BinaryOp`` and ``UnaryOp`` are the ops of the rows (``ops/ufuncs.py``; their specs, with
inference and backward, are ``ops/elementwise.py``). Their ``function()`` is the plain
function ``F`` exports: on NdArrays it reads the result dtype from the op's meta cache and
runs the dispatched Kernel's ``fast`` path, skipping what it validated once. Python int
operands outside the dtype the op computes in get numpy 2's answers here (NEP 50).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes, late
from ..context import dispatch_context, scope_var
from ..ndarray import NdArray
from ..registry import dispatch
from . import autocast as _autocast
from .op import CACHE_LIMIT, GraphValue, Op, name_result
from .ufuncs import BY_NAME

_F: Any = late.bind(__name__, "_F", "nnarray.functions")
_protocol: Any = late.bind(__name__, "_protocol", "nnarray.numpy_protocol")

_promote = dtypes.promote

#: ``{integer dtype: (min, max)}``: the Python ints an op computing in it can take.
INT_RANGES = {np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
               for t in (np.int8, np.int16, np.int32, np.int64,
                         np.uint8, np.uint16, np.uint32, np.uint64)}


def wide_int(a: Any, b: Any, d: np.dtype) -> int | None:
    """The Python int among ``a``, ``b`` outside the range of ``d`` (the integer dtype
    the op computes in), else ``None``."""
    r = INT_RANGES.get(d)
    if r is None:
        return None
    for v in (a, b):
        if type(v) is int and not r[0] <= v <= r[1]:
            return v
    return None


def check_int_fits(name: str, a: Any, b: Any, d: np.dtype) -> None:
    """numpy 2's ``OverflowError`` for a Python int ``d`` cannot hold (NEP 50: it is
    never wrapped, in eager calls, graphs and fused kernels alike)."""
    v = wide_int(a, b, d)
    if v is not None:
        shapes = ", ".join(str(getattr(x, "shape", ())) for x in (a, b))
        raise OverflowError(f"{name}: Python integer {v} out of bounds for {d} "
                            f"(operand shapes {shapes})")



#: ``x OP c`` for an integer ``x`` and a Python int ``c`` above (first) or below
#: (second) every value of ``x``'s dtype: the same for every element.
_CONSTANT_COMPARE = {"equal": (False, False), "not_equal": (True, True),
                     "less": (True, False), "less_equal": (True, False),
                     "greater": (False, True), "greater_equal": (False, True)}


def out_of_range(op: Any, a: Any, b: Any) -> Any:
    """``op(a, b)`` where a Python int operand is outside the integer dtype the op would
    compute in, else ``None``: numpy 2's answer for a comparison (constant: ``x == x`` or
    ``x != x`` of the array operand, so graphs record it like any other),
    ``OverflowError`` for any other op whose result is an integer (a float result takes
    any int). A logical op takes any int's truth (``0`` or ``1`` in its place)."""
    rule = BY_NAME[op.name].rule
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
    v = wide_int(a, b, d)
    if v is None:
        return None
    if rule != "compare":
        check_int_fits(op.name, a, b, d)
    above, below = _CONSTANT_COMPARE[op.name]
    truth = above if v > 0 else below
    if a is v:  # ``c OP x`` is ``x OP' c`` with the order reversed
        truth = (below if v > 0 else above) if op.name not in ("equal", "not_equal") \
            else truth
    return (_F.equal if truth else _F.not_equal).op(x, x)



def short_key(a: Any, b: Any) -> Any:
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
    reads the result dtype from the op's meta cache under the short key (``short_key``,
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
            r = out_of_range(self, a, b)
            if r is not None:
                return r
        if isinstance(a, GraphValue):
            return a._record_binary(self, a, b)
        if isinstance(b, GraphValue):
            return b._record_binary(self, a, b)
        metas = self.out_metas((a, b), {})
        return self.kernel((a, b)).run((a, b), {}, metas)

    def out_metas(self, inputs: Any, attrs: dict) -> tuple:
        """``Op.out_metas`` with the short key (``short_key``) first; a miss fills it
        for the fast paths (pow's too, whose inference reads a scalar exponent's value:
        it is not ``pure`` and infers every call here)."""
        a, b = inputs
        k = short_key(a, b)
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
        ranges = INT_RANGES
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
                if tb is NdArray:  # the short key (``short_key``), inlined
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
