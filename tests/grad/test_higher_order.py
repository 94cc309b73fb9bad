"""Higher-order gradients: ``grad.grad`` (``create_graph``, ``allow_unused``, static and
define-by-run), ``backward(create_graph=True)``, every op's double backward
(``gradgradcheck`` in float64, and torch's second derivatives), the functional helpers
and the PythonFunction rule (``GraphError``, never a silent zero)."""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad
from nnarray.errors import GraphError
from nnarray.grad import Variable, gradgradcheck

_RNG = np.random.default_rng(7)


def _vals(shape, dom="any"):
    r = _RNG.standard_normal(shape)
    if dom == "pos":
        return 0.5 + np.abs(r)
    if dom == "unit":
        return np.tanh(r) * 0.8
    if dom == "gt1":
        return 1.2 + np.abs(r)
    if dom == "away":  # away from kinks at 0 (relu, abs, max ...)
        return np.sign(r) * (0.3 + np.abs(r))
    if dom == "spd":  # symmetric positive definite, well conditioned
        return r @ r.T + r.shape[0] * np.eye(r.shape[0])
    if dom == "cplx":
        return r + 1j * _RNG.standard_normal(shape)
    return r


def _var(shape, dom="any", need_grad=True):
    return Variable.from_numpy_array(_vals(shape, dom), need_grad=need_grad)


_IDX = np.array([2, 0, 1, 2])
_LABELS = np.array([[1], [0], [3]])

