"""Variable: a graph value holding ``data`` and ``grad`` NdArrays."""

from __future__ import annotations

import operator
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import context as _context
from .. import dtypes, late
from .. import functions as F
from ..context import context_scope
from ..errors import AttributeShapeError, DTypeError, GraphError
from ..ndarray import NdArray, normalize_shape
from ..operators import ArrayOperators
from ..ops.op import GraphValue
from . import modes
from .modes import SAVED

# The modules above this one (``nnarray.late``): the engine, run by a Variable's methods.
_executor: Any = late.bind(__name__, "_executor", "nnarray.grad.executor")
_backward: Any = late.bind(__name__, "_backward", "nnarray.grad.backward")
_recording: Any = late.bind(__name__, "_recording", "nnarray.grad.recording")
_pickling: Any = late.bind(__name__, "_pickling", "nnarray.pickling")
_gradient: Any = late.bind(__name__, "_gradient", "nnarray.grad.gradient")



class ByIdentity:
    """``{Variable: value}`` by identity, an entry dropped with its Variable (a
    ``WeakKeyDictionary`` would compare keys with ``==``, which is elementwise)."""

    def __init__(self) -> None:
        self._d: dict[int, tuple] = {}

    def get(self, v: Any) -> Any:
        e = self._d.get(id(v))
        return e[1] if e is not None and e[0]() is v else None

    def __setitem__(self, v: Any, value: Any) -> None:
        k = id(v)
        self._d[k] = (weakref.ref(v, lambda _r, d=self._d, k=k: d.pop(k, None)), value)

    def pop(self, v: Any, default: Any = None) -> Any:
        e = self._d.pop(id(v), None)
        return default if e is None else e[1]


#: The gradient graphs ``backward(create_graph=True)`` accumulated, by leaf
#: (``Variable.grad_variable``): off every first-order path.
grad_variables = ByIdentity()


_new = object.__new__
_mode = modes.mode


