"""float16 and bfloat16 reductions, matrix products and convolutions on every backend,
against float32 computed and rounded once.

The reference is the op in float64 on the 16-bit inputs (exact there, or nearly), rounded
once to the 16-bit dtype. The stated bound: a result is within one unit in the last
place of the 16-bit reference (``ulp``: the float32 accumulation may land on the other
side of a rounding boundary, nothing more), plus ``2^-18`` of the sum of the terms'
magnitudes for results that cancel to near zero (float32's accumulation error on
thousands of terms). ``affine`` and the device ``conv2d`` with a bias round the product
before adding the bias: one ulp of the product more. A backend that accumulated in 16
bits misses the bound by orders of magnitude (a sum of 10^5 bfloat16 values ~N(0, 1) is
off by several percent; a sum of 10^6 ones stops at 256). Max, min, argmax and argmin
are exact.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers import rotation

import nnarray as nna
import nnarray.functions as F

BF16, F16 = nna.bfloat16, np.dtype(np.float16)
LOWS = [BF16, F16]
LOW_IDS = ["bfloat16", "float16"]
RNG = np.random.default_rng(38)


def ulp(want: np.ndarray, low: np.dtype) -> np.ndarray:
    """One unit in the last place of ``low`` at each |want| (subnormals: the smallest)."""
    fi = ml_dtypes.finfo(low)
    w = np.maximum(np.abs(want.astype(np.float64)), float(fi.smallest_normal))
    return np.exp2(np.floor(np.log2(w))) * float(fi.eps)


def check(got: nna.NdArray, exact64: np.ndarray, low: np.dtype, mag: np.ndarray | float = 0.0,
          dtype: np.dtype | None = None, inter: np.ndarray | None = None) -> None:
    """``got`` has the dtype (``low`` unless ``dtype``) and is within the stated bound of
    ``exact64`` rounded once to it; ``inter``: an intermediate rounded on the way (the
    bound grows by one ulp of it)."""
    want = np.asarray(exact64).astype(dtype or low)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    g = np.asarray(got.numpy()).astype(np.float64)
    w = want.astype(np.float64)
    assert g.shape == w.shape, (g.shape, w.shape)
    finite = np.isfinite(w)
    np.testing.assert_array_equal(g[~finite], w[~finite])  # overflow: the same inf
    bound = ulp(want, want.dtype) + 2.0 ** -18 * np.broadcast_to(mag, w.shape)
    if inter is not None:
        bound = bound + ulp(np.asarray(inter).astype(want.dtype), want.dtype)
    err = np.abs(g - w)[finite]
    assert (err <= bound[finite]).all(), \
        f"max error {err.max()} over the bound (at {np.argmax(err - bound[finite])})"


def data(shape, low, positive=False, near_one=False):
    v = RNG.standard_normal(shape)
    if near_one:
        v = 1.0 + 0.01 * v
    elif positive:
        v = np.abs(v) + 0.1
    x = v.astype(low)
    return nna.array(x), x.astype(np.float64)


AXES = [None, 0, 1]


# -- reductions ------------------------------------------------------------------------
def cell(low: np.dtype, axis) -> int:
    """The position of (``low``, ``axis``) in the grid of the parametrized cases, for
    ``rotation``: adjacent cells differ in parity, so a value given to the even cells
    runs both dtypes and every axis."""
    return LOWS.index(low) + AXES.index(axis)


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("low", LOWS, ids=LOW_IDS)
def test_sum_and_mean(backend, low, axis):
    a, x = data((300, 400), low)
    check(F.sum(a, axis), x.sum(axis), low, np.abs(x).sum(axis))
    check(F.mean(a, axis), x.mean(axis), low, np.abs(x).mean(axis))
    check(a.sum(axis=axis, keepdims=True), x.sum(axis, keepdims=True), low,
          np.abs(x).sum(axis, keepdims=True))


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("low", LOWS, ids=LOW_IDS)
def test_prod(backend, low, axis):
    a, x = data((60, 80), low, near_one=True)
    check(F.prod(a, axis), x.prod(axis), low)


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("low", LOWS, ids=LOW_IDS)
def test_var_and_std(backend, low, axis):
    a, x = data((200, 300), low)
    check(nna.var(a, axis=axis), x.var(axis), low, 4 * x.var(axis) + 1e-3)
    check(nna.std(a, axis=axis, correction=1), x.std(axis, ddof=1), low,
          4 * x.std(axis, ddof=1) + 1e-3)


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("low", LOWS, ids=LOW_IDS)
def test_max_min_argmax_argmin_are_exact(backend, low, axis):
    """All four on numpy; on a compiling backend (a program per op, dtype and axis)
    ``max`` and ``argmax`` take the even cells, ``min`` and ``argmin`` the odd ones
    (``rotation``): each op runs both dtypes and every axis."""
    a, x = data((70, 90), low)
    values = [(F.max, np.max), (F.min, np.min)]
    for fn, ref in rotation(backend, cell(low, axis), values):
        got = fn(a, axis)
        assert got.dtype == low
        np.testing.assert_array_equal(got.numpy().astype(np.float64), ref(x, axis))
    indices = [(F.argmax, np.argmax), (F.argmin, np.argmin)]
    for fn, ref in rotation(backend, cell(low, axis), indices):
        np.testing.assert_array_equal(fn(a, axis).numpy(), ref(x, axis))


@pytest.mark.parametrize("low", LOWS, ids=LOW_IDS)
def test_cumulative_sum_and_prod(backend, low):
    a, x = data((8, 3000), low)
    check(F.cumulative_sum(a, 1), np.cumsum(x, 1), low, np.cumsum(np.abs(x), 1))
    b, y = data((8, 300), low, near_one=True)
    check(F.cumulative_prod(b, 1), np.cumprod(y, 1), low)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("low", LOWS, ids=LOW_IDS)
def test_a_million_ones(backend, low):
    """Accumulated in float32: the sum is 10^6 rounded once (bfloat16: 999424; float16
    overflows to inf, as float32's 10^6 rounded to float16 does) and the mean is 1."""
    a = nna.ones((10 ** 6,), low)
    check(F.sum(a), np.float64(10 ** 6), low)
    check(F.mean(a), np.float64(1.0), low)
    check(F.sum(nna.ones((1000, 1000), low), 1), np.full(1000, 1000.0), low)
    assert float(F.sum(a.astype(np.float32)).numpy()) == 10 ** 6


# -- products and convolutions ---------------------------------------------------------
MATMULS = {
    "2d": ((64, 256), (256, 48)),
    "long_k": ((16, 1024), (1024, 24)),
    "batched": ((3, 32, 128), (128, 16)),
    "batched_both": ((2, 3, 16, 64), (2, 3, 64, 8)),
    "vector": ((256,), (256, 40)),
}


@pytest.mark.parametrize("case", sorted(MATMULS))
@pytest.mark.parametrize("low", LOWS, ids=LOW_IDS)
def test_matmul(backend, low, case):
    sa, sb = MATMULS[case]
    (a, x), (b, y) = data(sa, low), data(sb, low)
    check(a @ b, x @ y, low, np.abs(x) @ np.abs(y))


@pytest.mark.parametrize("low", LOWS, ids=LOW_IDS)
def test_affine(backend, low):
    (a, x), (w, y), (c, z) = data((32, 200), low), data((200, 24), low), data((24,), low)
    # the product is rounded, then the bias added and rounded again: one ulp of the
    # product more (a float32 sum would take CUDA's 16-bit GEMM away from affine)
    check(F.affine(a, w, c), x @ y + z, low, np.abs(x) @ np.abs(y) + np.abs(z), inter=x @ y)
    check(F.affine(a, w), x @ y, low, np.abs(x) @ np.abs(y))  # no bias: rounded once


def conv_ref(x, w, b, stride, pad, dilation):
    """``conv2d`` in float64 (cross-correlation, NCHW, OIHW)."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - dilation * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * pad - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i * dilation:i * dilation + stride * oh:stride,
                       j * dilation:j * dilation + stride * ow:stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out + b[None, :, None, None]


@pytest.mark.parametrize("cfg", [(1, 1, 1), (2, 0, 1), (1, 2, 2)],
                         ids=["s1p1", "s2p0", "dil2"])
@pytest.mark.parametrize("low", LOWS, ids=LOW_IDS)
def test_conv2d(backend, low, cfg):
    stride, pad, dilation = cfg
    (a, x), (w, y), (c, z) = data((2, 16, 12, 12), low), data((8, 16, 3, 3), low), \
        data((8,), low)
    got = F.conv2d(a, w, c, stride=stride, pad=pad, dilation=dilation)
    # the device composite (im2col, matmul, then the bias: two roundings) within one ulp
    # of the product more; the host kernel runs in float32 and rounds once
    check(got, conv_ref(x, y, z, stride, pad, dilation), low,
          conv_ref(np.abs(x), np.abs(y), np.abs(z), stride, pad, dilation),
          inter=conv_ref(x, y, 0 * z, stride, pad, dilation))
    nob = F.conv2d(a, w, None, stride=stride, pad=pad, dilation=dilation)
    check(nob, conv_ref(x, y, 0 * z, stride, pad, dilation), low,
          conv_ref(np.abs(x), np.abs(y), 0 * z, stride, pad, dilation))


@pytest.mark.parametrize("low", LOWS, ids=LOW_IDS)
def test_host_matmul_runs_float32_blas_never_numpys_16_bit_loop(low, monkeypatch):
    """numpy's float16 (and ml_dtypes' bfloat16) matmul is a scalar loop (~100x slower
    at 1024^3): the host product must hand BLAS float32 operands."""
    seen = []
    real = np.matmul

    def spy(p, q, *args, **kwargs):
        seen.append((np.asarray(p).dtype, np.asarray(q).dtype))
        return real(p, q, *args, **kwargs)

    from nnarray.backends.numpy import matmul as host_matmul
    monkeypatch.setattr(host_matmul.np, "matmul", spy)
    (a, x), (b, y) = data((40, 900), low), data((900, 30), low)
    with nna.context_scope("numpy"):
        got = a @ b
        got2 = F.affine(a, b)
    assert seen and all(d == (np.float32, np.float32) for d in seen), seen
    check(got, x @ y, low, np.abs(x) @ np.abs(y))
    check(got2, x @ y, low, np.abs(x) @ np.abs(y))


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("low", LOWS, ids=LOW_IDS)
def test_vector_and_matrix_norms(backend, low, axis):
    a, x = data((200, 300), low)
    check(nna.linalg.vector_norm(a, axis=axis), np.sqrt((x * x).sum(axis)), low)
    check(nna.linalg.vector_norm(a, axis=axis, ord=1), np.abs(x).sum(axis), low)
    check(nna.linalg.vector_norm(a, axis=axis, ord=np.inf), np.abs(x).max(axis), low)
    if axis is None:
        check(nna.linalg.matrix_norm(a), np.sqrt((x * x).sum()), low)
        check(nna.linalg.matrix_norm(a, ord=1), np.abs(x).sum(0).max(), low)


@pytest.mark.parametrize("low", LOWS, ids=LOW_IDS)
def test_count_nonzero(backend, low):
    a, x = data((50, 60), low)
    a = a * (a > 0.5)
    want = (x * (x > 0.5)) != 0
    np.testing.assert_array_equal(nna.count_nonzero(a, axis=1).numpy(), want.sum(1))
    assert int(nna.count_nonzero(a).numpy()) == want.sum()