#: name -> (function of Variables, [(shape, domain)]): every differentiable op, on
#: small float64 inputs away from its kinks.
CASES: dict = {
    # elementwise rows
    **{n: (getattr(F, n), [((2, 3), "any")]) for n in (
        "sin", "cos", "tanh", "sigmoid", "exp", "expm1", "neg", "square", "erf", "erfc",
        "sinh", "cosh", "atan", "asinh", "gelu", "gelu_tanh", "positive")},
    **{n: (getattr(F, n), [((2, 3), "pos")]) for n in ("log", "log1p", "log2", "log10", "sqrt")},
    **{n: (getattr(F, n), [((2, 3), "unit")]) for n in ("asin", "acos", "atanh", "tan")},
    "acosh": (F.acosh, [((2, 3), "gt1")]),
    **{n: (getattr(F, n), [((2, 3), "away")]) for n in ("abs", "relu")},
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), [((2, 3), "away")]),
    "clip": (lambda x: F.clip(x, -0.5, 0.5) * x, [((2, 3), "away")]),
    "round_floor": (lambda x: F.round(x) * x + F.floor(x) * x + F.ceil(x) + F.trunc(x) * x,
                    [((2, 3), "any")]),
    **{n: (getattr(F, n), [((2, 3), "any"), ((2, 3), "any")]) for n in (
        "add", "sub", "mul", "logaddexp", "atan2", "hypot")},
    "div": (F.div, [((2, 3), "any"), ((2, 3), "pos")]),
    "pow": (F.pow, [((2, 3), "pos"), ((2, 3), "any")]),
    "pow_scalar": (lambda x: F.pow(x, 3.0), [((2, 3), "any")]),
    "rpow": (lambda x: F.pow(2.0, x), [((2, 3), "any")]),
    "mul_self": (lambda x: x * x, [((2, 3), "any")]),
    "broadcast_mul": (F.mul, [((2, 3), "any"), ((3,), "any")]),
    "maximum": (F.maximum, [((2, 3), "away"), ((2, 3), "any")]),
    "minimum": (F.minimum, [((2, 3), "away"), ((2, 3), "any")]),
    "remainder": (lambda a: F.remainder(a, 0.7) * a, [((2, 3), "pos")]),
    "copysign": (lambda a, b: F.copysign(a, b) * a, [((2, 3), "any"), ((2, 3), "away")]),
    "where": (lambda a, b: F.where(F.greater(a, 0.0), a * b, F.sin(b)),
              [((2, 3), "away"), ((2, 3), "any")]),
    "cast": (lambda x: F.real(F.cast(x, np.complex128) ** 2) * x, [((2, 3), "any")]),
    # reductions
    "sum": (lambda x: F.sum(x * x, axis=1), [((2, 3), "any")]),
    "mean": (lambda x: F.mean(F.sin(x), axis=0, keepdims=True), [((2, 3), "any")]),
    "max": (lambda x: F.max(x, axis=1) * F.max(x), [((2, 3), "any")]),
    "min": (lambda x: F.min(x, axis=0) ** 2, [((2, 3), "any")]),
    "prod": (lambda x: F.prod(x, axis=1), [((2, 3), "pos")]),
    "cumsum": (lambda x: F.cumulative_sum(x * x, axis=1), [((2, 3), "any")]),
    "cumprod": (lambda x: F.cumulative_prod(x, axis=1), [((2, 3), "pos")]),
    # products
    "matmul": (F.matmul, [((2, 3), "any"), ((3, 4), "any")]),
    "matmul_batched": (F.matmul, [((2, 2, 3), "any"), ((3, 2), "any")]),
    "affine": (lambda x, w, b: F.tanh(F.affine(x, w, b)), [((2, 3), "any"), ((3, 4), "any"),
                                                           ((4,), "any")]),
    # shape ops
    "reshape": (lambda x: F.reshape(x, (3, 2)) ** 2, [((2, 3), "any")]),
    "transpose": (lambda x: F.transpose(x, (1, 0)) * F.transpose(x, (1, 0)), [((2, 3), "any")]),
    "broadcast_to": (lambda x: F.broadcast_to(x, (2, 3)) ** 3, [((1, 3), "any")]),
    "concatenate": (lambda a, b: F.concatenate([a * b, a], axis=1), [((2, 3), "any"),
                                                                   ((2, 3), "any")]),
    "stack": (lambda a, b: F.stack([a * a, b], axis=0), [((2, 3), "any"), ((2, 3), "any")]),
    "slice": (lambda x: F.slice(x, (0, 1), (2, 3)) ** 2, [((2, 3), "any")]),
    "getitem": (lambda x: x[::-1, 1:] ** 3, [((3, 3), "any")]),
    "split": (lambda x: F.split(x * x, 3, axis=1)[1] * x[:, :1], [((2, 3), "any")]),
    # indexing and scatter
    "take": (lambda x: F.take(x, nna.asarray(_IDX), axis=0) ** 2, [((3, 2), "any")]),
    "fancy_index": (lambda x: F.sin(x[nna.asarray(_IDX)]), [((3, 2), "any")]),
    "embedding": (lambda w: F.embedding(nna.asarray(_IDX.reshape(2, 2)), w) ** 2,
                  [((3, 2), "any")]),
    # softmax and losses
    "softmax": (lambda x: F.softmax(x), [((2, 4), "any")]),
    "log_softmax": (lambda x: F.log_softmax(x), [((2, 4), "any")]),
    "softmax_cross_entropy": (lambda x: F.softmax_cross_entropy(x, nna.asarray(_LABELS)),
                              [((3, 4), "any")]),
    "mean_squared_error": (lambda a, b: F.mean_squared_error(a * a, b), [((2, 3), "any"),
                                                                       ((2, 3), "any")]),
    # convolution and pooling
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, pad=1), [((1, 2, 4, 4), "any"),
                                                          ((2, 2, 3, 3), "any"), ((2,), "any")]),
    "conv2d_stride": (lambda x, w: F.conv2d(x * x, w, stride=2), [((1, 1, 5, 5), "any"),
                                                                 ((2, 1, 3, 3), "any")]),
    "conv2d_groups_dilation": (lambda x, w: F.conv2d(x * x, w, pad=1, dilation=2, groups=2),
                               [((1, 2, 5, 5), "any"), ((4, 1, 2, 2), "any")]),
    "max_pooling": (lambda x: F.max_pooling(x * x, (2, 2)), [((1, 1, 4, 4), "any")]),
    "max_pooling_overlap": (lambda x: F.max_pooling(x * x, (3, 3), stride=1, pad=1),
                            [((1, 1, 4, 4), "any")]),
    "batch_normalization_eval": (
        lambda x, g, b: F.batch_normalization(x, g, b, nna.full((1, 3, 1), 0.1, dtype=np.float64),
                                              nna.full((1, 3, 1), 2.0, dtype=np.float64),
                                              axes=(1,), training=False) ** 2,
        [((4, 3, 2), "any"), ((1, 3, 1), "pos"), ((1, 3, 1), "any")]),
    "average_pooling": (lambda x: F.average_pooling(x * x, (2, 2)), [((1, 1, 4, 4), "any")]),
    "im2col_col2im": (lambda x: F.col2im(F.im2col(x, (2, 2)) ** 2, (1, 3, 3), (2, 2)),
                      [((1, 1, 3, 3), "any")]),
    # normalization
    "batch_normalization": (
        lambda x, g, b: F.batch_normalization(x, g, b, nna.zeros((1, 3, 1), dtype=np.float64),
                                              nna.ones((1, 3, 1), dtype=np.float64),
                                              axes=(1,), training=True),
        [((4, 3, 2), "any"), ((1, 3, 1), "pos"), ((1, 3, 1), "any")]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (3,), w, b), [((2, 3), "any"),
                                                                 ((3,), "pos"), ((3,), "any")]),
    # attention
    "attention": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
                  [((1, 3, 2), "any"), ((1, 4, 2), "any"), ((1, 4, 2), "any")]),
    "attention_causal": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                         [((1, 3, 2), "any"), ((1, 3, 2), "any"), ((1, 3, 2), "any")]),
    # complex
    "complex": (lambda a, b: F.complex_abs(F.make_complex(a, b) * F.make_complex(b, a)),
                [((2, 3), "any"), ((2, 3), "away")]),
    "complex_parts": (lambda z: F.real(z * z) + F.imag(F.conj(z) * z * z) + F.angle(z),
                      [((2, 3), "cplx")]),
    "complex_exp": (lambda z: F.exp(z) * F.sin(z), [((2, 3), "cplx")]),
    # linear algebra, sorting, dropout
    "det": (nna.linalg.det, [((3, 3), "spd")]),
    "inv": (nna.linalg.inv, [((3, 3), "spd")]),
    "slogdet": (lambda a: nna.linalg.slogdet(a)[1], [((3, 3), "spd")]),
    "solve": (nna.linalg.solve, [((3, 3), "spd"), ((3, 2), "any")]),
    "cholesky": (lambda a: nna.linalg.cholesky((a + F.transpose(a, (1, 0))) * 0.5),
                 [((3, 3), "spd")]),
    "eigvalsh": (lambda a: nna.linalg.eigvalsh((a + F.transpose(a, (1, 0))) * 0.5),
                 [((3, 3), "spd")]),
    "eigh_values": (lambda a: nna.linalg.eigh((a + F.transpose(a, (1, 0))) * 0.5)[0] ** 2,
                    [((3, 3), "spd")]),
    "eigh_vectors": (lambda a: F.abs(nna.linalg.eigh((a + F.transpose(a, (1, 0))) * 0.5)[1]),
                     [((3, 3), "spd")]),
    "qr": (lambda a: nna.linalg.qr(a)[0] * 1.0 + nna.linalg.qr(a)[1], [((3, 3), "any")]),
    "svdvals": (nna.linalg.svdvals, [((3, 2), "any")]),
    "svd_vectors": (lambda a: F.abs(nna.linalg.svd(a, full_matrices=False)[0]) +
                    F.abs(F.sum(nna.linalg.svd(a, full_matrices=False)[2])),
                    [((3, 2), "any")]),
    "vector_norm": (nna.linalg.vector_norm, [((2, 4), "any")]),
    "sort": (lambda a: nna.sort(a * a, axis=1), [((2, 4), "any")]),
    "dropout": (lambda a: F.dropout(a * a, 0.5, seed=3), [((2, 4), "any")]),
    # fft
    "fft": (lambda z: nna.fft.fft(z * z), [((2, 4), "cplx")]),
    "rfft": (lambda x: nna.fft.rfft(x * x), [((2, 6), "any")]),
    "irfft": (lambda z: nna.fft.irfft(z * z, n=6), [((2, 4), "cplx")]),
}


