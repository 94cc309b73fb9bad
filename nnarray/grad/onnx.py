"""ONNX export and import of static graphs (needs the ``onnx`` package: ``pip install
nnarray[onnx]``).

``export(outputs, path, params=None, arg_names=None, opset=17)`` writes the graph behind
static ``Variable`` outputs as an ONNX model: leaves named in ``params`` (e.g.
``model.parameters()``, or ``model.named_arrays()`` to name running statistics too)
become initializers holding their current data, other leaf Variables become graph inputs,
NdArray and scalar constants become initializers. ``import_model(path)`` builds the same
kind of static graph from an ONNX model with ``F`` functions and returns ``(outputs,
params)``. Composite functions are exported as the ONNX unit users expect where nnarray
records them as primitives: ``conv2d`` (``im2col`` + ``matmul`` + ``reshape`` [+ ``add``])
becomes one ``Conv``, ``max_pooling``/``average_pooling`` a ``MaxPool``/``AveragePool``,
``batch_normalization`` in evaluation a ``BatchNormalization``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import functions as F
from ..atomic_file import write_bytes
from ..errors import GraphError
from ..ndarray import NdArray
from ..ops import ufuncs as _ufuncs
from .executor import leaves as graph_leaves
from .executor import topological, topological_many
from .modes import static
from .variable import Variable

_INT64_MIN = -(2**63)


def _onnx() -> Any:
    try:
        import onnx
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("nnarray.grad.onnx needs the 'onnx' package "
                          "(pip install 'nnarray[onnx]')") from e
    return onnx


def _tensor_type(dtype: Any) -> int:
    from onnx import helper
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


# ======================================================================================
# export
# ======================================================================================
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
        self.conv: dict[int, tuple] = {}  # id(reshape output) -> (x, W, attrs)
        self.pool: dict[int, tuple] = {}  # id(reduction output) -> (op, x, attrs, im2col's)

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
        """Drop nodes and initializers no output needs (the primitives a pattern such as
        Conv replaced)."""
        need = set(outputs)
        kept = []
        for nd in reversed(self.nodes):
            if any(o in need for o in nd.output):
                kept.append(nd)
                need.update(i for i in nd.input if i)
        self.nodes = kept[::-1]
        self.inits = {k: a for k, a in self.inits.items() if k in need}

    # -- patterns ----------------------------------------------------------------------
    def parent(self, v: Any, name: str) -> Any:
        """The node producing ``v`` when it is op ``name``, else ``None``."""
        p = v._parent if isinstance(v, Variable) else None
        return p if p is not None and p.name == name else None


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


# -- reductions ------------------------------------------------------------------------
_RED = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin"}


def _x_reduce(ex: _Exporter, n: Any, outs: list) -> None:
    x = n.inputs[0]
    axes, keep = n.attrs["axis"], n.attrs["keepdims"]
    if n.name in ("max", "mean") and _pool_match(ex, n):
        return _x_pool(ex, n, outs)
    xi = ex.operand(x, n.out_metas[0][1])
    if not axes:  # a 0-d input
        ex.emit("Identity", [xi], outs)
        return
    ex.reduce(_RED[n.name], xi, axes, keep, outs[0])


def _x_arg(ex, n, outs):
    x = ex.value(n.inputs[0])
    op = "ArgMax" if n.name == "argmax" else "ArgMin"
    axis, keep = n.attrs["axis"], n.attrs["keepdims"]
    if axis is None:
        flat = ex.emit("Reshape", [x, ex.ints([-1])])
        if keep:
            r = ex.emit(op, [flat], axis=0, keepdims=1)
            ex.emit("Reshape", [r, ex.ints([1] * len(n.inputs[0].shape))], outs)
        else:
            ex.emit(op, [flat], outs, axis=0, keepdims=0)
        return
    ex.emit(op, [x], outs, axis=int(axis), keepdims=int(keep))


# -- shapes ----------------------------------------------------------------------------
def _x_reshape(ex, n, outs):
    if _conv_match(ex, n):
        return _x_conv(ex, n, outs)
    if _pool_reshape(ex, n, outs):
        return
    ex.emit("Reshape", [ex.value(n.inputs[0]), ex.ints(n.attrs["shape"])], outs)


def _x_transpose(ex, n, outs):
    ex.emit("Transpose", [ex.value(n.inputs[0])], outs, perm=list(n.attrs["axes"]))


def _x_broadcast_to(ex, n, outs):
    ex.emit("Expand", [ex.value(n.inputs[0]), ex.ints(n.attrs["shape"])], outs)


def _x_concatenate(ex, n, outs):
    dt = n.attrs["dtype"]
    ex.emit("Concat", [ex.operand(a, dt) for a in n.inputs], outs, axis=int(n.attrs["axis"]))


def _x_slice(ex, n, outs):
    x = n.inputs[0]
    a = n.attrs
    starts, ends, axes, steps = [], [], [], []
    for k, (dim, s, st, c) in enumerate(zip(x.shape, a["start"], a["step"], a["count"])):
        if s == 0 and st == 1 and c == dim:
            continue
        e = s + c * st
        if c == 0:
            s = e = 0
        elif e < 0:
            e = _INT64_MIN
        starts.append(s)
        ends.append(e)
        axes.append(k)
        steps.append(st)
    y = ex.value(x)
    reshape = tuple(a["count"]) != tuple(a["shape"])
    if axes:
        y = ex.emit("Slice", [y, ex.ints(starts), ex.ints(ends), ex.ints(axes),
                              ex.ints(steps)], None if reshape else outs)
    if reshape:
        ex.emit("Reshape", [y, ex.ints(a["shape"])], outs)
    elif not axes:
        ex.emit("Identity", [y], outs)


def _x_matmul(ex, n, outs):
    dt = n.out_metas[0][1]
    ins = [ex.operand(a, dt) for a in n.inputs]
    for i, flag in enumerate((n.attrs.get("transpose_a"), n.attrs.get("transpose_b"))):
        if flag:  # swap the last two axes first
            nd = len(n.inputs[i].shape)
            ins[i] = ex.emit("Transpose", [ins[i]],
                             perm=list(range(nd - 2)) + [nd - 1, nd - 2])
    ex.emit("MatMul", ins, outs)


def _x_softmax(ex, n, outs):
    op = "Softmax" if n.name == "softmax" else "LogSoftmax"
    ex.emit(op, [ex.value(n.inputs[0])], outs, axis=int(n.attrs["axis"]))


def _one_hot(ex: _Exporter, t: Any, depth: int, axis: int, dtype: Any, out: Any = None) -> str:
    """OneHot in float32 (the type onnxruntime implements for every index type), cast."""
    dd = np.int32 if t.dtype == np.int32 else np.int64
    ins = [ex.value(t), ex.const(depth, dd), ex.const(np.array([0, 1], np.float32),
                                                      np.float32, "onehot_values")]
    if np.dtype(dtype) == np.float32:
        return ex.emit("OneHot", ins, [out] if out else None, axis=int(axis)) if out else \
            ex.emit("OneHot", ins, axis=int(axis))
    h = ex.emit("OneHot", ins, axis=int(axis))
    return ex.emit("Cast", [h], [out], to=_tensor_type(dtype)) if out else \
        ex.emit("Cast", [h], to=_tensor_type(dtype))


def _x_one_hot(ex, n, outs):
    a = n.attrs
    _one_hot(ex, n.inputs[0], int(a["num_classes"]), a["axis"], a["dtype"], outs[0])


def _x_sce(ex, n, outs):
    x, t = n.inputs
    axis = n.attrs["axis"]
    ls = ex.emit("LogSoftmax", [ex.value(x)], axis=int(axis))
    oh = _one_hot(ex, t, x.shape[axis], axis, x.dtype)
    s = ex.reduce("ReduceSum", ex.emit("Mul", [ls, oh]), [axis], False)
    ex.emit("Neg", [s], outs)


def _x_mse(ex, n, outs):
    dt = n.out_metas[0][1]
    x, t = n.inputs
    d = ex.emit("Sub", [ex.operand(x, dt), ex.operand(t, dt)])
    sq = ex.emit("Mul", [d, d])
    if not x.shape:
        ex.emit("Identity", [sq], outs)
        return
    ex.reduce("ReduceMean", sq, None, False, outs[0])


def _x_batch_normalization(ex, n, outs):
    x, gamma, beta, rmean, rvar = n.inputs
    a = n.attrs
    c = x.shape[1] if x.ndim > 1 else None
    if a["axes"] == (1,) and not a["training"] and x.ndim >= 2:
        ps = []
        for p in (gamma, beta, rmean, rvar):
            v = ex.operand(p, x.dtype)
            if p.shape != (c,):
                v = ex.emit("Reshape", [v, ex.ints([c])])
            ps.append(v)
        ex.emit("BatchNormalization", [ex.value(x), *ps], outs, epsilon=float(a["eps"]))
        return
    # Any other axes, or training mode (batch statistics; the running statistics'
    # update is not part of an inference graph): the formula.
    axes = a["axes"]
    full = [s if i in axes else 1 for i, s in enumerate(x.shape)]
    red = [i for i in range(x.ndim) if i not in axes]
    xv = ex.value(x)

    def b(p):
        v = ex.operand(p, x.dtype)
        return v if tuple(p.shape) == tuple(full) else ex.emit("Reshape", [v, ex.ints(full)])

    if a["training"]:
        mu = ex.reduce("ReduceMean", xv, red, True)
        xc = ex.emit("Sub", [xv, mu])
        var = ex.reduce("ReduceMean", ex.emit("Mul", [xc, xc]), red, True)
    else:
        mu, var = b(rmean), b(rvar)
        xc = ex.emit("Sub", [xv, mu])
    den = ex.emit("Sqrt", [ex.emit("Add", [var, ex.const(a["eps"], x.dtype)])])
    y = ex.emit("Mul", [ex.emit("Div", [xc, den]), b(gamma)])
    ex.emit("Add", [y, b(beta)], outs)


def _x_dropout(ex, n, outs):
    x = n.inputs[0]
    y, mask = ex.emit("Dropout", [ex.value(x), ex.const(n.attrs["p"], x.dtype, "ratio")],
                      [outs[0], ex.fresh("dropout_mask")])
    ex.emit("Cast", [mask], [outs[1]], to=_tensor_type(x.dtype))


def _x_layer_norm(ex, n, outs):
    x = n.inputs[0]
    k = int(n.attrs["count"])
    scale = ex.const(np.ones(x.shape[x.ndim - k:]), x.dtype, "layer_norm_scale")
    ex.emit("LayerNormalization", [ex.value(x), scale], [outs[0], "", outs[1]], axis=-k,
            epsilon=float(n.attrs["eps"]))


def _x_embedding(ex, n, outs):
    idx, W = n.inputs
    ex.emit("Gather", [ex.value(W), ex.value(idx)], [outs[0]], axis=0)


# -- convolution and pooling -------------------------------------------------------------
def _window_out(shape: tuple, a: dict) -> tuple[int, int]:
    """``(OH, OW)`` of ``im2col`` attributes ``a`` on an ``(N, C, H, W)`` input."""
    return tuple((size + 2 * p - d * (k - 1) - 1) // st + 1 for size, k, st, p, d in zip(
        shape[2:], a["kernel"], a["stride"], a["pad"], a["dilation"]))


def _conv_match(ex: _Exporter, r: Any) -> bool:
    """``reshape(matmul(reshape(W), im2col(x)))`` as conv2d composes it (groups too)."""
    y = r.inputs[0]
    m = ex.parent(y, "matmul")
    if m is None or len(r.attrs["shape"]) != 4:
        return False
    wr, cols = m.inputs
    wn = ex.parent(wr, "reshape")
    if wn is None or wn.inputs[0].ndim != 4:
        return False
    W = wn.inputs[0]
    o, cg, kh, kw = W.shape
    im = ex.parent(cols, "im2col")
    g = 1
    if im is None:
        cr = ex.parent(cols, "reshape")
        im = ex.parent(cr.inputs[0], "im2col") if cr is not None else None
        if im is None or len(cols.shape) != 4:
            return False
        g = cols.shape[1]
        if wr.shape != (g, o // g, cg * kh * kw) or \
                cols.shape != (im.out_metas[0][0][0], g, cg * kh * kw, im.out_metas[0][0][2]):
            return False
    elif wr.shape != (o, cg * kh * kw):
        return False
    x = im.inputs[0]
    ia = im.attrs
    if ia["pad_value"] != 0.0 or tuple(ia["kernel"]) != (kh, kw) or x.shape[1] != cg * g \
            or x.dtype != W.dtype or m.out_metas[0][1] != x.dtype:
        return False
    if tuple(r.attrs["shape"]) != (x.shape[0], o, *_window_out(x.shape, ia)):
        return False
    ex.conv[id(r)] = (x, W, {"kernel_shape": [kh, kw], "strides": list(ia["stride"]),
                             "pads": list(ia["pad"]) * 2, "dilations": list(ia["dilation"]),
                             "group": g})
    return True


def _x_conv(ex, r, outs):
    x, W, attrs = ex.conv[id(r)]
    ex.emit("Conv", [ex.value(x), ex.value(W)], outs, **attrs)
    y = r.output_variables()
    if y:
        ex.conv[id(y[0])] = ex.conv.pop(id(r))


def _conv_bias(ex: _Exporter, n: Any, outs: list) -> bool:
    """``add(conv, reshape(b, (1, O, 1, 1)))``: the bias joins the Conv."""
    a, b = n.inputs
    info = ex.conv.get(id(a)) if isinstance(a, Variable) else None
    br = ex.parent(b, "reshape")
    if info is None or br is None:
        return False
    bias = br.inputs[0]
    o = a.shape[1]
    if bias.shape != (o,) or b.shape != (1, o, 1, 1) or bias.dtype != a.dtype:
        return False
    x, W, attrs = info
    ex.emit("Conv", [ex.value(x), ex.value(W), ex.value(bias)], outs, **attrs)
    return True


def _x_add(ex, n, outs):
    if not _conv_bias(ex, n, outs):
        _x_elementwise(ex, n, outs)


def _pool_match(ex: _Exporter, n: Any) -> bool:
    """``max``/``mean`` over axis 1 of ``im2col`` of a one-channel input: pooling."""
    if n.attrs["axis"] != (1,):
        return False
    im = ex.parent(n.inputs[0], "im2col")
    if im is None:
        return False
    x = im.inputs[0]
    ia = im.attrs
    if x.shape[1] != 1 or tuple(ia["dilation"]) != (1, 1) or x.dtype.kind != "f":
        return False
    if n.name == "max" and ia["pad_value"] != float("-inf"):
        return False
    if n.name == "mean" and ia["pad_value"] != 0.0:
        return False
    attrs = {"kernel_shape": list(ia["kernel"]), "strides": list(ia["stride"]),
             "pads": list(ia["pad"]) * 2}
    if n.name == "mean":
        attrs["count_include_pad"] = 1
    ex.pool[id(n)] = ("MaxPool" if n.name == "max" else "AveragePool", x, attrs, ia)
    return True


def _x_pool(ex, n, outs):
    op, x, attrs, _ = ex.pool[id(n)]
    p = ex.emit(op, [ex.value(x)], **attrs)
    ex.emit("Reshape", [p, ex.ints(n.out_metas[0][0])], outs)
    y = n.output_variables()
    if y:
        ex.pool[id(y[0])] = ex.pool.pop(id(n))


def _pool_reshape(ex: _Exporter, r: Any, outs: list) -> bool:
    """``reshape(pool(reshape(x, (N*C, 1, H, W))), (N, C, OH, OW))``: one pool on ``x``."""
    info = ex.pool.get(id(r.inputs[0]))
    if info is None:
        return False
    op, xr, attrs, ia = info
    xn = ex.parent(xr, "reshape")
    if xn is None:
        return False
    x = xn.inputs[0]
    if x.ndim != 4 or xr.shape != (x.shape[0] * x.shape[1], 1, *x.shape[2:]):
        return False
    if tuple(r.attrs["shape"]) != (*x.shape[:2], *_window_out(x.shape, ia)):
        return False
    ex.emit(op, [ex.value(x)], outs, **attrs)
    return True


def _x_im2col(ex, n, outs):
    """The general im2col (no Conv or pool pattern): pad, one strided slice per kernel
    offset, stacked on a new axis: row ``(c*kh + i)*kw + j`` as the kernel contract."""
    x = n.inputs[0]
    a = n.attrs
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = a["kernel"], a["stride"], a["pad"], a["dilation"]
    N, C, H, W = x.shape
    _, ckk, L = n.out_metas[0][0]
    oh = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    xv = ex.value(x)
    if ph or pw:
        xv = ex.emit("Pad", [xv, ex.ints([0, 0, ph, pw, 0, 0, ph, pw]),
                             ex.const(a["pad_value"], x.dtype)], mode="constant")
    parts = []
    for i in range(kh):
        for j in range(kw):
            s = ex.emit("Slice", [xv, ex.ints([i * dh, j * dw]),
                                  ex.ints([i * dh + (oh - 1) * sh + 1,
                                           j * dw + (ow - 1) * sw + 1]),
                                  ex.ints([2, 3]), ex.ints([sh, sw])])
            parts.append(ex.emit("Unsqueeze", [s, ex.ints([2])]))
    cat = ex.emit("Concat", parts, axis=2) if len(parts) > 1 else parts[0]
    ex.emit("Reshape", [cat, ex.ints([N, ckk, L])], outs)


def _x_col2im(ex, n, outs):
    if ex.opset < 18:
        raise GraphError(f"onnx export: op 'col2im' needs ONNX Col2Im, which is opset 18; "
                         f"export with opset=18 (node {n!r})")
    a = n.attrs
    ex.emit("Col2Im", [ex.value(n.inputs[0]), ex.ints(a["size"][1:]), ex.ints(a["kernel"])],
            outs, strides=list(a["stride"]), pads=list(a["pad"]) * 2,
            dilations=list(a["dilation"]))


_EXPORT: dict[str, Any] = {
    **{k: _x_elementwise for k in _ROWS}, "add": _x_add,
    "leaky_relu": _x_leaky_relu, "clip": _x_clip, "cast": _x_cast, "where": _x_where,
    **{k: _x_reduce for k in _RED}, "argmax": _x_arg, "argmin": _x_arg,
    "reshape": _x_reshape, "transpose": _x_transpose, "broadcast_to": _x_broadcast_to,
    "concatenate": _x_concatenate, "slice": _x_slice, "matmul": _x_matmul,
    "softmax": _x_softmax, "log_softmax": _x_softmax, "one_hot": _x_one_hot,
    "softmax_cross_entropy": _x_sce, "mean_squared_error": _x_mse,
    "batch_normalization": _x_batch_normalization, "dropout": _x_dropout,
    "im2col": _x_im2col, "col2im": _x_col2im,
    "layer_norm": _x_layer_norm, "embedding": _x_embedding,
}

#: nnarray ops ``export`` translates (the rest raise ``GraphError`` naming the op).
EXPORTED_OPS: frozenset[str] = frozenset(_EXPORT)


def to_model(outputs: Any, params: dict | None = None, arg_names: dict | None = None,
             opset: int = 17) -> Any:
    """The ``onnx.ModelProto`` that ``export`` writes (checked)."""
    onnx = _onnx()
    if isinstance(outputs, Variable):
        outputs = [outputs]
    outputs = list(outputs)
    for k, v in enumerate(outputs):
        if not isinstance(v, Variable):
            raise TypeError(f"onnx export: outputs[{k}] must be a grad.Variable, got "
                            f"{type(v).__name__}")
    if opset < 17:
        raise ValueError(f"onnx export: opset must be >= 17, got {opset}")
    model = _Exporter(int(opset)).run(outputs, dict(params or {}), dict(arg_names or {}))
    onnx.checker.check_model(model)
    return model


def export(outputs: Any, path: str | os.PathLike, params: dict | None = None,
           arg_names: dict | None = None, opset: int = 17) -> None:
    """Write the graph behind ``outputs`` (static Variables) to ``path`` as ONNX.

    ``params``: ``{name: Variable or NdArray}`` leaves written as initializers with their
    current data (``model.parameters()``; ``model.named_arrays()`` names the batch-norm
    running statistics too). Other leaf Variables are graph inputs named
    ``arg_names[id(v)]``, else ``v.name``, else ``arg<k>``. Outputs are named ``v.name``
    or ``out<k>``. Raises ``GraphError`` naming an op without an ONNX translation.
    """
    model = to_model(outputs, params, arg_names, opset)
    write_bytes(path, model.SerializeToString())


# ======================================================================================
# import
# ======================================================================================
#: The largest value, in bytes, that import computes ahead from constants (constant
#: folding); a node that would make a bigger one raises ``GraphError``. Settable here or
#: per call: ``import_model(path, fold_limit=...)``.
FOLD_LIMIT = 64 << 20


class _Importer:
    def __init__(self, graph: Any, fold_limit: int) -> None:
        self.consts: dict[str, np.ndarray] = {
            t.name: _tensor(t, f"initializer '{t.name}'") for t in graph.initializer}
        self.vars: dict[str, Any] = {}
        self.params: dict[str, Variable] = {}
        self.fold = False  # the node at hand computes on constants only (run now)
        self.infer = False  # ... and runs on placeholders first, to size what it makes
        self.fold_limit = fold_limit

    def translate(self, h: Any, node: Any, at: dict) -> list:
        """``h``'s outputs for ``node``. A foldable node is first recorded on placeholders
        of its constants (shape inference, nothing computed) and computed only if every
        value it makes fits ``fold_limit``."""
        self.fold = self.foldable(node)
        try:
            if self.fold:
                self.infer = True
                self.check_fold(node, h(self, node, at))
                self.infer = False
            return h(self, node, at)
        finally:
            self.fold = self.infer = False

    def check_fold(self, node: Any, outs: Sequence) -> None:
        """Raise ``GraphError`` if a value behind ``outs`` is over ``fold_limit`` bytes."""
        metas = [(v.shape, v.dtype) for v in outs if v is not None]
        for n in topological_many([v for v in outs if isinstance(v, Variable)]):
            metas.extend(m[:2] for m in n.out_metas)
        for shape, dtype in metas:
            nbytes = math.prod(shape) * np.dtype(dtype).itemsize
            if nbytes > self.fold_limit:
                raise GraphError(
                    f"onnx import: {node.op_type} node '{node.name}': computing it from "
                    f"constants makes a {np.dtype(dtype)} value of shape {tuple(shape)} "
                    f"({nbytes} bytes), over the fold limit of {self.fold_limit} bytes "
                    "(import_model(..., fold_limit=n) or nnarray.grad.onnx.FOLD_LIMIT)")

    def foldable(self, node: Any) -> bool:
        """Every input a constant, none of them a floating tensor of several elements
        (weights stay parameters): shape arithmetic (``Shape`` -> ``Gather`` -> ``Concat``
        -> ``Reshape``, as exporters write ``flatten``) is computed at import."""
        ins = [i for i in node.input if i]
        if not ins or any(i not in self.consts for i in ins):
            return False
        return all(self.consts[i].dtype.kind in "biu" or self.consts[i].size <= 1
                   for i in ins)

    def has(self, node: Any, i: int) -> bool:
        return len(node.input) > i and node.input[i] != ""

    def const(self, node: Any, i: int, what: str) -> np.ndarray | None:
        """Input ``i`` as a constant (``None`` if absent); a computed value raises."""
        if not self.has(node, i):
            return None
        name = node.input[i]
        if name in self.consts:
            return self.consts[name]
        raise GraphError(f"onnx import: {node.op_type} node '{node.name}': input '{name}' "
                         f"({what}) must be a constant (an initializer or Constant)")

    def var(self, node: Any, i: int) -> Any:
        name = node.input[i]
        v = self.vars.get(name)
        if v is not None:
            return v
        if name in self.consts:
            a = self.consts[name]
            if self.fold:
                return (Variable.from_numpy_array(a) if self.infer
                        else NdArray.from_numpy_array(a))
            if a.dtype == np.uint8 or a.dtype.kind not in "biuf":
                raise GraphError(f"onnx import: {node.op_type} node '{node.name}': initializer "
                                 f"'{name}' has unsupported dtype {a.dtype}")
            if a.dtype.kind == "f" and a.dtype not in (np.float16, np.float32, np.float64):
                a = a.astype(np.float32)
            v = Variable.from_numpy_array(a, need_grad=a.dtype.kind == "f")
            self.params[name] = v
            self.vars[name] = v
            return v
        raise GraphError(f"onnx import: {node.op_type} node '{node.name}': input '{name}' is "
                         "not produced by any earlier node")


def _attrs(node: Any) -> dict:
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _np_dtype(t: int) -> np.dtype:
    from onnx import helper
    return np.dtype(helper.tensor_dtype_to_np_dtype(t))


def _axes(im: _Importer, node: Any, at: dict, ndim: int) -> Any:
    axes = at.get("axes")
    if axes is None and im.has(node, 1):
        axes = im.const(node, 1, "axes").tolist()
    if axes is None or len(axes) == 0:
        if at.get("noop_with_empty_axes", 0):
            return ()
        return None
    return tuple(int(a) % ndim for a in axes)


def _i_binary(fn):
    def h(im, node, at):
        a, b = im.var(node, 0), im.var(node, 1)
        return [fn(a, b)]
    return h


def _i_pow(im, node, at):
    a, b = im.var(node, 0), im.var(node, 1)
    y = F.pow(a, b)
    return [y if y.dtype == a.dtype else F.cast(y, a.dtype)]  # ONNX: the base's type


def _i_div(im, node, at):
    a, b = im.var(node, 0), im.var(node, 1)
    y = F.div(a, b)
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":  # ONNX: integer division truncates
        y = F.cast(y, np.promote_types(a.dtype, b.dtype))
    return [y]


def _i_unary(fn):
    return lambda im, node, at: [fn(im.var(node, 0))]


def _i_variadic(fn):
    def h(im, node, at):
        y = im.var(node, 0)
        for i in range(1, len(node.input)):
            y = fn(y, im.var(node, i))
        return [y]
    return h


def _i_clip(im, node, at):
    x = im.var(node, 0)
    lo = im.const(node, 1, "min")
    hi = im.const(node, 2, "max")
    if lo is None and hi is None:
        return [x]
    if x.dtype.kind == "f":
        cv = float
    else:
        cv = int
    return [F.clip(x, None if lo is None else cv(lo), None if hi is None else cv(hi))]


def _i_reduce(fn):
    def h(im, node, at):
        x = im.var(node, 0)
        axes = _axes(im, node, at, x.ndim)
        keep = bool(at.get("keepdims", 1))
        if axes == ():
            return [x]
        y = fn(x, axis=axes, keepdims=keep)
        if y.dtype != x.dtype:  # ONNX keeps the input's type (nnarray: int64 sums, ...)
            y = F.cast(y, x.dtype)
        return [y]
    return h


def _i_arg(fn):
    def h(im, node, at):
        if at.get("select_last_index", 0):
            raise GraphError(f"onnx import: {node.op_type} node '{node.name}': "
                             "select_last_index=1 is not supported")
        x = im.var(node, 0)
        return [fn(x, axis=int(at.get("axis", 0)), keepdims=bool(at.get("keepdims", 1)))]
    return h


def _i_reshape(im, node, at):
    x = im.var(node, 0)
    shape = [int(s) for s in im.const(node, 1, "shape")]
    if not at.get("allowzero", 0):
        shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return [F.reshape(x, tuple(shape))]


def _i_expand(im, node, at):
    x = im.var(node, 0)
    shape = tuple(int(s) for s in im.const(node, 1, "shape"))
    return [F.broadcast_to(x, tuple(np.broadcast_shapes(x.shape, shape)))]


def _i_flatten(im, node, at):
    x = im.var(node, 0)
    a = int(at.get("axis", 1)) % (x.ndim + 1) if x.ndim else 0
    lead = int(np.prod(x.shape[:a], dtype=np.int64))
    return [F.reshape(x, (lead, -1) if x.size else (lead, 0))]


def _i_squeeze(im, node, at):
    x = im.var(node, 0)
    axes = at.get("axes")
    if axes is None and im.has(node, 1):
        axes = im.const(node, 1, "axes").tolist()
    if axes is None:
        axes = [i for i, s in enumerate(x.shape) if s == 1]
    axes = {int(a) % x.ndim for a in axes}
    return [F.reshape(x, tuple(s for i, s in enumerate(x.shape) if i not in axes))]


def _i_unsqueeze(im, node, at):
    x = im.var(node, 0)
    axes = at.get("axes")
    if axes is None:
        axes = im.const(node, 1, "axes").tolist()
    nd = x.ndim + len(axes)
    axes = {int(a) % nd for a in axes}
    it = iter(x.shape)
    return [F.reshape(x, tuple(1 if i in axes else next(it) for i in range(nd)))]


def _i_slice(im, node, at):
    x = im.var(node, 0)
    starts = im.const(node, 1, "starts").tolist()
    ends = im.const(node, 2, "ends").tolist()
    axes = im.const(node, 3, "axes")
    axes = list(range(len(starts))) if axes is None else axes.tolist()
    steps = im.const(node, 4, "steps")
    steps = [1] * len(starts) if steps is None else steps.tolist()
    key = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        dim = x.shape[int(a) % x.ndim]
        # numpy's slice clamps like ONNX; huge sentinels become "to the end"
        s = max(min(int(s), dim), -dim - 1) if abs(int(s)) > dim else int(s)
        e = max(min(int(e), dim), -dim - 1) if abs(int(e)) > dim else int(e)
        if st < 0 and e < -dim:
            e = None
        key[int(a) % x.ndim] = slice(s, e, int(st))
    return [F.getitem(x, tuple(key))]


def _i_split(im, node, at):
    x = im.var(node, 0)
    axis = int(at.get("axis", 0)) % x.ndim
    sizes = im.const(node, 1, "split")
    if sizes is None:
        sizes = at.get("split")
    n = len(node.output)
    dim = x.shape[axis]
    if sizes is None:
        k = -(-dim // n)  # ONNX: ceil-sized parts, the last smaller
        sizes = [min(k, dim - k * i) for i in range(n)]
    cuts = np.cumsum([int(s) for s in sizes])[:-1].tolist()
    return F.split(x, cuts, axis=axis)


def _i_pad(im, node, at):
    mode = at.get("mode", b"constant")
    if mode not in (b"constant", "constant"):
        raise GraphError(f"onnx import: Pad node '{node.name}': mode {mode!r} is not "
                         "supported (constant only)")
    from ..ndarray import full
    x = im.var(node, 0)
    pads = [int(p) for p in im.const(node, 1, "pads")]
    value = im.const(node, 2, "constant_value")
    value = 0 if value is None else value.reshape(-1)[0].item()
    axes = im.const(node, 3, "axes")
    axes = list(range(x.ndim)) if axes is None else [int(a) % x.ndim for a in axes]
    k = len(axes)
    for a, before, after in zip(axes, pads[:k], pads[k:]):
        if before < 0 or after < 0:  # negative pads crop
            key = [slice(None)] * x.ndim
            key[a] = slice(max(-before, 0), x.shape[a] - max(-after, 0))
            x = F.getitem(x, tuple(key))
            before, after = max(before, 0), max(after, 0)
        parts = []
        for n in (before, after):
            shape = x.shape[:a] + (n,) + x.shape[a + 1:]
            parts.append(full(shape, value, x.dtype) if n else None)
        if before or after:
            x = F.concatenate([p for p in (parts[0], x, parts[1]) if p is not None], axis=a)
    return [x]


def _i_gather(im, node, at):
    x = im.var(node, 0)
    axis = int(at.get("axis", 0)) % x.ndim
    if axis == 0 and x.ndim == 2 and node.input[1] in im.vars:  # rows at variable indices
        return [F.embedding(im.vars[node.input[1]], x)]
    idx = im.const(node, 1, "indices")
    if idx.ndim > 1:
        raise GraphError(f"onnx import: Gather node '{node.name}': only 0-d or 1-d constant "
                         f"indices are supported, got shape {idx.shape}")

    def take(i):
        return F.getitem(x, (slice(None),) * axis + (int(i),))

    if idx.ndim == 0:
        return [take(idx)]
    return [F.stack([take(i) for i in idx.tolist()], axis=axis)]


def _i_gemm(im, node, at):
    a, b = im.var(node, 0), im.var(node, 1)
    if at.get("transA", 0):
        a = F.transpose(a)
    if at.get("transB", 0):
        b = F.transpose(b)
    y = F.matmul(a, b)
    alpha, beta = float(at.get("alpha", 1.0)), float(at.get("beta", 1.0))
    if alpha != 1.0:
        y = y * alpha
    if im.has(node, 2):
        c = im.var(node, 2)
        y = y + (c if beta == 1.0 else c * beta)
    return [y]


def _i_softmax(fn):
    return lambda im, node, at: [fn(im.var(node, 0), axis=int(at.get("axis", -1)))]


def _pads2(node: Any, at: dict) -> tuple[int, int]:
    if at.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise GraphError(f"onnx import: {node.op_type} node '{node.name}': auto_pad is not "
                         "supported (give explicit pads)")
    p = list(at.get("pads", [0, 0, 0, 0]))
    if len(p) != 4 or p[0] != p[2] or p[1] != p[3]:
        raise GraphError(f"onnx import: {node.op_type} node '{node.name}': only 2-D "
                         f"symmetric pads are supported, got {p}")
    return p[0], p[1]


def _i_conv(im, node, at):
    x, W = im.var(node, 0), im.var(node, 1)
    if x.ndim != 4:
        raise GraphError(f"onnx import: Conv node '{node.name}': only 2-D convolution is "
                         f"supported, got input shape {x.shape}")
    b = im.var(node, 2) if im.has(node, 2) else None
    return [F.conv2d(x, W, b, stride=tuple(at.get("strides", (1, 1))), pad=_pads2(node, at),
                     dilation=tuple(at.get("dilations", (1, 1))),
                     groups=int(at.get("group", 1)))]


def _i_pool(kind):
    def h(im, node, at):
        x = im.var(node, 0)
        if len(node.output) > 1 and node.output[1]:
            raise GraphError(f"onnx import: MaxPool node '{node.name}': the Indices output "
                             "is not supported")
        if at.get("ceil_mode", 0) or any(d != 1 for d in at.get("dilations", (1, 1))):
            raise GraphError(f"onnx import: {node.op_type} node '{node.name}': ceil_mode "
                             "and dilations are not supported")
        k = tuple(at["kernel_shape"])
        if len(k) != 2:
            raise GraphError(f"onnx import: {node.op_type} node '{node.name}': only 2-D "
                             f"pooling is supported, got kernel {k}")
        pad = _pads2(node, at)
        s = tuple(at.get("strides", (1, 1)))
        if kind == "max":
            return [F.max_pooling(x, k, s, pad)]
        if any(pad) and not at.get("count_include_pad", 0):
            raise GraphError(f"onnx import: AveragePool node '{node.name}': padding with "
                             "count_include_pad=0 is not supported")
        return [F.average_pooling(x, k, s, pad)]
    return h


def _i_global_pool(fn):
    def h(im, node, at):
        x = im.var(node, 0)
        return [fn(x, axis=tuple(range(2, x.ndim)), keepdims=True)]
    return h


def _i_col2im(im, node, at):
    cols = im.var(node, 0)
    size = [int(s) for s in im.const(node, 1, "image_shape")]
    k = [int(s) for s in im.const(node, 2, "block_shape")]
    if len(size) != 2:
        raise GraphError(f"onnx import: Col2Im node '{node.name}': only 2-D images are "
                         f"supported, got image_shape {size}")
    c = cols.shape[1] // (k[0] * k[1])
    return [F.col2im(cols, (c, *size), tuple(k), stride=tuple(at.get("strides", (1, 1))),
                     pad=_pads2(node, at), dilation=tuple(at.get("dilations", (1, 1))))]


def _i_batch_norm(im, node, at):
    if at.get("training_mode", 0):
        raise GraphError(f"onnx import: BatchNormalization node '{node.name}': "
                         "training_mode=1 is not supported (inference only)")
    x, s, b, m, v = (im.var(node, i) for i in range(5))
    return [F.batch_normalization(x, s, b, m, v, axes=(1,), eps=float(at.get("epsilon", 1e-5)),
                                  training=False)]


def _i_layer_norm(im, node, at):
    from ..ops.layer_norm import layer_norm_op
    x = im.var(node, 0)
    axis = int(at.get("axis", -1))
    k = x.ndim - (axis + x.ndim if axis < 0 else axis)
    y, rstd = layer_norm_op(x, count=k, eps=float(at.get("epsilon", 1e-5)))
    y = y * im.var(node, 1)
    if im.has(node, 2):
        y = y + im.var(node, 2)
    return [y, None, rstd]


def _i_gelu(im, node, at):
    a = at.get("approximate", "none")
    return [F.gelu(im.var(node, 0), approximate=a.decode() if isinstance(a, bytes) else a)]


def _i_dropout(im, node, at):
    if im.has(node, 2):
        t = im.const(node, 2, "training_mode")
        if t is not None and bool(t):
            raise GraphError(f"onnx import: Dropout node '{node.name}': training_mode=1 is "
                             "not supported (inference only)")
    x = im.var(node, 0)
    outs = [x]
    if len(node.output) > 1 and node.output[1]:
        outs.append(F.greater_equal(F.abs(x), 0.0) if x.dtype.kind == "f"
                    else F.equal(x, x))  # the inference mask: all True
    return outs


def _i_one_hot(im, node, at):
    t = im.var(node, 0)
    depth = int(im.const(node, 1, "depth").reshape(-1)[0])
    vals = im.const(node, 2, "values")
    off, on = vals.tolist()
    dt = vals.dtype
    if dt not in (np.float16, np.float32, np.float64, np.int32, np.int64):
        dt = np.dtype(np.float32)
    if t.dtype.kind == "f":
        t = F.cast(t, np.int64)
    y = F.one_hot(t, depth, axis=int(at.get("axis", -1)), dtype=dt)
    if (off, on) != (0, 1):
        y = y * (on - off) + off
        if y.dtype != dt:
            y = F.cast(y, dt)
    return [y]


def _i_cast(im, node, at):
    return [F.cast(im.var(node, 0), _np_dtype(at["to"]))]


def _i_leaky(im, node, at):
    return [F.leaky_relu(im.var(node, 0), float(at.get("alpha", 0.01)))]


def _i_not(im, node, at):
    return [F.equal(im.var(node, 0), False)]


def _i_identity(im, node, at):
    return [im.var(node, 0)]


def _i_concat(im, node, at):
    xs = [im.var(node, i) for i in range(len(node.input))]
    return [F.concatenate(xs, axis=int(at["axis"]))]


def _i_transpose(im, node, at):
    perm = at.get("perm")
    return [F.transpose(im.var(node, 0), None if perm is None else tuple(perm))]


def _i_where(im, node, at):
    return [F.where(im.var(node, 0), im.var(node, 1), im.var(node, 2))]


_IMPORT: dict[str, Any] = {
    # the declared elementwise functions with an op of their own, then ONNX's variants
    **{r.onnx: (_i_unary if r.arity == 1 else _i_binary)(getattr(F, r.name))
       for r in _ROWS.values() if isinstance(r.onnx, str)},
    "Div": _i_div, "Pow": _i_pow, "And": _i_binary(F.minimum), "Or": _i_binary(F.maximum),
    "Not": _i_not, "Max": _i_variadic(F.maximum), "Min": _i_variadic(F.minimum),
    "LeakyRelu": _i_leaky, "Clip": _i_clip, "Cast": _i_cast, "Where": _i_where,
    "ReduceSum": _i_reduce(F.sum), "ReduceMean": _i_reduce(F.mean),
    "ReduceMax": _i_reduce(F.max), "ReduceMin": _i_reduce(F.min),
    "ArgMax": _i_arg(F.argmax), "ArgMin": _i_arg(F.argmin),
    "Reshape": _i_reshape, "Transpose": _i_transpose, "Expand": _i_expand,
    "Concat": _i_concat, "Slice": _i_slice, "Pad": _i_pad, "Split": _i_split, "Gather": _i_gather,
    "Flatten": _i_flatten, "Squeeze": _i_squeeze, "Unsqueeze": _i_unsqueeze,
    "Identity": _i_identity, "MatMul": _i_binary(F.matmul), "Gemm": _i_gemm,
    "Softmax": _i_softmax(F.softmax), "LogSoftmax": _i_softmax(F.log_softmax),
    "Conv": _i_conv, "Col2Im": _i_col2im,
    "MaxPool": _i_pool("max"), "AveragePool": _i_pool("average"),
    "GlobalAveragePool": _i_global_pool(F.mean), "GlobalMaxPool": _i_global_pool(F.max),
    "BatchNormalization": _i_batch_norm, "Dropout": _i_dropout, "OneHot": _i_one_hot,
    "LayerNormalization": _i_layer_norm, "Gelu": _i_gelu,
}

#: ONNX ops (default domain) ``import_model`` translates.
IMPORTED_OPS: frozenset[str] = frozenset(_IMPORT) | {"Constant", "Shape"}


def _tensor(t: Any, what: str) -> np.ndarray:
    """A ``TensorProto`` as numpy; one whose data does not fill its dims raises
    ``GraphError`` naming ``what``."""
    from onnx import numpy_helper
    try:
        return numpy_helper.to_array(t)
    except Exception as e:
        raise GraphError(f"onnx import: {what} (dims {list(t.dims)}, data type "
                         f"{t.data_type}) is malformed: {e}") from e


def _constant(node: Any, at: dict) -> np.ndarray:
    if "value" in at:
        return _tensor(at["value"], f"Constant node '{node.name}'")
    for k, dt in (("value_float", np.float32), ("value_floats", np.float32),
                  ("value_int", np.int64), ("value_ints", np.int64)):
        if k in at:
            return np.array(at[k], dt)
    raise GraphError(f"onnx import: Constant node '{node.name}': attribute "
                     f"{sorted(at)} is not supported (value, value_float(s), value_int(s))")


def _inputs(im: _Importer, g: Any, shapes: dict | None) -> dict[str, Variable]:
    """Placeholders for the graph inputs that are not initializers."""
    inputs: dict[str, Variable] = {}
    for inp in g.input:
        if inp.name in im.consts:
            continue  # an initializer listed as an input (IR < 4 style)
        tt = inp.type.tensor_type
        shape = list((shapes or {}).get(inp.name, ()))
        if not shape:
            for k, d in enumerate(tt.shape.dim):
                if not d.HasField("dim_value"):
                    raise GraphError(
                        f"onnx import: input '{inp.name}' has a symbolic dimension {k} "
                        f"('{d.dim_param}'); nnarray graphs need static shapes: pass "
                        f"shapes={{'{inp.name}': (...)}}")
                shape.append(d.dim_value)
        try:
            v = im.vars[inp.name] = Variable(tuple(shape), dtype=_np_dtype(tt.elem_type))
        except Exception as e:
            raise GraphError(f"onnx import: input '{inp.name}': {e}") from e
        inputs[inp.name] = v
    return inputs


def _node(im: _Importer, node: Any) -> None:
    """Translate one node into ``im.vars`` (graph values) or ``im.consts`` (folded)."""
    if node.domain not in ("", "ai.onnx"):
        raise GraphError(f"onnx import: unsupported op '{node.domain}.{node.op_type}' "
                         f"(node '{node.name}')")
    at = _attrs(node)
    if node.op_type == "Constant":
        im.consts[node.output[0]] = _constant(node, at)
        return
    if node.op_type == "Shape":  # static shapes: a constant
        x = im.vars.get(node.input[0])
        shape = x.shape if x is not None else im.const(node, 0, "data").shape
        im.consts[node.output[0]] = np.array(
            shape[at.get("start", 0):at.get("end", len(shape))], np.int64)
        return
    h = _IMPORT.get(node.op_type)
    if h is None:
        raise GraphError(f"onnx import: unsupported ONNX op '{node.op_type}' "
                         f"(node '{node.name}')")
    fold = im.foldable(node)
    try:
        outs = im.translate(h, node, at)
    except GraphError:
        raise
    except Exception as e:
        raise GraphError(f"onnx import: {node.op_type} node '{node.name}': {e}") from e
    for name, v in zip(node.output, outs):
        if not name:
            continue
        if fold and isinstance(v, NdArray):
            im.consts[name] = v.numpy()
        else:
            im.vars[name] = v


def from_model(model: Any, shapes: dict | None = None,
               fold_limit: int | None = None) -> tuple[list, dict]:
    """``import_model`` on an ``onnx.ModelProto``."""
    if not model.HasField("graph") or not model.graph.output:
        raise GraphError("onnx import: the model has no graph outputs (an empty or "
                         "truncated file?)")
    g = model.graph
    for op in model.opset_import:
        if op.domain in ("", "ai.onnx") and op.version < 13:
            raise GraphError(f"onnx import: opset {op.version} is not supported (need >= 13)")
    with static():  # placeholders hold no data: nothing may run before forward()
        im = _Importer(g, FOLD_LIMIT if fold_limit is None else int(fold_limit))
        inputs = _inputs(im, g, shapes)
        for node in g.node:
            _node(im, node)
    outputs = []
    for o in g.output:
        v = im.vars.get(o.name)
        if v is None:
            if o.name in im.consts:
                v = Variable.from_numpy_array(im.consts[o.name])
            else:
                raise GraphError(f"onnx import: graph output '{o.name}' is never produced")
        outputs.append(v)
    return outputs, {**inputs, **im.params}


def load_model(path: str | os.PathLike) -> Any:
    """The ``onnx.ModelProto`` in the file at ``path``; ``GraphError`` if it is not one."""
    onnx = _onnx()
    path = os.fspath(path)
    try:
        return onnx.load(path)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except Exception as e:  # protobuf's DecodeError, external data that is not there, ...
        raise GraphError(f"onnx import: {path!r} is not a readable ONNX model: "
                         f"{type(e).__name__}: {e}") from e


def import_model(path: str | os.PathLike, shapes: dict | None = None,
                 fold_limit: int | None = None) -> tuple[list, dict]:
    """A static nnarray graph from the ONNX model at ``path``: ``(outputs, values)`` with
    the graph's outputs (Variables, in order) and ``{name: Variable}`` holding first the
    graph inputs (Variables of their shapes and dtypes: set ``.d`` and call ``forward()``)
    then every initializer used as a tensor (a leaf holding its data; float ones
    ``need_grad``). Constants read as attributes (shapes, axes) stay numpy. ``shapes``
    gives inputs with symbolic dimensions (a dynamic batch size) their static shape. An
    ONNX op without a translation raises ``GraphError`` naming it and its node, and so
    does a file that is not a model, an initializer whose data does not fill its dims, and
    a node computed from constants at import (folding) whose value would be over
    ``fold_limit`` bytes (default ``FOLD_LIMIT``, 64 MiB)."""
    return from_model(load_model(path), shapes, fold_limit)
