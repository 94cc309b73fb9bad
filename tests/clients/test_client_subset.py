"""``NNARRAY_CLIENT_EACH``'s choice (tests/clients/subset.py): every parameter value of
each test function once per device, the cross products dropped, named tests kept."""

from __future__ import annotations

from types import SimpleNamespace

from tests.clients.subset import each_value_once


def _item(function: str, device: str, *ids: str):
    spec = SimpleNamespace(_idlist=list(ids), id="-".join(ids))
    return SimpleNamespace(nodeid=f"m.py::{function}[{'-'.join(ids)}]", callspec=spec,
                           device=device)


def _run(items, keep=()):
    return [(i.nodeid, i.device) for i in each_value_once(
        items, lambda i: i.device, lambda i: i.nodeid, keep)]


def test_each_value_once_per_function_and_device():
    grid = [_item("t", d, a, b) for d in ("numpy", "opencl") for a in ("i8", "f4", "f8")
            for b in ("x", "y")]
    plain = SimpleNamespace(nodeid="m.py::u", callspec=None, device="numpy")
    other = _item("v", "numpy", "i8", "x")
    kept = _run([*grid, plain, other])
    per_device = [("m.py::t[i8-x]", "{d}"), ("m.py::t[i8-y]", "{d}"), ("m.py::t[f4-x]", "{d}"),
                  ("m.py::t[f8-x]", "{d}")]
    assert kept == [(n, d.format(d=dev)) for dev in ("numpy", "opencl")
                    for n, d in per_device] + [("m.py::u", "numpy"), ("m.py::v[i8-x]", "numpy")]


def test_each_value_once_keeps_named_tests():
    grid = [_item("t", "numpy", a, b) for a in ("i8", "f4") for b in ("x", "y")]
    assert ("m.py::t[f4-y]", "numpy") not in _run(grid)
    assert ("m.py::t[f4-y]", "numpy") in _run(grid, keep=["*t[[]f4-y]"])