#: The dense decompositions run on the host on OpenCL (as in ``test_linalg.py``).
_HOST = {"det", "inv", "slogdet", "solve", "cholesky", "eigvalsh", "eigh_values",
         "eigh_vectors", "qr",
         "svdvals", "svd_vectors"}


def _params(cases):
    mark = pytest.mark.allow_fallback("the dense decompositions run on the host on OpenCL")
    return [pytest.param(c, marks=mark) if c in _HOST else c for c in cases]


def _inputs(case):
    return [_var(s, d) for s, d in CASES[case][1]]


@pytest.mark.parametrize("case", _params(sorted(CASES)))
def test_gradgradcheck(backend, case):
    fn = CASES[case][0]
    assert gradgradcheck(fn, _inputs(case), eps=1e-6, atol=1e-5, rtol=1e-4)


def _torch_cases(torch):
    tf = torch.nn.functional
    idx = torch.tensor(_IDX)
    return {
        "sin": torch.sin, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "exp": torch.exp,
        "log": torch.log, "sqrt": torch.sqrt, "erf": torch.erf, "atan": torch.atan,
        "gelu": tf.gelu, "gelu_tanh": lambda x: tf.gelu(x, approximate="tanh"),
        "asin": torch.asin, "acosh": torch.acosh, "tan": torch.tan,
        "div": torch.div, "pow": torch.pow, "rpow": lambda x: torch.pow(2.0, x),
        "atan2": torch.atan2, "logaddexp": torch.logaddexp, "hypot": torch.hypot,
        "mul_self": lambda x: x * x, "broadcast_mul": torch.mul,
        "sum": lambda x: (x * x).sum(1), "mean": lambda x: torch.sin(x).mean(0, keepdim=True),
        "prod": lambda x: x.prod(1), "cumprod": lambda x: x.cumprod(1),
        "max": lambda x: x.max(1).values * x.max(), "min": lambda x: x.min(0).values ** 2,
        "matmul": torch.matmul, "matmul_batched": torch.matmul,
        "affine": lambda x, w, b: torch.tanh(x @ w + b),
        "softmax": lambda x: torch.softmax(x, -1),
        "log_softmax": lambda x: torch.log_softmax(x, -1),
        "softmax_cross_entropy": lambda x: tf.cross_entropy(
            x, torch.tensor(_LABELS[:, 0]), reduction="none"),
        "mean_squared_error": lambda a, b: ((a * a - b) ** 2).mean(),
        "layer_norm": lambda x, w, b: tf.layer_norm(x, (3,), w, b),
        "batch_normalization": lambda x, g, b: tf.batch_norm(
            x, None, None, g.reshape(3), b.reshape(3), training=True),
        "conv2d": lambda x, w, b: tf.conv2d(x, w, b, padding=1),
        "conv2d_stride": lambda x, w: tf.conv2d(x * x, w, stride=2),
        "max_pooling": lambda x: tf.max_pool2d(x * x, 2),
        "average_pooling": lambda x: tf.avg_pool2d(x * x, 2),
        "attention": tf.scaled_dot_product_attention,
        "attention_causal": lambda q, k, v: tf.scaled_dot_product_attention(
            q, k, v, is_causal=True),
        "take": lambda x: x[idx] ** 2, "fancy_index": lambda x: torch.sin(x[idx]),
        "embedding": lambda w: tf.embedding(idx.reshape(2, 2), w) ** 2,
        "complex_exp": lambda z: torch.exp(z) * torch.sin(z),
        "fft": lambda z: torch.fft.fft(z * z),
        "det": torch.linalg.det, "inv": torch.linalg.inv,
        "slogdet": lambda a: torch.linalg.slogdet(a)[1], "solve": torch.linalg.solve,
        "cholesky": lambda a: torch.linalg.cholesky((a + a.T) * 0.5),
        "eigvalsh": lambda a: torch.linalg.eigvalsh((a + a.T) * 0.5),
        "svdvals": torch.linalg.svdvals, "vector_norm": torch.linalg.vector_norm,
    }