class Variable(GraphValue, ArrayOperators):
    """A node of the computation graph: ``data`` and ``grad`` (NdArrays, allocated on
    first use), ``need_grad`` and the ``parent`` function that produced it.

    Every ``F`` function and operator accepts Variables; NdArrays and scalars mixed in
    are constants. In static mode (the default) calling a function infers shapes now and
    ``forward()`` computes; under ``auto_forward()`` it computes at once.
    """

    __slots__ = ("_shape", "_dtype", "_data", "_grad", "_need_grad", "_explicit", "_parent",
                 "_plan", "_name", "_held", "__weakref__")
    # ``_held`` (unset until then): the user read this intermediate's values once, so
    # fused forward schedules write it (``grad/fusion_adapter.py``: ``recover``).

    def __init__(self, shape: int | Sequence[int] = (), need_grad: bool = False,
                 dtype: Any = np.float32, name: str | None = None) -> None:
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"Variable: name must be a non-empty string, got {name!r}")
        self._shape = normalize_shape(shape, "Variable")
        self._dtype = dtypes.normalize(dtype, "Variable")
        self._data: NdArray | None = None
        self._grad: NdArray | None = None
        self._need_grad = bool(need_grad)
        self._explicit = False
        self._parent: Any = None
        self._plan: Any = None
        self._name = name

    @classmethod
    def from_numpy_array(cls, a: Any, need_grad: bool = False,
                         name: str | None = None) -> Variable:
        """A leaf holding a copy of ``a`` (its dtype kept)."""
        return cls.from_ndarray(NdArray.from_numpy_array(a), need_grad, name)

    @classmethod
    def from_ndarray(cls, data: NdArray, need_grad: bool = False,
                     name: str | None = None) -> Variable:
        """A leaf whose ``data`` is ``data`` (shared, not copied)."""
        v = _make(data.shape, data.dtype, data.pin_shape(), None, bool(need_grad))
        v._name = name
        return v

    # -- metadata (read as the slots are; ``reset_shape`` gives a new shape) ---------
    def _set_shape(self, shape: Any) -> None:
        """``v.shape = s``: refused (``AttributeShapeError``, also an ``AttributeError``)
        unless ``s`` is the shape: a graph's shapes change through ``reset_shape``."""
        if normalize_shape(shape, "Variable.shape") != self._shape:
            raise AttributeShapeError(
                f"Variable.shape: cannot assign {shape!r} to a variable of shape "
                f"{self._shape}; reset_shape() gives it a new shape (reallocating its data "
                f"and grad), reshape() a reshaped variable")

    def _set_dtype(self, dtype: Any) -> None:
        """``v.dtype = d``: refused (``DTypeError``) unless ``d`` is the dtype."""
        d = dtypes.normalize(dtype, "Variable.dtype")
        if d != self._dtype:
            raise DTypeError(f"Variable.dtype: cannot assign {d} to a variable of "
                             f"{self._dtype} (shape {self._shape}); F.cast(v, {d}) converts")

    shape = property(operator.attrgetter("_shape"), _set_shape,
                     doc="The shape; assigning another raises (``reset_shape`` changes it).")
    dtype = property(operator.attrgetter("_dtype"), _set_dtype,
                     doc="The dtype; assigning another raises ``DTypeError``.")

    @property
    def name(self) -> str | None:
        """A leaf's name (``None`` unless given); a function output's is its node's name
        (``add0``), ``<node>_output<j>`` for output ``j`` of a node with several."""
        if self._name is not None:
            return self._name
        p = self._parent
        if p is None:
            return None
        if len(p.outputs) == 1:
            return p.label
        j = next((q for q, r in enumerate(p.outputs) if r() is self), 0)
        return f"{p.label}_output{j}"

    @name.setter
    def name(self, value: str | None) -> None:
        if value is not None and (not isinstance(value, str) or not value):
            raise ValueError(f"Variable.name must be a non-empty string, got {value!r}")
        p = self._parent
        if p is not None and len(p.outputs) == 1 and value is not None:
            p.label = value  # renames the node
        else:
            self._name = value

    # -- data and gradient -----------------------------------------------------------
    @property
    def data(self) -> NdArray:
        """The values (an NdArray, shared). A static function output whose graph has not
        run (or whose data ``forward(clear_buffer=True)`` freed) has none: reading them
        here, and so through ``float()``, ``item()``, ``format()``, ``bool()``,
        ``np.asarray()`` and every other value read, raises ``GraphError``. An
        intermediate a fused forward computed in registers is computed again on its first
        read, and written by the graph's forwards from then on (``fusion_adapter.recover``)."""
        d = self._data
        if d is None:
            if self._parent is not None:
                d = _executor.recover(self)  # a value a fused forward left in registers
                if d is None:
                    raise _unrun(self)
            else:
                d = self._data = NdArray(self._shape, self._dtype)
        return d.pin_shape()  # its graph keeps the shape: no in-place reshape

    def _buffer(self) -> NdArray:
        """``data``, allocated where it has none yet (a buffer the graph's forward writes
        into: ``.d = v``, ``unlinked()``, a ``PythonFunction``'s outputs)."""
        d = self._data
        if d is None:
            d = self._data = NdArray(self.shape, self.dtype)
        return d

    @data.setter
    def data(self, value: NdArray) -> None:
        self._data = _checked(value, self, "data")

    @property
    def grad(self) -> NdArray:
        """The gradient (an NdArray; reads zeros until something is written)."""
        g = self._grad
        if g is None:
            g = self._grad = NdArray(self._shape, self._dtype)
        return g.pin_shape()

    @grad.setter
    def grad(self, value: NdArray) -> None:
        self._grad = _checked(value, self, "grad")

    @property
    def d(self) -> np.ndarray:
        """The values as a writable host numpy array (``NdArray.host_handle``: writes
        through it are never lost, and the data keeps its device). Reading does not
        count as an in-place write for the graph's check (like ``torch.Tensor.numpy()``);
        writes through ``.d = v``, ``.data`` or in-place ops do, and so does a write
        through this view while the data is saved for a backward pass (a snapshot taken
        here is compared when the backward pass checks its saved data). A function's
        output whose graph has not run raises ``GraphError``."""
        nd = self.data
        a = nd.host_handle()
        s = nd._snap
        if s is not None and (s is SAVED or s[0] != nd.version):
            nd._snap = (nd.version, a.copy())
        return a

    @d.setter
    def d(self, value: Any) -> None:
        self._buffer().data = value

    @property
    def g(self) -> np.ndarray:
        """The gradient as a writable host numpy array (a tracked handle, like ``d``)."""
        return self.grad.host_handle()

    @g.setter
    def g(self, value: Any) -> None:
        self.grad.data = value

    # -- graph ---------------------------------------------------------------------
    @property
    def need_grad(self) -> bool:
        """Whether gradients flow to (and through) this variable."""
        return self._need_grad

    @need_grad.setter
    def need_grad(self, value: bool) -> None:
        self._need_grad = bool(value)
        self._explicit = self._parent is not None
        _executor.invalidate_plans()

    @property
    def parent(self) -> Any:
        """The function node that produced this variable (``None`` for a leaf)."""
        return self._parent

    def unlinked(self, need_grad: bool | None = None) -> Variable:
        """A leaf sharing this variable's data and grad, cut from the graph."""
        v = _make(self.shape, self.dtype, self._buffer(), self._grad,
                  self._need_grad if need_grad is None else bool(need_grad))
        return v

    def detach(self) -> Variable:
        """torch's ``detach``: ``unlinked(need_grad=False)``, a leaf sharing the data."""
        return self.unlinked(need_grad=False)

    def reset_shape(self, shape: Sequence[int], force: bool = False) -> None:
        """Give the variable a new shape; its data and grad are reallocated."""
        shape = normalize_shape(shape, "Variable.reset_shape")
        if force or shape != self._shape:
            self._shape = shape
            self._data = self._grad = None

    def forward(self, clear_buffer: bool = False) -> None:
        """Run the graph up to this variable (static mode)."""
        _executor.forward(self, clear_buffer)

    def backward(self, grad: Any = 1, clear_buffer: bool = False,
                 retain_graph: bool = False, create_graph: bool = False) -> None:
        """Accumulate gradients of this variable (seeded with ``grad``; ``None``: the
        current ``.grad``) into every ``need_grad`` leaf's ``.grad``. nnabla's rule: the
        default ``grad=1`` seeds ones whatever the output's shape (torch instead demands
        a one-element output); with no ``need_grad`` leaf behind it nothing runs (as
        nnabla; torch raises). A define-by-run graph's saved data
        and inner references are freed afterwards (a second backward raises
        ``GraphError``) unless ``retain_graph``; a static graph keeps them. With
        ``create_graph`` each leaf's gradient is also a graph, ``grad_variable``, that
        can be differentiated again (the graph is kept; ``grad.grad``)."""
        if create_graph:
            return _gradient.backward_graph(self, grad, clear_buffer)
        _backward.backward(self, grad, clear_buffer, retain_graph)

    @property
    def grad_variable(self) -> Variable | None:
        """The gradient accumulated by ``backward(create_graph=True)`` as a Variable that
        carries its graph (torch's ``x.grad`` with a ``grad_fn``); ``None`` if none."""
        return grad_variables.get(self)

    @grad_variable.setter
    def grad_variable(self, value: Variable | None) -> None:
        if value is None:
            grad_variables.pop(self, None)
        else:
            grad_variables[self] = value

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d Variable")
        return self.shape[0]

    def __repr__(self) -> str:
        from ..values import variable_repr
        return variable_repr(self)

    # -- Python and numpy values: those of ``data`` (a host read, as for an NdArray) -------
    def __float__(self) -> float:
        return float(self.data)

    def __int__(self) -> int:
        return int(self.data)

    def __index__(self) -> int:
        return self.data.__index__()

    def __complex__(self) -> complex:
        return complex(self.data)

    def __bool__(self) -> bool:
        return bool(self.data)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """``np.asarray(v)``: the data's host values, as ``np.asarray(v.data)``."""
        return self.data.__array__(dtype, copy)

    def item(self) -> Any:
        """The value of a one-element variable as a Python scalar (an explicit read)."""
        return self.data.item()

    __hash__ = object.__hash__  # identity: Variables key dicts (== is elementwise)

    def __reduce__(self) -> tuple:
        """``pickle``/``copy.deepcopy``: a leaf with the same data, gradient,
        ``need_grad`` and name (``nnarray.pickling``; the graph is not kept)."""
        return _pickling.restore_variable, (self.shape, self.dtype, self._data, self._grad,
                                  self._need_grad, self._name)

    # -- the graph-value protocol of the ops (``ops.op.GraphValue``) ---------------------
    def _record(self, op: Any, inputs: tuple, attrs: dict, metas: tuple) -> Any:
        return _recording.record(op, inputs, attrs, metas)

    def _record_binary(self, op: Any, a: Any, b: Any) -> Any:
        return _recording.record_binary(op, a, b)

    # -- receiving gradients (the backward pass) ---------------------------------------
    def _receive_grad(self, gx: NdArray, shared: bool) -> None:
        """Take ``gx``, a gradient for this leaf from a backward pass run now (``shared``:
        referenced elsewhere): accumulated into ``.grad`` where the data is current (the
        solver's rule), or landing on the parameter's device (a counted transfer)."""
        d = self._data
        h = None if d is None else d._head
        gh = gx._head
        if h is None or h is gh or gh is None or d.current_copy(gh) is not None:
            self._accumulate(gx, shared)
        else:
            with context_scope(_context.context_of(h, _context.get_current_context())):
                self._accumulate(gx, shared)

    def _accumulate(self, gx: NdArray, shared: bool) -> None:
        """``grad += gx``; a lazily zero (or absent) gradient adopts ``gx`` (or copies it
        when ``shared``: referenced elsewhere)."""
        gl = self._grad
        if gl is None:
            self._grad = F.cast(gx, self.dtype) if shared else gx
            return
        if gl.reads_as_zero():
            sole = None if shared else gx.sole_copy()
            if sole is not None:
                gl.adopt(*sole)
            else:
                F.assign(gl, gx)
            return
        F.inplace(F.add, gl, gx)

    def _inplace(self, op: Any, o: Any) -> Variable:
        """``self op= o``: under ``no_grad()`` written into ``data`` (returns ``self``);
        otherwise recorded out of place like any function (the name is rebound)."""
        if modes.mode.get() == modes.NO_GRAD:
            F.inplace(op, self.data, o.data if isinstance(o, Variable) else o)
            return self
        return op(self, o)


