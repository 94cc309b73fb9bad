"""The one dispatch function (``registry.dispatch``) and the one meta cache
(``Op.out_metas``): equal contexts and equal metas hit, new shapes and attrs miss."""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, registry
from nnarray.grad import Graph, Variable
from nnarray.ops.op import Op, meta_key
from nnarray.ops.update import SGD_UPDATE, sgd_update


def _nd(a: np.ndarray) -> nna.NdArray:
    return nna.NdArray.from_numpy_array(a)


def _count(monkeypatch, obj, name: str) -> list:
    """Calls of ``obj.name`` from now on (each call appends its arguments)."""
    calls: list = []
    fn = getattr(obj, name)
    monkeypatch.setattr(obj, name, lambda *args: calls.append(args) or fn(*args))
    return calls


def test_equal_new_context_and_equal_metas_hit(backend, monkeypatch):
    """A new ``context_scope`` per call (an equal Context) and new arrays of the same
    shapes and dtypes resolve no kernel and infer nothing again, on the fast path, the
    broadcasting path and a generic op alike."""
    an, bn, cn = (np.random.default_rng(i).random(s, dtype=np.float32)
                  for i, s in enumerate(((2, 3), (2, 3), (3,))))
    mask = an > 0.5
    run = [lambda: F.add(_nd(an), _nd(bn)), lambda: F.add(_nd(an), _nd(cn)),
           lambda: F.exp(_nd(an)), lambda: F.where(_nd(mask), _nd(an), 0.0)]
    want = [an + bn, an + cn, np.exp(an), np.where(mask, an, 0.0)]
    for fn in run:  # first calls: resolved and inferred
        with nna.context_scope(backend):
            fn()
    resolved = _count(monkeypatch, registry, "_resolve")
    inferred = [_count(monkeypatch, op, "infer") for op in (F.add.op, F.exp.op, F.where)]
    for _ in range(3):
        for fn, w in zip(run, want):
            with nna.context_scope(backend):
                np.testing.assert_allclose(fn().numpy(), w, rtol=1e-5)
    assert resolved == [] and inferred == [[], [], []]
    new = (_nd(an[:1]), _nd(cn))
    F.add.op.metas.pop(meta_key(new, {}), None)  # metas are per op, not per backend
    with nna.context_scope(backend):
        F.add(*new)  # new shapes: inferred once
        F.add(_nd(an[1:]), _nd(cn))
    assert len(inferred[0]) == 1 and resolved == []


def _repeat_infer(inputs, attrs):
    (x,) = inputs
    return (((x.shape[0] * attrs["n"],) + x.shape[1:], x.dtype),)


def test_inference_depending_on_attrs_is_keyed_by_them(monkeypatch):
    """A pure op whose metas depend on its attrs gets its metas per attrs value, in the
    cache and in the graph nodes it records; unhashable attrs and impure ops infer on
    every call."""
    op = Op("repeat_rows", _repeat_infer, pure=True)
    calls = _count(monkeypatch, op, "infer")
    x = _nd(np.ones((2, 3), np.float32))
    assert op.out_metas((x,), {"n": 2}) == (((4, 3), np.dtype(np.float32)),)
    assert op.out_metas((x,), {"n": 3}) == (((6, 3), np.dtype(np.float32)),)
    assert op.out_metas((_nd(np.zeros((2, 3), np.float32)),), {"n": 2})[0][0] == (4, 3)
    assert len(calls) == 2
    v = Variable((5, 3))  # static mode: recorded with the cached metas
    assert op(v, n=2).shape == (10, 3) and op(v, n=4).shape == (20, 3)
    assert op(v, n=2).shape == (10, 3) and len(calls) == 4
    assert meta_key((x,), {"n": [2]}) is None  # unhashable attrs: not cached
    impure = Op("repeat_rows", _repeat_infer)
    icalls = _count(monkeypatch, impure, "infer")
    for n in (2, 2):
        assert impure.out_metas((x,), {"n": n})[0][0] == (4, 3)
    assert len(icalls) == 2 and impure.metas == {}


def test_rebound_graph_gets_new_metas_for_new_shapes(backend, monkeypatch):
    """Binding a graph to new shapes infers each op once for them (the new shapes'
    metas), binding the same shapes again infers nothing."""
    x, b = Variable((2, 3), name="x"), Variable((3,), name="b")
    g = Graph(F.exp(x) + b)
    calls = _count(monkeypatch, F.add.op, "infer")
    bn = np.arange(3, dtype=np.float32)
    for rows in (5, 7):  # metas are per op, not per backend: unseen here
        F.add.op.metas.pop(meta_key((Variable((rows, 3)), b), {}), None)
    for rows, new in ((5, 1), (5, 0), (7, 1)):
        xn = np.random.default_rng(rows).random((rows, 3), dtype=np.float32)
        before = len(calls)
        with grad.fusion_enabled(False):  # a fused kernel types its instructions too
            (out,) = g.bind(backend, {"x": _nd(xn), "b": _nd(bn)}).forward()
        assert out.shape == (rows, 3) and len(calls) - before == new
        np.testing.assert_allclose(out.numpy(), np.exp(xn) + bn, rtol=1e-5)


def test_pow_infers_every_call_with_a_scalar_exponent():
    """pow's inference reads a Python exponent's value: an integer graph value to a
    negative power raises while the graph is built, after a positive power built."""
    v = Variable((3,), dtype=np.int32)
    assert (v ** 2).shape == (3,)
    with pytest.raises(nna.InvalidValueError, match="negative integer powers"):
        v ** -1
    assert not F.pow.op.pure and F.add.op.pure