def _second(fn, xs, u, vs, create):
    """``d/dx <d fn/dx^T u, v>``: the double backward of ``fn``, in nnarray."""
    gs = grad.grad(fn(*xs), xs, grad_outputs=u, create_graph=True)
    s = None
    for g, v in zip(gs, vs):
        t = F.sum(F.real(g * v) if g.dtype.kind == "c" else g * v)
        s = t if s is None else s + t
    return grad.grad(s, xs, allow_unused=True, create_graph=create)


_TORCH_SHARED = (
    "sin tanh sigmoid exp log sqrt erf atan gelu gelu_tanh asin acosh tan div pow rpow atan2 "
    "logaddexp hypot mul_self broadcast_mul sum mean prod cumprod max min matmul "
    "matmul_batched affine softmax log_softmax softmax_cross_entropy mean_squared_error "
    "layer_norm batch_normalization conv2d conv2d_stride max_pooling average_pooling "
    "attention attention_causal take fancy_index embedding complex_exp fft det inv slogdet "
    "solve cholesky eigvalsh svdvals vector_norm").split()


@pytest.mark.parametrize("case", _params(_TORCH_SHARED))
def test_second_derivatives_match_torch(backend, case):
    torch = pytest.importorskip("torch")
    tfn = _torch_cases(torch)[case]
    xs = _inputs(case)
    with grad.auto_forward():
        y = CASES[case][0](*xs)
    u = _vals(y.shape, "cplx" if y.dtype.kind == "c" else "any")
    vs = [_vals(x.shape, "cplx" if x.dtype.kind == "c" else "any") for x in xs]
    with grad.auto_forward():
        hs = _second(CASES[case][0], xs, u, [Variable.from_numpy_array(np.conj(v))
                                             for v in vs], False)
    ts = [torch.tensor(x.d, requires_grad=True) for x in xs]
    tgs = torch.autograd.grad(tfn(*ts), ts, torch.tensor(u), create_graph=True)
    s = sum((torch.real(g * torch.tensor(v).conj()) if g.is_complex() else g * torch.tensor(v))
            .sum() for g, v in zip(tgs, vs))
    ths = torch.autograd.grad(s, ts, allow_unused=True)
    for x, h, th in zip(xs, hs, ths):
        got = np.zeros(x.shape) if h is None else h.d
        want = np.zeros(x.shape) if th is None else th.detach().resolve_conj().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)


