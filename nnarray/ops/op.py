"""``Op``: one function's backend-independent semantics.

An Op validates its inputs and infers output shapes and dtypes (``infer``) before any
kernel runs; then either records a graph node (when an input is a graph value such as
``grad.Variable``) or dispatches through the registry on the current context.
Backward rules (``backward``) live beside each op's spec, written with ``F`` functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import late
from ..context import dispatch_context
from ..ndarray import NdArray
from ..registry import dispatch

#: ``nnarray.grad.naming``, where graphs name their nodes: ``None`` until ``nnarray.grad``
#: is imported, and until then no value records a node, so a ``name=`` names nothing.
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
    ``x._record_binary(op, a, b)`` (which may cache the inference by shapes and dtypes).
    The core knows nothing else about graphs.
    """

    __slots__ = ()

    def _record(self, op: Op, inputs: tuple, attrs: dict, metas: tuple) -> Any:
        raise NotImplementedError

    def _record_binary(self, op: Op, a: Any, b: Any) -> Any:
        return self._record(op, (a, b), {}, op.infer((a, b), {}))


class Op:
    """Validation + shape inference + backward rule of one op.

    ``infer(inputs, attrs) -> tuple[(shape, dtype), ...]`` raises ``ShapeError`` /
    ``DTypeError`` / ``ValueError`` for bad input and may normalize ``attrs`` in place.
    ``backward`` is the rule declared beside the spec (``ops.backward``).
    """

    __slots__ = ("name", "infer", "backward", "differentiable", "last", "__weakref__")

    #: Each output element depends only on the operands' elements at its position (after
    #: broadcasting), and the kernels take ``out=``: an operand of the output's shape and
    #: dtype that nothing reads afterwards may be the output (generated backward code).
    elementwise = False

    def __init__(self, name: str, infer: Callable, differentiable: bool = True) -> None:
        self.name = name
        self.infer = infer
        self.backward: Any = None
        self.differentiable = differentiable
        #: ``[(context, Kernel)]`` of the previous dispatch: one tuple, replaced whole, so
        #: threads with different contexts never see a mixed pair (check ``Kernel.valid``)
        self.last: list = [(None, None)]

    def __call__(self, *inputs: Any, **attrs: Any) -> Any:
        if "name" in attrs:  # a graph node's name: NdArray calls ignore it
            name = attrs.pop("name")
            if name is not None:
                return name_result(self(*inputs, **attrs), name, inputs)
        metas = self.infer(inputs, attrs)
        for x in inputs:
            if type(x) is not NdArray and isinstance(x, GraphValue):
                return x._record(self, inputs, attrs, metas)
        return self.kernel(inputs).run(inputs, attrs, metas)

    def kernel(self, inputs: Any) -> Any:
        """The ``Kernel`` running this op on ``inputs``: ``registry.dispatch`` where
        ``context.dispatch_context`` says."""
        return dispatch(self, dispatch_context(inputs, self.name))

    def __repr__(self) -> str:
        return f"<Op {self.name}>"

