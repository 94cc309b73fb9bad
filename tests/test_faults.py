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
