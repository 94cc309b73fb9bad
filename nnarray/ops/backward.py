"""Backward-rule plumbing for the op specs (PyTorch's ``derivatives.yaml``, "pattern B").

Each differentiable op declares its rule once, beside its spec, written with ``F``
functions so that every backend differentiates with no backend-specific code::

    @backward(mul, inputs=(0, 1))
    def _mul_grad(c, g):
        a, b = c.inputs
        return (fit(c, 0, g * b) if c.need[0] else None,
                fit(c, 1, g * a) if c.need[1] else None)

A rule receives the graph node ``c`` and ``g``, the gradient of the op's first output
(the only differentiable one of every primitive), and returns one gradient (or ``None``)
per input. ``c`` offers ``inputs`` / ``outputs`` (the retained data: the indices named in
``inputs=`` / ``outputs=``, ``None`` elsewhere; scalars are always kept), ``attrs``,
``need`` (``propagate_down`` per input) and ``in_meta`` (``(shape, dtype)`` per input).
Declaring what a rule retains lets the graph keep only that (Chainer's
``retain_inputs``/``retain_outputs``) and check it for in-place modification.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import late
from .op import Op

#: ``nnarray.functions`` (above the op specs): the rules call it at backward time
F: Any = late.bind(__name__, "F", "nnarray.functions")


class Rule:
    """A backward rule and what it retains; ``inputs`` may be ``attrs -> indices``.
    ``grads``: the rule also takes the gradients of the further outputs it retains
    (``c.grads``, set where a gradient graph is built; ``g`` may then be ``None``)."""

    __slots__ = ("fn", "inputs", "outputs", "grads")

    def __init__(self, fn: Callable, inputs: Any = (), outputs: tuple[int, ...] = (),
                 grads: bool = False) -> None:
        self.fn = fn
        self.inputs = inputs
        self.outputs = tuple(outputs)
        self.grads = grads

    def retained_inputs(self, attrs: dict) -> tuple[int, ...]:
        return self.inputs(attrs) if callable(self.inputs) else self.inputs


def backward(op: Op, inputs: Any = (), outputs: tuple[int, ...] = (),
             grads: bool = False) -> Callable:
    """Decorator: the backward rule of ``op``, retaining ``inputs`` and ``outputs``
    (``grads``: see ``Rule``)."""
    def deco(fn: Callable) -> Callable:
        op.backward = Rule(fn, tuple(inputs) if not callable(inputs) else inputs, outputs,
                           grads)
        return fn
    return deco


def sum_to(g: Any, shape: tuple[int, ...]) -> Any:
    """Sum ``g`` over the axes broadcasting added, so that it has ``shape``."""
    gs = g.shape
    if gs == shape:
        return g
    lead = len(gs) - len(shape)
    inner = tuple(i + lead for i, s in enumerate(shape) if s == 1 and gs[i + lead] != 1)
    if not inner:
        return F.sum(g, tuple(range(lead)), False)
    g = F.sum(g, tuple(range(lead)) + inner, True)
    return g if g.shape == shape else F.reshape(g, shape)


def fit(c: Any, i: int, g: Any) -> Any:
    """``g`` reduced to input ``i``'s shape and cast to its dtype."""
    shape, dtype = c.in_meta[i]
    g = sum_to(g, shape)
    return g if g.dtype == dtype else F.cast(g, dtype)


def conj(v: Any) -> Any:
    """``conj(v)`` of a complex value (array or scalar), else ``v``: a complex rule's
    gradient is ``g * conj(dy/dx)`` (PyTorch's convention), a real rule's ``g * dy/dx``."""
    if isinstance(v, (complex, np.complexfloating)):
        return v.conjugate()
    if getattr(v, "dtype", None) is not None and v.dtype.kind == "c":
        return F.conj(v)
    return v


def unreduce(g: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> Any:
    """A reduction's output gradient, shaped to broadcast against the input (the reduced
    axes kept as size 1 unless they lead, where broadcasting restores them anyway)."""
    if keepdims or axes == tuple(range(len(axes))):
        return g
    keep = tuple(1 if i in axes else s for i, s in enumerate(shape))
    return g if g.shape == keep else F.reshape(g, keep)
