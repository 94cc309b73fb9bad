"""numpy's dispatch protocols on NdArrays and Variables (``__array_ufunc__``,
``__array_function__``): ``np.exp(x)``, ``np.add(x, y)``, ``np.concatenate([x, y])``,
``np.where(c, x, y)``, ... run as nnarray functions where the data is and return
NdArrays (Variables record graph nodes). numpy arrays and sequences among the operands
are uploaded there once (explicit, counted transfers). A function, ufunc method or
argument with no counterpart runs numpy on host views of the operands (``numpy_host``:
zero-copy for host arrays, one counted read for device arrays, ``TransferError`` under
``strict_transfers(implicit_reads=True)``). ``np.asarray(x)`` goes through ``__array__``.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from . import functions as F
from . import late
from . import linalg as L
from . import numpy_counterparts as _counterparts
from . import numpy_host as _host
from .errors import DTypeError, ShapeError
from .ndarray import NdArray
from .numpy_host import HostOnly, _is_array, operands
from .operators import ArrayOperators
from .ops import surfaces as _surfaces
from .ops.common import norm_axis
from .ops.elementwise import functions as ew_functions
from .ops.ufuncs import ROWS
from .values import ndarray_of

#: the ``nnarray`` namespace (the package imports this module first)
nna: Any = late.bind(__name__, "nna", "nnarray")

_NO = object()  # an argument not given


def unsupported(what: str, arg: str) -> HostOnly:
    """The signal for an argument of a numpy function that nnarray does not take: numpy
    runs the call on the host instead (``numpy_host``)."""
    return HostOnly(f"{what}: {arg} is not supported on NdArrays")


def _cast(xs: list, dtype: Any) -> list:
    return [F.cast(x, dtype) if _is_array(x) and x.dtype != np.dtype(dtype) else x
            for x in xs]


# -- ufuncs ------------------------------------------------------------------------------
#: numpy ufunc name -> nnarray namespace function name, for the ufuncs beside the declared
#: elementwise functions' own (``_declared``).
_RENAMED = {"fabs": "abs", "rint": "round", "conjugate": "conj"}
_SAME = ("reciprocal", "matmul")


def _declared() -> dict[str, Callable]:
    """numpy ufunc name -> the function, for every declared elementwise function whose
    numpy (or ``scipy.special``) function is a ufunc (``ops/ufuncs.py``)."""
    t: dict[str, Callable] = {}
    for r in ROWS:
        if not isinstance(r.xp, str):
            continue
        if "." in r.xp:  # scipy.special's ufuncs dispatch here too
            t[r.xp.rsplit(".", 1)[1]] = ew_functions[r.name]
        elif isinstance(getattr(np, r.xp), np.ufunc):
            t[getattr(np, r.xp).__name__] = ew_functions[r.name]
    return t


def _deg2rad(x: Any) -> Any:
    return nna.multiply(x, np.pi / 180)


def _rad2deg(x: Any) -> Any:
    return nna.multiply(x, 180 / np.pi)


#: ``ufunc.reduce`` and ``ufunc.accumulate`` -> the reduction or scan.
_REDUCE = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
           "logical_and": "all", "logical_or": "any"}
_ACCUMULATE = {"add": "cumulative_sum", "multiply": "cumulative_prod"}
_TYPED = ("sum", "prod", "cumulative_sum", "cumulative_prod")  # take dtype=


@functools.cache
def _ufuncs() -> dict[str, Callable]:
    """numpy ufunc name -> the nnarray function."""
    t = _declared()
    t.update({n: getattr(nna, n) for n in _SAME})
    t.update({n: getattr(nna, m) for n, m in _RENAMED.items()})
    t.update({"exp2": lambda x: nna.pow(2.0, x), "deg2rad": _deg2rad, "radians": _deg2rad,
              "rad2deg": _rad2deg, "degrees": _rad2deg,
              "divmod": lambda a, b: (nna.floor_divide(a, b), nna.remainder(a, b))})
    return t


def _at_default(v: Any, default: Any) -> bool:
    return type(v) is type(default) and v == default


def _shown(v: Any) -> str:
    """``v`` for a message (an array by its type: its repr would read it)."""
    return type(v).__name__ if _is_array(v) or isinstance(v, np.ndarray) else repr(v)


def _defaults(what: str, kw: dict) -> None:
    """numpy's ufunc keywords other than ``out`` and ``dtype``: at their defaults only."""
    ok = {"where": True, "casting": "same_kind", "order": "K", "subok": True}
    for k, v in kw.items():
        if k not in ok or not _at_default(v, ok[k]):
            raise unsupported(what, f"{k}={_shown(v)}")


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """``ufunc.method(*inputs, **kwargs)`` with nnarray functions, else numpy's on the
    host (``numpy_host``)."""
    try:
        return _ufunc(ufunc, method, inputs, dict(kwargs))
    except HostOnly:
        return _host.ufunc(ufunc, method, inputs, kwargs)


