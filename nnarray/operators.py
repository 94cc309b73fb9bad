"""Python operators, shape metadata and array conveniences shared by NdArray and
grad.Variable.

Every operator dispatches through ``nnarray.functions``, so an NdArray operand runs now
on the current context and a Variable operand records a graph node.
"""

from __future__ import annotations

from typing import Any

from . import late

# The layers above (this mixin is part of the array classes): bound at their import.
F: Any = late.bind(__name__, "F", "nnarray.functions")
_xp: Any = late.bind(__name__, "_xp", "nnarray.xp")
_values: Any = late.bind(__name__, "_values", "nnarray.values")
_protocol: Any = late.bind(__name__, "_protocol", "nnarray.numpy_protocol")


def _order(op: str, order: str) -> None:
    if order not in ("C", "A", "K"):
        raise TypeError(f"{op}: order={order!r} is not supported (arrays are row-major)")


def _numpy_kw(op: str, out: Any, kw: dict) -> None:
    """numpy's extra reduction keywords: accepted at their defaults, else a TypeError."""
    if out is not None:
        raise TypeError(f"{op}: out= is not supported (NdArrays are immutable results)")
    for k, v in kw.items():
        if k == "where" and v is True or k == "initial" and v is None:
            continue
        raise TypeError(f"{op}: unsupported numpy keyword {k}={v!r}")


