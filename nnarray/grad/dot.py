"""Graphviz DOT text of a graph."""

from __future__ import annotations

from typing import Any

from .executor import topological_many
from .variable import Variable


def to_dot(target: Any, name: str = "nnarray", shapes: bool = False) -> str:
    """DOT text of the graph behind ``target`` (a Variable or a ``grad.Graph``):
    variables as boxes (name, shape, dtype, need_grad), functions as ellipses named
    after their nodes; ``shapes``: every edge labelled with the shape it carries."""
    from .graph import Graph
    if isinstance(target, Graph):
        roots = target.output_variables()
        arg_names = {id(v): n for n, v in target.argument_variables().items()}
    else:
        roots = [target]
        arg_names = {}
    lines = [f"digraph {_quote_id(name)} {{", "  rankdir=TB;"]
    ids: dict[int, str] = {}
    outs = {id(v) for v in roots}

    def vid(v: object) -> str:
        k = ids.get(id(v))
        if k is None:
            k = ids[id(v)] = f"v{len(ids)}"
            if isinstance(v, Variable):
                vname = arg_names.get(id(v)) or v.name
                label = (f"{vname}\\n" if vname else "") + f"{v.shape} {v.dtype}" + \
                    (" need_grad" if v.need_grad else "")
                style = ", style=filled, fillcolor=lightblue" if id(v) in outs else ""
            else:
                label = f"const {getattr(v, 'shape', v)!s}"
                style = ", style=dashed"
            lines.append(f'  {k} [shape=box, label="{_esc(label)}"{style}];')
        return k

    def edge(a: object) -> str:
        if not shapes:
            return ""
        s = getattr(a, "shape", None)
        return f' [label="{_esc(str(s))}"]' if s is not None else ""

    for i, n in enumerate(topological_many(roots)):
        f = f"f{i}"
        label = n.label if n.label == n.name else f"{n.label}\\n({n.name})"
        lines.append(f'  {f} [shape=ellipse, label="{_esc(label)}"];')
        for a in n.inputs:
            lines.append(f"  {vid(a)} -> {f}{edge(a)};")
        for o in n.output_variables():
            lines.append(f"  {f} -> {vid(o)}{edge(o)};")
    for v in roots:
        if v.parent is None:
            vid(v)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _esc(s: str) -> str:
    return s.replace('"', '\\"')


def _quote_id(s: str) -> str:
    return s if s.isidentifier() else f'"{_esc(s)}"'
