"""The functional gradient: ``grad(outputs, inputs, ...)`` (nnabla's ``nn.grad``, torch's
``autograd.grad``) and ``backward(create_graph=True)``.

The backward rules (``ops/``) are written with ``F``, and ``F`` accepts Variables: run on
the graph's own Variables they record the backward computation as ordinary nodes of the
same kind as the forward's (Chainer's double backprop). ``create_graph`` is just that:
under ``auto_forward`` the recorded nodes compute at once, in a static graph they are
nodes that ``forward()`` runs (nnabla's rule: a static graph's gradient is a graph, so
it is recorded whatever ``create_graph`` says; without it the results opt out of further
differentiation). Without ``create_graph`` a define-by-run graph's rules run on the
saved NdArrays, as ``backward()`` does, and the leaves' ``.grad`` are never touched.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from .. import dtypes, late
from .. import functions as F
from ..errors import GraphError
from ..ndarray import NdArray
from . import modes
from .executor import backward_order, topological_many
from .variable import Variable, _make, grad_variables

_FLOATS = dtypes.INEXACT


def grad(outputs: Variable | Sequence[Variable], inputs: Variable | Sequence[Variable],
         grad_outputs: Any = None, create_graph: bool = False, retain_graph: bool | None = None,
         allow_unused: bool = False) -> list:
    """d(outputs)/d(inputs), one Variable per input (``None`` for an unused input with
    ``allow_unused``), the outputs' gradients summed. ``grad_outputs`` (one per output:
    a Variable, NdArray, array-like or scalar) defaults to ones for an output of any
    shape (nnabla's rule; torch demands one-element outputs). With ``create_graph`` the
    results carry the backward computation and can be differentiated again. A
    define-by-run graph is freed afterwards unless ``retain_graph`` (default:
    ``create_graph``). A static graph's results are graph values: run ``forward()`` on
    them (or on what they feed). ``GraphError`` for an input no output depends on, or
    one that cannot receive a gradient."""
    outs = _as_list(outputs, "outputs")
    ins = _as_list(inputs, "inputs")
    seeds = _as_list(grad_outputs, "grad_outputs") if _is_seq(grad_outputs) else \
        [grad_outputs] * len(outs)
    if len(seeds) != len(outs):
        raise GraphError(f"grad: {len(seeds)} grad_outputs for {len(outs)} outputs")
    for k, x in enumerate(ins):
        if x.dtype not in _FLOATS or (x._parent is None and not x._need_grad):
            raise GraphError(f"grad: input {k} (shape {x.shape}, {x.dtype}) does not require "
                             "a gradient: create it with need_grad=True (a floating dtype)")
    dynamic = any(o._parent is not None and o._parent.dynamic for o in outs)
    if retain_graph is None:
        retain_graph = create_graph
    graph = create_graph or not dynamic
    order = topological_many(outs)
    if dynamic:
        from .backward import check_not_freed
        check_not_freed(order, "grad")
    mode = modes.static() if not dynamic else modes.auto_forward() if create_graph else \
        modes.no_grad()
    with mode:
        gs = [_seed(o, s, graph) for o, s in zip(outs, seeds)]
        res = differentiate(order, outs, gs, ins, graph)
    if dynamic and not retain_graph:
        from .backward import free_graph
        free_graph(outs[0], order)
        for o in outs:
            o._plan = None
    return [_result(k, x, g, graph, create_graph, allow_unused) for k, (x, g)
            in enumerate(zip(ins, res))]


def differentiate(order: list, outs: list, seeds: list, targets: list, graph: bool) -> list:
    """The gradients of ``targets`` (``None`` where none flows) for ``outs`` seeded with
    ``seeds``, the rules of the nodes in ``order`` run backwards (``graph``: on Variables,
    recording)."""
    grads: dict[int, tuple] = {}
    for o, s in zip(outs, seeds):
        _add(grads, o, s)
    tids = {id(t) for t in targets}
    for n, need in backward_order(order, lambda v: id(v) in tids):
        held = revive(n) if graph else None  # noqa: F841 (alive while the rule runs)
        vs = [r() for r in n.outputs]
        gys = [grads[id(v)][1] if v is not None and id(v) in grads else None for v in vs]
        if all(g is None for g in gys):
            continue
        gxs = n.differentiate(need, gys, graph)
        if gxs is None:
            continue
        for i, gx in enumerate(gxs):
            if gx is not None and need[i]:
                _add(grads, n.inputs[i], gx)
    return [grads[id(t)][1] if id(t) in grads else None for t in targets]


def _add(grads: dict, x: Variable, g: Any) -> None:
    prev = grads.get(id(x))
    grads[id(x)] = (x, g if prev is None else F.add(prev[1], g))


def revive(n: Any) -> list | None:
    """Make ``n``'s dead output Variables that its rule reads again (holding the saved
    data, if any), so that the rule records a graph through them; returns them (the node
    holds its outputs weakly: the caller keeps them alive while the rule runs)."""
    rule = getattr(n.function, "backward", None)
    if rule is None or not rule.outputs:
        return None
    refs = list(n.outputs)
    made = []
    for j in rule.outputs:
        if refs[j]() is None:
            shape, dtype = n.out_metas[j]
            saved = n.saved_outputs[j] if n.saved_outputs else None
            made.append(_make(shape, dtype, saved, None, True, n))
            refs[j] = weakref.ref(made[-1])
    n.outputs = tuple(refs)
    return made


def _seed(o: Variable, s: Any, graph: bool) -> Any:
    """The output gradient ``s`` for ``o``: a Variable where ``graph`` (a given Variable
    as it is: it may itself need a gradient, the double-vjp trick), else an NdArray."""
    if isinstance(s, Variable):
        if s.shape != o.shape:
            from ..errors import ShapeError
            raise ShapeError(f"grad: a grad_output has shape {s.shape}, its output {o.shape}")
        return s if graph else s.data
    from .backward import seed
    g = seed(o, 1 if s is None else s, None, "grad")
    return _make(g.shape, g.dtype, g, None, False) if graph else g


def _result(k: int, x: Variable, g: Any, graph: bool, create_graph: bool,
            allow_unused: bool) -> Any:
    if g is None:
        if allow_unused:
            return None
        raise GraphError(f"grad: input {k} (shape {x.shape}) is not used by any output (no "
                         "output depends on it); pass allow_unused=True to get None for it")
    if isinstance(g, NdArray):
        return _make(g.shape, g.dtype, g, None, False)
    if g._parent is None and g._need_grad and not create_graph:
        g = g.unlinked(False)  # a grad_output that needs a gradient, passed through
    if graph and not create_graph and g._parent is not None:
        g._need_grad = False
        g._explicit = True
    return g


def _is_seq(v: Any) -> bool:
    return isinstance(v, (list, tuple))


def _as_list(v: Any, what: str) -> list:
    vs = list(v) if _is_seq(v) else [v]
    if what != "grad_outputs":
        for k, x in enumerate(vs):
            if not isinstance(x, Variable):
                raise TypeError(f"grad: {what}[{k}] must be a Variable, got "
                                f"{type(x).__name__}")
        if not vs:
            raise ValueError(f"grad: {what} is empty")
    return vs


def backward_graph(root: Variable, seed_: Any, clear_buffer: bool) -> None:
    """``root.backward(grad, create_graph=True)``: every ``need_grad`` leaf's gradient as
    a graph (``Variable.grad_variable``, summed over calls) and its values added into
    ``.grad``. The graph is kept (torch's rule with ``create_graph``)."""
    order = topological_many((root,))
    leaves: dict[int, Variable] = {}
    for n in order:
        for a in n.inputs:
            if isinstance(a, Variable) and a._parent is None and a._need_grad and \
                    a.dtype in _FLOATS:
                leaves.setdefault(id(a), a)
    if not leaves:  # nothing receives a gradient: nothing runs (nnabla's rule, as backward)
        return
    ls = list(leaves.values())
    gs = grad(root, ls, root.grad if seed_ is None else seed_, create_graph=True,
              retain_graph=True, allow_unused=True)
    for x, g in zip(ls, gs):
        if g is None:
            continue
        if g._data is None:
            g.forward(clear_buffer)
        prev = grad_variables.get(x)
        grad_variables[x] = g if prev is None else prev + g
        x._accumulate(g.data, True)


late.provide(__name__)  # Variable.backward(create_graph=True) (nnarray.late)
