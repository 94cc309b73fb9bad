"""PythonFunction: nnabla's custom-function interface, on any backend.

Subclass it and implement ``setup_impl`` (give the outputs their shapes with
``outputs[i].reset_shape(shape, True)``), ``forward_impl`` and ``backward_impl``. The impls
receive Variables: ``.d``/``.g`` are host numpy views, ``.data``/``.grad`` NdArrays that ``F``
functions run on the current context. In ``backward_impl`` write ``inputs[i].grad`` only
where ``propagate_down[i]``, overwriting when ``accum[i]`` is False and adding otherwise.
"""

from __future__ import annotations

import weakref
from typing import Any

from .. import dtypes
from ..errors import GraphError
from ..ndarray import NdArray
from . import modes
from .modes import SAVED
from .node import Node
from .variable import Variable, _make

_wref = weakref.ref


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
            for v in vin:  # a static value not computed yet is computed, not read as zeros
                if v._data is None and v._parent is not None and not v._parent.dynamic:
                    from .recording import computed
                    computed(v)
            with modes.no_grad():
                self.forward_impl(vin, outs)
            if not graph:
                res = [o.data for o in outs]
                return res[0] if len(res) == 1 else tuple(res)
            if not need:
                return outs[0] if len(outs) == 1 else tuple(outs)
        rank = 1 + max([v._parent.rank for v in vin if v._parent is not None], default=0)
        node = PyNode(self, tuple(vin), rank)
        if m == modes.STATIC:
            _ = node.label  # named when recorded, like a built-in op's node
        node.out_metas = tuple((o.shape, o.dtype) for o in outs)
        for o in outs:
            o._parent = node
            o._need_grad = need
        node.outputs = tuple([_wref(o) for o in outs])
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
    """A node whose forward and backward are a PythonFunction's impls. Its backward
    rule is opaque Python, so a traced program holding it cannot be replayed on another
    graph (``relocatable``) nor fused into generated code (``fusable``)."""

    __slots__ = ()
    relocatable = False
    fusable = False

    def __init__(self, fn: PythonFunction, inputs: tuple, rank: int) -> None:
        super().__init__(fn, inputs, {}, (), rank)

    @property
    def differentiable(self) -> bool:
        return True

    def _outputs(self, datas: Any = None) -> list:
        """The output variables; stand-ins (holding ``datas``) for dead ones."""
        outs = []
        for j, (r, (shape, dt)) in enumerate(zip(self.outputs, self.out_metas)):
            v = r()
            outs.append(v if v is not None else
                        _make(shape, dt, datas[j] if datas else None, None, False))
        return outs

    def save_all(self, outs: list) -> None:
        """Keep every input's and output's data (the impls may read any of them)."""
        self.saved_inputs = [a.data for a in self.inputs]
        self.saved_outputs = [o.data for o in outs]
        self.versions = [(i, d, d.version) for i, d in enumerate(self.saved_inputs)] + \
                        [(-1 - j, d, d.version) for j, d in enumerate(self.saved_outputs)]
        for d in self.saved_inputs + self.saved_outputs:
            d._snap = SAVED  # a write through Variable.d is detected (node.py)

    def run(self, ctx: Any = None, save: bool = True) -> None:
        """Static-mode forward: ``forward_impl``, keeping every input and output."""
        outs = self._outputs()
        for o in outs:  # the buffers forward_impl writes (an un-run output reads none)
            o._buffer()
        with modes.no_grad():
            self.function.forward_impl(list(self.inputs), outs)
        self.save_all(outs)

    def call_backward(self, gys: list, need: tuple, accum: list) -> list:
        """``backward_impl`` on the saved data, the outputs' gradients ``gys`` (NdArray,
        or ``None`` for zero): the input Variables, whose ``.grad`` the impl wrote."""
        outs = self._outputs(self.saved_outputs)
        for v, g in zip(outs, gys):
            if g is None:
                g = NdArray(v.shape, v.dtype)
                g.zero()
            v._grad = g
        ins = list(self.inputs)
        for a, d in zip(ins, self.saved_inputs):
            if a._data is not d:
                a._data = d
        with modes.no_grad():
            self.function.backward_impl(ins, outs, list(need), accum)
        return ins

    def differentiate(self, need: tuple, gys: list, graph: bool) -> Any:
        """The input gradients for ``gys`` (``grad.grad``; see ``differentiate``)."""
        return differentiate(self, need, gys, graph)

    def trace_backward(self, index: int, need: tuple, gys: list, program: Any) -> Any:
        """One opaque step of the program (see ``PyGradStep``): its input gradients."""
        if all(g is None for g in gys):
            return None
        self.check()
        live = program.live is not None  # traced as it runs: run now
        step = PyGradStep(self, gys, need, live and self.dynamic)
        if program.taped:
            program.steps.append(step)
            program.relocatable = False
        if live:
            step.run()
        return step.grads


