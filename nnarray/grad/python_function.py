"""PythonFunction: nnabla's custom-function interface, on any backend.

Subclass it and implement ``setup_impl`` (give the outputs their shapes with
``outputs[i].reset_shape(shape, True)``), ``forward_impl`` and ``backward_impl``. The impls
receive Variables: ``.d``/``.g`` are host numpy views, ``.data``/``.grad`` NdArrays that ``F``
functions run on the current context. In ``backward_impl`` write ``inputs[i].grad`` only
where ``propagate_down[i]``, overwriting when ``accum[i]`` is False and adding otherwise.
"""

from __future__ import annotations

from typing import Any

from .. import dtypes
from ..ndarray import NdArray
from . import modes
from .node import Node
from .variable import Variable, _make

_wref = __import__("weakref").ref


class PythonFunction:
    """Base class of functions implemented in Python; instances are called on Variables
    (a graph node) or NdArrays (run now, NdArrays out)."""

    def __init__(self, ctx: Any = None) -> None:
        self.ctx = ctx

    @property
    def name(self) -> str:
        return type(self).__name__

    def min_outputs(self) -> int:
        """How many outputs the function has."""
        return 1

    def setup_impl(self, inputs: list, outputs: list) -> None:
        """Shape inference: ``outputs[i].reset_shape(shape, True)``."""
        raise NotImplementedError(f"{self.name}.setup_impl")

    def forward_impl(self, inputs: list, outputs: list) -> None:
        """Compute ``outputs[i].data`` from ``inputs[j].data``."""
        raise NotImplementedError(f"{self.name}.forward_impl")

    def backward_impl(self, inputs: list, outputs: list, propagate_down: list,
                      accum: list) -> None:
        """Write (``accum[i]`` False) or add to ``inputs[i].grad`` where
        ``propagate_down[i]``, from ``outputs[j].grad``."""
        raise NotImplementedError(f"{self.name}.backward_impl")

    def __call__(self, *inputs: Any) -> Any:
        graph = any(isinstance(x, Variable) for x in inputs)
        vin = [_as_variable(self.name, i, x) for i, x in enumerate(inputs)]
        outs = _setup(self, vin)
        m = modes.mode.get()
        need = graph and m != modes.NO_GRAD and any(v._need_grad for v in vin)
        if not graph or m != modes.STATIC:
            with modes.no_grad():
                self.forward_impl(vin, outs)
            if not graph:
                res = [o.data for o in outs]
                return res[0] if len(res) == 1 else tuple(res)
            if not need:
                return outs[0] if len(outs) == 1 else tuple(outs)
        rank = 1 + max([v._parent.rank for v in vin if v._parent is not None], default=0)
        node = PyNode(self, tuple(vin), rank)
        node.metas = tuple((o.shape, o.dtype) for o in outs)
        for o in outs:
            o._parent = node
            o._need_grad = need
        node.outs = tuple([_wref(o) for o in outs])
        if m != modes.STATIC:
            node.dynamic = True
            node.save_all(outs)
        return outs[0] if len(outs) == 1 else tuple(outs)


def _as_variable(name: str, i: int, x: Any) -> Variable:
    if isinstance(x, Variable):
        return x
    if isinstance(x, NdArray):
        return Variable.from_ndarray(x)
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return Variable.from_numpy_array(x)
    raise TypeError(f"{name}: input {i} must be a Variable, NdArray or numpy array, "
                    f"got {type(x).__name__}")


def _setup(fn: PythonFunction, vin: list) -> list:
    dt = vin[0].dtype if vin else dtypes.normalize("float32")
    outs = [_make((), dt, None, None, False) for _ in range(fn.min_outputs())]
    fn.setup_impl(vin, outs)
    return outs


class PyNode(Node):
    """A node whose forward and backward are a PythonFunction's impls."""

    __slots__ = ()

    def __init__(self, fn: PythonFunction, args: tuple, rank: int) -> None:
        super().__init__(fn, args, {}, (), rank)

    def _outputs(self, datas: Any = None) -> list:
        """The output variables; stand-ins (holding ``datas``) for dead ones."""
        outs = []
        for j, (r, (shape, dt)) in enumerate(zip(self.outs, self.metas)):
            v = r()
            outs.append(v if v is not None else
                        _make(shape, dt, datas[j] if datas else None, None, False))
        return outs

    def save_all(self, outs: list) -> None:
        """Keep every input's and output's data (the impls may read any of them)."""
        self.inputs = [a.data for a in self.args]
        self.outputs = [o.data for o in outs]
        self.versions = [(i, d, d.version) for i, d in enumerate(self.inputs)] + \
                        [(-1 - j, d, d.version) for j, d in enumerate(self.outputs)]

    def run(self) -> None:
        """Static-mode forward."""
        outs = self._outputs()
        with modes.no_grad():
            self.op.forward_impl(list(self.args), outs)
        self.save_all(outs)

    def run_backward(self, stamp: int, need: tuple) -> None:
        """Call ``backward_impl`` with per-input ``propagate_down`` and ``accum``."""
        from .. import functions as F
        self.check()
        outs = self._outputs(self.outputs)
        got = False
        for v in outs:
            if v._gstamp == stamp and v._grad is not None:
                got = True
            else:
                v._grad = NdArray(v.shape, v.dtype)
                v._grad.zero()
        if not got:
            return
        ins = list(self.args)
        for a, d in zip(ins, self.inputs):
            if a._data is not d:
                a._data = d
        accum = []
        for x, pd in zip(ins, need):
            if not pd or x._parent is None:
                accum.append(bool(pd))
            elif x._gstamp != stamp:
                x._grad = NdArray(x.shape, x.dtype)
                x._gstamp = stamp
                accum.append(False)
            else:
                x._grad = F.cast(x._grad, x.dtype)
                accum.append(True)
        with modes.no_grad():
            self.op.backward_impl(ins, outs, list(need), accum)
