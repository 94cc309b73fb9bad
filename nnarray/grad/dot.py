"""Graphviz DOT text of a graph."""

from __future__ import annotations

from .executor import topological
from .variable import Variable


def to_dot(var: Variable, name: str = "nnarray") -> str:
    """DOT text: variables as boxes (shape, dtype, need_grad), functions as ellipses."""
    lines = [f"digraph {name} {{", "  rankdir=TB;"]
    ids: dict[int, str] = {}

    def vid(v: object) -> str:
        k = ids.get(id(v))
        if k is None:
            k = ids[id(v)] = f"v{len(ids)}"
            if isinstance(v, Variable):
                label = f"{v.shape} {v.dtype}" + (" need_grad" if v.need_grad else "")
                style = ", style=filled, fillcolor=lightblue" if v is var else ""
            else:
                label = f"const {getattr(v, 'shape', v)!s}"
                style = ", style=dashed"
            lines.append(f'  {k} [shape=box, label="{label}"{style}];')
        return k

    for i, n in enumerate(topological(var)):
        f = f"f{i}"
        lines.append(f'  {f} [shape=ellipse, label="{n.name}"];')
        for a in n.inputs:
            lines.append(f"  {vid(a)} -> {f};")
        for o in n.output_variables():
            lines.append(f"  {f} -> {vid(o)};")
    if var.parent is None:
        vid(var)
    lines.append("}")
    return "\n".join(lines) + "\n"