# -- grad.grad ------------------------------------------------------------------------------
def test_grad_leaves_grad_untouched_and_seeds_ones(backend):
    x = _var((2, 3))
    x.g = np.full((2, 3), 5.0)
    with grad.auto_forward():
        (g,) = grad.grad(F.sin(x) * 2.0, x)  # a (2, 3) output: ones seeded (nnabla's rule)
    np.testing.assert_allclose(g.d, 2 * np.cos(x.d), rtol=1e-12)
    np.testing.assert_array_equal(x.g, 5.0)
    assert g.parent is None and not g.need_grad


def test_grad_create_graph_gives_second_derivative(backend):
    x = _var((4,))
    with grad.auto_forward():
        (g,) = grad.grad(F.sum(x ** 3), x, create_graph=True)
        assert g.need_grad
        (h,) = grad.grad(F.sum(g), x)
    np.testing.assert_allclose(g.d, 3 * x.d ** 2, rtol=1e-12)
    np.testing.assert_allclose(h.d, 6 * x.d, rtol=1e-12)


def test_grad_static_graph_is_a_graph(backend):
    x = _var((3,))
    y = F.sum(F.exp(x) * x)
    (g,) = grad.grad(y, x, create_graph=True)
    (h,) = grad.grad(F.sum(g * g), x)
    h.forward()
    e = np.exp(x.d)
    np.testing.assert_allclose(h.d, 2 * (e * x.d + e) * (e * x.d + 2 * e), rtol=1e-12)
    x.d = x.d + 1.0  # a static graph runs again on new data
    h.forward()
    e = np.exp(x.d)
    np.testing.assert_allclose(h.d, 2 * (e * x.d + e) * (e * x.d + 2 * e), rtol=1e-12)


