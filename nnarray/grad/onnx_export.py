"""ONNX export: the table of nnarray ops to ONNX nodes (``_EXPORT``) and the walk that
writes a static graph with it (``build``). The public entry points are in
``nnarray.grad.onnx``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import GraphError
from ..ndarray import NdArray
from ..ops import surfaces as _surfaces
from ..ops import ufuncs as _ufuncs
from .executor import leaves as graph_leaves
from .executor import topological
from .variable import Variable


def _tensor_type(dtype: Any) -> int:
    from onnx import helper
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


class _Exporter:
    """Collects ONNX nodes, initializers and inputs while walking the nnarray graph."""

    def __init__(self, opset: int) -> None:
        self.opset = opset
        self.nodes: list = []
        self.inits: dict[str, np.ndarray] = {}
        self.inputs: list = []
        self.names: dict[int, str] = {}  # id(Variable or NdArray) -> ONNX value name
        self.keep: list = []  # keeps the objects whose ids are keys above alive
        self.used: set[str] = set()
        self.scalars: dict[tuple, str] = {}

    # -- names and values -------------------------------------------------------------
    def fresh(self, base: str) -> str:
        base = base or "v"
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name

    def claim(self, obj: Any, name: str) -> str:
        self.names[id(obj)] = name
        self.keep.append(obj)
        return name

    def initializer(self, base: str, value: np.ndarray) -> str:
        name = self.fresh(base)
        self.inits[name] = np.array(value, order="C")  # keeps 0-d (ascontiguousarray would not)
        return name

    def const(self, value: Any, dtype: Any, base: str = "const") -> str:
        """An initializer holding ``value`` as ``dtype`` (small ones shared)."""
        a = np.asarray(value, dtype=dtype)
        if a.size > 64:
            return self.initializer(base, a)
        key = (a.dtype.str, a.shape, a.tobytes())  # exact: -0.0, NaN payloads
        n = self.scalars.get(key)
        if n is None:
            n = self.scalars[key] = self.initializer(base, a)
        return n

    def ints(self, values: Sequence[int]) -> str:
        return self.const(np.asarray(list(values), np.int64), np.int64, "shape")

    def value(self, a: Any) -> str:
        """The ONNX name of a Variable or NdArray operand."""
        n = self.names.get(id(a))
        if n is not None:
            return n
        if isinstance(a, NdArray):
            return self.claim(a, self.initializer("const", a.numpy()))
        raise GraphError(f"onnx export: operand {a!r} has no value (internal error)")

    def operand(self, a: Any, dtype: Any) -> str:
        """Operand ``a`` (Variable, NdArray or scalar) as ONNX value of ``dtype``."""
        dtype = np.dtype(dtype)
        if isinstance(a, (Variable, NdArray)):
            n = self.value(a)
            if a.dtype != dtype:
                n = self.emit("Cast", [n], to=_tensor_type(dtype))
            return n
        return self.const(a, dtype)

    def emit(self, op: str, inputs: Sequence[str], outputs: Any = None, **attrs: Any) -> Any:
        """Add node ``op``; ``outputs``: names, or ``None`` (one fresh), or a count."""
        from onnx import helper
        single = outputs is None
        if outputs is None or isinstance(outputs, int):
            outputs = [self.fresh(f"{op.lower()}{len(self.nodes)}")
                       for _ in range(outputs or 1)]
        self.nodes.append(helper.make_node(op, list(inputs), list(outputs),
                                           name=f"{op}_{len(self.nodes)}", **attrs))
        return outputs[0] if single else list(outputs)

    def reduce(self, op: str, x: str, axes: Any, keepdims: bool, out: Any = None) -> str:
        """``op`` (ReduceSum/Mean/Max/Min) over ``axes`` (``None``: all) with the axes as
        an input where the opset wants one."""
        as_input = op == "ReduceSum" or self.opset >= 18
        ins, attrs = [x], {"keepdims": int(keepdims)}
        if axes is not None:
            if as_input:
                ins.append(self.ints(axes))
            else:
                attrs["axes"] = list(axes)
        if out is None:
            return self.emit(op, ins, **attrs)
        self.emit(op, ins, [out], **attrs)
        return out

    # -- the graph ---------------------------------------------------------------------
    def run(self, outputs: list, params: dict, arg_names: dict) -> Any:
        from onnx import helper
        order: list = []
        seen: set[int] = set()
        for v in outputs:
            for n in topological(v):
                if id(n) not in seen:
                    seen.add(id(n))
                    order.append(n)
        order.sort(key=lambda n: n.rank)  # producers first across several outputs
        # parameters and arguments
        pid = {id(v): k for k, v in (params or {}).items()}
        leaves = graph_leaves(order, outputs)
        for (k, a) in (params or {}).items():  # NdArray constants named by params
            if isinstance(a, NdArray):
                self.claim(a, self.initializer(k, a.numpy()))
        n_args = 0
        for v in leaves:
            if id(v) in pid:
                self.claim(v, self.initializer(pid[id(v)], v.data.numpy()))
                continue
            name = (arg_names or {}).get(id(v)) or getattr(v, "name", None)
            if not name:
                name = f"arg{n_args}"
                n_args += 1
            name = self.claim(v, self.fresh(name))
            self.inputs.append(helper.make_tensor_value_info(
                name, _tensor_type(v.dtype), list(v.shape)))
        # output names (after the parameters': those are the names users look up)
        out_names = [self.fresh(getattr(v, "name", None) or f"out{k}")
                     for k, v in enumerate(outputs)]
        want = {id(v): out_names[k] for k, v in reversed(list(enumerate(outputs)))
                if v._parent is not None}
        for n in order:
            names = []
            for j, r in enumerate(n.outputs):
                o = r()
                if o is not None and id(o) in want:
                    names.append(self.claim(o, want.pop(id(o))))
                else:
                    nm = self.fresh(getattr(o, "name", None) or
                                    f"{n.name}{len(self.nodes)}" + (f"_{j}" if j else ""))
                    names.append(self.claim(o, nm) if o is not None else nm)
            handler = _EXPORT.get(n.name)
            if handler is None:
                raise GraphError(f"onnx export: no ONNX translation for op '{n.name}' "
                                 f"(node {n!r}, input shapes "
                                 f"{[getattr(a, 'shape', ()) for a in n.inputs]})")
            handler(self, n, names)
        graph_outputs = []
        for k, v in enumerate(outputs):
            nm = out_names[k]
            if self.names.get(id(v)) != nm:  # a leaf, or the same variable twice
                self.emit("Identity", [self.value(v)], [nm])
            graph_outputs.append(helper.make_tensor_value_info(
                nm, _tensor_type(v.dtype), list(v.shape)))
        self.prune(out_names)
        from onnx import numpy_helper
        inits = [numpy_helper.from_array(a, name=k) for k, a in self.inits.items()]
        graph = helper.make_graph(self.nodes, "nnarray", self.inputs, graph_outputs, inits)
        opsets = [helper.make_opsetid("", self.opset)]
        model = helper.make_model(graph, opset_imports=opsets, producer_name="nnarray",
                                  ir_version=_ir_version(self.opset))
        return model

    def prune(self, outputs: list[str]) -> None:
        """Drop nodes and initializers no output needs (e.g. a dropout's unused mask)."""
        need = set(outputs)
        kept = []
        for nd in reversed(self.nodes):
            if any(o in need for o in nd.output):
                kept.append(nd)
                need.update(i for i in nd.input if i)
        self.nodes = kept[::-1]
        self.inits = {k: a for k, a in self.inits.items() if k in need}


def _ir_version(opset: int) -> int:
    from onnx import helper
    try:
        return helper.find_min_ir_version_for([helper.make_opsetid("", opset)])
    except Exception:  # pragma: no cover - older onnx
        return 8


# -- elementwise -----------------------------------------------------------------------
#: Bool operands: ONNX's arithmetic refuses them, its logic ops do the same.
_BOOL_BIN = {"add": "Or", "mul": "And", "maximum": "Or", "minimum": "And"}
#: The declared elementwise functions ``export`` translates (``ops/ufuncs.py``: their
#: ``onnx`` field, an op or a composition).
_ROWS = {r.name: r for r in _ufuncs.ROWS if r.onnx is not None}


def _x_elementwise(ex: _Exporter, n: Any, outs: list) -> None:
    from .. import dtypes
    row = _ROWS[n.name]
    dt = n.out_metas[0][1]
    if row.rule == "compare":  # compared in the operands' common type
        dt = dtypes.promote(n.name, *n.inputs)
    ins = [ex.operand(v, dt) for v in n.inputs]
    if isinstance(row.onnx, str):
        op = _BOOL_BIN.get(n.name, row.onnx) if dt == np.bool_ else row.onnx
        ex.emit(op, ins, outs)
    else:
        row.onnx(ex, ins, dt, outs)


def _x_leaky_relu(ex, n, outs):
    dt = n.out_metas[0][1]
    ex.emit("LeakyRelu", [ex.operand(n.inputs[0], dt)], outs, alpha=float(n.attrs["alpha"]))


def _x_clip(ex, n, outs):
    dt = n.out_metas[0][1]
    lo, hi = n.attrs.get("a_min"), n.attrs.get("a_max")
    ins = [ex.operand(n.inputs[0], dt), "" if lo is None else ex.const(lo, dt),
           "" if hi is None else ex.const(hi, dt)]
    while ins[-1] == "":
        ins.pop()
    ex.emit("Clip", ins, outs)


def _x_cast(ex, n, outs):
    ex.emit("Cast", [ex.value(n.inputs[0])], outs, to=_tensor_type(n.attrs["dtype"]))


def _x_where(ex, n, outs):
    c, a, b = n.inputs
    dt = n.out_metas[0][1]
    ex.emit("Where", [ex.value(c), ex.operand(a, dt), ex.operand(b, dt)], outs)


def _x_matmul(ex, n, outs):
    dt = n.out_metas[0][1]
    ins = [ex.operand(a, dt) for a in n.inputs]
    for i, flag in enumerate((n.attrs.get("transpose_a"), n.attrs.get("transpose_b"))):
        if flag:  # swap the last two axes first
            nd = len(n.inputs[i].shape)
            ins[i] = ex.emit("Transpose", [ins[i]],
                             perm=list(range(nd - 2)) + [nd - 1, nd - 2])
    ex.emit("MatMul", ins, outs)


_EXPORT: dict[str, Any] = {
    **{k: _x_elementwise for k in _ROWS},
    "leaky_relu": _x_leaky_relu, "clip": _x_clip, "cast": _x_cast, "where": _x_where,
    "matmul": _x_matmul,
    # the translations declared beside the op specs (ops/surfaces.py)
    **{s.op.name: s.onnx for s in _surfaces.declared().values() if s.onnx is not None},
}

#: nnarray ops ``export`` translates (the rest raise ``GraphError`` naming the op).
EXPORTED_OPS: frozenset[str] = frozenset(_EXPORT)


def build(outputs: list, params: dict, arg_names: dict, opset: int) -> Any:
    """The ``onnx.ModelProto`` of the graph behind ``outputs`` (not yet checked)."""
    return _Exporter(opset).run(outputs, params, arg_names)
