"""Functional higher-order helpers (torch's ``autograd.functional``): ``vjp``, ``jvp``,
``hvp``, ``vhp``, ``jacobian``, ``hessian``.

Each takes a function of Variables and its ``inputs`` (Variables, NdArrays or numpy
arrays; one or a tuple), runs it define-by-run on the current context (every backend),
and returns Variables built with ``grad.grad``. Inputs enter as fresh leaves sharing
their data, except, with ``create_graph``, Variables that already need a gradient: the
results then stay differentiable with respect to them (MAML's inner step).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import functions as F
from ..ndarray import NdArray
from . import modes
from .gradient import grad
from .variable import Variable


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False) -> tuple:
    """``(func(inputs), v^T J)``: the vector-Jacobian product (one reverse pass); ``v``
    defaults to ones for an output of any shape (``grad``'s rule)."""
    xs, tup = _inputs(inputs, create_graph)
    with modes.enable_grad():
        out = func(*xs)
        outs, otup = _outputs(out)
        gs = grad(outs, xs, grad_outputs=_seeds(v, otup), create_graph=create_graph,
                  allow_unused=True)
    return _pack(outs, otup, create_graph), _pack(_zero_fill(gs, xs), tup, create_graph)


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False) -> tuple:
    """``(func(inputs), J v)``: the Jacobian-vector product by the double-vjp trick (no
    forward mode): ``u -> J^T u`` is linear in a dummy ``u``, and its vjp with ``v`` is
    ``J v`` (two reverse passes, the first recorded)."""
    xs, tup = _inputs(inputs, create_graph)
    vs = _like(v, xs, "v")
    with modes.enable_grad():
        out = func(*xs)
        outs, otup = _outputs(out)
        us = [Variable.from_numpy_array(np.zeros(o.shape, o.dtype), need_grad=True)
              for o in outs]
        gs = grad(outs, xs, grad_outputs=us, create_graph=True, allow_unused=True)
        pairs = [(g, w) for g, w in zip(gs, vs) if g is not None]
        jv = grad([g for g, _ in pairs], us, grad_outputs=[w for _, w in pairs],
                  create_graph=create_graph, allow_unused=True) if pairs else [None] * len(us)
    return _pack(outs, otup, create_graph), _pack(_zero_fill(jv, outs), otup, create_graph)


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False) -> tuple:
    """``(func(inputs), v^T H)`` for a one-element ``func``: double backward (the
    gradient recorded, then its vjp with ``v``)."""
    xs, tup = _inputs(inputs, create_graph)
    vs = _like(v, xs, "v")
    with modes.enable_grad():
        out = func(*xs)
        _one_element(out, "vhp")
        gs = grad(out, xs, create_graph=True, allow_unused=True)
        pairs = [(g, w) for g, w in zip(gs, vs) if g is not None]
        hv = grad([g for g, _ in pairs], xs, grad_outputs=[w for _, w in pairs],
                  create_graph=create_graph, allow_unused=True) if pairs else [None] * len(xs)
    return _pack([out], False, create_graph), _pack(_zero_fill(hv, xs), tup, create_graph)


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False) -> tuple:
    """``(func(inputs), H v)`` for a one-element ``func``: the Hessian of a twice
    differentiable function is symmetric, so ``H v = (v^T H)^T`` is ``vhp``'s double
    backward (torch's ``hvp`` takes a double-vjp detour to the same numbers)."""
    return vhp(func, inputs, v, create_graph)


def jacobian(func: Callable, inputs: Any, create_graph: bool = False,
             vectorize: bool = False) -> Any:
    """The Jacobian, ``J[i][j]`` of shape ``outputs[i].shape + inputs[j].shape`` (nested
    as torch: a tuple level for tuple outputs, one for tuple inputs): one reverse pass
    per output element over a kept graph. ``vectorize`` is accepted for torch's
    signature; nnarray has no batching transform, so it computes the same rows."""
    del vectorize
    xs, tup = _inputs(inputs, create_graph)
    with modes.enable_grad():
        out = func(*xs)
        outs, otup = _outputs(out)
        rows = [_jacobian_of(o, xs, create_graph) for o in outs]
    res = [_pack(r, tup, create_graph) for r in rows]
    return tuple(res) if otup else res[0]


def hessian(func: Callable, inputs: Any, create_graph: bool = False,
            vectorize: bool = False) -> Any:
    """The Hessian of a one-element ``func``: ``H[i][j]`` of shape
    ``inputs[i].shape + inputs[j].shape`` (a single array for a single input), the
    Jacobian of its recorded gradient (see ``jacobian`` for ``vectorize``)."""
    del vectorize
    xs, tup = _inputs(inputs, create_graph)
    with modes.enable_grad():
        out = func(*xs)
        _one_element(out, "hessian")
        gs = _zero_fill(grad(out, xs, create_graph=True, allow_unused=True), xs)
        rows = [_jacobian_of(g, xs, create_graph) for g in gs]
    res = [_pack(r, tup, create_graph) for r in rows]
    return tuple(res) if tup else res[0]


