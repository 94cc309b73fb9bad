"""``nnarray.late``: the one way a lower layer calls a higher one, and the layers it keeps."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
from helpers import CHILD_LIMIT

from nnarray import late

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def modules(monkeypatch):
    """Two throwaway modules: ``low`` declares slots, ``high`` provides itself."""
    low, high = types.ModuleType("_late_low"), types.ModuleType("_late_high")
    for m in (low, high):
        monkeypatch.setitem(sys.modules, m.__name__, m)
    monkeypatch.setattr(late, "_waiting", {})
    monkeypatch.setattr(late, "_provided", {})
    return low, high


def test_provide_binds_every_declared_slot(modules):
    low, high = modules
    high.value = 42
    low.H = late.bind("_late_low", "H", "_late_high")
    low.O = late.bind("_late_low", "O", "_late_high", optional=True)
    assert isinstance(low.H, late.Unbound) and low.O is None
    with pytest.raises(RuntimeError, match=r"_late_high\.value: _late_high is not imported"):
        low.H.value
    copied = low.H  # ``from low import H`` before the provider came
    late.provide("_late_high")
    assert low.H is high and low.O is high and low.H.value == 42
    assert copied.value == 42  # a stale copy forwards (slowly; the test below finds them)
    assert late.bind("_late_low", "later", "_late_high") is high  # declared after: at once


def test_no_module_holds_an_unbound_slot():
    """A slot copied from another module (``from .backward import F``) before its provider
    bound it would stay a placeholder: after importing every package, none is left."""
    for name in ("nnarray", "nnarray.grad", "nnarray.nn", "nnarray.solvers",
                 "nnarray.training", "nnarray.data"):
        importlib.import_module(name)
    left = [f"{m}.{k}" for m, mod in list(sys.modules.items())
            if m == "nnarray" or m.startswith("nnarray.")
            for k, v in list(vars(mod).items()) if isinstance(v, late.Unbound)]
    assert left == []


def test_the_import_contracts_hold():
    """``lint-imports`` (CI runs it too): the layers of docs/architecture.md."""
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (pip install -e .[test])")
    r = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True, timeout=CHILD_LIMIT)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout


#: Slots that route around the layers still, owned by other work (none left:
#: ``ops/logsumexp.py`` now imports the ops below it, as ``ops/fft.py`` does).
_AROUND: set[tuple[str, str]] = set()


def test_every_slot_breaks_a_true_cycle():
    """A slot is for a call up the layers that a plain import would make a cycle: its
    provider imports (directly or not) the module declaring it. One whose provider does
    not only routes around the layer contract: the code belongs above its provider, or
    imports what it needs at its own layer (``ops/fft.py``, ``ops/decomp.py`` do)."""
    grimp = pytest.importorskip("grimp")
    for name in ("nnarray", "nnarray.grad", "nnarray.nn", "nnarray.solvers",
                 "nnarray.training", "nnarray.data"):
        importlib.import_module(name)
    graph = grimp.build_graph("nnarray")
    around = {(m, p) for p, decls in late._waiting.items() for m, _ in decls
              if m.startswith("nnarray") and not graph.chain_exists(importer=p, imported=m)}
    assert around <= _AROUND, sorted(around - _AROUND)
