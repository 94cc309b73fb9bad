"""Gradient clipping by the global norm (torch's ``clip_grad_norm_``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .. import functions as F
from .. import grad
from ..context import context_scope, get_current_context


def clip_grad_norm(params: Mapping[str, Any] | Iterable[Any], max_norm: float) -> float:
    """Scale every gradient by ``min(1, max_norm / (total + 1e-6))``, where ``total`` is
    the L2 norm of all gradients together, and return ``total`` (before clipping).

    Computed on the gradients' device (all must be on one): the only transfer is the
    returned scalar."""
    ps = list(params.values() if isinstance(params, Mapping) else params)
    for i, p in enumerate(ps):
        if not isinstance(p, grad.Variable):
            raise TypeError(f"clip_grad_norm: parameter {i} is a {type(p).__name__}, "
                            "expected a grad.Variable")
    max_norm = float(max_norm)
    if not max_norm > 0:
        raise ValueError(f"clip_grad_norm: max_norm must be > 0, got {max_norm}")
    ps = [p for p in ps if p.need_grad]
    if not ps:
        return 0.0
    gs = [p.grad for p in ps]
    heads = {g.head or p.data.head for g, p in zip(gs, ps)} - {None}
    if len(heads) > 1:
        raise ValueError(f"clip_grad_norm: the gradients are on several devices {sorted(heads)}")
    with context_scope(heads.pop() if heads else get_current_context()):
        total = None
        for g in gs:
            s = F.sum(g * g)
            total = s if total is None else total + s
        norm = F.sqrt(total)
        coef = F.minimum(max_norm / (norm + 1e-6), 1.0)
        for g in gs:
            g *= F.cast(coef, g.dtype) if coef.dtype != g.dtype else coef
        return float(norm.get_data("r", "numpy"))
