"""ONNX import: the table of ONNX ops to ``F`` functions (``_IMPORT``) and the walk that
records a static graph with it (``build``). The public entry points are in
``nnarray.grad.onnx``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import functions as F
from ..dtypes import is_bfloat16
from ..errors import GraphError
from ..ndarray import NdArray
from ..ops import ufuncs as _ufuncs
from .executor import topological_many
from .modes import static
from .variable import Variable


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
            low = is_bfloat16(a.dtype)  # ml_dtypes' kind is 'V'
            if a.dtype == np.uint8 or (a.dtype.kind not in "biuf" and not low):
                raise GraphError(f"onnx import: {node.op_type} node '{node.name}': initializer "
                                 f"'{name}' has unsupported dtype {a.dtype}")
            if a.dtype.kind == "f" and a.dtype not in (np.float16, np.float32, np.float64):
                a = a.astype(np.float32)
            v = Variable.from_numpy_array(a, need_grad=low or a.dtype.kind == "f")
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
       for r in _ufuncs.ROWS if isinstance(r.onnx, str)},
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


def build(model: Any, shapes: dict | None, fold_limit: int) -> tuple[list, dict]:
    """``(outputs, values)`` of the static graph recorded from ``model``'s graph."""
    g = model.graph
    with static():  # placeholders hold no data: nothing may run before forward()
        im = _Importer(g, fold_limit)
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
