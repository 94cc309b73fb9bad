"""The function tester (after nnabla's): every differentiable function on every backend.

For each case: the forward against a numpy reference; analytic gradients (a random
upstream gradient, randomly pre-filled input gradients, so accumulation is checked)
against central differences of the reference in float64; intermediate inputs whose
gradients are pre-filled with NaN are overwritten (accum=False), never accumulated;
``need_grad=False`` inputs keep their gradients; ``clear_buffer=True`` and
``auto_forward`` give the same gradients as the static graph.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
from conftest import tol
from helpers import device_params, fused_rows

import nnarray as nna
import nnarray.functions as F
from nnarray import grad

GRAD_TOL = {"rtol": 1e-5, "atol": 1e-6}  # analytic vs central differences, float64


@dataclass
class Case:
    name: str
    fn: Callable  # on Variables (and constants)
    ref: Callable  # on numpy arrays
    shapes: list  # one per differentiable input
    low: float = -2.0  # inputs drawn from uniform(low, high), away from kinks
    high: float = 2.0
    consts: list = field(default_factory=list)  # numpy constants appended to the inputs


_np_erf = np.vectorize(math.erf, otypes=[np.float64])


def _np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _np_log_softmax(x, axis=-1):
    z = x - x.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def _np_softmax(x, axis=-1):
    return np.exp(_np_log_softmax(x, axis))


def _np_im2col(x, k, s=1, p=0, d=1):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    oh, ow = (h + 2 * p - d * (k - 1) - 1) // s + 1, (w + 2 * p - d * (k - 1) - 1) // s + 1
    cols = np.empty((n, c, k, k, oh, ow), x.dtype)
    for i in range(k):
        for j in range(k):
            rows = slice(i * d, i * d + s * (oh - 1) + 1, s)
            cols[:, :, i, j] = xp[:, :, rows, j * d:j * d + s * (ow - 1) + 1:s]
    return cols.reshape(n, c * k * k, oh * ow), oh, ow


def _np_col2im(cols, size, k, s=1, p=0, d=1):
    c, h, w = size
    n = cols.shape[0]
    oh, ow = (h + 2 * p - d * (k - 1) - 1) // s + 1, (w + 2 * p - d * (k - 1) - 1) // s + 1
    img = np.zeros((n, c, h + 2 * p, w + 2 * p))
    c6 = cols.reshape(n, c, k, k, oh, ow)
    for i in range(k):
        for j in range(k):
            img[:, :, i * d:i * d + s * (oh - 1) + 1:s,
                j * d:j * d + s * (ow - 1) + 1:s] += c6[:, :, i, j]
    return img[:, :, p:p + h, p:p + w]


def _np_conv(x, w, b=None, s=1, p=0, d=1, g=1):
    n = x.shape[0]
    o, cg, k, _ = w.shape
    cols, oh, ow = _np_im2col(x, k, s, p, d)
    cols = cols.reshape(n, g, cg * k * k, oh * ow)
    y = np.matmul(w.reshape(g, o // g, cg * k * k), cols).reshape(n, o, oh, ow)
    return y if b is None else y + b.reshape(1, o, 1, 1)


def _np_pool(x, k, reduce):
    n, c, h, w = x.shape
    return reduce(x.reshape(n, c, h // k, k, w // k, k), axis=(3, 5))


def _np_pool_windows(x, k, s, p, mode):
    """Overlapping (stride < kernel), padded pooling by explicit windows: max pads with
    -inf, average counts the zero padding (as F.average_pooling does)."""
    h, w = x.shape[-2:]
    xp = np.pad(x, [(0, 0)] * (x.ndim - 2) + [(p, p), (p, p)],
                constant_values=-np.inf if mode == "max" else 0.0)
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    rows = []
    for i in range(oh):
        cols = []
        for j in range(ow):
            win = xp[..., i * s:i * s + k, j * s:j * s + k]
            cols.append(win.max(axis=(-2, -1)) if mode == "max" else win.mean(axis=(-2, -1)))
        rows.append(np.stack(cols, -1))
    return np.stack(rows, -2)


def _np_bn(x, gamma, beta, rmean=None, rvar=None, eps=1e-5):
    if rmean is None:
        mu, var = x.mean(axis=(0, 2), keepdims=True), x.var(axis=(0, 2), keepdims=True)
    else:
        mu, var = rmean.reshape(1, -1, 1), rvar.reshape(1, -1, 1)
    return (x - mu) / np.sqrt(var + eps) * gamma.reshape(1, -1, 1) + beta.reshape(1, -1, 1)


_LABELS = np.array([2, 0, 3])
_COND = np.array([[True, False, True], [False, True, True]])
_RM, _RV = np.array([0.1, -0.2, 0.3]), np.array([0.5, 1.5, 2.0])

CASES = [
    Case("add", F.add, np.add, [(2, 3), (3,)]),
    Case("add_scalar", lambda a: a + 2.5, lambda a: a + 2.5, [(2, 3)]),
    Case("sub", F.sub, np.subtract, [(2, 3), (2, 1)]),
    Case("rsub_scalar", lambda a: 1.0 - a, lambda a: 1.0 - a, [(2, 3)]),
    Case("mul", F.mul, np.multiply, [(2, 1, 3), (4, 1)]),
    Case("square_op", lambda a: a * a, np.square, [(2, 3)]),
    Case("square", F.square, np.square, [(2, 3)]),
    Case("div", F.div, np.divide, [(2, 3), (3,)], low=0.5),
    Case("rdiv_scalar", lambda a: 2.0 / a, lambda a: 2.0 / a, [(2, 3)], low=0.5),
    Case("pow", F.pow, np.power, [(2, 3), (2, 3)], low=0.5),
    Case("pow_scalar", lambda a: a ** 3.0, lambda a: a ** 3.0, [(2, 3)]),
    Case("maximum", F.maximum, np.maximum, [(2, 3), (2, 3)]),
    Case("minimum", F.minimum, np.minimum, [(3,), (2, 3)]),
    Case("neg", F.neg, np.negative, [(2, 3)]),
    Case("abs", F.abs, np.abs, [(2, 3)]),
    Case("exp", F.exp, np.exp, [(2, 3)]),
    Case("log", F.log, np.log, [(2, 3)], low=0.5),
    Case("sqrt", F.sqrt, np.sqrt, [(2, 3)], low=0.5),
    Case("tanh", F.tanh, np.tanh, [(2, 3)]),
    Case("sigmoid", F.sigmoid, _np_sigmoid, [(2, 3)]),
    Case("relu", F.relu, lambda x: np.maximum(x, 0), [(2, 3)]),
    Case("erf", F.erf, lambda x: _np_erf(x), [(2, 3)]),
    Case("erfc", F.erfc, lambda x: 1 - _np_erf(x), [(2, 3)]),
    Case("gelu", F.gelu, lambda x: 0.5 * x * (1 + _np_erf(x / np.sqrt(2))), [(2, 3)], -3, 3),
    Case("gelu_tanh", F.gelu_tanh, lambda x: 0.5 * x * (1 + np.tanh(
        np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))), [(2, 3)], -3, 3),
    Case("expm1", F.expm1, np.expm1, [(2, 3)]),
    Case("log1p", F.log1p, np.log1p, [(2, 3)], low=0.1),
    Case("log2", F.log2, np.log2, [(2, 3)], low=0.5),
    Case("log10", F.log10, np.log10, [(2, 3)], low=0.5),
    Case("sin", F.sin, np.sin, [(2, 3)]),
    Case("cos", F.cos, np.cos, [(2, 3)]),
    Case("tan", F.tan, np.tan, [(2, 3)], low=-1.0, high=1.0),
    Case("asin", F.asin, np.arcsin, [(2, 3)], low=-0.8, high=0.8),
    Case("acos", F.acos, np.arccos, [(2, 3)], low=-0.8, high=0.8),
    Case("atan", F.atan, np.arctan, [(2, 3)]),
    Case("sinh", F.sinh, np.sinh, [(2, 3)]),
    Case("cosh", F.cosh, np.cosh, [(2, 3)]),
    Case("asinh", F.asinh, np.arcsinh, [(2, 3)]),
    Case("acosh", F.acosh, np.arccosh, [(2, 3)], low=1.5, high=3.0),
    Case("atanh", F.atanh, np.arctanh, [(2, 3)], low=-0.8, high=0.8),
    Case("logit", F.logit, lambda x: np.log(x / (1 - x)), [(2, 3)], low=0.1, high=0.9),
    Case("positive", F.positive, np.positive, [(2, 3)]),
    Case("ceil", F.ceil, np.ceil, [(2, 3)]),
    Case("floor", F.floor, np.floor, [(2, 3)]),
    Case("trunc", F.trunc, np.trunc, [(2, 3)]),
    Case("round", F.round, np.round, [(2, 3)]),
    Case("atan2", F.atan2, np.arctan2, [(2, 3), (3,)], low=0.5),
    Case("hypot", F.hypot, np.hypot, [(2, 3), (2, 3)], low=0.5),
    Case("logaddexp", F.logaddexp, np.logaddexp, [(2, 3), (3,)]),
    Case("copysign", F.copysign, np.copysign, [(2, 3), (2, 3)]),
    Case("remainder", F.remainder, np.remainder, [(2, 3), (3,)], low=0.5),
    Case("leaky_relu", lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x),
         [(2, 3)]),
    Case("clip", lambda x: F.clip(x, -0.5, 0.7), lambda x: np.clip(x, -0.5, 0.7), [(3, 4)]),
    Case("cast", lambda x: F.cast(x, np.float32) * 2.0,
         lambda x: x * 2.0, [(2, 3)]),
    Case("where", lambda x, y, c: F.where(c, x, y), lambda x, y, c: np.where(c, x, y),
         [(2, 3), (3,)], consts=[_COND]),
    Case("sum", lambda x: F.sum(x, axis=1), lambda x: x.sum(axis=1), [(2, 3, 4)]),
    Case("take", lambda x, i: F.take(x, i, axis=1), lambda x, i: np.take(x, i, axis=1),
         [(2, 3, 2)], consts=[np.array([2, 0, 2, -1])]),
    Case("cumulative_sum", lambda x: F.cumulative_sum(x, axis=1),
         lambda x: np.cumsum(x, axis=1), [(2, 3, 4)]),
    Case("cumulative_prod", lambda x: F.cumulative_prod(x, axis=1),
         lambda x: np.cumprod(x, axis=1), [(2, 3, 4)]),
    Case("diff", lambda x: nna.diff(x, axis=1, n=2), lambda x: np.diff(x, 2, axis=1),
         [(2, 4, 3)]),
    Case("take_along_axis", lambda x, i: nna.take_along_axis(x, i, axis=1),
         lambda x, i: np.take_along_axis(x, i % 3, axis=1), [(2, 3, 2)],
         consts=[np.array([[[2, 0], [-1, 2], [0, 0], [1, 1]]])]),
    Case("einsum", lambda x, y: nna.einsum("bij,jk->bk", x, y),
         lambda x, y: np.einsum("bij,jk->bk", x, y), [(2, 3, 4), (4, 5)]),
    Case("einsum_trace", lambda x: nna.einsum("ii", x), lambda x: np.einsum("ii", x),
         [(3, 3)]),
    Case("pad_reflect", lambda x: nna.pad(x, ((1, 2), (2, 1)), "reflect"),
         lambda x: np.pad(x, ((1, 2), (2, 1)), "reflect"), [(4, 3)]),
    Case("pad_edge", lambda x: nna.pad(x, 2, "edge"), lambda x: np.pad(x, 2, "edge"), [(2, 3)]),
    Case("prod", lambda x: F.prod(x, axis=(0, 2)), lambda x: x.prod(axis=(0, 2)), [(2, 3, 4)],
         low=0.5),
    Case("sum_all_keepdims", lambda x: F.sum(x, keepdims=True), lambda x: x.sum(keepdims=True),
         [(2, 3)]),
    Case("mean", lambda x: F.mean(x, axis=(0, 2)), lambda x: x.mean(axis=(0, 2)), [(2, 3, 4)]),
    Case("max", lambda x: F.max(x, axis=1, keepdims=True), lambda x: x.max(axis=1, keepdims=True),
         [(3, 4)]),
    Case("min", F.min, np.min, [(3, 4)]),
    Case("reshape", lambda x: F.reshape(x, (3, -1)) * 1.5, lambda x: x.reshape(3, -1) * 1.5,
         [(2, 3, 2)]),
    Case("transpose", lambda x: F.transpose(x, (1, 2, 0)), lambda x: x.transpose(1, 2, 0),
         [(2, 3, 4)]),
    Case("broadcast_to", lambda x: F.broadcast_to(x, (2, 4, 3)),
         lambda x: np.broadcast_to(x, (2, 4, 3)), [(4, 1)]),
    Case("concatenate", lambda a, b: F.concatenate([a, b, a], axis=1),
         lambda a, b: np.concatenate([a, b, a], axis=1), [(2, 2), (2, 3)]),
    Case("stack", lambda a, b: F.stack([a, b], axis=1), lambda a, b: np.stack([a, b], axis=1),
         [(2, 3), (2, 3)]),
    Case("split", lambda x: F.concatenate(F.split(x, [1, 3], axis=1)[::-1], axis=1),
         lambda x: np.concatenate(np.split(x, [1, 3], axis=1)[::-1], axis=1), [(2, 5)]),
    Case("slice", lambda x: F.slice(x, (1, 5), (3, 0), (1, -2)),
         lambda x: x[1:3, 5:0:-2], [(4, 6)]),
    Case("getitem", lambda x: x[1, ::2, None], lambda x: x[1, ::2, None], [(3, 5)]),
    Case("matmul", F.matmul, np.matmul, [(3, 4), (4, 2)]),
    Case("matmul_batched", F.matmul, np.matmul, [(2, 3, 4), (4, 2)]),
    Case("matmul_vector", F.matmul, np.matmul, [(4,), (2, 4, 3)]),
    Case("matmul_transposed", lambda a, b: F.matmul(a, b, transpose_a=True, transpose_b=True),
         lambda a, b: np.swapaxes(a, -1, -2) @ b.T, [(2, 4, 3), (2, 4)]),
    Case("matmul_transpose_b", lambda a, b: F.matmul(a, b, transpose_b=True),
         lambda a, b: a @ np.swapaxes(b, -1, -2), [(3, 4), (2, 5, 4)]),
    Case("affine", F.affine, lambda x, w, b: x.reshape(2, -1) @ w + b, [(2, 2, 3), (6, 4), (4,)]),
    Case("softmax", lambda x: F.softmax(x, axis=0), lambda x: _np_softmax(x, 0), [(3, 4)]),
    Case("log_softmax", F.log_softmax, _np_log_softmax, [(3, 4)]),
    Case("softmax_cross_entropy", lambda x, t: F.softmax_cross_entropy(x, t),
         lambda x, t: -np.take_along_axis(_np_log_softmax(x), t[:, None], 1)[:, 0], [(3, 4)],
         consts=[_LABELS]),
    Case("softmax_cross_entropy_axis1", lambda x, t: F.softmax_cross_entropy(x, t, axis=1),
         lambda x, t: -np.take_along_axis(_np_log_softmax(x, 1), t[:, None], 1)[:, 0],
         [(2, 4, 3)], consts=[np.array([[3, 0, 1], [2, 2, 0]])]),
    Case("softmax_cross_entropy_axis0", lambda x, t: F.softmax_cross_entropy(x, t, axis=0),
         lambda x, t: -np.take_along_axis(_np_log_softmax(x, 0), t[None], 0)[0],
         [(3, 4)], consts=[np.array([2, 0, 1, 1])]),
    Case("mean_squared_error", F.mean_squared_error, lambda a, b: np.mean((a - b) ** 2),
         [(2, 3), (2, 3)]),
    Case("im2col", lambda x: F.im2col(x, 2, stride=1, pad=1),
         lambda x: _np_im2col(x, 2, 1, 1)[0], [(1, 2, 3, 3)]),
    Case("im2col_tiles_ragged", lambda x: F.im2col(x, 2, stride=2),
         lambda x: _np_im2col(x, 2, 2, 0)[0], [(1, 2, 5, 5)]),
    Case("col2im_tiles_ragged", lambda c: F.col2im(c, (2, 5, 5), 2, stride=2),
         lambda c: _np_col2im(c, (2, 5, 5), 2, 2, 0), [(1, 8, 4)]),
    Case("max_pooling_ragged", lambda x: F.max_pooling(x, 2),
         lambda x: _np_pool(x[..., :4, :4], 2, np.max), [(1, 2, 5, 5)]),
    Case("col2im", lambda c: F.col2im(c, (2, 3, 3), 2, stride=1, pad=1),
         lambda c: _np_col2im(c, (2, 3, 3), 2, 1, 1), [(1, 8, 16)]),
    Case("im2col_stride_pad", lambda x: F.im2col(x, 3, stride=2, pad=1),
         lambda x: _np_im2col(x, 3, 2, 1)[0], [(2, 2, 5, 4)]),
    Case("im2col_dilation", lambda x: F.im2col(x, 2, stride=1, pad=0, dilation=2),
         lambda x: _np_im2col(x, 2, 1, 0, 2)[0], [(1, 2, 5, 5)]),
    Case("im2col_all", lambda x: F.im2col(x, 2, stride=2, pad=2, dilation=3),
         lambda x: _np_im2col(x, 2, 2, 2, 3)[0], [(1, 1, 6, 7)]),
    Case("col2im_stride_pad", lambda c: F.col2im(c, (2, 5, 4), 3, stride=2, pad=1),
         lambda c: _np_col2im(c, (2, 5, 4), 3, 2, 1), [(2, 18, 6)]),
    Case("col2im_dilation", lambda c: F.col2im(c, (1, 6, 7), 2, stride=2, pad=2, dilation=3),
         lambda c: _np_col2im(c, (1, 6, 7), 2, 2, 2, 3), [(1, 4, 16)]),
    Case("conv2d", lambda x, w, b: F.conv2d(x, w, b, pad=1),
         lambda x, w, b: _np_conv(x, w, b, p=1), [(2, 2, 4, 4), (3, 2, 3, 3), (3,)]),
    Case("conv2d_groups_stride_dilation",
         lambda x, w: F.conv2d(x, w, stride=2, pad=1, dilation=2, groups=2),
         lambda x, w: _np_conv(x, w, s=2, p=1, d=2, g=2), [(1, 4, 5, 5), (2, 2, 2, 2)]),
    Case("max_pooling", lambda x: F.max_pooling(x, 2), lambda x: _np_pool(x, 2, np.max),
         [(1, 2, 4, 4)]),
    Case("average_pooling", lambda x: F.average_pooling(x, 2),
         lambda x: _np_pool(x, 2, np.mean), [(1, 2, 4, 4)]),
    Case("max_pooling_overlap_pad", lambda x: F.max_pooling(x, 3, stride=2, pad=1),
         lambda x: _np_pool_windows(x, 3, 2, 1, "max"), [(1, 2, 5, 6)]),
    Case("average_pooling_overlap_pad", lambda x: F.average_pooling(x, 3, stride=2, pad=1),
         lambda x: _np_pool_windows(x, 3, 2, 1, "average"), [(1, 2, 5, 6)]),
    Case("max_pooling_overlap", lambda x: F.max_pooling(x, 2, stride=1),
         lambda x: _np_pool_windows(x, 2, 1, 0, "max"), [(2, 1, 4, 3)]),
    Case("batch_normalization",
         lambda x, g, b, rm, rv: F.batch_normalization(x, g, b, rm, rv),
         lambda x, g, b, rm, rv: _np_bn(x, g, b), [(4, 3, 2), (3,), (3,)],
         consts=[_RM, _RV]),
    Case("batch_normalization_eval",
         lambda x, g, b, rm, rv: F.batch_normalization(x, g, b, rm, rv, training=False),
         lambda x, g, b, rm, rv: _np_bn(x, g, b, rm, rv), [(4, 3, 2), (3,), (3,)],
         consts=[_RM, _RV]),
]


def _inputs(case: Case, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    xs = []
    for shape in case.shapes:
        x = rng.uniform(case.low, case.high, shape)
        if case.low < 0:  # keep away from kinks (0 for abs/relu, ties for max/min, clip ends)
            x = np.where(np.abs(x) < 0.1, x + 0.3, x)
            x = np.where(np.abs(x + 0.5) < 0.05, x + 0.2, x)
            x = np.where(np.abs(x - 0.7) < 0.05, x + 0.2, x)
        xs.append(x)
    return xs


def _numerical(case: Case, xs: list, gy: np.ndarray, eps: float = 1e-6) -> list[np.ndarray]:
    def f(args):
        return float(np.sum(case.ref(*args, *case.consts) * gy))
    out = []
    for i, x in enumerate(xs):
        g = np.zeros_like(x)
        for j in range(x.size):
            hi = [a.copy() for a in xs]
            lo = [a.copy() for a in xs]
            hi[i].reshape(-1)[j] += eps
            lo[i].reshape(-1)[j] -= eps
            g.reshape(-1)[j] = (f(hi) - f(lo)) / (2 * eps)
        out.append(g)
    return out


def _const_args(case: Case) -> list:
    return [nna.NdArray.from_numpy_array(c) for c in case.consts]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_function(case: Case, backend: str) -> None:
    xs = _inputs(case)
    want = case.ref(*xs, *case.consts)
    rng = np.random.default_rng(1)
    gy = rng.standard_normal(np.shape(want))
    num = _numerical(case, xs, gy)
    consts = _const_args(case)

    # Static graph: forward, then backward into randomly pre-filled leaf gradients.
    vs = [grad.Variable.from_numpy_array(x, need_grad=True) for x in xs]
    y = case.fn(*vs, *consts)
    assert y.shape == np.shape(want)
    y.forward()
    np.testing.assert_allclose(y.d, want, **tol(y.dtype))
    pre = [rng.standard_normal(x.shape) for x in xs]
    for v, p in zip(vs, pre):
        v.g = p
    y.backward(gy)
    for v, p, n in zip(vs, pre, num):
        np.testing.assert_allclose(v.g, p + n, **GRAD_TOL)
    # A second backward accumulates once more.
    y.backward(gy)
    for v, p, n in zip(vs, pre, num):
        np.testing.assert_allclose(v.g, p + 2 * n, **GRAD_TOL)

    # clear_buffer=True on both passes: the same gradients.
    for v in vs:
        v.grad.zero()
    y.forward(clear_buffer=True)
    y.backward(gy, clear_buffer=True)
    for v, n in zip(vs, num):
        np.testing.assert_allclose(v.g, n, **GRAD_TOL)

    # Define-by-run agrees; a need_grad=False input keeps its gradient untouched.
    keep = rng.standard_normal(xs[0].shape)
    vs[0].g = keep
    vs[0].need_grad = False
    for v in vs[1:]:
        v.grad.zero()
    with grad.auto_forward():
        y2 = case.fn(*vs, *consts)
    np.testing.assert_allclose(y2.d, want, **tol(y2.dtype))
    y2.backward(gy)  # with no need_grad input nothing runs (nnabla's rule)
    np.testing.assert_array_equal(vs[0].g, keep)
    for v, n in zip(vs[1:], num[1:]):
        np.testing.assert_allclose(v.g, n, **GRAD_TOL)


#: Elementwise rows checked through intermediates on numpy only. On a compiling backend
#: each makes a fused ``f(x * 1.0)`` forward and a fused backward program of its own (two
#: of the suite's cold compiles) that differ from the kept rows' (tanh, relu; add,
#: sub and mul's broadcasts, div, pow, maximum) only in f's expression: the engine writes
#: an intermediate's gradient the same way for every rule (``grad/backward.py``), every
#: row's fused forward and backward run on OpenCL in
#: ``test_fusion_graphs::test_every_row_fused_graph_equals_unfused`` and unfused in
#: ``test_function`` above.
THROUGH_ON_NUMPY_ONLY = {
    "square", "minimum", "neg", "exp", "log", "sqrt", "sigmoid", "erf", "erfc", "gelu",
    "gelu_tanh", "expm1", "log1p", "log2", "log10", "sin", "cos", "tan", "asin", "acos",
    "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "logit", "positive", "ceil", "floor",
    "trunc", "round", "atan2", "hypot", "logaddexp", "copysign", "abs"}
#: Other cases checked through intermediates on numpy only, each with the sibling that
#: stands for it on OpenCL: the same rule with other attributes or expression, with no
#: scatter in its backward (where a rule adding into a NaN-filled gradient would show)
#: or, for overlapping max pooling, the same scattering kernel with padding besides.
THROUGH_SIBLINGS = {
    "min": "max", "log_softmax": "softmax", "softmax_cross_entropy_axis1":
    "softmax_cross_entropy", "rdiv_scalar": "rsub_scalar", "pow_scalar": "add_scalar",
    "leaky_relu": "where", "clip": "where", "mean_squared_error": "sub",
    "max_pooling_overlap": "max_pooling_overlap_pad"}


def _on_backends(cases: list, numpy_only: set) -> list:
    """``(backend, case)`` parameters: every case on numpy, those not in ``numpy_only`` on
    the compiling backends too (``helpers.device_params``)."""
    return device_params([(c,) for c in cases], lambda c: c[0].name not in numpy_only,
                         lambda c: c[0].name)


def test_through_cases_left_to_numpy_are_fused_rows() -> None:
    """Each row left out on OpenCL is a case here and a row the fused-graph test fuses;
    each sibling left out has its stand-in on OpenCL."""
    names = {c.name for c in CASES}
    assert THROUGH_ON_NUMPY_ONLY < names and set(THROUGH_SIBLINGS) < names
    assert THROUGH_ON_NUMPY_ONLY <= {r.name for r in fused_rows(False)}
    kept = names - THROUGH_ON_NUMPY_ONLY - set(THROUGH_SIBLINGS)
    assert set(THROUGH_SIBLINGS.values()) <= kept


@pytest.mark.parametrize(("backend", "case"),
                         _on_backends(CASES, THROUGH_ON_NUMPY_ONLY | set(THROUGH_SIBLINGS)),
                         indirect=["backend"])
def test_function_through_intermediates(case: Case, backend: str) -> None:
    """Inputs computed by another function (x * 1.0) with NaN-filled gradients: backward
    writes them on first visit (accum=False) and the leaves get the chained gradient."""
    xs = _inputs(case)
    want = case.ref(*xs, *case.consts)
    gy = np.random.default_rng(2).standard_normal(np.shape(want))
    num = _numerical(case, xs, gy)
    for auto in (False, True):
        leaves = [grad.Variable.from_numpy_array(x, need_grad=True) for x in xs]
        with grad.auto_forward(auto):
            mids = [v * 1.0 for v in leaves]
            y = case.fn(*mids, *_const_args(case))
        if not auto:
            y.forward()
        for m in mids:
            m.g = np.full(m.shape, np.nan)
        y.backward(gy)
        for v, m, n in zip(leaves, mids, num):
            np.testing.assert_allclose(m.g, n, **GRAD_TOL)
            np.testing.assert_allclose(v.g, n, **GRAD_TOL)


def test_float32_static_matches_auto(backend: str) -> None:
    """float32 graphs: static replay and define-by-run give identical results."""
    rng = np.random.default_rng(3)
    x = grad.Variable.from_numpy_array(rng.standard_normal((4, 6)).astype(np.float32))
    w = grad.Variable.from_numpy_array(rng.standard_normal((6, 3)).astype(np.float32), True)
    b = grad.Variable.from_numpy_array(rng.standard_normal((3,)).astype(np.float32), True)
    t = nna.NdArray.from_numpy_array(np.array([0, 2, 1, 1]))

    def net():
        return F.mean(F.softmax_cross_entropy(F.tanh(F.affine(x, w, b)), t))

    y = net()
    y.forward()
    y.backward()
    static = [w.g.copy(), b.g.copy()]
    w.grad.zero()
    b.grad.zero()
    with grad.auto_forward():
        y2 = net()
    y2.backward()
    assert y.dtype == np.float32 and w.g.dtype == np.float32
    np.testing.assert_allclose(y.d, y2.d, **tol(np.float32))
    for a, s in zip((w.g, b.g), static):
        np.testing.assert_allclose(a, s, **tol(np.float32))


def test_dropout(backend: str) -> None:
    """The gradient is the upstream gradient times the mask the forward drew."""
    x = grad.Variable.from_numpy_array(np.random.default_rng(0).uniform(1, 2, (5, 8)), True)
    y = F.dropout(x, 0.4, seed=7)
    y.forward()
    mask = y.d / x.d
    assert set(np.round(np.unique(mask), 6)) <= {0.0, round(1 / 0.6, 6)}
    gy = np.random.default_rng(1).standard_normal(x.shape)
    y.backward(gy)
    np.testing.assert_allclose(x.g, gy * mask, **tol(np.float64))
    with grad.auto_forward():
        x.grad.zero()
        y2 = F.dropout(x, 0.4)
        y2.backward(gy)
    np.testing.assert_allclose(x.g, gy * (y2.d / x.d), **tol(np.float64))


@pytest.mark.parametrize("op", [F.argmax, F.sign, lambda x: F.greater(x, 0.0),
                                lambda x: F.one_hot(F.argmax(x, axis=1), 3)])
def test_non_differentiable(op, backend: str) -> None:
    x = grad.Variable.from_numpy_array(np.array([[0.5, -1.0, 2.0]]), need_grad=True)
    with grad.auto_forward():
        y = op(x)
    assert not y.need_grad and y.parent is None
    z = F.sum(x * 2.0)
    z.forward()
    z.backward()
    np.testing.assert_allclose(x.g, 2.0)


def test_every_differentiable_table_row_has_a_case() -> None:
    """A derivative added to the elementwise tables is checked numerically above."""
    from nnarray.ops import elementwise
    rows = {n for n, row in elementwise.UNARY.items() if row[2] is not None}
    rows |= {n for n, row in elementwise.BINARY.items() if row[2] is not None}
    assert rows <= {c.name for c in CASES}


#: float32 gradients: a representative set (elementwise, broadcasting, reductions,
#: matmul, softmax/cross-entropy, conv, pooling, normalization) against the float64
#: numerical reference, with float32's tolerance.
F32_CASES = [c for c in CASES if c.name in {
    "add", "mul", "div", "exp", "tanh", "sigmoid", "sum", "mean", "max", "matmul_batched",
    "affine", "softmax", "log_softmax", "softmax_cross_entropy", "mean_squared_error",
    "conv2d", "max_pooling_overlap_pad", "average_pooling_overlap_pad", "batch_normalization",
    "im2col_stride_pad", "col2im_stride_pad", "concatenate", "transpose", "broadcast_to"}]
F32_GRAD_TOL = {"rtol": 1e-3, "atol": 1e-4}


def test_float32_case_list_is_complete() -> None:
    assert len(F32_CASES) == 24


@pytest.mark.parametrize("case", F32_CASES, ids=[c.name for c in F32_CASES])
def test_function_float32(case: Case, backend: str) -> None:
    """The same gradients in float32, define-by-run and static, with float32 results."""
    xs = _inputs(case)
    xs32 = [x.astype(np.float32) for x in xs]
    want = case.ref(*[x.astype(np.float64) for x in xs32], *case.consts)
    gy = np.random.default_rng(1).standard_normal(np.shape(want))
    num = _numerical(case, [x.astype(np.float64) for x in xs32], gy)
    consts = [nna.NdArray.from_numpy_array(c.astype(np.float32) if c.dtype.kind == "f" else c)
              for c in case.consts]
    for auto in (False, True):
        vs = [grad.Variable.from_numpy_array(x, need_grad=True) for x in xs32]
        with grad.auto_forward(auto):
            y = case.fn(*vs, *consts)
        if not auto:
            y.forward()
        assert y.dtype == np.float32
        np.testing.assert_allclose(y.d, want, **tol(np.float32))
        y.backward(gy.astype(np.float32))
        for v, n in zip(vs, num):
            assert v.g.dtype == np.float32
            np.testing.assert_allclose(v.g, n, **F32_GRAD_TOL)
