"""``sigmoid`` over the whole float range against ``scipy.special.expit``, on every
backend, unfused and inside a fused static graph, with its backward and ``log``.

The reference is ``expit`` computed in long double and rounded to the dtype: scipy's own
float64 loop returns 0 below -709.78 (it overflows ``exp(-x)``) where the true values are
float64 subnormals down to -745.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import nnarray as nna
import nnarray.functions as F
from nnarray import grad
from nnarray.grad import Variable

#: The most units in the last place a result may be from the rounded reference.
ULPS = 4


def grid(dtype) -> np.ndarray:
    """Both signs of a log-spaced grid from the smallest subnormal to the largest finite
    value, the tails' turning points, and ±0, ±inf and NaN."""
    d = np.dtype(dtype)
    fi = np.finfo(d)
    mag = np.geomspace(np.longdouble(fi.smallest_subnormal), np.longdouble(fi.max),
                       3000).astype(d)
    marks = np.array([fi.smallest_subnormal, fi.tiny, fi.max, 0.5, 1, 8, 16, 17, 20, 36.8,
                      50, 87.3, 88.8, 103.9, 104, 110, 709.8, 710, 744, 745, 746, 1000],
                     np.float64)
    with np.errstate(over="ignore"):
        marks = marks.astype(d)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], d)
    return np.concatenate([mag, -mag, marks, -marks, special])


def expit(x: np.ndarray) -> np.ndarray:
    """The logistic function of ``x``, rounded to ``x``'s dtype."""
    return sp.expit(x.astype(np.longdouble)).astype(x.dtype)


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """``got``'s distance from ``want`` in ``want``'s units in the last place (subnormal
    results count in the smallest subnormal); NaN where ``want`` is NaN."""
    g, w = got.astype(np.longdouble), want.astype(np.longdouble)
    with np.errstate(invalid="ignore"):
        return np.abs(g - w) / np.spacing(want).astype(np.longdouble)


def assert_close(got: np.ndarray, want: np.ndarray, x: np.ndarray, bound: float = ULPS):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    u = ulps(got, want)
    bad = ~np.isnan(want) & ~(u <= bound)
    assert not bad.any(), (f"{int(bad.sum())} of {x.size} off by more than {bound} ulps, "
                           f"e.g. x={x[bad][:4]}: {got[bad][:4]}, want {want[bad][:4]}")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_sigmoid_whole_range(backend, dtype):
    """Each tail to a few ulps: the left one was 2^-25 (OpenCL float32) or 0 (numpy from
    -20, float64 from about -37) for 0.5 tanh(x / 2) + 0.5."""
    x = grid(dtype)
    assert_close(F.sigmoid(nna.asarray(x)).numpy(), expit(x), x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_fused_static_graph_and_backward(backend, dtype):
    """Fused with a multiplication in a static graph (one kernel on OpenCL and CUDA): the
    same values; its gradient ``y (1 - y)`` is exact in the left tail, never NaN for a
    number, and 0 where ``y`` rounds to 1."""
    x = grid(dtype)
    x = x[np.abs(x) < 1e30]  # 2 * x stays finite (no inf - inf in the reference)
    v = Variable.from_numpy_array(x, need_grad=True)
    y = F.sigmoid(v * 2.0) * 1.0
    y.forward()
    v.grad.zero()
    y.backward(nna.NdArray.from_numpy_array(np.ones_like(x)))
    s = grad.schedule_of(y)
    if backend.split(":")[0] in grad.fusion_pass.FUSING_BACKENDS:
        assert any(st.op == "fused_elementwise" for st in s.steps)
    assert_close(np.asarray(y.d), expit(2 * x), x)
    g = np.asarray(v.g)
    assert not np.isnan(g[~np.isnan(x)]).any()
    left = x <= 0  # y <= 1/2: 1 - y is exact, the derivative keeps y's relative accuracy
    want = (2 * expit(2 * x[left]).astype(np.longdouble) * expit(-2 * x[left])).astype(x.dtype)
    assert_close(g[left], want, x[left], 2 * ULPS + 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_log_sigmoid(backend, dtype):
    """``log(sigmoid(x))`` is exact to x's magnitude while ``sigmoid`` does not underflow
    (it was -17.3 at -1000 on OpenCL and -inf from -20 on numpy); ``-logaddexp(0, -x)`` is
    the form exact for every x (-1000 at -1000)."""
    lim = 87.0 if dtype == np.float32 else 708.0
    x = -np.geomspace(1e-3, lim, 400).astype(dtype)  # (above 0 log(1 - e) cancels)
    want = -np.logaddexp(np.longdouble(0), -x.astype(np.longdouble))
    got = F.log(F.sigmoid(nna.asarray(x))).numpy()
    np.testing.assert_allclose(got, want.astype(dtype), rtol=8 * np.finfo(dtype).eps, atol=0)
    far = np.array([-1000.0, -1e30, -np.inf], dtype)
    got = (-F.logaddexp(nna.asarray(np.zeros_like(far)), nna.asarray(-far))).numpy()
    np.testing.assert_array_equal(got, far)
