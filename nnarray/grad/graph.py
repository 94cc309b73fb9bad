"""Graphs as objects (MXNet's Symbol flow): the ``Graph`` view.

A ``Graph`` is a view of a static graph: its output Variables and, through them, the
nodes behind them (nothing is copied). Its arguments are the leaf Variables in first-use
order, named by ``params`` (``model.parameters()``'s dotted names), else by the
Variable's ``name``, else ``arg<k>`` (``k``: its position). Shape and dtype inference,
composition and binding to arrays of new shapes rebuild the nodes on new placeholders
(``rebuild.py``: every op's ``infer`` runs again, kernels do not); the original graph is
never changed. ``Graph.bind`` gives an ``Executor`` (``bind.py``); ``to_json`` /
``from_json`` are ``graph_json.py``'s.
"""

from __future__ import annotations

import json
import weakref
from typing import Any

from .. import dtypes, late
from ..errors import GraphError
from ..ndarray import NdArray
from .backward import check_not_freed
from .executor import leaves, topological_many
from .python_function import PythonFunction
from .rebuild import _rebuild
from .variable import Variable

#: ``graph_json`` (above: it builds Graphs), for ``to_json``/``from_json``
_json: Any = late.bind(__name__, "_json", "nnarray.grad.graph_json")
#: ``bind`` (above: its Executor runs Graphs), for ``Graph.bind``
_bind: Any = late.bind(__name__, "_bind", "nnarray.grad.bind")

#: Argument placeholders of loaded graphs: they have structure, no data, until bound. Kept
#: by id: a WeakSet would compare Variables with ``==``, which is elementwise.
_unbound: dict[int, weakref.ref] = {}


def _mark_unbound(v: Variable) -> None:
    k = id(v)
    _unbound[k] = weakref.ref(v, lambda _r: _unbound.pop(k, None))


def _is_unbound(v: Variable) -> bool:
    r = _unbound.get(id(v))
    return r is not None and r() is v

#: PythonFunction classes that may be serialized, by name (``register_function``).
_functions: dict[str, type] = {}


def register_function(cls: type, name: str | None = None) -> type:
    """Allow ``cls`` (a ``PythonFunction`` subclass) in saved graphs under ``name``
    (default: the class name); its instance attributes are saved with the node. Usable
    as a decorator."""
    if not (isinstance(cls, type) and issubclass(cls, PythonFunction)):
        raise TypeError(f"register_function: expected a PythonFunction subclass, got {cls!r}")
    _functions[name or cls.__name__] = cls
    return cls


def _registered_name(fn: Any) -> str | None:
    for k, c in _functions.items():
        if type(fn) is c:
            return k
    return None


