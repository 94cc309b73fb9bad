"""numpy's ufuncs and array functions on NdArrays run as nnarray functions on the array's
device and return NdArrays; anything else runs numpy on host views of the operands (zero-copy
for host arrays, one counted read for device arrays)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import nnarray as nna
from nnarray import grad

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32)

UFUNCS = {
    "exp": lambda m, a, b: m.exp(a), "add": lambda m, a, b: m.add(a, b),
    "subtract scalar": lambda m, a, b: m.subtract(2.0, a),
    "maximum": lambda m, a, b: m.maximum(a, b), "power": lambda m, a, b: m.power(m.abs(a), b),
    "arctan2": lambda m, a, b: m.arctan2(a, b), "rint": lambda m, a, b: m.rint(a * 3),
    "greater": lambda m, a, b: m.greater(a, b), "exp2": lambda m, a, b: m.exp2(a),
    "deg2rad": lambda m, a, b: m.deg2rad(a), "divmod": lambda m, a, b: m.divmod(a, 0.7)[1],
    "matmul": lambda m, a, b: m.matmul(a, b.T), "logical_not": lambda m, a, b: m.logical_not(a > 0),
    "isnan": lambda m, a, b: m.isnan(m.log(a)), "sqrt": lambda m, a, b: m.sqrt(m.abs(a)),
    "dtype=": lambda m, a, b: m.add(a, b, dtype=np.float64),
    "add.reduce": lambda m, a, b: m.add.reduce(a),
    "add.reduce axis": lambda m, a, b: m.add.reduce(a, axis=1, keepdims=True),
    "maximum.reduce": lambda m, a, b: m.maximum.reduce(a, axis=None),
    "add.accumulate": lambda m, a, b: m.add.accumulate(a, axis=1),
    "multiply.outer": lambda m, a, b: m.multiply.outer(a[0], b[1]),
    "ndarray + x": lambda m, a, b: np.ones(4, np.float32) + a,
    "x + ndarray": lambda m, a, b: a + np.ones(4, np.float32),
    "float32 * x": lambda m, a, b: np.float32(2) * a,
}

FUNCTIONS = {
    "concatenate": lambda m, a, b: m.concatenate([a, b], axis=1),
    "concatenate None": lambda m, a, b: m.concatenate([a, b], axis=None),
    "stack": lambda m, a, b: m.stack([a, b], 1), "vstack": lambda m, a, b: m.vstack([a[0], b[0]]),
    "hstack": lambda m, a, b: m.hstack([a, b]),
    "where": lambda m, a, b: m.where(a > 0, a, 0.0),
    "where 2": lambda m, a, b: m.where(a > b, a, b),
    "clip": lambda m, a, b: m.clip(a, -0.5, 0.5), "clip kw": lambda m, a, b: m.clip(a, min=-0.5),
    "sum": lambda m, a, b: m.sum(a, axis=0), "mean": lambda m, a, b: m.mean(a, 1, keepdims=True),
    "std": lambda m, a, b: m.std(a), "amax": lambda m, a, b: m.amax(a, axis=0),
    "argmax": lambda m, a, b: m.argmax(a, axis=1), "all": lambda m, a, b: m.all(a > -10),
    "reshape": lambda m, a, b: m.reshape(a, (4, 3)), "transpose": lambda m, a, b: m.transpose(a),
    "swapaxes": lambda m, a, b: m.swapaxes(a, 0, 1),
    "expand_dims": lambda m, a, b: m.expand_dims(a, (0, 2)),
    "squeeze": lambda m, a, b: m.squeeze(m.expand_dims(a, 0)), "ravel": lambda m, a, b: m.ravel(a),
    "sort": lambda m, a, b: m.sort(a), "sort None": lambda m, a, b: m.sort(a, axis=None),
    "argsort": lambda m, a, b: m.argsort(a, axis=0), "cumsum": lambda m, a, b: m.cumsum(a),
    "cumprod": lambda m, a, b: m.cumprod(a, axis=1), "dot": lambda m, a, b: m.dot(a, b.T),
    "tensordot": lambda m, a, b: m.tensordot(a, b, axes=([1], [1])),
    "outer": lambda m, a, b: m.outer(a[0], b[0]),
    "einsum": lambda m, a, b: m.einsum("ij,kj->ik", a, b),
    "zeros_like": lambda m, a, b: m.zeros_like(a), "full_like": lambda m, a, b: m.full_like(a, 3.0),
    "round": lambda m, a, b: m.round(a, 2), "isclose": lambda m, a, b: m.isclose(a, a + 1e-9),
    "take": lambda m, a, b: m.take(a, [0, 2]), "take axis": lambda m, a, b: m.take(a, [0, 2], 1),
    "nonzero": lambda m, a, b: m.nonzero(a > 0)[1],
    "moveaxis": lambda m, a, b: m.moveaxis(a, 0, -1), "flip": lambda m, a, b: m.flip(a, 1),
    "broadcast_to": lambda m, a, b: m.broadcast_to(a[0], (2, 4)),
    "roll": lambda m, a, b: m.roll(a, 1, axis=0), "tile": lambda m, a, b: m.tile(a, 2),
    "repeat": lambda m, a, b: m.repeat(a, 2, axis=1), "split": lambda m, a, b: m.split(a, 2, 1)[1],
    "tril": lambda m, a, b: m.tril(a, 1), "pad": lambda m, a, b: m.pad(a, 1),
    "diff": lambda m, a, b: m.diff(a, axis=0),
    "count_nonzero": lambda m, a, b: m.count_nonzero(a > 0, axis=1),
    "searchsorted": lambda m, a, b: m.searchsorted(m.sort(a[0]), b[0]),
    "take_along_axis": lambda m, a, b: m.take_along_axis(a, m.argsort(a, axis=1), axis=1),
    "copy": lambda m, a, b: m.copy(a), "linalg.norm": lambda m, a, b: m.linalg.norm(a),
    "linalg.norm axis": lambda m, a, b: m.linalg.norm(a, axis=1),
    "linalg.norm 1": lambda m, a, b: m.linalg.norm(a, 1),
}

DECOMPOSITIONS = {  # OpenCL has no LAPACK: these fall back to numpy, visibly (API.md)
    "linalg.inv": lambda m, a, b: m.linalg.inv(a[:, :3]),
    "linalg.solve": lambda m, a, b: m.linalg.solve(a[:, :3], b[:, 0]),
    "svd values": lambda m, a, b: m.linalg.svd(a, compute_uv=False),
}


def on(a, backend):
    return nna.asarray(np.asarray(a), device=backend)


def _check(name, fn, backend):
    x, y = on(A, backend), on(B, backend)
    want = fn(np, A, B)
    got = fn(np, x, y)
    assert isinstance(got, nna.NdArray), f"{name}: {type(got).__name__}"
    assert got.device == nna.Context.parse(backend), name
    assert (got.shape, got.dtype) == (want.shape, want.dtype), name
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("name", sorted(UFUNCS))
def test_ufuncs_run_as_nnarray_functions(backend, name):
    _check(name, UFUNCS[name], backend)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_array_functions_run_as_nnarray_functions(backend, name):
    _check(name, FUNCTIONS[name], backend)


@pytest.mark.allow_fallback("OpenCL runs the dense decompositions through numpy's LAPACK")
@pytest.mark.parametrize("name", sorted(DECOMPOSITIONS))
def test_linalg_functions_run_as_nnarray_functions(backend, name):
    _check(name, DECOMPOSITIONS[name], backend)


def test_boolean_and_metadata_functions(backend):
    x, y = on(A, backend), on(B, backend)
    assert np.allclose(x, A) is True and np.allclose(x, y) is False
    assert np.array_equal(x, x) is True and np.array_equal(x, x[:2]) is False
    assert np.shape(x) == (3, 4) and np.ndim(x) == 2 and np.size(x) == 12
    assert np.result_type(x, 1.0) == np.float32 and np.can_cast(x, np.float64)


def test_the_ufunc_path_stays_on_the_device_without_transfers(backend):
    x, y = on(A, backend), on(B, backend)
    nna.reset_transfer_stats()
    with nna.strict_transfers(implicit_reads=True):
        z = np.maximum(np.exp(x), np.add(x, y))
        s = np.sum(np.concatenate([z, np.where(x > 0, x, y)]), axis=0)
    assert nna.transfer_stats()["count"] == 0
    assert s.devices == [str(nna.Context.parse(backend))]
    ref = np.sum(np.concatenate([np.maximum(np.exp(A), A + B), np.where(A > 0, A, B)]), axis=0)
    np.testing.assert_allclose(s.numpy(), ref, rtol=1e-5)


def test_the_device_follows_the_data_outside_any_scope(backend):
    x = on(A, backend)
    out = {}
    t = threading.Thread(target=lambda: out.update(r=np.exp(x)))  # no context_scope there
    t.start()
    t.join()
    assert out["r"].devices == [str(nna.Context.parse(backend))]


def test_numpy_operands_are_uploaded_once_where_the_work_runs(backend):
    x = on(A, backend)
    nna.reset_transfer_stats()
    with nna.strict_transfers():  # the upload of host data is explicit, so allowed
        z = np.add(x, np.ones(4, np.float32))
        w = x * np.full(4, 2.0, np.float32)
    assert z.device == w.device == nna.Context.parse(backend)
    assert nna.transfer_stats()["count"] == 2 * (backend != "numpy")
    np.testing.assert_allclose(z.numpy(), A + 1)
    np.testing.assert_allclose(w.numpy(), A * 2)


def test_out_takes_nd_arrays_only(backend):
    x = on(A, backend)
    out = on(np.zeros_like(A), backend)
    assert np.exp(x, out=out) is out
    np.testing.assert_allclose(out.numpy(), np.exp(A), rtol=1e-6)
    host_out = np.zeros_like(A)  # numpy writes a numpy out= (on the host, as with torch)
    assert np.exp(x, out=host_out) is host_out
    np.testing.assert_allclose(host_out, np.exp(A), rtol=1e-6)
    acc = np.zeros(4, np.float32)
    acc += x[0]
    np.testing.assert_array_equal(acc, A[0])


@pytest.mark.parametrize("call", [
    lambda x: np.median(x), lambda x: np.gcd(x.astype(np.int64), 2),
    lambda x: np.add.reduceat(x, [0, 1]), lambda x: np.fft.fft(x),
    lambda x: np.exp(x, where=A > 0, out=np.ones((3, 4), np.float32)),
    lambda x: np.percentile(x, 50),
    lambda x: np.add.reduce(x, initial=1.0), lambda x: np.reshape(x, (4, 3), order="F")],
    ids=["median", "gcd", "reduceat", "fft", "where=", "percentile", "initial=", "order="])
def test_no_counterpart_runs_numpy_on_the_host(backend, call):
    """numpy's function on host views, as on torch's CPU tensors (issue 43 item 2): no
    copy for a host array, one counted read for a device array, which
    ``strict_transfers(implicit_reads=True)`` refuses with a typed error."""
    x = on(A, backend)
    nna.reset_transfer_stats()
    got = call(x)
    assert nna.transfer_stats()["count"] == (0 if backend == "numpy" else 1)
    np.testing.assert_allclose(np.asarray(got), call(A), rtol=1e-6)
    assert nna.transfer_stats()["count"] == (0 if backend == "numpy" else 1)
    if backend != "numpy":
        with nna.strict_transfers(implicit_reads=True), pytest.raises(nna.TransferError):
            call(on(A, backend))


def test_a_host_fallback_writes_through_host_arrays(backend):
    x = nna.asarray(np.arange(6, dtype=np.float32), device="numpy")
    np.add.at(x, [0, 0, 5], 1.0)  # numpy writes through the zero-copy handle
    np.testing.assert_array_equal(x.numpy(), [2, 1, 2, 3, 4, 6])
    out = on(np.zeros(4, np.int64), backend)
    assert np.gcd(on(np.array([4, 6, 9, 10]), backend), 6, out=out) is out
    assert out.device.key == f"{backend}:0"
    np.testing.assert_array_equal(out.numpy(), [2, 6, 3, 2])


def test_np_asarray_keeps_working(backend):
    x = on(A, backend)
    a = np.asarray(x)
    assert type(a) is np.ndarray and a.dtype == np.float32
    np.testing.assert_array_equal(a, A)
    np.testing.assert_array_equal(np.array(x), A)


def test_variables_record_graph_nodes(backend):
    with grad.auto_forward():
        v = grad.Variable.from_numpy_array(A, need_grad=True)
        y = np.sum(np.exp(v) * np.concatenate([v, v], axis=0)[:3]) + np.mean(np.tanh(v))
    assert isinstance(y, grad.Variable)
    y.backward()
    want = np.exp(A) * A + np.exp(A) + (1 - np.tanh(A) ** 2) / A.size
    np.testing.assert_allclose(v.g, want, rtol=1e-4, atol=1e-5)


def test_axis_arguments_are_range_checked():
    """numpy refuses these (AxisError); they used to wrap silently or fail with a
    RuntimeError from an exhausted generator."""
    x = nna.asarray(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="swapaxes: axis 5 is out of range"):
        np.swapaxes(x, 5, 0)
    with pytest.raises(ValueError, match="expand_dims: axis 7 is out of range"):
        np.expand_dims(x, 7)
    with pytest.raises(ValueError, match="expand_dims: repeated axis"):
        np.expand_dims(x, (0, 0))
    assert np.swapaxes(x, -1, 0).shape == (3, 2)
    assert np.expand_dims(x, (0, -1)).shape == (1, 2, 3, 1)