def _make(shape: tuple, dtype: np.dtype, data: NdArray | None, grad: NdArray | None,
          need_grad: bool, parent: Any = None) -> Variable:
    """A Variable without validation (the engine's hot path)."""
    v = _new(Variable)
    v._shape = shape
    v._dtype = dtype
    v._data = data
    v._grad = grad
    v._need_grad = need_grad
    v._explicit = False
    v._parent = parent
    v._plan = None
    v._name = None
    return v


def _unrun(v: Variable) -> GraphError:
    """The error for reading the values of a static output whose graph never ran."""
    n = v.name
    return GraphError(
        f"Variable {n} (shape {v.shape}) has no values to read (.d, .data, float(), item(), "
        f"format(), bool(), np.asarray()): it was recorded in static mode "
        f"and its graph has not run (or forward(clear_buffer=True) freed it); call "
        f".forward() on it (or on the loss it feeds) first, or build the graph under "
        f"grad.auto_forward() to compute as you call")


def _checked(value: Any, var: Variable, what: str) -> NdArray:
    from ..errors import ShapeError
    if not isinstance(value, NdArray):
        raise TypeError(f"Variable.{what}: expected an NdArray, got {type(value).__name__} "
                        f"(use .{what[0]} = ... for numpy values)")
    if value.shape != var.shape:
        raise ShapeError(f"Variable.{what}: shape {value.shape} does not match the "
                         f"variable's shape {var.shape}")
    if value.dtype != var.dtype:
        raise DTypeError(f"Variable.{what}: dtype {value.dtype} does not match the "
                         f"variable's dtype {var.dtype}")
    return value.pin_shape()

