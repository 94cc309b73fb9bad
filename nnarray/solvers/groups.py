"""Parameter groups, torch's ``param_groups``: the parameters a solver takes, in groups
that each have their own learning rate."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .. import grad


def is_group_list(params: Any) -> bool:
    """Whether ``params`` is torch's list of group dicts (``[{"params": ..., "lr": ...}]``)."""
    return isinstance(params, (list, tuple)) and bool(params) and \
        all(isinstance(g, Mapping) for g in params)


def named(params: Mapping[str, Any] | Iterable[Any]) -> dict[str, Any]:
    """``{name: Variable}`` of a mapping (its names) or a sequence (``"0"``, ``"1"``...)."""
    if isinstance(params, Mapping):
        items = dict(params)
    else:
        items = {str(i): p for i, p in enumerate(params)}
    for name, p in items.items():
        if not isinstance(p, grad.Variable):
            raise TypeError(f"set_parameters: {name!r} is a {type(p).__name__}, expected a "
                            "grad.Variable")
    return items


def split(solver: str, groups: list, default_lr: float) -> tuple[dict, list, list]:
    """torch's group dicts as ``(params, param_groups, names)``: every parameter named
    ``"<group>.<name>"`` where there are several groups; each group's ``lr`` (default:
    the solver's). Only ``params`` and ``lr`` may be given per group."""
    params: dict[str, Any] = {}
    out, names = [], []
    seen: set[int] = set()
    for i, g in enumerate(groups):
        extra = sorted(set(g) - {"params", "lr"})
        if "params" not in g or extra:
            raise ValueError(f"{solver}: parameter group {i} must have 'params' and may have "
                             f"'lr' only (got {sorted(g)}); other hyperparameters are the "
                             "solver's, shared by every group")
        lr = float(g.get("lr", default_lr))
        if lr < 0:
            raise ValueError(f"{solver}: parameter group {i} has lr {lr} < 0")
        items = named(g["params"])
        group_names = []
        for k, p in items.items():
            if id(p) in seen:
                raise ValueError(f"{solver}: parameter {k!r} of group {i} appears in more "
                                 "than one parameter group (as torch, refused)")
            seen.add(id(p))
            name = f"{i}.{k}" if len(groups) > 1 else k
            params[name] = p
            group_names.append(name)
        out.append({"params": list(items.values()), "lr": lr})
        names.append(group_names)
    return params, out, names