def _ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    name = ufunc.__name__
    what = f"np.{name}" if method == "__call__" else f"np.{name}.{method}"
    out = kwargs.pop("out", None)
    dtype = kwargs.pop("dtype", None)
    if method == "__call__":
        fn = _ufuncs().get(name)
        if fn is None:
            raise HostOnly(what)
        _defaults(what, kwargs)
        xs = operands(*inputs)
        result = fn(*(xs if dtype is None else _cast(xs, dtype)))
    elif method in ("reduce", "accumulate") and name in (
            _REDUCE if method == "reduce" else _ACCUMULATE):
        result = _reduce(name, method, what, inputs, kwargs, dtype)
    elif method == "outer" and name in _ufuncs() and len(inputs) == 2:
        _defaults(what, kwargs)
        a, b = operands(*inputs)
        if _is_array(a):
            a = F.reshape(a, a.shape + (1,) * getattr(b, "ndim", 0))
        result = _ufuncs()[name](a, b)
    else:
        raise HostOnly(what)
    return write_out(what, result, out)


def _reduce(name: str, method: str, what: str, inputs: tuple, kw: dict, dtype: Any) -> Any:
    (x,) = operands(*inputs)
    axis = kw.pop("axis", 0)
    keepdims = kw.pop("keepdims", False)
    initial = kw.pop("initial", None)
    if initial is not None and initial is not _NO or kw.pop("where", True) is not True:
        raise unsupported(what, "initial= and where=")
    _defaults(what, kw)
    fname = (_REDUCE if method == "reduce" else _ACCUMULATE)[name]
    fn = getattr(nna, fname)
    extra = {"dtype": dtype} if dtype is not None and fname in _TYPED else {}
    if dtype is not None and not extra:
        x = F.cast(x, dtype)
    if method == "accumulate":
        return fn(x, axis=axis, **extra)
    if axis is None and x.ndim == 0:
        axis = ()
    return fn(x, axis=axis, keepdims=keepdims, **extra)


def write_out(what: str, result: Any, out: Any) -> Any:
    """``result`` written into ``out`` (NdArrays; numpy's ``same_kind`` casting) when
    given, which is then returned as numpy does."""
    if out is None:
        return result
    outs = out if isinstance(out, tuple) else (out,)
    results = result if isinstance(result, tuple) else (result,)
    for o, r in zip(outs, results):
        if o is None:
            continue
        if type(o) is not NdArray or type(r) is not NdArray:  # numpy writes a numpy out=
            raise HostOnly(f"{what}: out= of {type(o).__name__}")
        if o.shape != r.shape:
            raise ShapeError(f"{what}: out= has shape {o.shape}, the result {r.shape}")
        if not np.can_cast(r.dtype, o.dtype, "same_kind"):
            raise DTypeError(f"{what}: cannot write the {r.dtype} result into out= of "
                             f"{o.dtype} (shape {o.shape})")
        F.assign(o, r)
    return outs[0] if len(outs) == 1 else outs