class PyGradStep:
    """A PythonFunction's ``backward_impl`` as one step of a traced program: fresh
    gradients (``accum`` False) for each distinct input, delivered as ``grads``. With
    ``direct`` (a define-by-run node, whose program never replays: nnabla's contract) a
    leaf's gradient is added into its own ``.grad`` (``accum`` True) instead."""

    __slots__ = ("node", "gys", "need", "grads", "inputs", "outputs", "direct",
                 "__weakref__")
    fusable = False

    def __init__(self, n: PyNode, gys: list, need: tuple, direct: bool = False) -> None:
        self.node, self.gys, self.need = n, gys, need
        self.inputs = [g for g in gys if g is not None]  # what the step reads
        self.direct = tuple(direct and pd and a._parent is None
                            for a, pd in zip(n.inputs, need))
        seen: set = set()
        self.grads = []  # one per distinct input (a repeated input's share is accumulated)
        for a, pd, d in zip(n.inputs, need, self.direct):
            first = pd and not d and id(a) not in seen
            seen.add(id(a))
            self.grads.append(_make(a.shape, a.dtype, None, None, False) if first else None)
        self.outputs = tuple(weakref.ref(g) for g in self.grads if g is not None)

    def run(self, ctx: Any = None, save: bool = False) -> None:
        n = self.node
        ins = n.inputs
        old = [None if d else a._grad for a, d in zip(ins, self.direct)]
        accum, seen = [], set()
        for a, pd, d in zip(ins, self.need, self.direct):
            if d:
                accum.append(True)
            elif pd and id(a) not in seen:
                seen.add(id(a))
                a._grad = NdArray(a.shape, a.dtype)
                a._grad.zero()
                accum.append(False)
            else:
                accum.append(bool(pd))
        try:
            n.call_backward([g._data if type(g) is Variable else g for g in self.gys],
                            self.need, accum)
            for a, gv in zip(ins, self.grads):
                if gv is not None:
                    gv._data = a._grad
        finally:
            for a, g, d in zip(ins, old, self.direct):
                if not d:
                    a._grad = g


def differentiate(n: PyNode, need: tuple, gys: list, graph: bool) -> Any:
    """``PyNode.differentiate``: ``backward_impl`` gives the values; with ``graph`` they
    come out of a node (``BackwardOf``) that raises ``GraphError`` naming the function
    when differentiated, never a silent zero."""
    self = n
    if all(g is None for g in gys):
        return None
    if self.dynamic:
        self.check()
    if not graph:
        return _fresh_grads(self, [g.data if isinstance(g, Variable) else g for g in gys],
                            need)
    outs = _live_outputs(self)
    gvs = [g if isinstance(g, Variable) else
           Variable.from_ndarray(g if g is not None else _zeros(o.shape, o.dtype))
           for g, o in zip(gys, outs)]
    # the outputs are inputs too: a static graph runs this node (saving its data) first
    res = BackwardOf(self, need)(*self.inputs, *outs, *gvs)
    res = list(res) if isinstance(res, tuple) else [res]
    return [res.pop(0) if pd and not any(a is b for b in self.inputs[:i]) else None
            for i, (a, pd) in enumerate(zip(self.inputs, need))]



def _live_outputs(n: PyNode) -> list:
    """``n``'s output Variables, dead ones made again (with the saved data, if any) as
    outputs of ``n``."""
    refs, outs = list(n.outputs), []
    for j, (r, (shape, dt)) in enumerate(zip(refs, n.out_metas)):
        v = r()
        if v is None:
            data = n.saved_outputs[j] if n.saved_outputs else None
            v = _make(shape, dt, data, None, True, n)
            refs[j] = _wref(v)
        outs.append(v)
    n.outputs = tuple(refs)
    return outs


def _zeros(shape: tuple, dtype: Any) -> NdArray:
    z = NdArray(shape, dtype)
    z.zero()
    return z


def _fresh_grads(n: PyNode, gys: list, need: tuple) -> list:
    """``backward_impl``'s input gradients for ``gys`` (NdArrays or ``None``), one per
    distinct input that needs one; the inputs' own ``.grad`` is left as it was."""
    ins = n.inputs
    old = [a._grad for a in ins]
    accum, seen, first = [], set(), []
    for a, pd in zip(ins, need):
        f = pd and id(a) not in seen
        seen.add(id(a))
        if f:
            a._grad = _zeros(a.shape, a.dtype)
        first.append(f)
        accum.append(bool(pd) and not f)
    try:
        n.call_backward(gys, need, accum)
        return [a._grad if f else None for a, f in zip(ins, first)]
    finally:
        for a, g in zip(ins, old):
            a._grad = g


class BackwardOf(PythonFunction):
    """A PythonFunction's ``backward_impl`` run as a function of its inputs and output
    gradients (``grad.grad(create_graph=True)`` through it): the values are right, and
    differentiating them raises ``GraphError`` naming the function (its
    ``backward_impl`` is opaque Python, not a graph)."""

    def __init__(self, node: PyNode, need: tuple) -> None:
        super().__init__()
        self.node, self.need = node, need
        seen: set = set()
        self.first = []
        for a, pd in zip(node.inputs, need):
            self.first.append(pd and id(a) not in seen)
            seen.add(id(a))

    @property
    def name(self) -> str:
        return f"BackwardOf{self.node.function.name}"

    def min_outputs(self) -> int:
        return sum(self.first)

    def setup_impl(self, inputs: list, outputs: list) -> None:
        shapes = [a for a, f in zip(self.node.inputs, self.first) if f]
        for o, a in zip(outputs, shapes):
            o.reset_shape(a.shape, True)
            o.dtype = a.dtype

    def forward_impl(self, inputs: list, outputs: list) -> None:
        n = self.node
        gys = [g.data for g in inputs[len(n.inputs) + len(n.outputs):]]
        res = [g for g in _fresh_grads(n, gys, self.need) if g is not None]
        for o, g in zip(outputs, res):
            o.data = g

    def backward_impl(self, inputs: list, outputs: list, propagate_down: list,
                      accum: list) -> None:
        raise GraphError(
            f"{self.node.function.name}: its backward_impl is not differentiable (a "
            "PythonFunction's backward runs opaque Python): a gradient taken with "
            "create_graph=True through it cannot be differentiated again; write the "
            "function with F calls instead")
