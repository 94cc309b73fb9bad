"""The op registry: kernels per backend, fallback chains and their accounting."""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import registry


def test_ops_and_kernels_listing():
    ops = registry.ops()
    for name in ("add", "matmul", "conv2d" if "conv2d" in ops else "im2col", "softmax"):
        assert name in ops
    assert registry.kernels("add")[0] == "numpy"
    assert "batch_normalization" in ops  # composite ops are listed too


def test_register_kernel_overrides_and_dispatches(monkeypatch):
    calls = []
    original = registry._kernels["relu"]["numpy"]
    monkeypatch.setitem(registry._kernels, "relu", dict(registry._kernels["relu"]))

    @nna.register_kernel("relu", backend="numpy")
    def relu(x, out=None):
        calls.append(x.shape)
        return original(x, out)

    y = F.relu(nna.array([-1.0, 2.0]))
    assert calls == [(2,)]
    np.testing.assert_array_equal(y.data, [0.0, 2.0])
    registry.invalidate()


def test_no_kernel_and_fallback_off_raises_naming_everything(monkeypatch):
    monkeypatch.setitem(registry._kernels, "tanh", {})
    registry.invalidate()
    x = nna.array([1.0])
    with nna.context_scope(nna.Context("numpy", fallback=())):
        with pytest.raises(nna.KernelNotFoundError, match=r"'tanh'.*tried \['numpy'\]"):
            F.tanh(x)
    registry.invalidate()


def _other_backends():
    return [n for n, _ in nna.backends.available() if n != "numpy"]


def _without_kernel(monkeypatch, op: str, backend: str) -> None:
    """``backend`` loses its kernel for ``op`` for this test (it falls back)."""
    nna.backends.ensure_loaded(backend)
    kernels = dict(registry._kernels[op])
    kernels.pop(backend, None)
    monkeypatch.setitem(registry._kernels, op, kernels)
    registry.invalidate()


@pytest.mark.parametrize("name", _other_backends() or
                         [pytest.param("opencl", marks=pytest.mark.skip("no second backend"))])
def test_fallback_moves_data_through_synced_storage(name, monkeypatch):
    nna.backends.ensure_loaded(name)
    _without_kernel(monkeypatch, "tanh", name)
    x = nna.array(np.linspace(-1, 1, 6, dtype=np.float32))
    with nna.context_scope(name):
        x.get_data("w")  # the only current copy now lives on the device
        x.fill(0.5)
        x.get_data("rw")
        nna.reset_transfer_stats()
        y = F.tanh(x)
        assert nna.fallback_stats() == {("tanh", name, "numpy"): 1}
        assert nna.transfer_stats()["count"] == 1  # x: device -> host
        assert y.head == "numpy:0"
        with nna.strict_transfers():
            x2 = nna.array(np.ones(3, np.float32))
            x2.get_data("rw", name)
            with pytest.raises(nna.TransferError, match="implicit transfer"):
                F.tanh(x2)
    np.testing.assert_allclose(y.data, np.tanh(np.full(6, 0.5, np.float32)), rtol=1e-6)
    registry.invalidate()


def test_lookup_returns_a_named_kernel():
    k = registry.lookup("add", nna.Context("numpy"))
    assert k.op == "add" and k.device.key == "numpy:0"
    assert k.fallback is None and not k.composite and k.plain
    assert registry.lookup("add", nna.Context("numpy")) is k  # cached per context
    comp = registry.lookup("batch_normalization", nna.Context("numpy"))
    assert comp.composite and not comp.plain
    assert "composite" in repr(comp)


_F32 = np.dtype(np.float32)
_SPECIALISED = [  # (op, input shapes, attrs, whether a specialisation is expected)
    ("matmul", [(6, 5), (5, 4)], {}, True),
    ("matmul", [(5, 6), (5, 4)], {"transpose_a": True}, True),
    ("matmul", [(6, 5), (4, 5)], {"transpose_b": True}, True),
    ("matmul", [(5, 6), (4, 5)], {"transpose_a": True, "transpose_b": True}, True),
    ("matmul", [(2, 6, 5), (5, 4)], {}, False),  # batched: the kernel
    ("matmul", [(4, 800), (800, 3)], {}, False),  # long inner dimension: the split trials
    ("sum", [(7, 5)], {"axis": (0,), "keepdims": False}, True),
    ("sum", [(7, 5)], {"axis": (1,), "keepdims": True}, True),
    ("sum", [(70, 3, 5)], {"axis": (1,), "keepdims": False}, False),  # folded
    ("sum", [(7, 5)], {"axis": (0, 1), "keepdims": False}, False),  # to a 0-d array
    ("sum", [()], {"axis": (), "keepdims": True}, False),  # of a 0-d array
    ("relu", [(64, 100)], {}, True),
    ("relu", [(3,)], {}, True),
    ("relu", [()], {}, False),  # 0-d: the kernel (a ufunc gives a scalar)
    ("relu", [(1024, 1024)], {}, False),  # 4 MiB: no constant zeros array of that size
]