class Graph:
    """A view of the static graph behind ``outputs`` (a Variable, a Graph, or a list of
    them: a Group). ``params``: ``{name: Variable}`` naming arguments."""

    def __init__(self, outputs: Any, params: dict | None = None) -> None:
        items = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        outs: list[Variable] = []
        named: dict[int, str] = {}
        for o in items:
            if isinstance(o, Graph):
                outs.extend(o._outputs)
                for n, v in zip(o._names, o._args):
                    named.setdefault(id(v), n)
            elif isinstance(o, Variable):
                outs.append(o)
            else:
                raise TypeError(f"Graph: outputs must be Variables or Graphs, got "
                                f"{type(o).__name__}")
        if not outs:
            raise ValueError("Graph: no outputs")
        for n, v in (params or {}).items():
            if not isinstance(v, Variable):
                raise TypeError(f"Graph: params[{n!r}] is a {type(v).__name__}, not a Variable")
            named[id(v)] = n
        self._outputs = outs
        self._order = topological_many(outs)
        check_not_freed(self._order, "Graph")
        for n in self._order:  # define-by-run nodes get their names in execution order
            if n._label is None:
                _ = n.label
        args = leaves(self._order, outs)
        self._args = args
        names = []
        for k, v in enumerate(args):
            names.append(named.get(id(v)) or v._name or f"arg{k}")
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise GraphError(f"Graph: several arguments are named {', '.join(dup)} (name the "
                             "Variables apart, or pass params=)")
        self._names = names
        self._index = {n: k for k, n in enumerate(names)}

    # -- what the graph is ------------------------------------------------------------
    def arguments(self) -> list[str]:
        """The argument names (leaf Variables in first-use order)."""
        return list(self._names)

    list_arguments = arguments  # MXNet's name

    def outputs(self) -> list[str]:
        """The output names (the output nodes' names)."""
        return [self._out_name(k, v) for k, v in enumerate(self._outputs)]

    list_outputs = outputs

    def _out_name(self, k: int, v: Variable) -> str:
        if v._parent is None:  # a leaf output is an argument (found by identity)
            for n, a in zip(self._names, self._args):
                if a is v:
                    return n
            return f"output{k}"
        return v.name

    def argument_variables(self) -> dict[str, Variable]:
        """``{argument name: its Variable}``."""
        return dict(zip(self._names, self._args))

    def output_variables(self) -> list[Variable]:
        """The output Variables."""
        return list(self._outputs)

    def nodes(self) -> list[str]:
        """Every node's name, in execution order."""
        return [n.label for n in self._order]

    def __repr__(self) -> str:
        return (f"<Graph {len(self._order)} nodes, arguments {self._names}, "
                f"outputs {self.outputs()}>")

    # -- inference ----------------------------------------------------------------------
    def _placeholders(self, what: str, given: dict, shape: bool) -> dict:
        subst = {}
        for name, val in given.items():
            k = self._index.get(name)
            if k is None:
                raise GraphError(f"{what}: '{name}' is not an argument (arguments: "
                                 f"{', '.join(self._names)})")
            v = self._args[k]
            if shape:
                new = Variable(val, v._need_grad, v.dtype, name=v._name)
            else:
                new = Variable(v.shape, v._need_grad, dtypes.normalize(val, what), name=v._name)
            if new.shape != v.shape or new.dtype != v.dtype:
                subst[id(v)] = new
        return subst

    def infer_shape(self, **shapes: Any) -> tuple[dict, dict]:
        """``({argument: shape}, {output: shape})`` with the given argument shapes (the
        others keep theirs); every op's validation runs again, and a ``ShapeError``
        names the node and the shapes."""
        g = self._with(self._placeholders("infer_shape", shapes, True))
        return ({n: v.shape for n, v in zip(g._names, g._args)},
                {n: v.shape for n, v in zip(g.outputs(), g._outputs)})

    def infer_type(self, **types: Any) -> tuple[dict, dict]:
        """``({argument: dtype}, {output: dtype})`` with the given argument dtypes."""
        g = self._with(self._placeholders("infer_type", types, False))
        return ({n: v.dtype for n, v in zip(g._names, g._args)},
                {n: v.dtype for n, v in zip(g.outputs(), g._outputs)})

    # -- composition ------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Graph:
        """Substitute arguments (by position or name) with Variables or single-output
        Graphs: a new Graph whose arguments are the union, in first-use order."""
        if len(args) > len(self._names):
            raise GraphError(f"Graph call: {len(args)} positional values for "
                             f"{len(self._names)} arguments")
        given = dict(zip(self._names, args))
        for k, v in kwargs.items():
            if k in given:
                raise GraphError(f"Graph call: argument '{k}' given twice")
            given[k] = v
        subst: dict[int, Variable] = {}
        names: dict[str, Variable] = {}
        for name, val in given.items():
            k = self._index.get(name)
            if k is None:
                raise GraphError(f"Graph call: '{name}' is not an argument (arguments: "
                                 f"{', '.join(self._names)})")
            if isinstance(val, Graph):
                if len(val._outputs) != 1:
                    raise GraphError(f"Graph call: the graph given for '{name}' has "
                                     f"{len(val._outputs)} outputs; one is needed")
                names.update(val.argument_variables())
                val = val._outputs[0]
            if not isinstance(val, Variable):
                raise TypeError(f"Graph call: '{name}' must be a Variable or a Graph, got "
                                f"{type(val).__name__}")
            subst[id(self._args[k])] = val
        for n, v in zip(self._names, self._args):
            if id(v) not in subst:
                names.setdefault(n, v)
        return self._with(subst, {n: v for n, v in names.items()})

    def _with(self, subst: dict, params: dict | None = None, inference: bool = False) -> Graph:
        """A Graph over the nodes rebuilt on ``subst`` (``{id(old leaf): new value}``; in
        inference mode with ``inference``), its arguments named as here."""
        new = _rebuild(self._order, subst, inference)
        outs = [new.get(id(o), o) for o in self._outputs]
        if params is None:
            params = {}
            for n, v in zip(self._names, self._args):
                params[n] = new.get(id(v), v)
        return Graph(outs, params=params)

    # -- running ----------------------------------------------------------------------------
    def bind(self, ctx: Any, args: dict | None = None, grad_req: Any = "write",
             args_grad: dict | None = None) -> Any:
        """An ``Executor`` running this graph on ``ctx`` with ``args`` (``{name:
        NdArray}``; arguments not given take their Variable's current data).
        ``args`` may also be a list in argument order. ``grad_req``: ``"write"`` |
        ``"add"`` | ``"null"`` or ``{name: req}`` (missing: ``"null"``); ``args_grad``:
        ``{name: NdArray}`` (or a list) to receive gradients (default: new arrays)."""
        return _bind.Executor(self, ctx, args or {}, grad_req, args_grad or {})

    simple_bind = bind

    def eval(self, ctx: Any, **args: Any) -> list[NdArray]:
        """``bind(ctx, args, grad_req="null").forward(is_train=False)``: the outputs."""
        return self.bind(ctx, args, grad_req="null").forward(is_train=False)

    # -- serialization ------------------------------------------------------------------------
    def to_json(self) -> str:
        """The structure as JSON text: ops, attributes, names, topology, argument shapes
        and dtypes (no data; constants inside the graph are kept)."""
        return json.dumps(_json.to_doc(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> Graph:
        """A graph from ``to_json`` text: new argument Variables (no data: bind them).
        Everything in it is checked as it is read (``graph_json``): a bad file raises a
        ``GraphError`` (or the op's ``ShapeError``/``DTypeError``/``InvalidValueError``)
        naming the node, before any kernel runs."""
        return _json.from_text(text)

    def save(self, path: Any) -> None:
        """Write ``to_json()`` to ``path`` atomically (``nnarray.atomic_file``)."""
        from ..atomic_file import write_text
        write_text(path, self.to_json())

    @classmethod
    def load(cls, path: Any) -> Graph:
        """A graph saved with ``save``."""
        with open(path, encoding="utf-8") as f:
            try:
                text = f.read()
            except UnicodeDecodeError as e:
                raise GraphError(f"Graph.load: {path} is not UTF-8 text ({e})") from None
        return cls.from_json(text)

    def to_onnx(self, path: Any, params: dict | None = None) -> None:
        """Export to ONNX (``nnarray.grad.onnx``); ``params``' arguments become
        initializers."""
        from . import onnx
        names = {id(v): n for n, v in zip(self._names, self._args)}
        onnx.export(list(self._outputs), path, params, names)

    @classmethod
    def from_onnx(cls, path: Any) -> Graph:
        """Import an ONNX model (``nnarray.grad.onnx``)."""
        from . import onnx
        outs, arguments = onnx.import_model(path)
        return cls(outs, params=arguments)


__all__ = ["Graph", "register_function"]
