"""No import cycle inside a backend package, its ``__init__`` included (issue 41 item 3).

lint-imports' ``acyclic_siblings`` contract checks cycles among a package's modules but
not those that pass through the package's own ``__init__`` (a kernels module importing
its package for the device while the package imports the kernels): this test reads the
same import graph (grimp, import-linter's) and fails on any cycle, naming it."""

from __future__ import annotations

import pytest

grimp = pytest.importorskip("grimp")

#: The backends and the code they share.
ACYCLIC = ("numpy", "opencl", "cuda", "_xp")


def _cycle(graph, package: str) -> list[str] | None:
    """One import cycle among ``package`` and its modules, or ``None``."""
    mods = sorted(m for m in graph.modules if m == package or m.startswith(package + "."))
    edges = {m: [i for i in graph.find_modules_directly_imported_by(m) if i in mods]
             for m in mods}
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in edges[m]:
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state and (found := visit(n)):
                return found
        path.pop()
        state[m] = 2
        return None

    for m in mods:
        if m not in state and (found := visit(m)):
            return found
    return None


@pytest.mark.parametrize("name", ACYCLIC)
def test_no_import_cycle_inside_the_backend(name) -> None:
    graph = grimp.build_graph("nnarray", exclude_type_checking_imports=True)
    cycle = _cycle(graph, f"nnarray.backends.{name}")
    assert cycle is None, " -> ".join(cycle)