def _jacobian_of(o: Variable, xs: list, create_graph: bool) -> list:
    """d o / d x for each ``x``: ``o.shape + x.shape``, row by row (one-hot seeds)."""
    n = int(np.prod(o.shape))
    per: list[list] = [[] for _ in xs]
    for k in range(n):
        e = np.zeros(n, o.dtype)
        e[k] = 1
        gs = grad(o, xs, grad_outputs=e.reshape(o.shape), retain_graph=True,
                  create_graph=create_graph, allow_unused=True) \
            if o._parent is not None else [None] * len(xs)
        for j, g in enumerate(gs):
            per[j].append(g)
    res = []
    for x, gl in zip(xs, per):
        if all(g is None for g in gl):
            res.append(Variable.from_numpy_array(np.zeros(o.shape + x.shape, x.dtype)))
            continue
        gl = [g if g is not None else Variable.from_numpy_array(np.zeros(x.shape, x.dtype))
              for g in gl]
        res.append(F.reshape(F.stack(gl, axis=0), o.shape + x.shape))
    return res


def _inputs(inputs: Any, create_graph: bool) -> tuple[list, bool]:
    tup = isinstance(inputs, (tuple, list))
    xs = []
    for k, x in enumerate(inputs if tup else [inputs]):
        if isinstance(x, Variable):
            xs.append(x if create_graph and x.need_grad else x.unlinked(need_grad=True))
        elif isinstance(x, NdArray):
            xs.append(Variable.from_ndarray(x, need_grad=True))
        elif hasattr(x, "shape") and hasattr(x, "dtype"):
            xs.append(Variable.from_numpy_array(x, need_grad=True))
        else:
            raise TypeError(f"inputs[{k}] must be a Variable, NdArray or numpy array, got "
                            f"{type(x).__name__}")
    return xs, tup


def _outputs(out: Any) -> tuple[list, bool]:
    tup = isinstance(out, (tuple, list))
    outs = list(out) if tup else [out]
    for k, o in enumerate(outs):
        if not isinstance(o, Variable):
            raise TypeError(f"the function's output {k} must be a Variable, got "
                            f"{type(o).__name__}")
    return outs, tup


def _one_element(out: Any, what: str) -> None:
    if not isinstance(out, Variable) or int(np.prod(out.shape)) != 1:
        from ..errors import ShapeError
        raise ShapeError(f"{what}: the function must return a one-element Variable, got "
                         f"{getattr(out, 'shape', type(out).__name__)}")


def _seeds(v: Any, tup: bool) -> Any:
    if v is None:
        return None
    return [_value(w) for w in v] if tup else _value(v)


def _value(w: Any) -> Any:
    return w if isinstance(w, (Variable, NdArray)) or np.isscalar(w) else np.asarray(w)


def _like(v: Any, xs: list, what: str) -> list:
    """``v`` as one Variable per input (``ShapeError`` on a mismatch; ``None``: ones,
    allowed for one-element inputs as torch)."""
    from ..errors import ShapeError
    vs = list(v) if isinstance(v, (tuple, list)) else [v]
    if len(vs) != len(xs):
        raise ShapeError(f"{what}: {len(vs)} values for {len(xs)} inputs")
    out = []
    for x, w in zip(xs, vs):
        if w is None:
            if int(np.prod(x.shape)) != 1:
                raise ShapeError(f"{what}: required for an input of shape {x.shape}")
            w = np.ones(x.shape, x.dtype)
        if isinstance(w, Variable):
            wv = w
        elif isinstance(w, NdArray):
            wv = Variable.from_ndarray(w)
        else:
            wv = Variable.from_numpy_array(np.asarray(w, x.dtype))
        if wv.shape != x.shape:
            raise ShapeError(f"{what}: shape {wv.shape} for an input of shape {x.shape}")
        out.append(wv)
    return out


def _zero_fill(gs: list, likes: list) -> list:
    return [g if g is not None else Variable.from_numpy_array(np.zeros(x.shape, x.dtype))
            for g, x in zip(gs, likes)]


def _pack(vs: list, tup: bool, create_graph: bool) -> Any:
    if not create_graph:
        vs = [v if v._parent is None and not v.need_grad else v.unlinked(need_grad=False)
              for v in vs]
    return tuple(vs) if tup else vs[0]
