"""Nodes: one recorded function application (nnabla's CgFunction, Chainer's FunctionNode).

A node references its graph ``inputs`` strongly (Variables, or NdArray/scalar constants)
and its ``outputs`` weakly, so that dropping the last reference to a result frees the
graph behind it. What the backward pass needs of the forward data is kept in
``saved_inputs`` / ``saved_outputs`` with their versions.

Built-in ops (``Node``) and Python functions (``PyNode``, in ``python_function.py``)
implement one interface, which the executor and the backward pass use without asking
which kind a node is: ``differentiable``, ``relocatable``, ``fusable`` (one plain kernel
call: a schedule's step may call its kernel itself), ``run(ctx, save)``,
``trace_backward(index, need, gys, program)`` (the one way a rule runs: recorded into a
program, recorded as it runs, run on the saved data recording nothing, or run on the
graph's own Variables for ``grad.grad``: ``RuleValues``), ``check()`` and ``release()``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..discovery import host_device
from ..errors import GraphError
from ..ndarray import NdArray
from ..ops.op import GraphValue
from ..registry import dispatch
from .modes import SAVED


class _Meta:
    """A value's shape and dtype, as ``Program.proxy`` reads them."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple, dtype: Any) -> None:
        self.shape, self.dtype = shape, dtype


class RuleContext:
    """What a backward rule sees (``ops/backward.py``): ``inputs`` / ``outputs`` are the
    retained values (``None`` where not retained), ``args`` the graph inputs, ``attrs``,
    ``need`` (propagate_down per input), ``in_meta`` (``(shape, dtype)`` per input) and
    ``grads`` (every output's gradient, for a rule declared with ``grads``; else ``None``)."""

    __slots__ = ("inputs", "outputs", "args", "attrs", "need", "in_meta", "grads")

    def __init__(self, inputs: Any, outputs: Any, args: tuple, attrs: dict, need: tuple,
                 in_meta: tuple, grads: Any = None) -> None:
        self.inputs, self.outputs, self.args = inputs, outputs, args
        self.attrs, self.need, self.in_meta, self.grads = attrs, need, in_meta, grads


class RuleValues:
    """What a rule runs on (``Node.trace_backward``), besides a traced ``Program``'s
    proxies: ``UNTAPED``, the saved NdArrays (the rule runs now and records nothing;
    a Python function's step runs now: ``live``); ``ON_GRAPH``, the graph's own
    Variables (its functions record the backward computation in the current mode:
    ``grad.grad``)."""

    __slots__ = ("taped", "live")

    def __init__(self, taped: bool, live: Any) -> None:
        self.taped, self.live = taped, live


UNTAPED, ON_GRAPH = RuleValues(False, True), RuleValues(True, None)