def test_matmul_metas_are_cached_by_value_with_its_transpose_flags(backend):
    """matmul is ``pure``: an equal call reuses its metas, each transpose flag is its own
    entry, and a bad pair still raises after good ones were cached."""
    from nnarray.ops.linalg import matmul
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    with nna.context_scope(backend):
        x, w, wt = _nd(a), _nd(b), _nd(np.ascontiguousarray(b.T))
        assert matmul.pure
        matmul.metas.clear()
        np.testing.assert_allclose(F.matmul(x, w).numpy(), a @ b)
        np.testing.assert_allclose(F.matmul(x, wt, transpose_b=True).numpy(), a @ b)
        np.testing.assert_allclose(F.matmul(x, w).numpy(), a @ b)
        assert len(matmul.metas) == 2
        with pytest.raises(nna.ShapeError, match="inner dimensions"):
            F.matmul(x, wt)


def test_a_normalizing_op_caches_its_metas_and_normalized_attrs():
    """sum, transpose and broadcast_to normalize their attrs in ``infer``: a cache hit
    writes the same normalized attrs (what the kernels and saved graphs read), and a bad
    axis still raises after good calls were cached."""
    from nnarray.ops.reduction import sum_op
    from nnarray.ops.shape import broadcast_to_op, transpose_op
    assert all(op.pure and op.norms is not None for op in (sum_op, broadcast_to_op, transpose_op))
    sum_op.metas.clear()
    sum_op.norms.clear()
    v = Variable((2, 3, 4), dtype=np.float32)
    nodes = [F.sum(v, axis=[-1, 0]).parent for _ in range(2)]  # a miss, then a hit
    assert len(sum_op.metas) == 0  # a list axis is not hashable: inferred each time
    nodes += [F.sum(v, axis=(-1, 0)).parent for _ in range(2)]
    assert len(sum_op.metas) == 1
    for n in nodes:
        assert n.attrs == {"axis": (0, 2), "keepdims": False} and n.out_metas[0][0] == (3,)
    with pytest.raises(nna.ShapeError, match="axis"):
        F.sum(v, axis=(3,))
    for _ in range(2):
        t = F.transpose(v, (2, -3, 1)).parent
        assert t.attrs["axes"] == (2, 0, 1) and t.out_metas[0][0] == (4, 2, 3)
        b = F.broadcast_to(Variable((3, 1)), [2, 3, 5]).parent
        assert b.attrs["shape"] == (2, 3, 5)
    x = _nd(np.arange(24.0, dtype=np.float32).reshape(2, 3, 4))
    for _ in range(2):
        np.testing.assert_allclose(F.sum(x, axis=(-1, 0)).numpy(),
                                   np.arange(24.0).reshape(2, 3, 4).sum(axis=(2, 0)))


def test_setitem_and_sgd_update_dispatch_through_the_one_function(backend):
    """``x[key] = v`` and ``sgd_update`` run the Kernel ``registry.dispatch`` memoizes."""
    with nna.context_scope(backend) as ctx:
        x = _nd(np.zeros((2, 3), np.float32))
        x[0] = 1.0
        w, g = _nd(np.ones(3, np.float32)), _nd(np.full(3, 2.0, np.float32))
        sgd_update([w], [g], 0.5)
    np.testing.assert_array_equal(x.numpy(), [[1, 1, 1], [0, 0, 0]])
    np.testing.assert_array_equal(w.numpy(), [0, 0, 0])
    for entry in (registry.SETITEM, SGD_UPDATE):
        c, k = entry.last[0]
        assert c is ctx and k.op == entry.name and k is registry.dispatch(entry, ctx)


@pytest.mark.parametrize("shapes", [((4, 3), (3,)), ((3,), (4, 3)), ((4, 1), (1, 3))])
def test_broadcast_binary_fast_path(backend, monkeypatch, shapes):
    """``F``'s binary functions serve broadcast NdArrays from the op's meta cache: no
    inference and no ``Op`` call after the first, ``Kernel.fast`` where the first operand
    has the result's shape, ``Kernel.run`` otherwise; values and dtypes as numpy's."""
    rng = np.random.default_rng(0)
    an = rng.random(shapes[0], dtype=np.float32)
    bn = rng.integers(-5, 5, shapes[1]).astype(np.int32)
    with nna.context_scope(backend):
        F.sub(_nd(an), _nd(bn))  # first call: inferred
        inferred = _count(monkeypatch, F.sub.op, "infer")
        calls: list = []
        cls = type(F.sub.op)
        call = cls.__call__
        monkeypatch.setattr(cls, "__call__", lambda *a, **k: calls.append(a) or call(*a, **k))
        k = registry.dispatch(F.sub.op, nna.get_current_context())
        runs = [0, 0]
        fast, run = k.fast, k.run  # bound to k

        def counted(i, fn):
            def f(*args):
                runs[i] += 1
                return fn(*args)
            return f
        monkeypatch.setattr(k, "fast", counted(0, fast))
        unbound = type(k).run
        monkeypatch.setattr(type(k), "run", lambda self, *args: counted(1, run)(*args)
                            if self is k else unbound(self, *args))
        for _ in range(2):
            got = F.sub(_nd(an), _nd(bn))
            want = an - bn
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    assert inferred == [] and calls == []
    on_a = np.broadcast_shapes(*shapes) == shapes[0]
    assert runs == ([2, 0] if on_a else [0, 2])
