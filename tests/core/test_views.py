"""Views (nnarray.views): basic indexing, reshape and transpose share the indexed array's
storage on every backend; writes through either side are seen by the other, transfers
and version counters are the root's. Checked against numpy doing the same."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import ids

import nnarray as nna
import nnarray.functions as F
from nnarray.errors import GraphError, TransferError
from nnarray.grad import Variable

pytestmark = pytest.mark.usefixtures("no_fallback")

REF = np.arange(24, dtype=np.float32).reshape(2, 3, 4)

KEYS = [0, -1, (1, 2), slice(1, None), (slice(None), 1), (Ellipsis, 2), (None, 0),
        (slice(None, None, -1), slice(0, 4, 2)), (1, slice(None), slice(3, 0, -2)), (),
        Ellipsis, (0, 0, 0), (0, 1, slice(1, 3)), (slice(None), None, 2, -1)]


def on(backend: str, x: np.ndarray = REF) -> nna.NdArray:
    """A root array holding ``x``, current on ``backend`` only."""
    return nna.NdArray.from_numpy_array(x).to_device(backend)


def same(a: nna.NdArray, want: np.ndarray) -> None:
    assert a.shape == want.shape
    np.testing.assert_array_equal(a.numpy(), want)


@pytest.mark.parametrize("key", KEYS, ids=ids)
def test_basic_index_is_a_view_both_ways(backend, key):
    a, r = on(backend), REF.copy()
    v = a[key]
    assert v.base is a and v.device == a.device
    same(v, r[key])
    v += 1  # through the view: seen in the base
    r[key] += 1
    same(a, r)
    a *= 2  # through the base: seen in the view
    r *= 2
    same(v, r[key])
    v[...] = -3  # setitem through the view
    r[key] = -3
    same(a, r)


def test_views_of_views_compose(backend):
    a, r = on(backend), REF.copy()
    w = a[1][:, ::-2][1:]
    rw = r[1][:, ::-2][1:]
    assert w.base is a
    same(w, rw)
    w[0, 1] = 100.0
    rw[0, 1] = 100.0
    same(a, r)
    w.fill(7)
    rw[...] = 7
    same(a, r)
    w.zero()
    rw[...] = 0
    same(a, r)
    w.copy_from(on(backend, np.float32([[5, 6], [7, 8]])))
    rw[...] = [[5, 6], [7, 8]]
    same(a, r)


def test_host_handles_of_views_write_through(backend):
    a, r = on(backend), REF.copy()
    v = a[:, 1]
    v.data = np.float32([[1, 2, 3, 4], [5, 6, 7, 8]])
    r[:, 1] = [[1, 2, 3, 4], [5, 6, 7, 8]]
    same(a, r)
    h = a[0, ::2].data  # a writable numpy view of the root's host copy
    h[...] = -1
    r[0, ::2] = -1
    same(a, r)


CASES = [  # (description, nnarray call, numpy call)
    ("reshape", lambda x: x.reshape(4, 6), lambda x: x.reshape(4, 6)),
    ("reshape -1", lambda x: x.reshape(-1), lambda x: x.reshape(-1)),
    ("T", lambda x: x.T, lambda x: x.T),
    ("mT", lambda x: x.mT, lambda x: np.swapaxes(x, -1, -2)),
    ("transpose", lambda x: x.transpose(1, 0, 2), lambda x: x.transpose(1, 0, 2)),
    ("permute_dims", lambda x: nna.permute_dims(x, (2, 0, 1)), lambda x: x.transpose(2, 0, 1)),
    ("xp.reshape", lambda x: nna.reshape(x, (6, 4)), lambda x: x.reshape(6, 4)),
    ("expand_dims", lambda x: nna.expand_dims(x, axis=1), lambda x: x[:, None]),
    ("squeeze", lambda x: nna.squeeze(x[:1], axis=0), lambda x: x[:1].squeeze(0)),
    ("matrix_transpose", lambda x: nna.matrix_transpose(x), lambda x: np.swapaxes(x, -1, -2)),
    ("moveaxis", lambda x: nna.moveaxis(x, 0, -1), lambda x: np.moveaxis(x, 0, -1)),
    ("split axis of a slice", lambda x: x[:, 1].reshape(2, 2, 2),
     lambda x: x[:, 1].reshape(2, 2, 2)),
    ("transposed then flat", lambda x: x.T.reshape(-1), lambda x: x.T.reshape(-1)),
    ("strided then flat", lambda x: x[:, ::2].reshape(-1), lambda x: x[:, ::2].reshape(-1)),
]


@pytest.mark.parametrize("name,f,g", CASES, ids=[c[0] for c in CASES])
def test_reshape_and_transpose_are_views_where_numpy_s_are(backend, name, f, g):
    a, r = on(backend), REF.copy()
    v, rv = f(a), g(r)
    same(v, rv)
    is_view = np.shares_memory(rv, r)
    assert (nna.NdArray.base.fget(v) is not None) == is_view, name
    v += 1
    rv += 1  # numpy's copy keeps the base as it was, as ours does
    same(a, r)


def test_reshape_copy_false_raises_where_a_copy_is_needed(backend):
    a = on(backend)
    with pytest.raises(ValueError, match="without copying"):
        nna.reshape(a.T, (-1,), copy=False)
    c = nna.reshape(a, (24,), copy=True)
    assert c.base is None
    assert nna.reshape(a, (24,), copy=False).base is a


def test_functions_copy():
    """The F functions are ops (graph values record them): they always copy."""
    a = on("numpy")
    for o in (F.reshape(a, (4, 6)), F.transpose(a), F.getitem(a, (0,))):
        assert o.base is None


def _views(a):
    return {"offset row": a[1, 1:], "strided": a[:, ::2, 1::2], "transposed": a[1].T,
            "reversed": a[::-1, :, ::-1], "0-d": a[1, 2, 3]}


def test_kernels_read_views(backend):
    """Ops on views of every layout read the right elements (kernels get a C-contiguous
    alias or a gathered copy)."""
    a = on(backend)
    for name, v in _views(a).items():
        r = np.asarray(v.numpy())
        np.testing.assert_allclose(nna.exp(v * 0.1).numpy(), np.exp(r * np.float32(0.1)),
                                   rtol=1e-6, err_msg=name)
        np.testing.assert_array_equal(nna.sum(v).numpy(), r.sum(), err_msg=name)
        np.testing.assert_array_equal((v + v).numpy(), r + r, err_msg=name)
    t = a[1].T
    np.testing.assert_allclose((t @ a[0]).numpy(), REF[1].T @ REF[0], rtol=1e-6)
    np.testing.assert_array_equal(nna.astype(a[:, 1:, ::3], nna.int64).numpy(),
                                  REF[:, 1:, ::3].astype(np.int64))


def test_view_overlapping_its_base_in_an_in_place_op(backend):
    a, r = on(backend, REF[0].copy()), REF[0].copy()
    a[1:] += a[:-1]
    r[1:] += r[:-1].copy()  # the right-hand side is read before anything is written
    same(a, r)


def test_views_keep_the_device_and_transfer_nothing(backend):
    a = on(backend)
    nna.reset_transfer_stats()
    with nna.strict_transfers():
        v = a[1, :, 1:]
        w = v * 2
        v += w
        a.T[0] = 0
    assert v.device == w.device == a.device
    assert nna.transfer_stats()["count"] == 0


def test_transfers_and_staleness_are_the_root_s(backend):
    if backend == "numpy":
        pytest.skip("the host holds the only copy: nothing to transfer")
    a = on(backend)
    v = a[0, 1]
    nna.reset_transfer_stats()
    v.numpy()  # the root's host copy is synced: one transfer of the whole root
    s = nna.transfer_stats()
    assert (s["count"], s["bytes"]) == (1, a.nbytes)
    v.numpy(), a.numpy(), a[1].numpy()  # current now: nothing more
    assert nna.transfer_stats()["count"] == 1
    v += 1  # a write on the device makes the root's host copy stale
    assert v.current_devices == a.current_devices == [a.head_device]
    np.testing.assert_array_equal(a[0, 1].numpy(), REF[0, 1] + 1)
    assert nna.transfer_stats()["count"] == 2
    with pytest.raises(TransferError):
        with nna.strict_transfers():
            _implicit_host_op(a[0])


def _implicit_host_op(v):
    """An op inside a host scope on a view whose root is current on the device only."""
    v += 1  # on the device: the root's host copy becomes stale
    with nna.context_scope("numpy"):
        return v * 2  # needs the root on the host: an implicit transfer


def test_write_through_a_view_to_saved_data_raises(backend):
    x = Variable.from_ndarray(on(backend))
    w = Variable.from_ndarray(on(backend), need_grad=True)
    y = F.sum(F.mul(x, w))
    y.forward()
    y.backward()
    v = x.data[0]
    v[1, 1] = 5.0  # a view of the saved input
    with pytest.raises(GraphError, match="mul.*modified in place"):
        y.backward()
    y.forward()
    y.backward()


def test_write_to_the_root_of_saved_view_raises(backend):
    a = on(backend)
    x = Variable.from_ndarray(a[1])
    w = Variable.from_ndarray(on(backend, REF[0]), need_grad=True)
    y = F.sum(F.mul(x, w))
    y.forward()
    y.backward()
    a[1, 0, 0] = -1.0  # the root, not through the saved view
    with pytest.raises(GraphError, match="modified in place"):
        y.backward()
    np.testing.assert_array_equal(x.data.numpy()[0, 0], -1.0)


def test_version_is_shared():
    a = on("numpy")
    v, w = a[0], a.T
    n = a.version
    v[0, 0] = 1
    assert a.version == v.version == w.version == n + 1
    a[1] = 2
    assert v.version == w.version == n + 2


def test_bad_keys_raise_index_errors_naming_the_shape():
    a = on("numpy")
    for key in [5, (0, 3), (0, 0, 0, 0), (Ellipsis, Ellipsis), 1.5, "a"]:
        with pytest.raises(IndexError, match=r"shape \(2, 3, 4\)"):
            a[key]


def test_fused_updates_write_views(backend):
    """A fused in-place update (SGD) of parameters that are views (of every layout, not
    overlapping) writes their roots."""
    from nnarray.ops.update import sgd_update
    a, r = on(backend), REF.copy()
    keys = [(0, slice(1, None)), (1, slice(None), slice(None, None, 2))]
    ws = [a[k] for k in keys] + [a[1, :, 1::2].T]
    g = [on(backend, np.full(w.shape, 1.0, np.float32)) for w in ws]
    sgd_update(ws, g, 0.5)
    for k in keys + [(1, slice(None), slice(1, None, 2))]:
        r[k] -= 0.5
    same(a, r)


@pytest.mark.parametrize("case", ["shifted", "broadcast row", "reversed", "assign"])
def test_in_place_ops_read_inputs_before_writing(backend, case):
    """An in-place op whose input is another view of the target's root reads the input as
    it was before the op, even where a kernel would race on shared memory."""
    a, r = on(backend, REF[0].copy()), REF[0].copy()
    if case == "shifted":
        a[1:] += a[:-1]
        r[1:] += r[:-1].copy()
    elif case == "broadcast row":
        a += a[0]
        r += r[0].copy()
    elif case == "reversed":
        a[:, 1:] *= a[:, :-1][:, ::-1]
        r[:, 1:] *= r[:, :-1][:, ::-1].copy()
    else:
        a[1:].copy_from(a[:-1])
        r[1:] = r[:-1].copy()
    same(a, r)


def test_filling_a_whole_root_through_a_view_is_lazy(backend):
    a = on(backend)
    n = a.version
    a.reshape(-1).fill(3.0)
    assert a.lazy_fill == 3.0 and a.version == n + 1
    a[1:].zero()  # part of it: written where the root is
    want = np.full(REF.shape, 3.0, np.float32)
    want[1:] = 0
    same(a, want)


def test_kept_host_handle_of_a_view_never_loses_writes(backend):
    """A view's ``.data`` is a tracked handle of its root: writes through it after a
    device read still reach the next device read."""
    a, r = on(backend), REF.copy()
    h = a[0, 1].data
    for value in (7.0, 8.0):
        h[...] = value
        r[0, 1] = value
        with nna.context_scope(backend):
            same(a * 1, r)
