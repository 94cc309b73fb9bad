"""NdArrays and Variables as Python values: format(), round(), float/int/index, repr with
the values, bool() of non-scalars, setitem from numpy data, numpy's array methods."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from helpers import S

import nnarray as nna
from nnarray import grad

X = np.array([[1.25, -2.5, 3.75], [0.5, -0.125, 2.0]], np.float32)


def on(a, backend):
    """An NdArray of ``a`` made on the backend's device."""
    return nna.asarray(np.asarray(a), device=backend)


def test_format_round_and_conversions_of_0d_arrays(backend):
    x = on(X, backend)
    s = x.sum()
    ref = X.sum()
    assert f"{s:.4f}" == f"{ref:.4f}" and format(s, "") == format(ref, "")
    assert round(s, 2) == round(ref, 2) and round(s) == round(ref)
    assert type(round(s)) is int
    assert float(s) == float(ref)
    i = on(np.int64(2), backend)
    assert int(i) == 2 and operator.index(i) == 2 and [10, 20, 30][i] == 30
    assert f"{i:03d}" == "002"


def test_format_of_nd_arrays_is_numpy_s(backend):
    x = on(X, backend)
    assert f"{x}" == str(x)
    with pytest.raises(TypeError, match=S(".4f", "0-d", "(2, 3)")):
        f"{x:.4f}"


def test_round_of_nd_arrays_rounds_on_the_device(backend):
    x = on(X * 3.3, backend)
    r = round(x, 1)
    assert isinstance(r, nna.NdArray) and r.device == nna.Context.parse(backend)
    np.testing.assert_allclose(r.numpy(), np.round(X * 3.3, 1), atol=1e-6)
    np.testing.assert_array_equal(x.round().numpy(), np.round(X * 3.3))
    k = on(np.array([15, 25, -35], np.int64), backend)
    np.testing.assert_array_equal(k.round(-1).numpy(), np.round(np.array([15, 25, -35]), -1))


def test_variables_read_their_data(backend):
    with grad.auto_forward():
        v = grad.Variable.from_numpy_array(X, need_grad=True)
        loss = (v * v).sum()
        positive = loss > 0
    ref = (X * X).sum()
    assert f"{loss:.4f}" == f"{ref:.4f}"
    assert float(loss) == pytest.approx(float(ref)) and round(loss, 2) == round(ref, 2)
    assert loss.item() == pytest.approx(float(ref)) and int(loss) == int(ref)
    assert bool(positive) is True
    a = np.asarray(loss)
    assert a.dtype == np.float32 and a.shape == () and a == pytest.approx(ref)
    np.testing.assert_array_equal(np.asarray(v), X)
    assert v.tolist() == X.tolist()
    iv = grad.Variable.from_ndarray(on(np.int64(1), backend))
    assert [10, 20][iv] == 20 and operator.index(iv) == 1 and f"{iv:02d}" == "01"


def test_bool_of_a_non_scalar_names_any_and_all(backend):
    x = on(X, backend)
    for y in (x > 0, grad.Variable.from_ndarray(x)):
        with pytest.raises(ValueError, match=S("(2, 3)", "any()", "all()")):
            bool(y)
    assert bool(on([3.0], backend)) and not bool(on(0.0, backend))


# -- repr --------------------------------------------------------------------------------
def test_repr_shows_values_dtype_and_device(backend):
    x = on(X, backend)
    r = repr(x)
    body = np.array2string(X, separator=", ", prefix="NdArray(")
    assert r == f"NdArray({body}, dtype=float32, device={nna.Context.parse(backend)})"
    assert x.device == nna.Context.parse(backend)  # a read never moves the array


@pytest.mark.parametrize("shape", [(2000,), (40, 3, 30), (7, 1200)])
def test_repr_of_large_arrays_is_numpy_s_summary_from_the_edges(backend, shape):
    a = np.random.default_rng(1).standard_normal(shape).astype(np.float32) * 100
    x = on(a, backend)
    nna.reset_transfer_stats()
    r = repr(x)
    body = np.array2string(a, separator=", ", prefix="NdArray(")
    assert "..." in body and r.startswith(f"NdArray({body}, dtype=float32")
    if not x.devices == ["numpy:0"]:  # only the entries shown come to the host
        assert 0 < nna.transfer_stats()["bytes"] < a.nbytes // 4


def test_variable_repr(backend):
    with grad.auto_forward():
        v = grad.Variable.from_numpy_array(X, need_grad=True, name="w")
        y = v * 2.0
    body = np.array2string(X, separator=", ", prefix="Variable(")
    assert repr(v) == f"Variable({body}, dtype=float32, device={v.data.device}, " \
        "need_grad=True, name='w')"
    assert repr(y).startswith("Variable([[ 2.5 ,") and repr(y).endswith(
        f"dtype=float32, device={y.data.device}, need_grad=True, parent={y.parent.label})")
    s = grad.Variable((2, 3)) + 1.0  # static: nothing computed yet
    assert repr(s).startswith("Variable(shape=(2, 3), dtype=float32")


