"""``Kernel.run``, the one runner of a kernel: new results, results adopted by existing
arrays (``into``), one target written through ``out=`` (in-place updates, overwrites,
views) and several targets updated in place (fused solver updates)."""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import registry
from nnarray.ops.elementwise import cast
from nnarray.ops.update import SGD_UPDATE

_F32 = np.dtype(np.float32)


def _nd(a: np.ndarray) -> nna.NdArray:
    return nna.NdArray.from_numpy_array(a)


def _kernel(op):
    return registry.dispatch(op, nna.get_current_context())


def _data(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random(shape, dtype=np.float32)


def test_new_results_and_results_adopted(backend):
    """By default a new NdArray of the inferred meta; ``into`` adopts the result."""
    a, b = _data(2, 3), _data(2, 3, seed=1)
    k = _kernel(F.add.op)
    meta = ((2, 3), _F32)
    y = k.run((_nd(a), _nd(b)), {}, (meta,))
    np.testing.assert_allclose(y.numpy(), a + b, rtol=1e-6)
    target = _nd(np.zeros((2, 3), np.float32))
    got = k.run((_nd(a), _nd(b)), {}, (meta,), [target])
    assert got is target
    np.testing.assert_allclose(target.numpy(), a + b, rtol=1e-6)


def test_out_updates_and_overwrites_a_target(backend):
    """``out=`` an NdArray: the kernel writes its storage; ``'rw'`` reads it first
    (``a += b``), ``'w'`` overwrites it (``assign``); each run is one launch."""
    a, b = _data(2, 3), _data(2, 3, seed=1)
    x = _nd(a.copy())
    k = _kernel(F.add.op)
    before = k.tally[0]
    assert k.run((x, _nd(b)), {}, out=x) is x
    np.testing.assert_allclose(x.numpy(), a + b, rtol=1e-6)
    dst = _nd(np.full((2, 3), 7.0, np.float32))
    c = _kernel(cast)
    assert c.run((_nd(a.astype(np.float64)),), {"dtype": _F32}, out=dst, mode="w") is dst
    np.testing.assert_allclose(dst.numpy(), a, rtol=1e-6)
    assert k.tally[0] == before + 1


def test_out_writes_a_view_where_its_root_is(backend):
    """A view target is written in its root's storage; the rest of the root keeps its
    values."""
    a, b = _data(4, 3), _data(2, 3, seed=1)
    root = _nd(a.copy())
    view = root[1:3]
    _kernel(F.mul.op).run((view, _nd(b)), {}, out=view)
    want = a.copy()
    want[1:3] *= b
    np.testing.assert_allclose(root.numpy(), want, rtol=1e-6)


def test_out_list_updates_every_target_in_place(backend):
    """``out=`` a list: the kernel updates every target from the inputs (views too)."""
    w0, w1, g0, g1 = (_data(3, 2, seed=i) for i in range(4))
    big = _nd(np.concatenate([w1, w1]))
    ws = [_nd(w0.copy()), big[3:]]
    assert _kernel(SGD_UPDATE).run([_nd(g0), _nd(g1)], {"lr": 0.5}, out=ws) is None
    np.testing.assert_allclose(ws[0].numpy(), w0 - 0.5 * g0, rtol=1e-6)
    np.testing.assert_allclose(big.numpy(), np.concatenate([w1, w1 - 0.5 * g1]),
                               rtol=1e-6)


def test_a_composite_kernel_refuses_a_target(backend):
    """A composite kernel (written with ``F``) has no storage to write: ``out=`` raises
    before anything runs, naming the op."""
    comp = next((k for k in (_kernel(registry.Entry(n)) for n in registry.ops())
                 if k.composite), None)
    if comp is None:
        pytest.skip(f"no composite kernel on {backend}")
    x = _nd(np.zeros(3, np.float32))
    with pytest.raises(TypeError, match=comp.op):
        comp.run((x,), {}, out=x)