def test_grad_static_without_create_graph_stops_there(backend):
    x = _var((3,))
    (g,) = grad.grad(F.sum(F.sin(x)), x)
    g.forward()
    np.testing.assert_allclose(g.d, np.cos(x.d), rtol=1e-12)
    assert not g.need_grad


def test_grad_several_outputs_and_intermediate_input(backend):
    x = _var((3,))
    with grad.auto_forward():
        h = F.tanh(x)
        y1, y2 = F.sum(h * h), F.sum(F.exp(x))
        gh, gx = grad.grad([y1, y2], [h, x], grad_outputs=[2.0, 1.0], retain_graph=True)
    t = np.tanh(x.d)
    np.testing.assert_allclose(gh.d, 4 * t, rtol=1e-12)
    np.testing.assert_allclose(gx.d, 4 * t * (1 - t * t) + np.exp(x.d), rtol=1e-12)


def test_grad_unused_input(backend):
    x, z = _var((2,)), _var((2,))
    with grad.auto_forward():
        y = F.sum(F.sin(x))
        with pytest.raises(GraphError, match="input 1 .*not used"):
            grad.grad(y, [x, z], retain_graph=True)
        gx, gz = grad.grad(y, [x, z], allow_unused=True)
    assert gz is None and gx is not None


def test_grad_refuses_input_without_need_grad(backend):
    x = _var((2,), need_grad=False)
    w = _var((2,))
    with grad.auto_forward():
        with pytest.raises(GraphError, match="input 0 .*does not require"):
            grad.grad(F.sum(x * w), [x])


def test_grad_frees_define_by_run_graph_unless_retained(backend):
    x = _var((2,))
    with grad.auto_forward():
        y = F.sum(F.exp(x))
        grad.grad(y, x)
        with pytest.raises(GraphError, match="freed"):
            grad.grad(y, x)


def test_backward_create_graph_accumulates_a_graph(backend):
    x = _var((3,))
    x.grad.zero()
    with grad.auto_forward():
        y = F.sum(x ** 3)
        y.backward(create_graph=True)
        np.testing.assert_allclose(x.g, 3 * x.d ** 2, rtol=1e-12)
        gp = F.sum(x.grad_variable * x.grad_variable)
        (h,) = grad.grad(gp, x)
    np.testing.assert_allclose(h.d, 2 * 3 * x.d ** 2 * 6 * x.d, rtol=1e-12)


def test_backward_create_graph_static(backend):
    x = _var((3,))
    x.grad.zero()
    y = F.sum(F.sin(x))
    y.forward()
    y.backward(create_graph=True)
    np.testing.assert_allclose(x.g, np.cos(x.d), rtol=1e-12)
    (h,) = grad.grad(F.sum(x.grad_variable), x)
    h.forward()
    np.testing.assert_allclose(h.d, -np.sin(x.d), rtol=1e-12)