@pytest.mark.parametrize("op, shapes, attrs, expected", _SPECIALISED)
def test_specialised_calls_match_their_kernel(op, shapes, attrs, expected):
    """What generated code calls on fixed metas (``Kernel.callee``) computes exactly what
    the kernel does, takes no attributes, and is refused where the kernel branches on
    more than the metas."""
    k = registry.lookup(op, nna.Context("numpy"))
    xs = [np.random.default_rng(i).standard_normal(s).astype(np.float32)
          for i, s in enumerate(shapes)]
    want = k.fn(*xs, **attrs)
    fn, with_attrs = k.callee([(x.shape, _F32) for x in xs], attrs, (want.shape, _F32))
    assert (fn is not k.fn) == expected and with_attrs == (not expected and bool(attrs))
    if not expected:
        return
    got = fn(*xs)
    assert type(got) is np.ndarray and got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [5, 8192])  # the kernel's scalar and zeros-array paths
def test_specialised_relu_keeps_signed_zeros_and_nan(n):
    k = registry.lookup("relu", nna.Context("numpy"))
    x = np.resize(np.array([-0.0, 0.0, np.nan, -1.5, 2.0], np.float32), n)
    fn, _ = k.callee([(x.shape, _F32)], {}, (x.shape, _F32))
    assert fn is not k.fn
    np.testing.assert_array_equal(fn(x).view(np.int32), k.fn(x).view(np.int32))


def test_small_elementwise_calls_take_the_ufunc():
    k = registry.lookup("add", nna.Context("numpy"))
    small = [((2, 3), _F32), ((2, 3), _F32)]
    assert k.callee(small, {}, ((2, 3), _F32)) == (np.add, False)
    big = [((1 << 20,), _F32), ((1 << 20,), _F32)]
    assert k.callee(big, {}, ((1 << 20,), _F32)) == (k.fn, False)
    assert k.callee(small[:1] + [None], {}, ((), _F32)) == (k.fn, False)  # 0-d: the kernel


@pytest.mark.parametrize("name", _other_backends() or
                         [pytest.param("opencl", marks=pytest.mark.skip("no second backend"))])
def test_graph_runs_count_every_fallback(name, monkeypatch):
    """Static graphs resolve kernels once, yet every run through a fallback is counted."""
    from nnarray import grad
    nna.backends.ensure_loaded(name)
    _without_kernel(monkeypatch, "tanh", name)
    x = grad.Variable.from_numpy_array(np.linspace(-1, 1, 6, dtype=np.float32))
    y = F.tanh(x) * 2.0
    with nna.context_scope(name):
        nna.reset_fallback_stats()
        y.forward()
        y.forward()
        assert nna.fallback_stats() == {("tanh", name, "numpy"): 2}
        k = registry.lookup("tanh", nna.Context.parse(name))
        assert k.fallback == ("tanh", name, "numpy") and not k.plain
    np.testing.assert_allclose(y.d, 2 * np.tanh(np.linspace(-1, 1, 6, dtype=np.float32)),
                               rtol=1e-6)
    registry.invalidate()




@pytest.mark.allow_fallback("tanh falls back on purpose: the guard itself is tested")
def test_fallback_guard_of_backend_tests(monkeypatch, request):
    """conftest's default check (run after every ``backend`` test) fails on a fallback
    unless the test is marked ``allow_fallback``."""
    import types

    from conftest import check_no_fallback, needs
    needs("opencl")
    _without_kernel(monkeypatch, "tanh", "opencl")
    with nna.context_scope("opencl"):
        F.tanh(nna.array(np.ones(3, np.float32)))
    unmarked = types.SimpleNamespace(get_closest_marker=lambda name: None)
    with pytest.raises(AssertionError, match=r"fell back.*\('tanh', 'opencl', 'numpy'\)"):
        check_no_fallback(unmarked)
    check_no_fallback(request.node)  # marked: allowed
    registry.invalidate()
