"""``Op``: one function's backend-independent semantics.

An Op validates its inputs and infers output shapes and dtypes (``infer``) before any
kernel runs; then either records a graph node (when an input is a graph value such as
``grad.Variable``) or dispatches through the registry on the current context.
Backward rules (``backward``) live beside each op's spec, written with ``F`` functions.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import context as _context
from ..context import _current
from ..ndarray import NdArray
from ..registry import resolve

#: Check every kernel's output against the inferred shape and dtype (tests enable it).
DEBUG = os.environ.get("NNARRAY_DEBUG", "") not in ("", "0")

Meta = tuple[tuple[int, ...], np.dtype]


class GraphValue:
    """Marker base of values that record graph nodes when passed to an op."""

    __slots__ = ()


#: Set by ``nnarray.grad``: ``hook(op, inputs, attrs, metas)`` records a node.
graph_hook: Callable | None = None


def _graph_binary(op: Op, a: Any, b: Any) -> Any:
    return graph_hook(op, (a, b), {}, op.infer((a, b), {}))


#: Two-operand elementwise ops on graph values call ``graph_binary(op, a, b)``, which
#: validates (``op.infer``; a graph layer may cache it by shapes and dtypes) and records.
graph_binary: Callable = _graph_binary


class Op:
    """Validation + shape inference + backward rule of one op.

    ``infer(inputs, attrs) -> tuple[(shape, dtype), ...]`` raises ``ShapeError`` /
    ``DTypeError`` / ``ValueError`` for bad input and may normalize ``attrs`` in place.
    ``backward(ctx, grads) -> tuple`` is attached by the autograd layer's rules.
    """

    __slots__ = ("name", "infer", "backward", "differentiable", "__weakref__")

    def __init__(self, name: str, infer: Callable, differentiable: bool = True) -> None:
        self.name = name
        self.infer = infer
        self.backward: Callable | None = None
        self.differentiable = differentiable

    def __call__(self, *inputs: Any, **attrs: Any) -> Any:
        metas = self.infer(inputs, attrs)
        for x in inputs:
            if type(x) is not NdArray and isinstance(x, GraphValue):
                return graph_hook(self, inputs, attrs, metas)
        return execute(self.name, inputs, attrs, metas)

    def __repr__(self) -> str:
        return f"<Op {self.name}>"


def execute(name: str, inputs: tuple, attrs: dict, metas: tuple) -> Any:
    """Run op ``name`` on NdArray inputs under the current context; wrap the outputs."""
    ctx = _current.get(_context._default)
    fn, dev, _, composite = resolve(name, ctx)
    if composite:
        return fn(*inputs, **attrs)
    args = [x._read(dev) if type(x) is NdArray else x for x in inputs]
    out = fn(*args, **attrs)
    if len(metas) == 1:
        if DEBUG:
            _check(name, dev, out, metas[0])
        return NdArray._wrap(out, dev, metas[0])
    if DEBUG:
        for o, m in zip(out, metas):
            _check(name, dev, o, m)
    return tuple([NdArray._wrap(o, dev, m) for o, m in zip(out, metas)])


def _check(name: str, dev, out: Any, meta: Meta) -> None:
    shape, dtype = meta
    if tuple(out.shape) != shape or np.dtype(out.dtype) != dtype:
        raise AssertionError(f"kernel {name!r} on {dev.key} returned {tuple(out.shape)} "
                             f"{out.dtype}, the spec says {shape} {dtype}")
    flags = getattr(out, "flags", None)
    if flags is not None and not flags.c_contiguous:
        raise AssertionError(f"kernel {name!r} on {dev.key} returned a non-C-contiguous array")