def test_scalar_base_power_gradient(backend):
    """``2.0 ** x``'s rule took ``F.log`` of the Python base (a TypeError)."""
    x = _var((3,))
    x.grad.zero()
    with grad.auto_forward():
        F.sum(2.0 ** x).backward()
    np.testing.assert_allclose(x.g, np.log(2.0) * 2.0 ** x.d, rtol=1e-12)


class _Cube(grad.PythonFunction):
    def setup_impl(self, inputs, outputs):
        outputs[0].reset_shape(inputs[0].shape, True)

    def forward_impl(self, inputs, outputs):
        outputs[0].d = inputs[0].d ** 3

    def backward_impl(self, inputs, outputs, propagate_down, accum):
        g = 3 * inputs[0].d ** 2 * outputs[0].g
        inputs[0].g = inputs[0].g + g if accum[0] else g


def test_python_function_first_order_and_refused_second(backend):
    x = _var((3,))
    x.g = np.ones(3)
    with grad.auto_forward():
        (g,) = grad.grad(F.sum(_Cube()(x)), x, create_graph=True)
        np.testing.assert_allclose(g.d, 3 * x.d ** 2, rtol=1e-12)
        np.testing.assert_array_equal(x.g, 1.0)  # untouched
        with pytest.raises(GraphError, match="_Cube.*not differentiable"):
            grad.grad(F.sum(g), x)


# -- the functional helpers -------------------------------------------------------------------
def _mlp(x, w):
    return F.sum(F.tanh(F.matmul(x, w)) ** 2)


def _torch_mlp(x, w):
    import torch
    return (torch.tanh(x @ w) ** 2).sum()


def _pair():
    return _vals((3, 4)), _vals((4, 2))


@pytest.mark.parametrize("what", ["vjp", "jvp", "hvp", "vhp"])
def test_products_match_torch(backend, what):
    torch = pytest.importorskip("torch")
    tf = torch.autograd.functional
    x, w = _pair()
    vx, vw = _vals(x.shape), _vals(w.shape)
    if what == "vjp":
        fn, tfn, v = (lambda a, b: F.tanh(F.matmul(a, b)),
                      lambda a, b: torch.tanh(a @ b), _vals((3, 2)))
    elif what == "jvp":
        fn, tfn, v = (lambda a, b: F.tanh(F.matmul(a, b)),
                      lambda a, b: torch.tanh(a @ b), (vx, vw))
    else:
        fn, tfn, v = _mlp, _torch_mlp, (vx, vw)
    out, res = getattr(grad, what)(fn, (nna.asarray(x), nna.asarray(w)), v)
    tv = tuple(torch.tensor(a) for a in v) if isinstance(v, tuple) else torch.tensor(v)
    tout, tres = getattr(tf, what)(tfn, (torch.tensor(x), torch.tensor(w)), tv)
    np.testing.assert_allclose(out.d, tout.numpy(), rtol=1e-12)
    tres = tres if isinstance(tres, tuple) else (tres,)
    res = res if isinstance(res, tuple) else (res,)
    for r, t in zip(res, tres):
        np.testing.assert_allclose(r.d, t.numpy(), rtol=1e-10, atol=1e-12)
        assert not r.need_grad


