"""``Op``: one function's backend-independent semantics.

An Op validates its inputs and infers output shapes and dtypes (``infer``) before any
kernel runs; then either records a graph node (when an input is a graph value such as
``grad.Variable``) or dispatches through the registry on the current context.
Backward rules (``backward``) live beside each op's spec, written with ``F`` functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import late
from ..context import dispatch_context
from ..ndarray import NdArray
from ..registry import Entry, dispatch
from . import autocast as _autocast

#: ``nnarray.grad.naming``, where graphs name their nodes: ``None`` until ``nnarray.grad``
#: is imported, and until then no value records a node, so a ``name=`` names nothing.
#: Threads inside ``nna.autocast`` (``ops/autocast.py``): tested before anything else.
_AUTOCASTING = _autocast.ACTIVE

naming: Any = late.bind(__name__, "naming", "nnarray.grad.naming", optional=True)


def check_name(name: Any) -> None:
    """``ValueError`` unless ``name`` (a graph node's name) is a non-empty string."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")


def name_result(out: Any, name: str, inputs: tuple = ()) -> Any:
    """``out`` with its graph node named ``name`` (``grad.naming.name_result``)."""
    if naming is None:
        check_name(name)
        return out
    return naming.name_result(out, name, inputs)


def call_named(fn: Any, args: tuple, kwargs: dict, name: str) -> Any:
    """``fn(*args, **kwargs)`` in the name scope ``name`` (``grad.naming.call_named``)."""
    if naming is None:
        check_name(name)
        return fn(*args, **kwargs)
    return naming.call_named(fn, args, kwargs, name)


class GraphValue:
    """Base of values that record graph nodes when passed to an op (``grad.Variable``).

    The protocol: an op given one calls ``x._record(op, inputs, attrs, metas)`` (the
    inputs validated, ``metas`` inferred) and, for two-operand elementwise ops,
    ``x._record_binary(op, a, b)`` (which may read the op's meta cache, ``Op.out_metas``).
    The core knows nothing else about graphs.
    """

    __slots__ = ()

    def _record(self, op: Op, inputs: tuple, attrs: dict, metas: tuple) -> Any:
        raise NotImplementedError

    def _record_binary(self, op: Op, a: Any, b: Any) -> Any:
        return self._record(op, (a, b), {}, op.out_metas((a, b), {}))


class Op(Entry):
    """Validation + shape inference + backward rule of one op.

    ``infer(inputs, attrs) -> tuple[(shape, dtype), ...]`` raises ``ShapeError`` /
    ``DTypeError`` / ``ValueError`` for bad input and may normalize ``attrs`` in place.
    ``backward`` is the rule declared beside the spec (``ops.backward``).
    ``out_metas`` is ``infer`` through the op's meta cache where ``pure`` says it may be.
    """

    __slots__ = ("infer", "backward", "differentiable", "metas", "pure", "norms",
                 "__weakref__")

    #: Each output element depends only on the operands' elements at its position (after
    #: broadcasting), and the kernels take ``out=``: an operand of the output's shape and
    #: dtype that nothing reads afterwards may be the output (generated backward code).
    elementwise = False

    def __init__(self, name: str, infer: Callable, differentiable: bool = True,
                 pure: bool = False, normalizes: bool = False) -> None:
        Entry.__init__(self, name)
        self.infer = infer
        self.backward: Any = None
        self.differentiable = differentiable
        #: The one meta cache (``out_metas``): input key -> output metas. Elementwise ops
        #: add short keys, read by their fast paths (``elementwise.BinaryOp``).
        self.metas: dict = {}
        #: ``infer`` is a pure function of the input metas (``(shape, dtype)`` per array,
        #: the type per Python scalar) and the attrs, and leaves ``attrs`` as they are: its
        #: results may be cached (``out_metas``). Ops whose inference reads anything else
        #: (a scalar's value, attrs normalized in place) are not ``pure``: they infer on
        #: every call.
        self.pure = pure or normalizes
        #: With ``normalizes``: ``infer`` is such a pure function that also writes the
        #: attrs it normalizes (an axis made a sorted tuple, a shape a tuple) into
        #: ``attrs``; the cache keeps them by the same key (input key -> normalized attrs)
        #: and a hit writes them as ``infer`` would have. ``None``: it writes none.
        self.norms: dict | None = {} if normalizes else None

    def __call__(self, *inputs: Any, **attrs: Any) -> Any:
        if "name" in attrs:  # a graph node's name: NdArray calls ignore it
            name = attrs.pop("name")
            if name is not None:
                return name_result(self(*inputs, **attrs), name, inputs)
        if _AUTOCASTING[0] and self.name in _autocast.POLICY:
            inputs = _autocast.cast_inputs(self.name, inputs)
        metas = self.out_metas(inputs, attrs) if self.pure else self.infer(inputs, attrs)
        for x in inputs:
            if type(x) is not NdArray and isinstance(x, GraphValue):
                return x._record(self, inputs, attrs, metas)
        return self.kernel(inputs).run(inputs, attrs, metas)

    def out_metas(self, inputs: Sequence, attrs: dict) -> tuple:
        """``infer(inputs, attrs)``, cached by value (``meta_key``) where ``pure``: an equal
        new input (a new array, a re-bound graph's value of the same shape) hits, new
        shapes, dtypes or attrs miss. Errors are never cached: a bad call raises again."""
        if not self.pure:
            return self.infer(inputs, attrs)
        key = meta_key(inputs, attrs)
        if key is None:
            return self.infer(inputs, attrs)
        metas = self.metas.get(key)
        norms = self.norms
        if metas is None:
            metas = self.infer(inputs, attrs)
            if len(self.metas) < CACHE_LIMIT:
                if norms is not None:
                    norms[key] = dict(attrs)
                self.metas[key] = metas
        elif norms is not None:
            attrs.update(norms[key])
        return metas

    def kernel(self, inputs: Any) -> Any:
        """The ``Kernel`` running this op on ``inputs``: ``registry.dispatch`` where
        ``context.dispatch_context`` says."""
        return dispatch(self, dispatch_context(inputs, self.name))

    def __repr__(self) -> str:
        return f"<Op {self.name}>"


#: Entries per op's meta cache at most (beyond it, new signatures infer every call).
CACHE_LIMIT = 4096
_SCALARS = (bool, int, float, complex)


def meta_key(inputs: Sequence, attrs: dict) -> tuple | None:
    """The meta cache's key of ``inputs`` and ``attrs``: ``(shape, dtype)`` per NdArray or
    graph value, the type per Python scalar, then the attrs' items; ``None`` (not
    cached) for anything else or unhashable attrs."""
    key: list = []
    for x in inputs:
        t = type(x)
        if t in _SCALARS:
            key.append(t)
        elif t is NdArray or isinstance(x, GraphValue):
            key.append((x.shape, x.dtype))
        else:
            return None
    if attrs:
        items = tuple(attrs.items())
        try:
            hash(items)
        except TypeError:
            return None
        key.append(items)
    return tuple(key)

