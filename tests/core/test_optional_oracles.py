"""The README's test command installs the ``test`` extras, which hold no torch, tinygrad
or matplotlib (``.ci/run`` adds torch): a test module may use them only through
``pytest.importorskip`` where its check runs, never by a module-level import, which would
fail the whole module's collection on a fresh machine."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

OPTIONAL = {"torch", "tinygrad", "matplotlib", "jax"}
TESTS = Path(__file__).resolve().parents[1]


def _module_level_imports(path: Path) -> set[str]:
    """Top-level package names imported by ``path``'s module-level statements (also
    inside module-level ``if``/``try``, which run at import too)."""
    names: set[str] = set()
    body = list(ast.parse(path.read_text(), str(path)).body)
    while body:
        node = body.pop()
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
        elif isinstance(node, (ast.If, ast.Try)):
            body.extend(node.body + node.orelse + getattr(node, "finalbody", []))
    return names


@pytest.mark.parametrize("area", sorted(p.name for p in TESTS.iterdir() if p.is_dir()
                                        and not p.name.startswith(("_", "."))))
def test_no_module_imports_an_optional_oracle(area: str) -> None:
    bad = {str(p.relative_to(TESTS)): sorted(_module_level_imports(p) & OPTIONAL)
           for p in sorted((TESTS / area).rglob("*.py"))}
    assert not {k: v for k, v in bad.items() if v}, bad


def test_the_check_sees_a_module_level_import(tmp_path: Path) -> None:
    p = tmp_path / "m.py"
    p.write_text("import numpy\ntry:\n    import torch.nn\nexcept ImportError:\n    pass\n"
                 "def f():\n    import tinygrad\n")
    assert _module_level_imports(p) == {"numpy", "torch"}