def test_jacobian_and_hessian_match_torch(backend):
    torch = pytest.importorskip("torch")
    tf = torch.autograd.functional
    x, w = _pair()
    J = grad.jacobian(lambda a, b: F.tanh(F.matmul(a, b)), (x, w))
    tJ = tf.jacobian(lambda a, b: torch.tanh(a @ b), (torch.tensor(x), torch.tensor(w)))
    for r, t in zip(J, tJ):
        assert r.shape == tuple(t.shape)
        np.testing.assert_allclose(r.d, t.numpy(), rtol=1e-10, atol=1e-12)
    H = grad.hessian(_mlp, (nna.asarray(x), nna.asarray(w)))
    tH = tf.hessian(_torch_mlp, (torch.tensor(x), torch.tensor(w)))
    for i in range(2):
        for j in range(2):
            assert H[i][j].shape == tuple(tH[i][j].shape)
            np.testing.assert_allclose(H[i][j].d, tH[i][j].numpy(), rtol=1e-10, atol=1e-12)
    h1 = grad.hessian(lambda a: F.sum(F.exp(a) * a), nna.asarray(x[0]))  # one input: an array
    np.testing.assert_allclose(h1.d, np.diag(np.exp(x[0]) * (x[0] + 2)), rtol=1e-12)


def test_helpers_create_graph_stay_differentiable(backend):
    """MAML-like: an hvp taken with create_graph differentiates with respect to the
    Variables that went in."""
    x = _var((3,))
    with grad.auto_forward():
        _, hv = grad.hvp(lambda a: F.sum(a ** 4), x, np.ones(3), create_graph=True)
        (g,) = grad.grad(F.sum(hv), x)
    np.testing.assert_allclose(hv.d, 12 * x.d ** 2, rtol=1e-12)
    np.testing.assert_allclose(g.d, 24 * x.d, rtol=1e-12)


def test_helpers_refuse_bad_input(backend):
    x = nna.asarray(_vals((3,)))
    with pytest.raises(nna.errors.ShapeError, match="hvp|vhp"):
        grad.hvp(lambda a: a * 2.0, x, np.ones(3))
    with pytest.raises(nna.errors.ShapeError, match="v: shape"):
        grad.jvp(lambda a: a * 2.0, x, np.ones(4))
    with pytest.raises(TypeError, match="inputs"):
        grad.vjp(lambda a: a, [1.0])


# -- a static graph of a gradient ---------------------------------------------------------------
def _penalty_graph(w1, w2, x):
    (g,) = grad.grad(F.sum(F.tanh(F.matmul(F.tanh(F.matmul(x, w1)), w2))), x,
                     create_graph=True)
    return F.mean((F.sqrt(F.sum(g * g, axis=1)) - 1.0) ** 2) + F.mean(F.matmul(x, w1))


def test_static_gradient_penalty_compiles_and_stays_flat(backend):
    import tracemalloc
    w1, w2 = _var((2, 8)), _var((8, 1))
    x = Variable((5, 2), need_grad=True)
    loss = _penalty_graph(w1, w2, x)  # static: one graph, the gradient's nodes included
    rng = np.random.default_rng(3)
    tracemalloc.start()
    try:
        for step in range(40):
            x.d = rng.standard_normal((5, 2))
            w1.grad.zero()
            loss.forward()
            loss.backward()
            if step == 10:
                base = tracemalloc.get_traced_memory()[0]
            with grad.auto_forward():
                a, b = (Variable.from_numpy_array(w.d, need_grad=True) for w in (w1, w2))
                ref = _penalty_graph(a, b, Variable.from_numpy_array(x.d, need_grad=True))
                ref.backward()
            np.testing.assert_allclose(loss.d, ref.d, rtol=1e-12)
            np.testing.assert_allclose(w1.g, a.g, rtol=1e-10)
            w1.d = w1.d - 0.01 * w1.g
        grew = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert grew < 64 * 1024, grew
    text = grad.schedule_of(loss).describe()
    assert text.count("matmul") >= 4 and "tanh" in text  # forward and its backward, one list


def test_python_function_refused_second_static(backend):
    x = _var((3,))
    (g,) = grad.grad(F.sum(_Cube()(x)), x, create_graph=True)  # static: graph values
    g.forward()
    np.testing.assert_allclose(g.d, 3 * x.d ** 2, rtol=1e-12)
    (h,) = grad.grad(F.sum(g), x)
    with pytest.raises(GraphError, match="_Cube.*not differentiable"):
        h.forward()