class ArrayOperators:
    """Mixin: shape-derived metadata, arithmetic, comparison and in-place operators,
    indexing and shape methods (the class provides ``shape`` and ``dtype``)."""

    __slots__ = ()
    __array_priority__ = 1000  # numpy defers `ndarray op x` to our reflected operators

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def reshape(self, *shape: Any) -> Any:
        return F.reshape(self, shape[0] if len(shape) == 1 else shape)

    def transpose(self, *axes: Any) -> Any:
        return F.transpose(self, (axes[0] if len(axes) == 1 else axes) or None)

    @property
    def T(self) -> Any:
        """The axes reversed (``transpose()``: a view of an NdArray)."""
        return self.transpose()

    @property
    def mT(self) -> Any:
        """The last two axes swapped (a stack of matrix transposes)."""
        n = len(self.shape)
        if n < 2:
            raise ValueError(f"mT: needs at least 2 dimensions, shape is {self.shape}")
        return self.transpose(*range(n - 2), n - 1, n - 2)

    # Reductions accept numpy's keywords too, so np.sum(x), np.mean(x, axis=0), ... work
    # on NdArrays and Variables (numpy calls these methods with dtype=, out=, ...).
    def sum(self, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: bool = False, **numpy_kw: Any) -> Any:
        _numpy_kw("sum", out, numpy_kw)
        return _xp.sum(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def prod(self, axis: Any = None, dtype: Any = None, out: Any = None,
             keepdims: bool = False, **numpy_kw: Any) -> Any:
        _numpy_kw("prod", out, numpy_kw)
        return _xp.prod(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def mean(self, axis: Any = None, dtype: Any = None, out: Any = None,
             keepdims: bool = False, **numpy_kw: Any) -> Any:
        _numpy_kw("mean", out, numpy_kw)
        x = self if dtype is None else F.cast(self, dtype)
        return F.mean(x, axis, keepdims)

    def var(self, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0,
            keepdims: bool = False, **numpy_kw: Any) -> Any:
        _numpy_kw("var", out, numpy_kw)
        x = self if dtype is None else F.cast(self, dtype)
        return _xp.var(x, axis=axis, correction=ddof, keepdims=keepdims)

    def std(self, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0,
            keepdims: bool = False, **numpy_kw: Any) -> Any:
        _numpy_kw("std", out, numpy_kw)
        x = self if dtype is None else F.cast(self, dtype)
        return _xp.std(x, axis=axis, correction=ddof, keepdims=keepdims)

    def max(self, axis: Any = None, out: Any = None, keepdims: bool = False,
            **numpy_kw: Any) -> Any:
        _numpy_kw("max", out, numpy_kw)
        return F.max(self, axis, keepdims)

    def min(self, axis: Any = None, out: Any = None, keepdims: bool = False,
            **numpy_kw: Any) -> Any:
        _numpy_kw("min", out, numpy_kw)
        return F.min(self, axis, keepdims)

    def argmax(self, axis: Any = None, out: Any = None, keepdims: bool = False,
               **numpy_kw: Any) -> Any:
        _numpy_kw("argmax", out, numpy_kw)
        return F.argmax(self, axis, keepdims)

    def argmin(self, axis: Any = None, out: Any = None, keepdims: bool = False,
               **numpy_kw: Any) -> Any:
        _numpy_kw("argmin", out, numpy_kw)
        return F.argmin(self, axis, keepdims)

    def all(self, axis: Any = None, out: Any = None, keepdims: bool = False,
            **numpy_kw: Any) -> Any:
        _numpy_kw("all", out, numpy_kw)
        return _xp.all(self, axis=axis, keepdims=keepdims)

    def any(self, axis: Any = None, out: Any = None, keepdims: bool = False,
            **numpy_kw: Any) -> Any:
        _numpy_kw("any", out, numpy_kw)
        return _xp.any(self, axis=axis, keepdims=keepdims)

    # -- numpy's array methods and Python's value protocols (``nnarray.values``) ----------
    def flatten(self, order: str = "C") -> Any:
        """A 1-D copy."""
        _order("flatten", order)
        return F.reshape(self, (-1,))  # an op: a new array

    def ravel(self, order: str = "C") -> Any:
        """``x`` as 1-D (``reshape(-1)``)."""
        _order("ravel", order)
        return self.reshape(-1)

    def squeeze(self, axis: Any = None) -> Any:
        """``x`` without its length-1 axes (``axis``: those only; each must be 1)."""
        if axis is None:
            axis = tuple(i for i, s in enumerate(self.shape) if s == 1)
        return _xp.squeeze(self, axis)

    def unsqueeze(self, dim: int) -> Any:
        """torch's ``unsqueeze``: a length-1 axis inserted at ``dim`` (``-1``: last, as
        ``dim + ndim + 1``); an NdArray's result is a view, a Variable's a graph node."""
        nd = self.ndim
        if not isinstance(dim, int) or isinstance(dim, bool) or not -nd - 1 <= dim <= nd:
            raise IndexError(f"unsqueeze: dim {dim!r} is out of range [{-nd - 1}, {nd}] "
                             f"for shape {self.shape}")
        d = dim + nd + 1 if dim < 0 else dim
        return self[(slice(None),) * d + (None,)]

    def view(self, *shape: Any) -> Any:
        """torch's ``view``: ``reshape`` (an NdArray's is a view or raises; a Variable's
        a graph node)."""
        return self.reshape(*shape)

    def clip(self, min: Any = None, max: Any = None, out: Any = None,  # noqa: A002
             **numpy_kw: Any) -> Any:
        """``x`` limited to ``[min, max]`` (``nnarray.clip``)."""
        _numpy_kw("clip", out, numpy_kw)
        return _xp.clip(self, min, max)

    def abs(self) -> Any:
        return _xp.abs(self)

    def round(self, decimals: int = 0, out: Any = None) -> Any:
        """Rounded half to even at ``decimals`` digits, as ``np.round``."""
        _numpy_kw("round", out, {})
        return _values.round_array(self, decimals)

    def sort(self, axis: int | None = -1, kind: Any = None, order: Any = None, *,
             stable: Any = None) -> None:
        """Sort an NdArray in place along ``axis`` as ``numpy.ndarray.sort`` (returns
        ``None``); ``nnarray.sort(x)`` returns a sorted copy (differentiable on Variables)."""
        _values.sort_inplace(self, axis, order)

    def argsort(self, axis: int | None = -1, kind: Any = None, order: Any = None, *,
                stable: Any = None) -> Any:
        """The indices (int64) that sort ``x`` along ``axis`` (``None``: flattened)."""
        if order is not None:
            raise TypeError("argsort: order= is not supported (no structured dtypes)")
        x = self
        if axis is None:
            x, axis = F.reshape(x, (-1,)), 0
        return _xp.argsort(x, axis=axis)

    def tolist(self) -> Any:
        """Nested Python lists of the values (an explicit host read, as ``item()``)."""
        return _values.tolist(self)

    def __format__(self, spec: str) -> str:
        return _values.format_value(self, spec)

    def __round__(self, ndigits: int | None = None) -> Any:
        return _values.round_value(self, ndigits)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """numpy ufuncs as nnarray functions (``nnarray.numpy_protocol``)."""
        return _protocol.array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """numpy's array functions as nnarray functions (``nnarray.numpy_protocol``)."""
        return _protocol.array_function(func, types, args, kwargs)

    def __getitem__(self, key: Any) -> Any:
        return F.getitem(self, key)

    def __add__(self, o): return F.add(self, o)
    def __radd__(self, o): return F.add(o, self)
    def __sub__(self, o): return F.sub(self, o)
    def __rsub__(self, o): return F.sub(o, self)
    def __mul__(self, o): return F.mul(self, o)
    def __rmul__(self, o): return F.mul(o, self)
    def __truediv__(self, o): return F.div(self, o)
    def __rtruediv__(self, o): return F.div(o, self)
    def __pow__(self, o): return F.pow(self, o)
    def __rpow__(self, o): return F.pow(o, self)
    def __floordiv__(self, o): return F.floor_divide(self, o)
    def __rfloordiv__(self, o): return F.floor_divide(o, self)
    def __mod__(self, o): return F.remainder(self, o)
    def __rmod__(self, o): return F.remainder(o, self)
    def __and__(self, o): return F.bitwise_and(self, o)
    def __rand__(self, o): return F.bitwise_and(o, self)
    def __or__(self, o): return F.bitwise_or(self, o)
    def __ror__(self, o): return F.bitwise_or(o, self)
    def __xor__(self, o): return F.bitwise_xor(self, o)
    def __rxor__(self, o): return F.bitwise_xor(o, self)
    def __lshift__(self, o): return F.bitwise_left_shift(self, o)
    def __rlshift__(self, o): return F.bitwise_left_shift(o, self)
    def __rshift__(self, o): return F.bitwise_right_shift(self, o)
    def __rrshift__(self, o): return F.bitwise_right_shift(o, self)
    def __invert__(self): return F.bitwise_invert(self)
    def __matmul__(self, o): return F.matmul(self, o)
    def __rmatmul__(self, o): return F.matmul(o, self)
    def __neg__(self): return F.neg(self)
    def __pos__(self): return self
    def __abs__(self): return _xp.abs(self)
    def __lt__(self, o): return F.less(self, o)
    def __le__(self, o): return F.less_equal(self, o)
    def __gt__(self, o): return F.greater(self, o)
    def __ge__(self, o): return F.greater_equal(self, o)
    def __eq__(self, o): return F.equal(self, o)  # type: ignore[override]
    def __ne__(self, o): return F.not_equal(self, o)  # type: ignore[override]
    __hash__ = None  # type: ignore[assignment]  (== is elementwise, as in numpy)

    def __iadd__(self, o): return F.inplace(F.add, self, o)
    def __isub__(self, o): return F.inplace(F.sub, self, o)
    def __imul__(self, o): return F.inplace(F.mul, self, o)
    def __itruediv__(self, o): return F.inplace(F.div, self, o)
    def __ipow__(self, o): return F.inplace(F.pow, self, o)
    def __ifloordiv__(self, o): return F.inplace(F.floor_divide, self, o)
    def __imod__(self, o): return F.inplace(F.remainder, self, o)
    def __iand__(self, o): return F.inplace(F.bitwise_and, self, o)
    def __ior__(self, o): return F.inplace(F.bitwise_or, self, o)
    def __ixor__(self, o): return F.inplace(F.bitwise_xor, self, o)
    def __ilshift__(self, o): return F.inplace(F.bitwise_left_shift, self, o)
    def __irshift__(self, o): return F.inplace(F.bitwise_right_shift, self, o)
