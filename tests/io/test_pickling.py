"""``pickle`` and ``copy.deepcopy`` of NdArrays, Variables, Modules and solvers' parameter
dicts: data through the host, the device restored on load where it exists, a typed error
on access (not on load) where it does not."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, nn, solvers

ROUND_TRIPS = {"pickle": lambda o: pickle.loads(pickle.dumps(o)), "deepcopy": copy.deepcopy}


@pytest.mark.parametrize("how", list(ROUND_TRIPS))
def test_ndarray_round_trip_keeps_data_dtype_and_device(backend, how):
    rt = ROUND_TRIPS[how]
    for want in (np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, -2], np.int64),
                 np.array(True)):
        a = nna.asarray(want)
        nna.reset_transfer_stats()
        with nna.strict_transfers():  # the host read and the upload are explicit
            b = rt(a)
        assert b is not a and b.device.key == a.device.key == f"{backend}:0"
        assert b.dtype == want.dtype and b.shape == want.shape
        np.testing.assert_array_equal(b.numpy(), want)
        assert nna.transfer_stats()["count"] == (0 if backend == "numpy" else 2)
    b.data[...] = False  # a copy: the original is untouched
    assert a.item() is True


@pytest.mark.parametrize("how", list(ROUND_TRIPS))
def test_lazy_and_never_written_arrays_stay_lazy(backend, how):
    rt = ROUND_TRIPS[how]
    z = rt(nna.full((2, 2), 3, dtype=nna.int64))
    assert z.lazy_fill == 3 and z.devices == [] and z.device.key == f"{backend}:0"
    e = rt(nna.NdArray((3,)))
    assert e.head is None and e.shape == (3,)
    np.testing.assert_array_equal(z.numpy(), np.full((2, 2), 3))


@pytest.mark.parametrize("how", list(ROUND_TRIPS))
def test_variable_round_trip_is_a_leaf_with_data_grad_and_name(backend, how):
    v = grad.Variable.from_numpy_array(np.ones((2, 2), np.float32), need_grad=True,
                                       name="w")
    v.data.get_data("rw", backend)
    v.grad.data = np.full((2, 2), 2.0)
    with grad.auto_forward():
        y = F.sum(v * 3)
    w, y2 = ROUND_TRIPS[how]((v, y))
    assert w.need_grad and w.name == "w" and w.parent is None and y2.parent is None
    assert w.data.device.key == f"{backend}:0"
    np.testing.assert_array_equal(w.d, np.ones((2, 2)))
    np.testing.assert_array_equal(w.g, np.full((2, 2), 2.0))
    assert y2.data.item() == 12


@pytest.mark.parametrize("how", list(ROUND_TRIPS))
def test_module_and_solver_round_trip_and_train_on_the_device(backend, how):
    model = nn.Sequential(nn.Linear(3, 4), F.relu, nn.Linear(4, 2))
    opt = solvers.Adam(lr=0.01)
    opt.set_parameters(model.parameters())
    m2, params2 = ROUND_TRIPS[how]((model, opt.params))
    before = {k: p.d.copy() for k, p in model.parameters().items()}
    assert list(params2) == list(m2.parameters())
    for k, p in m2.parameters().items():
        assert p is params2[k] and p is not model.parameters()[k]  # shared, not aliased
        assert p.data.device.key == f"{backend}:0"
        np.testing.assert_array_equal(p.d, before[k])
    opt2 = solvers.Adam(lr=0.01)
    opt2.set_parameters(params2)
    x = nna.asarray(np.ones((5, 3), np.float32))
    with grad.auto_forward():
        loss = F.sum(m2(grad.Variable.from_ndarray(x)))
    loss.backward()
    opt2.update()
    for k, p in m2.parameters().items():
        assert p.data.head == f"{backend}:0"
        np.testing.assert_array_equal(model.parameters()[k].d, before[k])  # untouched


def test_a_missing_device_raises_on_access_not_on_load():
    """Pickled on a device this process does not have: loading works, the data is there
    for an explicit host read, and an op that would run on that device raises."""
    a = nna.asarray(np.arange(3, dtype=np.float32), device="numpy")
    blob = pickle.dumps(a).replace(b"numpy:0", b"numpy:9")
    b = pickle.loads(blob)
    assert b.device.key == "numpy:9"
    np.testing.assert_array_equal(b.numpy(), [0, 1, 2])
    with pytest.raises(nna.BackendUnavailableError, match="numpy:9"):
        b.get_data("r", "numpy:9")
    np.testing.assert_array_equal(b.to_device("numpy").numpy(), [0, 1, 2])


def test_context_pickles():
    c = nna.Context("opencl", 1, fallback=())
    assert pickle.loads(pickle.dumps(c)) == c and copy.deepcopy(c) == c
