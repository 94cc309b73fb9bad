"""``Graph.bind``'s ``Executor``: a graph bound to arrays on a context.

It runs the graph's own nodes as a forward schedule (``schedule.py``, the one
``Variable.forward()`` uses) and replays a backward program traced by ``program.py``
(seeded at every output), with gradients delivered per ``grad_req``. Its memory is
planned: each intermediate is dropped after its last consumer ran (only what a backward
rule retains stays alive), so intermediates whose lifetimes do not overlap share buffers
through the device pools; the backward replay frees each saved array after its last use.
Arrays of new shapes bind a graph rebuilt for them (``rebuild.py``).
"""

from __future__ import annotations

import weakref
from typing import Any

from .. import dtypes, late
from ..context import as_context
from ..errors import GraphError, ShapeError
from ..ndarray import NdArray
from . import schedule
from .backward import seed
from .executor import backward_order, replay
from .graph import Graph, _is_unbound
from .planner import forward_releasable
from .program import trace
from .rebuild import _shapes, _trains
from .variable import Variable

_FLOATS = dtypes.INEXACT
_REQS = ("write", "add", "null")

_owner: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


class Executor:
    """A graph bound to arrays on a context (``Graph.bind``): ``forward``, ``outputs``,
    ``backward``, ``grad_dict``, ``arg_dict``."""

    def __init__(self, graph: Graph, ctx: Any, args: dict, grad_req: Any,
                 args_grad: dict) -> None:
        self.ctx = as_context(ctx)
        names = graph._names
        if isinstance(args, (list, tuple)):  # in argument order (MXNet)
            if len(args) > len(names):
                raise GraphError(f"bind: {len(args)} arrays for {len(names)} arguments")
            args = dict(zip(names, args))
        if isinstance(args_grad, (list, tuple)):
            args_grad = {n: g for n, g in zip(names, args_grad) if g is not None}
        if isinstance(grad_req, dict):
            for k in grad_req:
                if k not in graph._index:
                    raise GraphError(f"bind: grad_req names '{k}', not an argument "
                                     f"(arguments: {', '.join(names)})")
        for k in list(args) + list(args_grad):
            if k not in graph._index:
                raise GraphError(f"bind: '{k}' is not an argument (arguments: "
                                 f"{', '.join(names)})")
        arrays: dict[str, NdArray] = {}
        missing = []
        for name, v in zip(names, graph._args):
            nd = args.get(name)
            if nd is None:
                if _is_unbound(v):
                    missing.append(name)
                    continue
                nd = v.data
            elif not isinstance(nd, NdArray):
                nd = NdArray.from_numpy_array(nd)
            arrays[name] = nd.pin_shape()  # the executor's argument: its shape is bound
        if missing:
            raise GraphError(f"bind: no data for argument{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(missing)} (a loaded graph has no parameters: "
                             "pass them in args)")
        subst = {}
        for name, v in zip(names, graph._args):
            nd = arrays[name]
            if nd.shape != v.shape or nd.dtype != v.dtype:
                subst[id(v)] = Variable(nd.shape, v._need_grad, nd.dtype, name=v._name)
        if subst:  # new shapes: the nodes are recorded again (inference only)
            graph = graph._with(subst)
            _check_rebound(graph, arrays)
        self.graph = graph
        self.arg_dict = arrays
        reqs = grad_req if isinstance(grad_req, dict) else dict.fromkeys(names, grad_req)
        self.grad_req: dict[str, str] = {}
        for name, v in zip(names, graph._args):
            r = reqs.get(name, "null")
            if r not in _REQS:
                raise ValueError(f"bind: grad_req for '{name}' must be one of {_REQS}, "
                                 f"got {r!r}")
            self.grad_req[name] = r if v.dtype in _FLOATS else "null"
        self.grad_dict: dict[str, NdArray] = {}
        for name, v in zip(names, graph._args):
            if self.grad_req[name] != "null":
                g = args_grad.get(name)
                if g is None:
                    g = NdArray(v.shape, v.dtype)
                    g.zero()
                elif g.shape != v.shape:
                    raise ShapeError(f"bind: args_grad['{name}'] has shape {g.shape}, the "
                                     f"argument {v.shape}")
                self.grad_dict[name] = g.pin_shape()
        self._train = any(r != "null" for r in self.grad_req.values())
        self._outs = graph._outputs
        self._order = graph._order
        self._runs: dict[bool, list] = {}
        self._program: Any = None
        self._trained = False
        self._seeds: Any = None
        self.outputs: list[NdArray] = []

    # -- forward ----------------------------------------------------------------------------
    def forward(self, is_train: bool = True, **args: Any) -> list[NdArray]:
        """Run the graph (``is_train``: keep what backward needs); ``args`` copies new
        values into bound arrays first. Returns (and keeps in ``outputs``) the outputs."""
        for k, val in args.items():
            nd = self.arg_dict.get(k)
            if nd is None:
                raise GraphError(f"forward: '{k}' is not an argument")
            if isinstance(val, NdArray):
                nd.copy_from(val)
            else:
                nd.data = val
        sched = self.schedule(is_train)
        order, outs, _, out_data = run = self._runs[bool(is_train) and self._train]
        args = self.graph._args
        kept = [v._data for v in args] + [v._data for v in outs]
        for v, nd in zip(args, self.arg_dict.values()):
            v._data = nd
        for v, d in zip(outs, out_data):
            if v._parent is not None:
                v._data = d
        try:
            sched.run(order[-1].outputs[0]() if order else None)
            run[3] = res = [v.data for v in outs]
        finally:  # the graph's own Variables keep their data
            for v, d in zip(args + outs, kept):
                v._data = d
        self.outputs = res
        self._trained = bool(is_train) and self._train
        if self._order:
            _owner[id(self._order[-1])] = self
        return res

    def _run(self, is_train: bool, save: bool) -> list:
        """``[order, outputs, forward schedule, output arrays]`` of a mode: inference runs
        a twin of the graph whose dropout and batch normalization nodes are in inference
        mode, when it has any."""
        order, outs = self._order, self._outs
        if not is_train and any(_trains(n) for n in order):
            twin = self.graph._with({}, inference=True)
            order, outs = twin._order, twin._outputs
        root = order[-1].outputs[0] if order else None
        sched = schedule.forward(order, self.ctx, save, forward_releasable(outs), root,
                                 outs)
        return [order, outs, sched, [None] * len(outs)]

    def schedule(self, is_train: bool = True) -> schedule.Schedule:
        """The forward schedule ``forward(is_train)`` runs (``describe()`` prints it)."""
        save = bool(is_train) and self._train
        run = self._runs.get(save)
        if run is None:
            run = self._runs[save] = self._run(bool(is_train), save)
        return run[2]

    # -- backward -----------------------------------------------------------------------------
    def backward(self, out_grads: Any = None) -> None:
        """Gradients of the outputs (seeded with ``out_grads``: one per output, an
        NdArray, numpy array or scalar; default 1) into ``grad_dict`` per ``grad_req``."""
        if not self.grad_dict:
            return
        if not self._trained:
            raise GraphError("Executor.backward: run forward(is_train=True) first")
        if self._order and _owner.get(id(self._order[-1])) is not self:
            raise GraphError("Executor.backward: another executor (or forward()) ran this "
                             "graph since this executor's forward; run forward() again")
        outs = self._outs
        if out_grads is None:
            out_grads = [1] * len(outs)
        elif not isinstance(out_grads, (list, tuple)):
            out_grads = [out_grads]
        if len(out_grads) != len(outs):
            raise GraphError(f"Executor.backward: {len(out_grads)} out_grads for "
                             f"{len(outs)} outputs")
        seeds = self._seeds = [seed(v, g, old, "Executor.backward") for v, g, old in
                               zip(outs, out_grads, self._seeds or [None] * len(outs))]
        prog = self._program
        if prog is None:
            prog = self._program = trace(outs[0], self._backward_order(), self._order,
                                         outs[1:])
        names, args = self.graph._names, self.graph._args
        kept = []
        for name, v in zip(names, args):
            g = self.grad_dict.get(name)
            if g is not None:
                kept.append((v, v._grad))
                if self.grad_req[name] == "write":
                    g.zero()
                v._grad = g
        try:
            replay(prog, self._order, seeds[0], self.ctx, True, seeds[1:],
                   self._runs[True][2].recompute)
        finally:
            for v, old in kept:
                v._grad = old
        self._trained = False

    def _backward_order(self) -> list:
        want = {id(v) for n, v in zip(self.graph._names, self.graph._args)
                if self.grad_req[n] != "null"}
        return backward_order(self._order, lambda v: id(v) in want)

    def __repr__(self) -> str:
        return f"<Executor on {self.ctx} of {getattr(self, 'graph', None)!r}>"


def _check_rebound(graph: Graph, arrays: dict) -> None:
    """``GraphError`` unless the graph recorded again for new shapes has the bound
    arguments, in order, with their shapes and dtypes (a loaded file's function call that
    does not name its inputs leaves nodes inferred for the old shapes)."""
    if graph._names != list(arrays) or any(
            nd.shape != v.shape or nd.dtype != v.dtype
            for v, nd in zip(graph._args, arrays.values())):
        raise GraphError(f"bind: recorded again for the new shapes, the graph's arguments "
                         f"are {_shapes(graph._args)} where {_shapes(arrays.values())} "
                         "are bound (a saved function call that does not name all its "
                         "inputs?)")


late.provide(__name__)  # Graph.bind (nnarray.late)

__all__ = ["Executor"]
