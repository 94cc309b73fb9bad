"""``Module.to(dtype)``: the module's floating Variables replaced by Variables of another
floating dtype, cast on the device that holds each (torch's ``half()``, ``bfloat16()``)."""

from __future__ import annotations

from typing import Any

from .. import functions as F
from .. import grad
from ..context import context_scope, get_current_context
from ..dtypes import is_floating, normalize
from ..errors import DTypeError


def cast_module(module: Any, dtype: Any) -> None:
    """Cast every floating Variable of ``module`` and its descendants to ``dtype``
    (validated first: a non-floating ``dtype`` raises ``DTypeError``, nothing changed)."""
    d = normalize(dtype, "Module.to")
    if not is_floating(d):
        raise DTypeError(f"Module.to: argument 'dtype' must be a floating dtype, got {d}")
    done: dict[int, Any] = {}  # a Variable held twice (tied weights) stays one
    for _, m in module.named_modules():
        for name, a in list(m._arrays.items()):
            if isinstance(a, grad.Variable) and is_floating(a.dtype) and a.dtype != d:
                new = done.get(id(a))
                if new is None:
                    new = done[id(a)] = _cast(a, d)
                setattr(m, name, new)


def _cast(v: Any, dtype: Any) -> Any:
    """A new leaf Variable holding ``v``'s values in ``dtype``, where ``v``'s are."""
    out = grad.Variable(v.shape, need_grad=v.need_grad, dtype=dtype)
    data = v.data
    with context_scope(data.head or get_current_context()):
        out.data = F.cast(data, dtype)
    return out
