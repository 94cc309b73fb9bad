"""Functions that order values refuse complex operands with ``DTypeError`` naming the
function and the dtype, on every backend and for Variables, before any kernel runs (the
standard leaves complex ordering unspecified). OpenCL raised ``KeyError: 'float2'``
(max, min) or pyopencl's build failure (argmax, argmin, searchsorted), recompiling on
every call; numpy answered in its lexicographic order.
"""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray.errors import DTypeError
from nnarray.grad import Variable

CALLS = {
    "max": lambda a: nna.max(a), "min": lambda a: nna.min(a, axis=0),
    "argmax": lambda a: nna.argmax(a), "argmin": lambda a: nna.argmin(a, axis=0),
    "sort": lambda a: nna.sort(a), "argsort": lambda a: nna.argsort(a),
    "clip": lambda a: nna.clip(a, 0, 1), "maximum": lambda a: nna.maximum(a, a),
    "minimum": lambda a: nna.minimum(a, 1.0), "less": lambda a: a < a,
    "less_equal": lambda a: a <= 0, "greater": lambda a: a > 1j,
    "greater_equal": lambda a: a >= a, "searchsorted": lambda a: nna.searchsorted(a, a),
}


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_ordering_complex_raises(backend, name, dtype):
    a = nna.asarray(np.array([1 + 2j, 3 - 1j, -2 + 0j], dtype))
    nna.reset_kernel_stats()
    with pytest.raises(DTypeError, match=f"{name}: .*{np.dtype(dtype).name}.* no order"):
        CALLS[name](a)
    assert nna.kernel_stats()["count"] == 0


@pytest.mark.parametrize("name", ["max", "argmax", "maximum", "less", "clip", "sort"])
def test_ordering_complex_variables_raise_while_building(backend, name):
    v = Variable.from_numpy_array(np.array([1 + 2j, 3 - 1j], np.complex64))
    with pytest.raises(DTypeError, match=f"{name}: .*complex64"):
        CALLS[name](v)


def test_complex_scalar_operand_raises(backend):
    a = nna.asarray(np.array([1.0, 2.0], np.float32))
    with pytest.raises(DTypeError, match="less: argument 'b' is complex128"):
        _ = a < 1j
    with pytest.raises(DTypeError, match="clip: argument 'a_max' is complex128"):
        nna.clip(a, 0, 1j)


def test_equality_and_real_parts_still_work(backend):
    z = np.array([1 + 2j, 3 - 1j, -2 + 0j], np.complex64)
    a = nna.asarray(z)
    np.testing.assert_array_equal((a == a).numpy(), [True] * 3)
    assert int(nna.argmax(F.real(a)).numpy()) == 1
    assert float(nna.max(nna.abs(a)).numpy()) == pytest.approx(np.abs(z).max())
