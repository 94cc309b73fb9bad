"""The backward pass: d(root)/d(leaf) into every ``need_grad`` leaf's ``.grad``.

Nodes are visited by descending rank; each input gets ``propagate_down`` (``need``); an
intermediate's gradient is written on first visit and summed after, a leaf's accumulates
into its ``.grad`` across calls (``Variable._receive_grad``). Every rule runs through
``Node.trace_backward``. A static graph's backward is traced once into a program
(``program.py``) and replayed by the executor. A define-by-run graph's runs now at the
first sighting of its ``signature``, recording nothing (``program.run_untaped``); at the
second it is traced while it runs (each rule's functions compute as they are recorded);
from the third, later graphs of that signature replay the program.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .. import context as _context
from .. import dtypes, late
from ..context import _current
from ..errors import GraphError, ShapeError
from ..ndarray import NdArray, full
from . import executor
from .program import finish, run_untaped, trace
from .variable import Variable

_FLOATS = dtypes.INEXACT


def backward(root: Variable, grad: Any = 1, clear_buffer: bool = False,
             retain_graph: bool = False) -> None:
    """Accumulate d(root)/d(leaf) (times ``grad``) into every ``need_grad`` leaf, on the
    device the forward ran on (``root``'s), whatever scope is current now. nnabla's rule:
    the default ``grad=1`` seeds ones for an output of any shape (torch would demand a
    one-element output); ``None`` seeds the output's own ``.grad``. With no ``need_grad``
    leaf behind ``root`` nothing receives a gradient and nothing runs (nnabla's rule: the
    PythonFunction post times exactly such a backward; torch raises). A define-by-run
    graph is freed afterwards unless ``retain_graph`` (``free_graph``)."""
    if not root._need_grad and not _has_grad_leaf(root):
        return
    base = _context.get_current_context()
    ctx = _forward_context(root, base)
    if ctx is base:
        return _backward(root, grad, clear_buffer, base, retain_graph)
    token = _current.set(ctx)
    try:
        _backward(root, grad, clear_buffer, ctx, retain_graph)
    finally:
        _current.reset(token)


def _forward_context(root: Variable, base: Any) -> Any:
    """The context of the device ``root`` was computed on (with ``base``'s fallback),
    ``base`` itself where that is its device or the root holds no data."""
    d = root._data
    h = None if d is None else d.head_device
    if h is None or (h.device_id == base.device_id and h.backend == base.backend):
        return base
    return _context.context_of(h, base)


def _backward(root: Variable, grad: Any, clear_buffer: bool, ctx: Any,
              retain_graph: bool) -> None:
    g = root.grad if grad is None else seed(root, grad, root._grad, "backward")
    if root._parent is None:
        if root._need_grad and root.dtype in _FLOATS:
            root._accumulate(g, True)
        return
    plan = executor.plan_of(root)
    dynamic = root._parent.dynamic
    if dynamic:
        check_not_freed(plan.order, "backward")
    _run(root, plan, g, clear_buffer, ctx)
    if dynamic and not retain_graph:
        free_graph(root, plan.order)


def _run(root: Variable, plan: executor.Plan, g: NdArray, clear_buffer: bool,
         ctx: Any) -> None:
    """The backward pass proper (every rule through ``Node.trace_backward``). A static
    graph's are traced once (nothing runs) and the program replayed. A define-by-run
    graph's run now: untaped at its signature's first sighting (a program costs more to
    keep than a graph seen once takes to run), taped as they run at the second, and its
    program replayed from the third."""
    prog = plan.program
    if prog is None:
        if not root._parent.dynamic:
            prog = plan.program = trace(root, plan.backward_order(), plan.order)
        else:
            sig = signature(root, plan.order)
            prog = _programs().get(sig, _UNSEEN) if sig is not None else _NEVER
            if prog is _UNSEEN or prog is _NEVER or prog is _ONCE:
                _run_now(root, plan, g, clear_buffer, sig, prog)
                return
    executor.replay(prog, plan.order, g, ctx, clear_buffer, (), plan.recompute)
    root._grad = g
    if clear_buffer:
        for n in plan.order:
            _after(n, root, True)


def _run_now(root: Variable, plan: executor.Plan, g: NdArray, clear_buffer: bool,
             sig: Any, seen: Any) -> None:
    """Run the backward pass now. The second sighting of ``sig`` (``seen`` is ``_ONCE``)
    tapes it as it runs (``trace(run=g)``), delivers its gradients as a replay does and
    keeps the program for the next graph of that signature (where it is relocatable:
    not a Python function's); other sightings record nothing (``run_untaped``)."""
    nodes = plan.order
    if seen is not _ONCE:
        run_untaped(root, plan.backward_order(), g, clear_buffer)
        root._grad = g
        if seen is _UNSEEN:
            _keep(sig, _ONCE)
        return
    prog = trace(root, plan.backward_order(), nodes, run=g)
    try:
        for k, i, gv, shared in prog.leaves:
            nodes[k].inputs[i]._receive_grad(gv._data, shared)
        for k, i, gv in prog.inter:
            nodes[k].inputs[i]._grad = None if clear_buffer else gv._data
    finally:
        prog.clear()
    root._grad = g
    if clear_buffer:
        for n in nodes:
            _after(n, root, True)
    if prog.relocatable:
        finish(prog, nodes)
        _keep(sig, prog)
    else:
        _keep(sig, _NEVER)


def _keep(sig: Any, what: Any) -> None:
    programs = _programs()
    if sig not in programs and len(programs) >= _PROGRAMS_MAX:
        programs.pop(next(iter(programs)))
    programs[sig] = what


#: What a freed define-by-run node has as inputs (``free_graph``).
FREED: tuple = ()


def free_graph(root: Variable, order: list) -> None:
    """Free a define-by-run graph after its backward pass (as torch does without
    ``retain_graph``): each recorded node drops its saved data and its references to its
    inputs, so the inputs and intermediates nobody else holds are freed, while the
    output keeps its value and its node. Static nodes keep theirs: they run again."""
    for n in order:
        if n.dynamic:
            n.release()
            n.inputs = FREED
            n.macro = None
    root._plan = None


def check_not_freed(order: list, what: str) -> None:
    """Raise ``GraphError`` (naming ``what``) if a define-by-run node of ``order`` was
    freed by a backward pass (or ``clear_buffer``)."""
    for n in order:
        if n.dynamic and n.versions is None:
            raise GraphError(
                f"{what}: the define-by-run graph through '{n.label}' ({n.name}) was "
                "freed by an earlier backward(); pass backward(retain_graph=True) to the "
                "earlier call to keep it (or build it again)")


#: Traced programs of define-by-run graphs, by graph signature (a training loop builds the
#: same graph every iteration: traced at its second occurrence, replayed from the third).
_local = threading.local()  # per thread: a program's proxies are bound while it replays
_PROGRAMS_MAX = 32
#: What ``_programs`` holds for a signature before its program: seen once (the next
#: sighting tapes), never to be taped (its program would not replay: a Python function's).
_ONCE, _NEVER, _UNSEEN = object(), object(), object()


def _programs() -> dict:
    got = getattr(_local, "programs", None)
    if got is None:
        got = _local.programs = {}
    return got


def signature(root: Variable, order: list) -> tuple | None:
    """What a traced backward depends on: ops, attributes, shapes and dtypes, the wiring,
    and which leaves need gradients (leaves numbered by first use, not by identity)."""
    pos: dict[int, int] = {}
    leaves: dict[int, int] = {}
    parts: list = [root.shape, root.dtype]
    try:
        for k, n in enumerate(order):
            if not n.relocatable:
                return None
            pos[id(n)] = k
            args: list = []
            for a in n.inputs:
                if isinstance(a, Variable):
                    p = a._parent
                    if p is None:
                        args.append((leaves.setdefault(id(a), len(leaves)), a.shape, a.dtype,
                                     a._need_grad))
                    else:
                        j = 0 if len(p.outputs) == 1 else \
                            next(q for q, r in enumerate(p.outputs) if r() is a)
                        args.append((pos[id(p)], j, a._explicit, a._need_grad))
                elif isinstance(a, NdArray):
                    args.append((a.shape, a.dtype))
                else:
                    args.append((type(a), a))
            attrs = n.attrs
            parts.append((n.function, tuple(args), n.out_metas,
                          tuple(sorted(attrs.items())) if attrs else ()))
        sig = tuple(parts)
        hash(sig)
    except TypeError:
        return None
    return sig


def _has_grad_leaf(root: Variable) -> bool:
    """Whether a ``need_grad`` leaf lies behind ``root`` (something receives a gradient)."""
    if root._parent is None:
        return False
    return any(isinstance(a, Variable) and a._parent is None and a._need_grad
               for n in executor.plan_of(root).order for a in n.inputs)


def _after(n: Any, root: Variable, clear_buffer: bool) -> None:
    if clear_buffer:
        n.release()
        for r in n.outputs:
            v = r()
            if v is not None and v is not root:
                v._grad = None
                v._data = None


def seed(v: Variable, grad: Any, last: NdArray | None, what: str) -> NdArray:
    """The output gradient ``grad`` (an NdArray, a scalar, or array-like) for output ``v``,
    in its dtype; a scalar reuses ``last`` (the previous seed) while it holds that value.
    A wrong shape raises ``ShapeError`` naming ``what``."""
    if isinstance(grad, NdArray):
        g = grad
    elif dtypes.is_scalar(grad):
        if last is not None and last.holds_fill(grad) and last.shape == v.shape:
            return last
        return full(v.shape, grad, v.dtype)
    else:
        g = NdArray.from_numpy_array(np.asarray(grad, dtype=v.dtype))
    if g.shape != v.shape:
        raise ShapeError(f"{what}: the gradient has shape {g.shape}, the output {v.shape}")
    return g if g.dtype == v.dtype else g.astype(v.dtype)


late.provide(__name__)  # the engine's modules below (nnarray.late)
