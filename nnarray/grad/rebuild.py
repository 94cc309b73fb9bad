"""Rebuilding a static graph's nodes on new inputs: shape and dtype inference, graph
composition, binding to new shapes, inference-mode twins (``Graph._with``).

Each node that depends on a substituted value is recorded again (static mode) on the new
values: every op's ``infer`` runs again, with shape-dependent attributes (a reshape's
target, a broadcast's batch size) recomputed for the new shapes; a function made of
several ops (``Node.macro``) is called again as a whole. A failure names the node.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import DTypeError, GraphError, InvalidValueError, ShapeError
from ..ndarray import NdArray
from . import modes, recording
from .python_function import PyNode
from .variable import Variable


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
            # F.reshape, or the declared function it wraps (a graph file's call)
            if fn.__name__ == "reshape" and fn.__module__ in ("nnarray.functions",
                                                              "nnarray.ops.shape"):
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
            out = recording.record(op, ins, attrs, op.out_metas(ins, attrs))
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
