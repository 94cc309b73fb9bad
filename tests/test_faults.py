"""Bad input that used to give a silent value or a raw numpy/pyopencl error (issue 15):
each raises an nnarray error naming the op, on every backend, before anything changes."""

from __future__ import annotations

import re

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import InvalidValueError

pytestmark = pytest.mark.usefixtures("no_fallback")  # a backend runs its own kernels


def S(*parts: str) -> str:
    return ".*".join(re.escape(p) for p in parts)


def A(a, dtype=None) -> nna.NdArray:
    return nna.NdArray.from_numpy_array(np.asarray(a, dtype))


# -- integer ** negative integer ------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_int_pow_negative_exponent_raises(backend, dtype):
    """numpy raised its own ValueError, OpenCL returned [0, 0]: backends must agree."""
    a = A([2, 3], dtype)
    np.testing.assert_array_equal(np.asarray(a ** 2), [4, 9])  # a scalar form, cached
    for call in (lambda: a ** -1, lambda: F.pow(a, -2), lambda: F.pow(a, np.int64(-1)),
                 lambda: F.pow(a, A([1, -1], dtype)), lambda: 2 ** A([1, -1], dtype)):
        with pytest.raises(InvalidValueError, match=S("pow", "negative integer powers")):
            call()
    # floats, or a non-negative exponent array, stay allowed
    np.testing.assert_array_equal(np.asarray(F.pow(a, A([0, 2], dtype))), [1, 9])
    np.testing.assert_allclose(np.asarray(a ** -1.0), [0.5, 1 / 3])
    np.testing.assert_allclose(np.asarray(A([2.0, 4.0]) ** -1), [0.5, 0.25])


# -- labels out of range ----------------------------------------------------------------------
@pytest.mark.parametrize("bad", [-1, 3, 5])
def test_cross_entropy_labels_out_of_range_raise(backend, bad):
    """numpy picked the last class for -1; OpenCL gave NaN for -1 and 5 (of 3)."""
    x = A(np.arange(6).reshape(2, 3) / 4, np.float32)
    for t in (A([0, bad], np.int64), A([[0], [bad]], np.int32)):  # (N,) and nnabla's (N, 1)
        with pytest.raises(InvalidValueError, match=S("softmax_cross_entropy", f"label {bad}",
                                                      "3 classes")):
            F.softmax_cross_entropy(x, t)
    from nnarray import grad
    with grad.auto_forward():
        xv = grad.Variable.from_numpy_array(np.asarray(x), need_grad=True)
        tv = grad.Variable.from_numpy_array(np.array([bad, 1]))
        with pytest.raises(InvalidValueError, match=S("softmax_cross_entropy", f"label {bad}")):
            F.softmax_cross_entropy(xv, tv)
    ok = F.softmax_cross_entropy(x, A([2, 0]))  # valid labels still work, after the error
    ls = np.asarray(x) - np.log(np.exp(np.asarray(x)).sum(1, keepdims=True))
    np.testing.assert_allclose(np.asarray(ok), -ls[[0, 1], [2, 0]], rtol=1e-6)


def test_cross_entropy_device_labels_report_at_sync(backend):
    """Labels that live only on the device (no current host copy) are checked by the
    kernel and reported at the next synchronization, never as a silent value."""
    x = A(np.zeros((2, 3)), np.float32)
    t = A([0, 1], np.int64) * 5 - 1  # [-1, 4], computed on the backend's device
    if backend == "numpy":
        assert t.head == "numpy:0"
    else:
        assert t.devices == [t.head] and t.head.startswith(backend)
    with pytest.raises(InvalidValueError, match=S("softmax_cross_entropy", "label", "3")):
        loss = F.softmax_cross_entropy(x, t)
        float(F.sum(loss))
    nna.device_synchronize()  # the report was consumed: nothing left to raise
    assert float(F.sum(F.softmax_cross_entropy(x, A([0, 2])))) == pytest.approx(2 * np.log(3))