# -- array functions ---------------------------------------------------------------------
def array_function(func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
    """``func(*args, **kwargs)`` with nnarray functions; ``NotImplemented`` when another
    array type takes part (numpy then asks it)."""
    if not builtins.all(issubclass(t, (ArrayOperators, np.ndarray)) for t in types):
        return NotImplemented
    impl = _functions().get(func)
    if impl is not None:
        try:
            return impl(*args, **kwargs)
        except HostOnly:
            pass
    return _host.call(func, args, kwargs)


def _method(name: str) -> Callable:
    """``np.<name>(a, ...)`` as the array method (they take numpy's keywords)."""
    def impl(a: Any, *args: Any, **kw: Any) -> Any:
        (x,) = operands(a)
        return getattr(x, name)(*args, **kw)
    return impl


def _only(what: str, **given: Any) -> None:
    """numpy arguments supported at their defaults (``None``) only."""
    for k, v in given.items():
        if v is not None and v is not _NO:
            raise unsupported(f"np.{what}", f"{k}={_shown(v)}")


def _concatenate(arrays: Any, axis: Any = 0, out: Any = None, *, dtype: Any = None,
                 casting: Any = None) -> Any:
    xs = operands(*arrays)
    return write_out("np.concatenate", nna.concat(xs if dtype is None else _cast(xs, dtype),
                                                  axis=axis), out)


def _stack(arrays: Any, axis: int = 0, out: Any = None, *, dtype: Any = None,
           casting: Any = None) -> Any:
    xs = operands(*arrays)
    return write_out("np.stack", nna.stack(xs if dtype is None else _cast(xs, dtype),
                                           axis=axis), out)


def _vstack(tup: Any, *, dtype: Any = None, casting: Any = None) -> Any:
    xs = [x if x.ndim >= 2 else F.reshape(x, (1, -1) if x.ndim else (1, 1))
          for x in operands(*tup)]
    return nna.concat(xs if dtype is None else _cast(xs, dtype), axis=0)


def _hstack(tup: Any, *, dtype: Any = None, casting: Any = None) -> Any:
    xs = [x if x.ndim else F.reshape(x, (1,)) for x in operands(*tup)]
    xs = xs if dtype is None else _cast(xs, dtype)
    return nna.concat(xs, axis=0 if xs and xs[0].ndim == 1 else 1)


def _where(condition: Any, x: Any = _NO, y: Any = _NO) -> Any:
    if x is _NO and y is _NO:
        return _nonzero(condition)
    if x is _NO or y is _NO:
        raise ValueError("np.where: either both or neither of x and y should be given")
    c, a, b = operands(condition, x, y)
    if not _is_array(c):
        c = nna.asarray(bool(c))
    if c.dtype != np.bool_:
        c = nna.not_equal(c, 0)
    return nna.where(c, a, b)


def _clip(a: Any, a_min: Any = _NO, a_max: Any = _NO, out: Any = None, *,
          min: Any = _NO, max: Any = _NO, **kw: Any) -> Any:  # noqa: A002
    lo = a_min if a_min is not _NO else (None if min is _NO else min)
    hi = a_max if a_max is not _NO else (None if max is _NO else max)
    _defaults("np.clip", kw)
    x, lo, hi = operands(a, lo, hi)
    return write_out("np.clip", nna.clip(x, lo, hi), out)


def _reshape(a: Any, shape: Any = None, order: str = "C", *, newshape: Any = None,
             copy: Any = None) -> Any:
    if order != "C":
        raise unsupported("np.reshape", f"order={order!r}")
    (x,) = operands(a)
    return x.reshape(shape if shape is not None else newshape)


def _swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    (x,) = operands(a)
    order = list(range(x.ndim))
    i, j = (norm_axis("swapaxes", v, x.ndim) for v in (axis1, axis2))
    order[i], order[j] = order[j], order[i]
    return F.transpose(x, tuple(order))


def _expand_dims(a: Any, axis: Any) -> Any:
    (x,) = operands(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    nd = x.ndim + len(axes)
    shape = iter(x.shape)
    at = {norm_axis("expand_dims", v, nd) for v in axes}
    if len(at) != len(axes):
        raise ValueError(f"expand_dims: repeated axis in {tuple(axes)} for shape {x.shape}")
    return F.reshape(x, tuple(1 if i in at else next(shape) for i in range(nd)))


def _squeeze(a: Any, axis: Any = None) -> Any:
    (x,) = operands(a)
    return x.squeeze(axis)


def _ravel(a: Any, order: str = "C") -> Any:
    _only("ravel", order=None if order == "C" else order)
    (x,) = operands(a)
    return x.ravel()


def _flat(x: Any) -> Any:
    return x if x.ndim == 1 else F.reshape(x, (-1,))


def _sort(name: str) -> Callable:
    def impl(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *,
             stable: Any = None) -> Any:
        _only(name, order=order)
        (x,) = operands(a)
        if axis is None:
            x, axis = _flat(x), 0
        return getattr(nna, name)(x, axis=axis)
    return impl


def _scan(name: str) -> Callable:
    def impl(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        (x,) = operands(a)
        if axis is None:
            x, axis = _flat(x), 0
        return write_out(f"np.{name}", getattr(nna, name)(x, axis=axis, dtype=dtype), out)
    return impl


def _dot(a: Any, b: Any, out: Any = None) -> Any:
    x, y = operands(a, b)
    if not _is_array(x) or not _is_array(y) or x.ndim == 0 or y.ndim == 0:
        r = nna.multiply(x, y)
    elif y.ndim <= 2:
        r = nna.matmul(x, y)
    else:
        r = nna.tensordot(x, y, axes=([x.ndim - 1], [y.ndim - 2]))
    return write_out("np.dot", r, out)


def _tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    x, y = operands(a, b)
    return nna.tensordot(x, y, axes=axes)


def _outer(a: Any, b: Any, out: Any = None) -> Any:
    x, y = operands(a, b)
    return write_out("np.outer", L.outer(_flat(x), _flat(y)), out)


def _einsum(subscripts: str, *ops: Any, out: Any = None, optimize: Any = False,
            **kw: Any) -> Any:
    _only("einsum", **kw)
    return write_out("np.einsum", nna.einsum(subscripts, *operands(*ops)), out)


def _like(name: str) -> Callable:
    """``np.zeros_like(a, ...)`` and the others: on ``a``'s device."""
    def impl(a: Any, *args: Any, dtype: Any = None, order: Any = "K", subok: Any = True,
             shape: Any = None, device: Any = None) -> Any:
        (x,) = operands(a)
        dev = device if device is not None else ndarray_of(x).device
        dt = dtype if dtype is not None else x.dtype
        if name == "full_like":
            return nna.full(x.shape if shape is None else shape, args[0], dtype=dt, device=dev)
        fn = {"zeros_like": nna.zeros, "ones_like": nna.ones, "empty_like": nna.empty}[name]
        return fn(x.shape if shape is None else shape, dtype=dt, device=dev)
    return impl


def _round(a: Any, decimals: int = 0, out: Any = None) -> Any:
    (x,) = operands(a)
    return write_out("np.round", x.round(decimals), out)


def isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Any:
    """numpy's ``isclose`` on the device (a bool NdArray)."""
    x, y = operands(a, b)
    if not _is_array(x):
        x = nna.asarray(x)
    diff = nna.abs(nna.subtract(x, y))
    close = nna.less_equal(diff, nna.add(nna.multiply(nna.abs(y), rtol), atol))
    close = nna.logical_or(nna.equal(x, y), nna.logical_and(close, nna.logical_and(
        nna.isfinite(x), nna.isfinite(y))))
    if equal_nan:
        close = nna.logical_or(close, nna.logical_and(nna.isnan(x), nna.isnan(y)))
    return close


def _allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
              equal_nan: bool = False) -> bool:
    return bool(nna.all(isclose(a, b, rtol, atol, equal_nan)))


def _array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> bool:
    x, y = operands(a1, a2)
    if getattr(x, "shape", ()) != getattr(y, "shape", ()):
        return False
    eq = nna.equal(x, y)
    if equal_nan:
        eq = nna.logical_or(eq, nna.logical_and(nna.isnan(x), nna.isnan(y)))
    return bool(nna.all(eq))


def _nonzero(a: Any) -> tuple:
    (x,) = operands(a)
    return nna.nonzero(x if x.ndim else F.reshape(x, (1,)))


def _take(a: Any, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:
    _only("take", mode=None if mode == "raise" else mode)
    x, i = operands(a, indices)
    if axis is None:
        x, axis = _flat(x), 0
    return write_out("np.take", nna.take(x, i, axis=axis), out)


def _same(fn: Callable, nargs: int = 1, **defaults: Any) -> Callable:
    """``fn`` taking its first ``nargs`` arguments as operands and numpy's keywords
    where they have nnarray's names; others only at the given defaults."""
    def impl(*args: Any, **kw: Any) -> Any:
        for k, v in list(kw.items()):
            if k in defaults:
                if not _at_default(v, defaults[k]):
                    raise unsupported(f"np.{fn.__name__}", f"{k}={_shown(v)}")
                del kw[k]
        return fn(*operands(*args[:nargs]), *args[nargs:], **kw)
    return impl


def _kw(fn: Callable, nargs: int, *names: str) -> Callable:
    """``fn`` whose numpy arguments after the operands are keyword-only in nnarray."""
    def impl(*args: Any, **kw: Any) -> Any:
        kw.update(zip(names, args[nargs:]))
        return fn(*operands(*args[:nargs]), **kw)
    return impl


def _svd(a: Any, full_matrices: bool = True, compute_uv: bool = True,
         hermitian: bool = False) -> Any:
    (x,) = operands(a)
    return L.svd(x, full_matrices=full_matrices) if compute_uv else L.svdvals(x)


def _norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A002
    (a,) = operands(x)
    if axis is None and (ord is None or a.ndim == 1):
        return L.vector_norm(a, ord=2 if ord is None else ord, keepdims=keepdims)
    if axis is None or (isinstance(axis, (tuple, list)) and len(axis) == 2):
        if axis is not None:
            a = nna.moveaxis(a, tuple(axis), (-2, -1))
        r = L.matrix_norm(a, ord="fro" if ord is None else ord, keepdims=keepdims)
        return r
    return L.vector_norm(a, axis=axis, ord=2 if ord is None else ord, keepdims=keepdims)


def _result_type(*arrays_and_dtypes: Any) -> np.dtype:
    return np.result_type(*(x.dtype if _is_array(x) else x for x in arrays_and_dtypes))


def _can_cast(from_: Any, to: Any, casting: str = "safe") -> bool:
    return bool(np.can_cast(from_.dtype if _is_array(from_) else from_, to, casting))


@functools.cache
def _functions() -> dict[Callable, Callable]:
    """numpy function -> its implementation on NdArrays."""
    t: dict[Callable, Callable] = {
        getattr(np, n): _method(n) for n in ("all", "any", "var", "std")}
    t.update({
        np.concatenate: _concatenate, np.stack: _stack, np.vstack: _vstack,
        np.hstack: _hstack, np.where: _where, np.clip: _clip, np.reshape: _reshape,
        np.swapaxes: _swapaxes, np.expand_dims: _expand_dims,
        np.squeeze: _squeeze, np.ravel: _ravel, np.sort: _sort("sort"),
        np.argsort: _sort("argsort"), np.dot: _dot, np.tensordot: _tensordot,
        np.outer: _outer, np.einsum: _einsum, np.round: _round, np.around: _round,
        np.isclose: isclose, np.allclose: _allclose, np.array_equal: _array_equal,
        np.nonzero: _nonzero, np.take: _take,
        np.zeros_like: _like("zeros_like"), np.ones_like: _like("ones_like"),
        np.empty_like: _like("empty_like"), np.full_like: _like("full_like"),
        np.moveaxis: _same(nna.moveaxis),
        np.broadcast_arrays: lambda *a, subok=False: nna.broadcast_arrays(*operands(*a)),
        np.flip: _kw(nna.flip, 1, "axis"), np.roll: _kw(nna.roll, 1, "shift", "axis"),
        np.tile: lambda A, reps: nna.tile(*operands(A), (reps,) if isinstance(
            reps, int) else reps),
        np.repeat: lambda a, repeats, axis=None: nna.repeat(*operands(a), repeats, axis=axis),
        np.tril: _kw(nna.tril, 1, "k"), np.triu: _kw(nna.triu, 1, "k"),
        np.pad: _same(nna.pad), np.diff: _kw(nna.diff, 1, "n", "axis", "prepend", "append"),
        np.count_nonzero: _kw(nna.count_nonzero, 1, "axis"),
        np.searchsorted: _kw(nna.searchsorted, 2, "side", "sorter"),
        np.take_along_axis: _kw(nna.take_along_axis, 2, "axis"),
        np.meshgrid: lambda *xi, indexing="xy", **kw: nna.meshgrid(
            *operands(*xi), indexing=indexing),
        np.copy: lambda a, order="K", subok=False: operands(a)[0].copy(),
        np.shape: lambda a: tuple(a.shape), np.ndim: lambda a: len(a.shape),
        np.size: lambda a, axis=None: a.size if axis is None else a.shape[axis],
        np.result_type: _result_type, np.can_cast: _can_cast,
        np.linalg.inv: _same(L.inv), np.linalg.det: _same(L.det),
        np.linalg.slogdet: _same(L.slogdet), np.linalg.solve: _same(L.solve, 2),
        np.linalg.cholesky: _kw(L.cholesky, 1, "upper"),
        np.linalg.qr: _kw(L.qr, 1, "mode"), np.linalg.svd: _svd,
        np.linalg.eigh: _same(L.eigh, UPLO="L"), np.linalg.eigvalsh: _same(L.eigvalsh, UPLO="L"),
        np.linalg.matrix_power: _same(L.matrix_power), np.linalg.norm: _norm,
    })
    t.update(_counterparts.table())
    t.update(_declared_functions())
    t.update({np.amax: t[np.max], np.amin: t[np.min]})  # numpy's other names
    return t


#: How numpy's arguments map onto a declared function (``ops/surfaces.py``), by the form
#: its declaration names (none: numpy's keywords are ``F``'s function's own, numpy's
#: others accepted at the defaults its ``params["numpy"]`` gives).
#: ``method``: numpy's function is the array method of that name (numpy's keywords).
_FORMS: dict[str, Callable] = {"scan": lambda s: _scan(s.name),
                               "method": lambda s: _method(s.numpy[0])}


def _declared_functions() -> dict[Callable, Callable]:
    """numpy function -> its implementation, for the op specs declaring one."""
    return {getattr(np, s.numpy[0]): _FORMS[s.numpy[1]](s) if s.numpy[1] else
            _same(getattr(F, s.name), **s.params.get("numpy", {}))
            for s in _surfaces.declared().values() if s.numpy is not None}

late.provide(__name__)  # bind the lower layers' slots (nnarray.late)
