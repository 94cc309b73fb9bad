"""Contexts: parsing, scopes (thread-local, nesting, exceptions), backend errors."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from helpers import CHILD_LIMIT

import nnarray as nna
from nnarray import Context


def test_parse_and_string_forms():
    assert Context.parse("cuda:1") == Context("cuda", 1)
    assert Context.parse("opencl").key == "opencl:0"
    assert str(Context("numpy")) == "numpy:0"
    assert Context("opencl", fallback=()).fallback == ()
    assert Context("opencl").fallback == ("numpy",)
    with pytest.raises(nna.BackendError, match="bad device id"):
        Context.parse("cuda:x")


def test_context_is_immutable_and_hashable():
    c = Context("numpy", 0)
    with pytest.raises(AttributeError):
        c.backend = "cuda"
    assert len({c, Context("numpy", 0), Context("numpy", 0, ())}) == 2


def test_registered_lists_every_backend_package():
    names = nna.backends.registered()
    assert names[0] == "numpy"
    assert set(names) >= {"numpy"}
    assert nna.backends.why_unavailable("numpy") is None
    assert any(n == "numpy" for n, _ in nna.backends.available())


def test_scope_nests_and_restores_on_exception():
    outer = nna.get_current_context()
    with nna.context_scope("numpy:0") as c1:
        assert nna.get_current_context() is c1
        with pytest.raises(RuntimeError):
            with nna.context_scope(Context("numpy", 0, fallback=())):
                assert nna.get_current_context().fallback == ()
                raise RuntimeError("boom")
        assert nna.get_current_context() is c1
    assert nna.get_current_context() == outer


def test_unknown_backend_lists_registered_and_leaves_stack_unchanged():
    before = nna.get_current_context()
    with pytest.raises(nna.BackendError, match=r"registered backends: \['numpy'"):
        with nna.context_scope("tpu"):
            pass
    assert nna.get_current_context() is before


def test_unavailable_backend_raises_with_reason():
    before = nna.get_current_context()
    missing = [n for n in nna.backends.registered() if nna.backends.why_unavailable(n)]
    for name in missing:
        with pytest.raises(nna.BackendUnavailableError, match="unavailable"):
            with nna.context_scope(name):
                pass
        assert nna.get_current_context() is before
    with pytest.raises(nna.BackendUnavailableError, match="no such device"):
        with nna.context_scope("numpy:3"):
            pass
    assert nna.get_current_context() is before


def test_set_default_context_validates(monkeypatch):
    from nnarray import context as c
    for name in ("_default", "_chosen", "follow_data"):  # restored after the test
        monkeypatch.setattr(c, name, getattr(c, name))
    with pytest.raises(nna.BackendError):
        nna.set_default_context("nope")
    nna.set_default_context("numpy")
    assert nna.get_current_context() == Context("numpy")
    assert not c.follow_data  # a chosen default decides where work runs (API.md §7)


def test_scopes_are_thread_local():
    """Two threads interleave scopes; each sees only its own."""
    names = [n for n, _ in nna.backends.available()]
    other = names[1] if len(names) > 1 else "numpy"
    seen: dict[str, list] = {"a": [], "b": []}
    step_a, step_b = threading.Event(), threading.Event()

    def a():
        with nna.context_scope(Context("numpy", 0, fallback=())):
            step_b.set()
            step_a.wait(CHILD_LIMIT)  # a hang guard: the other thread sets it at once
            seen["a"].append(nna.get_current_context())
        seen["a"].append(nna.get_current_context())

    def b():
        step_b.wait(CHILD_LIMIT)
        with nna.context_scope(other):
            step_a.set()
            seen["b"].append(nna.get_current_context())
        seen["b"].append(nna.get_current_context())

    ts = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(CHILD_LIMIT)
    assert seen["a"][0] == Context("numpy", 0, fallback=())
    assert seen["b"][0] == Context.parse(other)
    assert seen["a"][1] == seen["b"][1] == nna.get_current_context()


def test_device_synchronize_accepts_strings(backend):
    x = nna.array(np.arange(6, dtype=np.float32))
    y = x * 2  # queued on the backend (asynchronous on OpenCL and CUDA)
    for ctx in (None, backend, f"{backend}:0", nna.Context(backend)):
        assert nna.device_synchronize(ctx) is None
    assert y.head == f"{backend}:0"
    np.testing.assert_array_equal(y.get_data("r", "numpy"), np.arange(6) * 2)
    with pytest.raises(nna.BackendError, match="no-such-backend"):
        nna.device_synchronize("no-such-backend")
    with pytest.raises(nna.BackendUnavailableError, match="no such device"):
        nna.device_synchronize(f"{backend}:99")


def test_equal_specs_give_one_context():
    """Contexts are interned: caches that compare contexts by identity hit for a new but
    equal one; pickling and copying keep the identity."""
    import copy
    import pickle
    c = Context("numpy", 0, ("numpy",))
    assert Context.parse("numpy") is c is Context() is Context.parse("numpy:0")
    assert Context("numpy", 0, ()) is not c
    assert pickle.loads(pickle.dumps(c)) is c
    assert copy.deepcopy(c) is c and copy.copy(c) is c
    with nna.context_scope("numpy") as a, nna.context_scope(Context("numpy")) as b:
        assert a is b is c


@pytest.mark.parametrize("static", [True, False], ids=["static", "define-by-run"])
def test_scope_entered_per_step_compiles_nothing_new(backend, static, monkeypatch):
    """``with context_scope(...)`` around every training step reuses the programs compiled
    for the first step (counted by ``builtins.compile`` calls), and computes the same."""
    import builtins

    import nnarray.functions as F
    from nnarray import grad

    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((5, 3)).astype(np.float32)
    batches = [rng.standard_normal((4, 5)).astype(np.float32) for _ in range(6)]
    w = grad.Variable.from_numpy_array(w0.copy(), need_grad=True)
    x = grad.Variable((4, 5))
    loss = F.sum(F.relu(F.matmul(x, w))) if static else None
    compiled = []
    real = builtins.compile
    monkeypatch.setattr(builtins, "compile", lambda *a, **k: compiled.append(1) or real(*a, **k))
    want = w0.copy()
    for i, xb in enumerate(batches):
        if i == (2 if static else 3):  # the first steps compile (define-by-run: its
            compiled.clear()  # backward is traced on the 2nd step, generated on the 3rd)
        with nna.context_scope(backend):
            w.grad.zero()
            if static:
                x.d = xb
                loss.forward()
            else:
                with grad.auto_forward():
                    loss = F.sum(F.relu(F.matmul(grad.Variable.from_numpy_array(xb), w)))
            loss.backward()
            w.d = w.d - 0.1 * w.g
        want -= 0.1 * xb.T @ (xb @ want > 0).astype(np.float32)
    assert compiled == [], f"{len(compiled)} compilations in the later steps"
    np.testing.assert_allclose(w.d, want, rtol=1e-4, atol=1e-5)
