"""Graphs as objects (MXNet's Symbol flow): ``Graph``, ``Executor``, JSON.

A ``Graph`` is a view of a static graph: its output Variables and, through them, the
nodes behind them (nothing is copied). Its arguments are the leaf Variables in first-use
order, named by ``params`` (``model.parameters()``'s dotted names), else by the
Variable's ``name``, else ``arg<k>`` (``k``: its position). Shape and dtype inference,
composition and binding to arrays of new shapes rebuild the nodes on new placeholders
(``_rebuild``: every op's ``infer`` runs again, kernels do not); the original graph is
never changed.

``Graph.bind`` gives an ``Executor``: it runs the graph's own nodes with the compiled
steps that ``Variable.forward()`` uses (``executor.py``) and replays a backward program
traced by ``program.py`` (seeded at every output), with gradients delivered per
``grad_req``. Its memory is planned: each intermediate is dropped after its last
consumer ran (only what a backward rule retains stays alive), so intermediates whose
lifetimes do not overlap share buffers through the device pools; the backward replay
frees each saved array after its last use.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Iterable
from typing import Any

from .. import dtypes, late
from ..context import as_context
from ..errors import DTypeError, GraphError, InvalidValueError, ShapeError
from ..ndarray import NdArray
from . import modes, recording, schedule
from .backward import check_not_freed, seed
from .executor import backward_order, leaves, replay, topological_many
from .planner import forward_releases
from .program import trace
from .python_function import PyNode, PythonFunction
from .variable import Variable

#: ``graph_json`` (above: it builds Graphs), for ``to_json``/``from_json``
_json: Any = late.bind(__name__, "_json", "nnarray.grad.graph_json")

_FLOATS = dtypes.INEXACT
_REQS = ("write", "add", "null")

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
             args_grad: dict | None = None) -> Executor:
        """An ``Executor`` running this graph on ``ctx`` with ``args`` (``{name:
        NdArray}``; arguments not given take their Variable's current data).
        ``args`` may also be a list in argument order. ``grad_req``: ``"write"`` |
        ``"add"`` | ``"null"`` or ``{name: req}`` (missing: ``"null"``); ``args_grad``:
        ``{name: NdArray}`` (or a list) to receive gradients (default: new arrays)."""
        return Executor(self, ctx, args or {}, grad_req, args_grad or {})

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


# -- rebuilding nodes on new inputs -------------------------------------------------------
def _rebuild(order: list, subst: dict, inference: bool = False) -> dict:
    """Record the nodes of ``order`` that depend on a substituted value again, on the new
    values (static mode): ``{id(old variable): new variable}``. ``inference``: nodes that
    train (dropout, batch normalization in training mode) are recorded again in
    inference mode too."""
    new = dict(subst)
    if not new and not inference:
        return new
    inner = _macro_members(order)
    calls: dict = {}  # a split's call, made again once for all its outputs
    batch = _batch_sizes(order, subst)
    tok = modes.mode.set(modes.STATIC)
    ttok = recording.tape.set(None)
    try:
        for n in order:
            if id(n) in inner:
                continue  # recorded again by its function's call (below)
            changed = False
            ins = []
            for a in (n.macro[1] if n.macro is not None else n.inputs):
                if isinstance(a, (list, tuple)):  # concatenate([...]), stack([...])
                    b = type(a)(new.get(id(e), e) if isinstance(e, Variable) else e
                                for e in a)
                    if any(x is not y for x, y in zip(a, b)):
                        changed = True
                        ins.append(b)
                        continue
                b = new.get(id(a)) if isinstance(a, Variable) else None
                if b is not None:
                    changed = True
                    ins.append(b)
                else:
                    ins.append(a)
            force = inference and _trains(n)
            if not changed and not force:
                continue
            outs = _reapply(n, tuple(ins), calls=calls, inference=force, batch=batch)
            for r, o in zip(n.outputs, outs):
                old = r()
                if old is not None:
                    new[id(old)] = o
                    if old._explicit:
                        o._need_grad, o._explicit = old._need_grad, True
    finally:
        recording.tape.reset(ttok)
        modes.mode.reset(tok)
    return new


def _batch_sizes(order: list, subst: dict) -> dict:
    """``{old: new}`` leading (batch) sizes of the substituted leaves whose leading axis
    changed (what a leading size of a recorded target shape follows)."""
    out: dict = {}
    for n in order:
        for a in n.inputs:
            b = subst.get(id(a)) if isinstance(a, Variable) else None
            if b is not None and a.shape and b.shape and a.shape[0] != b.shape[0]:
                out[a.shape[0]] = b.shape[0]
    return out


def _macro_members(order: list) -> set:
    """The nodes inside composite functions' calls (``Node.macro``), by id."""
    inner: set = set()
    for n in reversed(order):
        m = n.macro
        if m is None or id(n) in inner:
            continue
        stop = set()
        for a in m[1]:
            for e in (a if isinstance(a, (list, tuple)) else (a,)):
                if isinstance(e, Variable):
                    stop.add(id(e))
        stack = list(n.inputs)
        while stack:
            a = stack.pop()
            if not isinstance(a, Variable) or id(a) in stop:
                continue
            p = a._parent
            if p is None or id(p) in inner:
                continue
            inner.add(id(p))
            stack.extend(p.inputs)
    return inner


def _shapes(xs: Iterable) -> str:
    return ", ".join(str(getattr(x, "shape", x)) if isinstance(x, (Variable, NdArray))
                     else repr(x) for x in xs)


_TRAINING = ("dropout", "batch_normalization")


def _training_call(fn: Any, args: tuple, kwargs: dict) -> dict | None:
    """The bound arguments of a dropout / batch_normalization call, when it trains."""
    if getattr(fn, "__name__", None) not in _TRAINING:
        return None
    import inspect
    try:
        b = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        return None
    b.apply_defaults()
    return dict(b.arguments) if b.arguments.get("training") else None


def _trains(n: Any) -> bool:
    m = n.macro
    if m is not None:
        return _training_call(m[0], m[1], m[2]) is not None
    return bool(getattr(n, "attrs", {}).get("training")) and not isinstance(n, PyNode)


def _reapply(n: Any, ins: tuple, label: str | None = None, calls: Any = None,
             inference: bool = False, batch: Any = None) -> tuple:
    """Node ``n``'s function recorded on ``ins`` (``inference``: in inference mode): its
    output Variables (the node keeps ``n``'s name, or ``label``). A ``broadcast_to``
    target's leading size follows a rebound batch size (``batch``: ``{old: new}``)."""
    label = label or n.label
    try:
        if n.macro is not None and inference:
            fn, _, kwargs, _ = n.macro
            bound = _training_call(fn, ins, kwargs) or {}
            bound["training"] = False
            out = fn(**bound)
            if out is ins[0]:
                return (out,)  # dropout in inference is the identity
        elif n.macro is not None:
            fn, _, kwargs, j = n.macro
            if fn.__name__ == "reshape" and fn.__module__ == "nnarray.functions":
                ins = (ins[0], _follow_batch(n, ins[0], ins[1]))
            key = (fn, tuple(id(a) for a in ins), j is None)
            out = calls.get(key) if calls is not None and j is not None else None
            if out is None:
                out = fn(*ins, **kwargs)
                if j is not None and calls is not None:
                    calls[key] = out
            if j is not None:
                for q, o in enumerate(out):
                    if o._parent is not None and all(o is not a for a in ins):
                        o._parent.macro = (fn, ins, kwargs, q)
                out = out[j]
            elif isinstance(out, Variable) and out._parent is not None:
                out._parent.macro = (fn, ins, kwargs, None)
        elif isinstance(n, PyNode):
            out = n.function(*ins)
        else:
            op = n.function
            attrs = dict(n.attrs)
            if inference:
                attrs["training"] = False
            if op.name == "reshape":
                attrs["shape"] = _reshape_target(n, ins[0], attrs["shape"])
            elif op.name == "broadcast_to" and batch and attrs["shape"] and \
                    attrs["shape"][0] in batch:
                attrs["shape"] = (batch[attrs["shape"][0]], *attrs["shape"][1:])
            out = recording.record(op, ins, attrs, op.infer(ins, attrs))
    except (ShapeError, DTypeError, InvalidValueError) as e:
        raise type(e)(f"{_node_at(n, label, ins)}: {e}") from None
    except ValueError as e:  # an attribute value the op cannot take (axis out of range)
        raise InvalidValueError(f"{_node_at(n, label, ins)}: {e}") from None
    except (TypeError, IndexError, KeyError, AttributeError, OverflowError) as e:
        raise GraphError(f"{_node_at(n, label, ins)}: {type(e).__name__}: {e}") from None
    outs = out if isinstance(out, tuple) else (out,)
    if not (isinstance(outs[0], Variable) and outs[0]._parent is not None):
        raise GraphError(f"{_node_at(n, label, ins)}: its call gave a "
                         f"{type(out).__name__}, not a node's output (a loaded file's "
                         "call with the wrong output index?)")
    outs[0]._parent.label = label
    return outs


def _follow_batch(n: Any, x: Any, spec: Any) -> Any:
    """A reshape's target as given (``-1`` kept) for a new input: a leading size equal to
    the old input's leading (batch) axis follows the new one (``x.reshape(N, -1)``)."""
    old, new = n.in_meta[0][0], getattr(x, "shape", ())
    if isinstance(spec, (tuple, list)) and spec and old and new and spec[0] == old[0] != new[0]:
        return (new[0], *spec[1:])
    return spec


def _node_at(n: Any, label: str, ins: tuple) -> str:
    what = n.macro[0].__name__ if n.macro is not None else n.name
    return f"node '{label}' ({what}) with inputs of shapes {_shapes(ins)}"


def _reshape_target(n: Any, x: Any, shape: tuple) -> tuple:
    """A reshape's target for a new input shape: a leading (batch) axis that followed the
    input's follows it again, and a flattening last axis takes the rest
    (``x.reshape(N, -1)`` recorded with ``N`` and the flattened size concrete)."""
    old = n.in_meta[0][0]
    new = getattr(x, "shape", old)
    if new == old or not shape or not old or not new or shape[0] != old[0]:
        return shape
    size = 1
    for s in new:
        size *= s
    mid = 1
    for s in shape[1:-1]:
        mid *= s
    if len(shape) > 1 and mid * shape[-1] * new[0] == size:
        return (new[0],) + tuple(shape[1:])
    if len(shape) > 1 and new[0] * mid and size % (new[0] * mid) == 0:
        return (new[0],) + tuple(shape[1:-1]) + (size // (new[0] * mid),)
    if len(shape) == 1:
        return (size,)
    return shape


# -- the executor ---------------------------------------------------------------------------
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
            arrays[name] = nd
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
                self.grad_dict[name] = g
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
        sched = schedule.forward(order, self.ctx, save, forward_releases(order, outs))
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
            replay(prog, self._order, seeds[0], self.ctx, True, seeds[1:])
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


__all__ = ["Executor", "Graph", "register_function"]