class Node:
    """A built-in op's application in the graph."""

    #: The step is one kernel call (generated backward code may inline it).
    fusable = True

    __slots__ = ("function", "inputs", "attrs", "out_metas", "outputs", "rank",
                 "saved_inputs", "saved_outputs", "versions", "dynamic", "_in_meta", "_label",
                 "macro", "__weakref__")

    #: A traced backward through this node may replay on another graph of its signature.
    relocatable = True

    def __init__(self, function: Any, inputs: tuple, attrs: dict, out_metas: tuple,
                 rank: int, dynamic: bool = False) -> None:
        self.function = function
        self.inputs = inputs
        self.attrs = attrs
        self.out_metas = out_metas
        self.outputs: tuple = ()
        self.rank = rank
        #: Recorded under auto_forward: its data is already computed and what backward
        #: needs is saved at once (nothing, until ``save``/``retain`` says otherwise).
        self.dynamic = dynamic
        self.saved_inputs = self.saved_outputs = self.versions = () if dynamic else None
        #: ``macro``: ``(function, args, kwargs)`` when this node is the output of a
        #: function made of several ops (``F.conv2d``): re-inference calls it again.
        self._in_meta = self._label = self.macro = None

    @property
    def name(self) -> str:
        """The function's name (the op's, or the PythonFunction's)."""
        return self.function.name

    @property
    def label(self) -> str:
        """The node's own name (``add0``, ``layer1/affine2``, or an explicit ``name=``;
        see ``naming.py``); a define-by-run node is named on first request."""
        lb = self._label
        if lb is None:
            from .naming import auto_name
            lb = self._label = auto_name(self.function.name.lower(), None, self)
        return lb

    @label.setter
    def label(self, value: str) -> None:
        self._label = value

    @property
    def differentiable(self) -> bool:
        return self.function.differentiable

    @property
    def in_meta(self) -> tuple:
        """``(shape, dtype)`` of every input (``((), None)`` for a scalar)."""
        m = self._in_meta
        if m is None:
            m = self._in_meta = tuple((getattr(a, "shape", ()), getattr(a, "dtype", None))
                                      for a in self.inputs)
        return m

    def output_variables(self) -> list:
        """The outputs still alive."""
        return [v for v in (r() for r in self.outputs) if v is not None]

    # -- saved data ------------------------------------------------------------------
    def save(self, datas: Any, outs: Any) -> None:
        """Keep what the backward rule retains, with the versions to check."""
        rule = self.function.backward
        if rule is None:
            self.saved_inputs = self.saved_outputs = self.versions = ()
            return
        ri = rule.inputs if type(rule.inputs) is tuple else rule.retained_inputs(self.attrs)
        if ri or rule.outputs:
            self.retain(datas, outs, ri, rule.outputs)
        else:
            self.saved_inputs = self.saved_outputs = self.versions = ()

    def retain(self, datas: Any, outs: Any, ri: tuple, ro: tuple) -> None:
        """Keep inputs ``ri`` and outputs ``ro`` with their versions (checked later)."""
        vers = []
        if ri:
            ins = [None] * len(datas)
            for i in ri:
                d = ins[i] = datas[i]
                if type(d) is NdArray:
                    vers.append((i, d, d.version))
                    d._snap = SAVED
            self.saved_inputs = ins
        else:
            self.saved_inputs = ()
        if ro:
            o = [None] * len(outs)
            for j in ro:
                d = o[j] = outs[j]
                vers.append((-1 - j, d, d.version))
                d._snap = SAVED
            self.saved_outputs = o
        else:
            self.saved_outputs = ()
        self.versions = vers

    def check(self) -> None:
        """Raise ``GraphError`` if retained data changed since the forward pass."""
        vs = self.versions
        if vs is None:
            raise GraphError(f"{self.name}: backward before forward (call forward() on the "
                             "graph's output first), or after clear_buffer freed its data")
        for i, d, v in vs:
            s = d._snap
            if s is not None and s is not SAVED and d.version == v and s[0] == v and \
                    not np.array_equal(s[1], d.native(host_device(), "r", explicit=True)):
                d.mark_modified()  # written through a host view handed out by Variable.d
                d._snap = None
            if d.version != v:
                what = f"input {i}" if i >= 0 else f"output {-1 - i}"
                raise GraphError(
                    f"{self.name}: {what} (shape {d.shape}), saved for the backward pass, was "
                    f"modified in place after the forward pass (version {v} -> {d.version}); "
                    "run forward() again or modify a copy")

    def release(self) -> None:
        """Drop the retained data (clear_buffer)."""
        self.saved_inputs = self.saved_outputs = self.versions = None

    def checked_rule(self, check: bool = True) -> Any:
        """The op's backward rule, after checking (``check``) the retained data is
        unmodified."""
        rule = self.function.backward
        if rule is None:
            raise GraphError(f"{self.name}: no backward rule is declared for this op")
        if check:
            self.check()
        return rule

    # -- forward -----------------------------------------------------------------------
    def run(self, ctx: Any, save: bool = True) -> None:
        """Run the node's kernel on its inputs' data; store the outputs (in the output
        variables' NdArrays where they exist) and, with ``save``, what backward needs."""
        datas = [a.data if isinstance(a, GraphValue) else a for a in self.inputs]
        vs = [r() for r in self.outputs]
        into = [v._data if v is not None else None for v in vs]
        res = dispatch(self.function, ctx).run(datas, self.attrs, self.out_metas, into)
        outs = (res,) if len(self.out_metas) == 1 else res
        for v, o in zip(vs, outs):
            if v is not None:
                v._data = o
        if save:
            self.save(datas, outs)

    # -- backward ----------------------------------------------------------------------
    def trace_backward(self, index: int, need: tuple, gys: list, program: Any) -> Any:
        """The rule run on ``program``'s values (see ``RuleValues``; a traced ``Program``'s
        proxies record the steps): the input gradients, or ``None`` when no output
        gradient flows here."""
        gy = gys[0]
        rule = self.function.backward
        if gy is None and not (rule is not None and rule.grads and
                               any(g is not None for g in gys)):
            return None
        on_graph = program is ON_GRAPH
        rule = self.checked_rule(not on_graph or self.dynamic)  # a static graph: unrun
        grads = gys if rule.grads else None
        if not program.taped:  # run now, recording nothing: on the saved data itself
            return rule.fn(RuleContext(self.saved_inputs, self.saved_outputs, self.inputs,
                                       self.attrs, need, self.in_meta, grads), gy)
        ri = rule.retained_inputs(self.attrs)
        retained = [None] * len(self.inputs) if ri else ()
        for i in ri:
            a = self.inputs[i]
            retained[i] = a if on_graph or not isinstance(a, (GraphValue, NdArray)) else \
                program.proxy(index, i, a)
        outs = [None] * len(self.out_metas) if rule.outputs else ()
        for j in rule.outputs:  # (a proxy: not saved where the forward left it to be
            outs[j] = self.outputs[j]() if on_graph else \
                program.proxy(index, -1 - j, _Meta(*self.out_metas[j]))  # recomputed)
        return rule.fn(RuleContext(retained, outs, self.inputs, self.attrs, need,
                                   self.in_meta, grads), gy)

    def differentiate(self, need: tuple, gys: list, graph: bool) -> Any:
        """The input gradients for the output gradients ``gys`` (``grad.grad``): with
        ``graph`` the rule runs on the graph's own Variables (its ``F`` calls record the
        backward computation, in the current mode; ``gradient.revive`` made dead outputs
        it reads again), else on the saved NdArrays."""
        return self.trace_backward(-1, need, gys, ON_GRAPH if graph else UNTAPED)

    def __repr__(self) -> str:
        return f"<Node {self.name} rank={self.rank}>"