def test_repr_of_a_device_variable_is_an_implicit_read(backend):
    x = on(X, backend)
    v = grad.Variable.from_ndarray(x * 2.0)
    with nna.strict_transfers(implicit_reads=True):
        if v.data.devices != ["numpy:0"]:
            with pytest.raises(nna.TransferError, match=S("repr()", "implicit_reads=True")):
                repr(v)
            with pytest.raises(nna.TransferError, match=S("format()")):
                f"{v.data.sum():.2f}"
        else:
            assert "Variable(" in repr(v)


# -- setitem from numpy data ---------------------------------------------------------------
def test_setitem_takes_numpy_arrays_and_sequences(backend):
    y = on(np.zeros((2, 3), np.float32), backend)
    ref = np.zeros((2, 3), np.float32)
    with nna.strict_transfers():  # the upload is explicit: counted, allowed
        y[:, 0] = np.array([5, 6])
        y[0] = [1, 2, 3]
        y[1, 1:] = (7.5, 8.5)
        y[y > 7] = np.float32(9)
    y[np.array([True, False])] = [[4.0, 4.0, 4.0]]  # a host key: (strict) uploads of its own
    ref[:, 0] = np.array([5, 6])
    ref[0] = [1, 2, 3]
    ref[1, 1:] = (7.5, 8.5)
    ref[ref > 7] = 9
    ref[np.array([True, False])] = [[4.0, 4.0, 4.0]]
    assert y.device == nna.Context.parse(backend)
    np.testing.assert_array_equal(y.numpy(), ref)
    assert nna.transfer_stats()["count"] >= (backend != "numpy")


def test_setitem_from_numpy_checks_before_writing(backend):
    y = on(np.zeros((2, 3), np.int64), backend)
    with pytest.raises(nna.DTypeError, match=S("setitem", "float64", "int64")):
        y[0] = [1.5, 2.0, 3.0]
    with pytest.raises(nna.ShapeError, match=S("setitem", "(2,)")):
        y[0] = np.array([1, 2])
    with pytest.raises(TypeError, match=S("setitem", "sequence of numbers")):
        y[0] = ["a", "b", "c"]
    np.testing.assert_array_equal(y.numpy(), np.zeros((2, 3)))


# -- numpy's array methods -----------------------------------------------------------------
def test_array_methods_match_numpy(backend):
    a = np.random.default_rng(2).standard_normal((3, 1, 4)).astype(np.float32)
    x = on(a, backend)
    here = nna.Context.parse(backend)
    cases = {
        "flatten": (x.flatten(), a.flatten()), "ravel": (x.ravel(), a.ravel()),
        "squeeze": (x.squeeze(), a.squeeze()), "squeeze1": (x.squeeze(1), a.squeeze(1)),
        "clip": (x.clip(-0.5, 0.5), a.clip(-0.5, 0.5)), "clip max": (x.clip(max=0.1),
                                                                   a.clip(max=0.1)),
        "abs": (x.abs(), np.abs(a)), "argsort": (x.argsort(), a.argsort()),
        "argsort None": (x.argsort(axis=None), a.argsort(axis=None)),
        "round": (x.round(2), a.round(2)),
        "mean": (x.mean(axis=(0, 2), keepdims=True), a.mean(axis=(0, 2), keepdims=True)),
        "mean f64": (x.mean(dtype=np.float64), a.mean(dtype=np.float64)),
        "sum": (x.sum(axis=0, dtype=np.float64), a.sum(axis=0, dtype=np.float64)),
        "max": (x.max(axis=-1, keepdims=True), a.max(axis=-1, keepdims=True)),
        "min": (x.min(axis=(0, 1)), a.min(axis=(0, 1))),
    }
    for name, (got, want) in cases.items():
        assert isinstance(got, nna.NdArray) and got.device == here, name
        assert (got.shape, got.dtype) == (want.shape, want.dtype), name
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6, err_msg=name)
    assert x.tolist() == a.tolist() and on(np.float32(1.5), backend).tolist() == 1.5


def test_sort_sorts_in_place_as_numpy(backend):
    a = np.random.default_rng(3).standard_normal((3, 5)).astype(np.float32)
    for axis in (-1, 0):
        x, ref = on(a, backend), a.copy()
        assert x.sort(axis=axis) is None
        ref.sort(axis=axis)
        np.testing.assert_array_equal(x.numpy(), ref)
        assert x.device == nna.Context.parse(backend)
    with pytest.raises(TypeError, match=S("in place", "nnarray.sort(v)")):
        grad.Variable.from_numpy_array(a).sort()


def test_differentiable_methods_on_variables(backend):
    a = np.array([[0.5, -2.0, 3.0], [-0.25, 0.75, -4.0]], np.float32)
    with grad.auto_forward():
        v = grad.Variable.from_numpy_array(a, need_grad=True)
        y = (v.clip(-1.0, 1.0) * v.abs()).flatten().sum() + v.ravel().mean() + \
            v.reshape(1, 2, 3).squeeze(0).max(axis=1).sum()
    y.backward()
    inside = (np.abs(a) < 1.0)
    want = np.where(inside, np.abs(a) + a * np.sign(a), np.sign(a) * np.clip(a, -1, 1)) \
        + 1 / 6 + (a == a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(v.g, want, rtol=1e-5)
    assert float(y) == pytest.approx(float((np.clip(a, -1, 1) * np.abs(a)).sum() + a.mean()
                                           + a.max(axis=1).sum()), rel=1e-5)
