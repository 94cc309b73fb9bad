"""The saved-graph format (``Graph.to_json`` / ``Graph.from_json``) and its checked reader.

A document holds the arguments (name, shape, dtype), the constants (shape, dtype,
values), the nodes in execution order (an op and its attributes, or a registered
``PythonFunction`` and its state; inputs referring to arguments, earlier nodes'
outputs, constants or plain values) and the heads. Files are untrusted: the reader
checks every field, reference and value as it goes (``GraphError`` naming the node),
nests values at most ``MAX_DEPTH`` deep, and records each node through its op's
inference, which validates every attribute and constant a kernel will read (``slice``'s
block, ``gather``/``scatter_add``'s indices, ...), so a bad file raises before any
kernel runs. Binding to new shapes runs the inference again (``rebuild._rebuild``).
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import numpy as np

from .. import dtypes, late
from ..errors import GraphError, InvalidValueError, NnarrayError
from ..ndarray import NdArray
from . import modes, recording
from .graph import Graph, _functions, _mark_unbound, _registered_name
from .python_function import PyNode
from .rebuild import _shapes
from .variable import Variable

FORMAT = "nnarray.graph/1"

#: The deepest nesting of values (tuples, lists, dicts) a file may hold.
MAX_DEPTH = 32

#: Errors of malformed input that the reader reports as ``GraphError``.
_MALFORMED = (KeyError, IndexError, TypeError, ValueError, AttributeError, OverflowError,
              RecursionError)


def _enc(x: Any, where: str) -> Any:
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, (int, float)) and type(x) in (int, float):
        return x
    if isinstance(x, np.generic):
        return {"scalar": x.item(), "dtype": str(x.dtype)}
    if isinstance(x, tuple):
        return {"tuple": [_enc(e, where) for e in x]}
    if isinstance(x, list):
        return [_enc(e, where) for e in x]
    if isinstance(x, np.dtype) or (isinstance(x, type) and issubclass(x, np.generic)):
        return {"dtype": str(np.dtype(x))}
    if isinstance(x, slice):
        return {"slice": [_enc(x.start, where), _enc(x.stop, where), _enc(x.step, where)]}
    if x is Ellipsis:
        return {"ellipsis": True}
    if isinstance(x, dict):
        return {"dict": {str(k): _enc(v, where) for k, v in x.items()}}
    raise GraphError(f"to_json: {where}: a {type(x).__name__} cannot be saved")



def to_doc(g: Graph) -> dict:
    """The JSON document of ``g`` (``Graph.to_json``)."""
    argi = {id(v): k for k, v in enumerate(g._args)}
    nodei = {id(n): k for k, n in enumerate(g._order)}
    consts: list = []
    consti: dict[int, int] = {}

    def ref(a: Any, where: str) -> Any:
        if isinstance(a, Variable):
            p = a._parent
            if p is None:
                k = argi.get(id(a))
                if k is None:
                    raise GraphError(f"to_json: {where} refers to a Variable outside the graph")
                return {"arg": k}
            j = 0 if len(p.outputs) == 1 else \
                next(q for q, r in enumerate(p.outputs) if r() is a)
            k = nodei.get(id(p))
            if k is None:
                raise GraphError(f"to_json: {where} refers to a Variable outside the graph")
            return {"node": k, "out": j}
        if isinstance(a, NdArray):  # constants are stored once, shared by reference
            k = consti.get(id(a))
            if k is None:
                k = consti[id(a)] = len(consts)
                consts.append({"shape": list(a.shape), "dtype": str(a.dtype),
                               "values": a.numpy().ravel().tolist()})
            return {"const": k}
        return {"value": _enc(a, where)}

    def call_ref(a: Any, where: str) -> Any:
        if isinstance(a, (list, tuple)) and any(isinstance(e, (Variable, NdArray)) for e in a):
            return {"items": [call_ref(e, where) for e in a],
                    "kind": "list" if isinstance(a, list) else "tuple"}
        return ref(a, where)

    nodes = []
    for n in g._order:
        where = f"node '{n.label}' ({n.name})"
        entry: dict[str, Any] = {"name": n.label}
        if isinstance(n, PyNode):
            reg = _registered_name(n.function)
            if reg is None:
                raise GraphError(f"to_json: {where}: the PythonFunction class "
                                 f"{type(n.function).__name__} is not registered "
                                 "(grad.register_function)")
            state = {k: v for k, v in vars(n.function).items() if k != "ctx"}
            entry["python"] = reg
            entry["state"] = _enc(state, where)
        else:
            entry["op"] = n.name
            entry["attrs"] = {k: _enc(v, f"{where} attribute '{k}'")
                              for k, v in n.attrs.items()}
        entry["inputs"] = [ref(a, where) for a in n.inputs]
        if n.macro is not None:  # the function call re-inference makes again
            fn, margs, kwargs, j = n.macro
            entry["call"] = {"function": fn.__name__,
                             "args": [call_ref(a, where) for a in margs],
                             "kwargs": {k: call_ref(v, where) for k, v in kwargs.items()},
                             "output": j}
        nodes.append(entry)
    heads = []
    for v in g._outputs:
        heads.append(ref(v, "output"))
    args = [{"name": name, "shape": list(v.shape), "dtype": str(v.dtype),
             "need_grad": v._need_grad} for name, v in zip(g._names, g._args)]
    return {"format": FORMAT, "arguments": args, "constants": consts, "nodes": nodes,
            "heads": heads}


_op_table: dict[str, Any] = {}


def _ops() -> dict[str, Any]:
    """Every Op by name (the spec modules' Op objects)."""
    if not _op_table:
        import importlib
        import pkgutil

        from .. import ops as _opspkg
        from ..ops.op import Op
        for m in pkgutil.iter_modules(_opspkg.__path__):
            mod = importlib.import_module(f"{_opspkg.__name__}.{m.name}")
            for v in list(vars(mod).values()):
                cands = v.values() if isinstance(v, dict) else (v,)
                for c in cands:
                    if isinstance(c, Op):
                        _op_table.setdefault(c.name, c)
    return _op_table


def _fail(where: str, what: str) -> GraphError:
    return GraphError(f"Graph.from_json: {where}: {what}")


def _get(d: Any, key: str, kind: type | tuple, where: str) -> Any:
    """``d[key]``, which must be of ``kind`` (an int is never a bool)."""
    if not isinstance(d, dict):
        raise _fail(where, f"expected an object, got {_short(d)}")
    if key not in d:
        raise _fail(where, f"'{key}' is missing")
    v = d[key]
    if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
        raise _fail(where, f"'{key}' must be {_kind(kind)}, got {_short(v)}")
    return v


def _index(d: Any, key: str, n: int, where: str, what: str) -> int:
    k = _get(d, key, int, where)
    if not 0 <= k < n:
        raise _fail(where, f"{key} {k} does not name one of the {n} {what}")
    return k


def _kind(kind: Any) -> str:
    names = {int: "an int", str: "a string", list: "a list", dict: "an object",
             bool: "a bool"}
    return names.get(kind, "a " + getattr(kind, "__name__", str(kind)))


def _short(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def _shape(v: Any, where: str) -> tuple[int, ...]:
    if not isinstance(v, list) or len(v) > MAX_DEPTH or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in v):
        raise _fail(where, f"a shape must be a list of at most {MAX_DEPTH} non-negative "
                           f"ints, got {_short(v)}")
    return tuple(v)


def _dtype(v: Any, where: str) -> np.dtype:
    if not isinstance(v, str):
        raise _fail(where, f"a dtype must be a string, got {_short(v)}")
    try:
        return np.dtype(v)
    except (TypeError, ValueError):
        raise _fail(where, f"unknown dtype {_short(v)}") from None


def _dec(x: Any, where: str, depth: int = 0) -> Any:
    """A value decoded (tuples, numpy scalars and dtypes, slices, ``...``, dicts)."""
    if depth > MAX_DEPTH:
        raise _fail(where, f"values nested more than {MAX_DEPTH} deep")
    if isinstance(x, list):
        return [_dec(e, where, depth + 1) for e in x]
    if not isinstance(x, dict):
        return x
    if "tuple" in x:
        return tuple(_dec(e, where, depth + 1) for e in _get(x, "tuple", list, where))
    if "scalar" in x:
        v = _get(x, "scalar", (int, float, bool), where)
        try:
            return _dtype(x.get("dtype"), where).type(v)
        except (TypeError, ValueError, OverflowError) as e:
            raise _fail(where, f"scalar {_short(v)}: {e}") from None
    if "dtype" in x:
        return _dtype(x["dtype"], where)
    if "slice" in x:
        parts = _get(x, "slice", list, where)
        if len(parts) != 3 or not all(p is None or (isinstance(p, int) and
                                                     not isinstance(p, bool)) for p in parts):
            raise _fail(where, f"a slice is three ints or nulls, got {_short(parts)}")
        return slice(*parts)
    if "ellipsis" in x:
        return Ellipsis
    if "dict" in x:
        return {k: _dec(v, where, depth + 1) for k, v in _get(x, "dict", dict, where).items()}
    raise _fail(where, f"unknown value {_short(x)}")


def from_text(text: Any) -> Graph:
    """The graph saved as ``text`` (``Graph.from_json``), every part checked."""
    import json
    if not isinstance(text, (str, bytes, bytearray)):
        raise GraphError(f"Graph.from_json: expected JSON text, got {type(text).__name__}")
    try:
        doc = json.loads(text)
    except RecursionError:
        raise GraphError("Graph.from_json: values nested too deep") from None
    except ValueError as e:
        raise GraphError(f"Graph.from_json: not JSON ({e})") from None
    return _Reader(doc).graph()


class _Reader:
    """Reads one document: arguments, constants, nodes (each recorded through its op's
    inference) and heads."""

    def __init__(self, doc: Any) -> None:
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise GraphError(f"Graph.from_json: not an nnarray graph (format {FORMAT} "
                             "expected)")
        self.doc = doc
        self.args: list[Variable] = []
        self.params: dict[str, Variable] = {}
        self.consts: list[NdArray] = []
        self.nodes: list[tuple] = []

    def graph(self) -> Graph:
        doc = self.doc
        for k, a in enumerate(_get(doc, "arguments", list, "the document")):
            self.argument(a, f"argument {k}")
        consts = doc.get("constants", [])
        if not isinstance(consts, list):
            raise _fail("the document", f"'constants' must be a list, got {_short(consts)}")
        for k, c in enumerate(consts):
            self.constant(c, f"constant {k}")
        tok = modes.mode.set(modes.STATIC)
        try:
            for k, e in enumerate(_get(doc, "nodes", list, "the document")):
                self.nodes.append(self.node(e, k))
        finally:
            modes.mode.reset(tok)
        heads = [self.value(r, "heads") for r in _get(doc, "heads", list, "the document")]
        if not heads or not all(isinstance(h, Variable) for h in heads):
            raise _fail("heads", "the outputs must be one or more arguments or node outputs")
        try:
            return Graph(heads, params=self.params)
        except (TypeError, ValueError) as e:
            raise _fail("heads", str(e)) from None

    def argument(self, a: Any, where: str) -> None:
        name = _get(a, "name", str, where)
        shape = _shape(_get(a, "shape", list, where), where)
        need = _get(a, "need_grad", bool, where)
        dt = dtypes.normalize(_dtype(a.get("dtype"), where), f"Graph.from_json: {where}")
        if name in self.params:
            raise _fail(where, f"a second argument named '{name}'")
        v = Variable(shape, need, dt, name=name)
        _mark_unbound(v)
        self.args.append(v)
        self.params[name] = v

    def constant(self, c: Any, where: str) -> None:
        shape = _shape(_get(c, "shape", list, where), where)
        dt = dtypes.normalize(_dtype(c.get("dtype"), where), f"Graph.from_json: {where}")
        values = _get(c, "values", list, where)
        if len(values) != math.prod(shape) or not all(
                isinstance(v, (int, float)) for v in values):
            raise _fail(where, f"{len(values)} values (numbers) for shape {shape}")
        try:
            a = np.asarray(values, dtype=dt).reshape(shape)
        except (TypeError, ValueError, OverflowError) as e:
            raise _fail(where, f"values do not fit {dt}: {e}") from None
        self.consts.append(NdArray.from_numpy_array(a))

    def value(self, r: Any, where: str, items: bool = False) -> Any:
        """An input: an argument, an earlier node's output, a constant, a plain value,
        or (``items``: a function call's argument) a list or tuple of these."""
        if not isinstance(r, dict):
            raise _fail(where, f"an input must be an object, got {_short(r)}")
        if "arg" in r:
            return self.args[_index(r, "arg", len(self.args), where, "arguments")]
        if "node" in r:
            outs = self.nodes[_index(r, "node", len(self.nodes), where, "earlier nodes")]
            return outs[_index(r, "out", len(outs), where, "outputs of that node")]
        if "const" in r:
            return self.consts[_index(r, "const", len(self.consts), where, "constants")]
        if "items" in r and items:
            kind = r.get("kind")
            if kind not in ("list", "tuple"):
                raise _fail(where, f"items of kind {_short(kind)} (list or tuple expected)")
            got = [self.value(e, where) for e in _get(r, "items", list, where)]
            return got if kind == "list" else tuple(got)
        if "value" in r:
            return _dec(r["value"], where)
        raise _fail(where, f"unknown input {_short(r)}")

    def node(self, e: Any, k: int) -> tuple:
        label = _get(e, "name", str, f"node {k}")
        where = f"node {k} '{label}'"
        ins = tuple(self.value(r, where) for r in _get(e, "inputs", list, where))
        try:
            out = self.python(e, ins, where) if "python" in e else self.op(e, ins, where)
        except NnarrayError:
            raise
        except _MALFORMED as err:
            raise _fail(where, f"{type(err).__name__}: {err}") from None
        outs = out if isinstance(out, tuple) else (out,)
        outs[0]._parent.label = label
        if "call" in e:
            self.call(outs[0], _get(e, "call", dict, where), where)
        return outs

    def python(self, e: dict, ins: tuple, where: str) -> Any:
        name = _get(e, "python", str, where)
        cls = _functions.get(name)
        if cls is None:
            raise _fail(where, f"PythonFunction '{name}' is not registered here "
                               "(grad.register_function)")
        state = _dec(_get(e, "state", dict, where), where)
        if not isinstance(state, dict):
            raise _fail(where, "the state of a PythonFunction must be a dict")
        for k in state:  # data only: never shadow the class's methods or properties
            a = inspect.getattr_static(cls, k, None)
            if callable(a) or isinstance(a, (property, staticmethod, classmethod)):
                raise _fail(where, f"the state sets '{k}', a method of {cls.__name__}")
        fn = cls.__new__(cls)
        fn.__dict__.update(state)
        fn.ctx = None
        return fn(*ins)

    def op(self, e: dict, ins: tuple, where: str) -> Any:
        name = _get(e, "op", str, where)
        op = _ops().get(name)
        if op is None:
            raise _fail(where, f"unknown op '{name}'")
        attrs = {k: _dec(v, where) for k, v in _get(e, "attrs", dict, where).items()}
        try:
            metas = op.infer(ins, attrs)
        except NnarrayError as err:
            raise type(err)(f"{where} ({name}) with inputs of shapes {_shapes(ins)}: "
                            f"{err}") from None
        except ValueError as err:  # an attribute value the op cannot take
            raise InvalidValueError(f"{where} ({name}) with inputs of shapes "
                                    f"{_shapes(ins)}: {err}") from None
        except _MALFORMED as err:
            raise _fail(f"{where} ({name}) with inputs of shapes {_shapes(ins)}",
                        f"{type(err).__name__}: {err}") from None
        _check_call(op, ins, attrs, where)
        return recording.record(op, ins, attrs, metas)

    def call(self, out: Variable, call: dict, where: str) -> None:
        """The function call a node was made by (run again on new shapes), checked by
        running it here: it must give the node's shape and dtype."""
        from .. import functions as _F
        name = _get(call, "function", str, where)
        fn = getattr(_F, name, None) if name in _F._COMPOSITES else _F._RECALLED.get(name)
        if fn is None:
            raise _fail(where, f"unknown function '{name}'")
        j = call.get("output")
        if j is not None and (not isinstance(j, int) or isinstance(j, bool) or j < 0):
            raise _fail(where, f"call output must be null or an int >= 0, got {_short(j)}")
        args = tuple(self.value(a, where, True) for a in _get(call, "args", list, where))
        kwargs = {k: self.value(v, where, True)
                  for k, v in _get(call, "kwargs", dict, where).items()}
        fn = getattr(fn, "__wrapped__", fn)
        try:
            got = fn(*args, **kwargs)
            got = got if j is None else got[j]
        except NnarrayError as err:
            raise type(err)(f"{where}: its call {name}: {err}") from None
        except _MALFORMED as err:
            raise _fail(where, f"its call {name}: {type(err).__name__}: {err}") from None
        if not isinstance(got, Variable) or (got.shape, got.dtype) != (out.shape, out.dtype):
            raise _fail(where, f"its call {name} gives {_shapes((got,))}, not the node's "
                               f"{out.shape} {out.dtype}")
        out._parent.macro = (fn, args, kwargs, j)


_signatures: dict[str, Any] = {}


def _check_call(op: Any, ins: tuple, attrs: dict, where: str) -> None:
    """``GraphError`` unless the kernel contract (the numpy kernel's signature, else the
    composite's) takes ``ins`` and ``attrs`` (a renamed op keeps attributes its kernel
    does not take)."""
    sig = _signatures.get(op.name, False)
    if sig is False:
        from .. import discovery as backends
        from ..registry import backend_kernels, composite
        backends.load_all()
        fn = backend_kernels("numpy").get(op.name) or composite(op.name)
        try:
            sig = inspect.signature(fn) if fn is not None else None
        except (TypeError, ValueError):
            sig = None
        _signatures[op.name] = sig
    if "out" in attrs:
        raise _fail(f"{where} ({op.name})", "no op takes an attribute 'out' here")
    if sig is not None:
        try:
            sig.bind(*ins, **attrs)
        except TypeError as e:
            raise _fail(f"{where} ({op.name})", f"attributes {sorted(attrs)} do not fit "
                                                f"its kernel: {e}") from None


__all__ = ["FORMAT", "MAX_DEPTH", "from_text", "to_doc"]


late.provide(__name__)  # Graph.to_json / from_json (nnarray.late)
