"""Graphviz DOT text of a graph."""

from __future__ import annotations

from typing import Any

from .executor import topological_many
from .variable import Variable


def to_dot(target: Any, name: str = "nnarray", shapes: bool = False,
           fused: bool = False) -> str:
    """DOT text of the graph behind ``target`` (a Variable or a ``grad.Graph``):
    variables as boxes (name, shape, dtype, need_grad), functions as ellipses named
    after their nodes; ``shapes``: every edge labelled with the shape it carries;
    ``fused``: the nodes the forward schedule under the current context runs as one
    fused kernel drawn inside one box (``cluster_fused<k>``)."""
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

    order = topological_many(roots)
    group = _groups(order, roots) if fused else {}
    clusters: dict[int, list[str]] = {}
    for i, n in enumerate(order):
        f = f"f{i}"
        label = n.label if n.label == n.name else f"{n.label}\\n({n.name})"
        decl = f'  {f} [shape=ellipse, label="{_esc(label)}"];'
        if id(n) in group:
            clusters.setdefault(group[id(n)], []).append("  " + decl)
        else:
            lines.append(decl)
        for a in n.inputs:
            lines.append(f"  {vid(a)} -> {f}{edge(a)};")
        for o in n.output_variables():
            lines.append(f"  {f} -> {vid(o)}{edge(o)};")
    for v in roots:
        if v.parent is None:
            vid(v)
    for k, decls in clusters.items():
        lines += [f"  subgraph cluster_fused{k} {{",
                  f'    label="fused_elementwise {k}"; style=rounded; color=orange;',
                  *decls, "  }"]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _groups(order: list, roots: list) -> dict[int, int]:
    """``{id(node): k}``: the fused group of each node in the forward schedule of
    ``order`` under the current context (built afresh, not run)."""
    import weakref

    from .. import context
    from . import schedule
    root = weakref.ref(roots[0]) if roots else None
    s = schedule.forward(order, context.get_current_context(), True, None, root)
    out: dict[int, int] = {}
    k = 0
    for st in s.steps:
        members = getattr(st.node, "members", None)
        if members:
            out.update((id(m[0]), k) for m in members)
            k += 1
    return out


def _esc(s: str) -> str:
    return s.replace('"', '\\"')


def _quote_id(s: str) -> str:
    return s if s.isidentifier() else f'"{_esc(s)}"'
