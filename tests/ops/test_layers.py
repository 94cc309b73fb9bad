"""The transformer's functions and layers (``F.embedding``, ``F.layer_norm``, ``F.gelu``,
``F.scaled_dot_product_attention``; ``nn.Embedding``, ``LayerNorm``,
``MultiheadAttention``, ``GELU``, ``MaxPool2d``, ``AvgPool2d``, ``Flatten``) against numpy
references, with their gradients, on every backend."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, nn
from nnarray.errors import DTypeError, ShapeError

_erf = np.vectorize(math.erf)


def var(a, need_grad=False):
    return grad.Variable.from_numpy_array(np.asarray(a), need_grad=need_grad)


def ref_layer_norm(x, k, eps=1e-5):
    axes = tuple(range(x.ndim - k, x.ndim))
    xc = x - x.mean(axes, keepdims=True)
    return xc / np.sqrt((xc * xc).mean(axes, keepdims=True) + eps)


def ref_sdpa(q, k, v, mask=None, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (scale or 1 / math.sqrt(q.shape[-1]))
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True) @ v


# -- embedding ---------------------------------------------------------------------------
def test_embedding_rows_and_scatter_add_gradient(backend):
    rng = np.random.default_rng(0)
    W = rng.standard_normal((5, 3)).astype(np.float32)
    idx = np.array([[0, 4, 4], [4, 1, 0]])
    Wv = var(W, True)
    with grad.auto_forward():
        y = F.embedding(var(idx), Wv)
        loss = F.sum(y * y)
    assert y.data.head == nna.get_current_context().key  # before .d reads it to the host
    np.testing.assert_array_equal(y.d, W[idx])
    loss.backward()
    want = np.zeros_like(W)
    np.add.at(want, idx, 2 * W[idx])  # repeated rows accumulate
    np.testing.assert_allclose(Wv.g, want, rtol=1e-6)
    np.testing.assert_array_equal(F.embedding(nna.array(idx), nna.array(W)).numpy(), W[idx])


def test_embedding_rejects_bad_indices(backend):
    W = nna.array(np.ones((4, 2), np.float32))
    with pytest.raises(IndexError, match="index 4 is out of range.*4 rows"):
        F.embedding(nna.array(np.array([1, 4])), W)
    with pytest.raises(IndexError, match="index -1"):
        F.embedding(nna.array(np.array([-1])), W)
    with pytest.raises(DTypeError, match="embedding: indices must be integers"):
        F.embedding(nna.array(np.array([1.0])), W)
    with pytest.raises(ShapeError, match="weight must be 2-D"):
        F.embedding(nna.array(np.array([1])), nna.array(np.ones(4, np.float32)))


def test_embedding_module(backend):
    nna.seed(0)
    m = nn.Embedding(10, 4)
    assert m.W.shape == (10, 4) and 0.5 < m.W.d.std() < 1.5  # torch's N(0, 1)
    y = m(var(np.array([[1, 2], [3, 9]])))
    y.forward()
    np.testing.assert_array_equal(y.d, m.W.d[[[1, 2], [3, 9]]])


# -- layer norm --------------------------------------------------------------------------
def _gradcheck(fn, ins) -> bool:
    """``grad.gradcheck`` replaying its graphs unfused: on a compiling backend each fused
    replay is a program of its own, and what this file checks is the layers' rules
    (fusion: tests/grad/test_fusion_graphs.py; these layers' replays fused:
    tests/grad/test_gradgrad_nn.py's FUSED and the examples' training)."""
    with grad.fusion_enabled(False):
        return grad.gradcheck(fn, ins, eps=1e-6)


@pytest.mark.parametrize("shape, k", [((4, 6), 1), ((2, 3, 4), 2)])
def test_layer_norm_matches_reference_and_gradcheck(backend, shape, k):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape) * 3 + 1
    w, b = rng.standard_normal(shape[-k:]), rng.standard_normal(shape[-k:])
    y = F.layer_norm(nna.array(x.astype(np.float32)), shape[-k:], nna.array(w.astype(np.float32)),
                     nna.array(b.astype(np.float32)))
    np.testing.assert_allclose(y.numpy(), ref_layer_norm(x, k) * w + b, rtol=1e-4, atol=1e-5)
    ins = [var(a, True) for a in (x, w, b)]
    assert _gradcheck(lambda x, w, b: F.layer_norm(x, shape[-k:], w, b), ins)


def test_layer_norm_module_and_errors(backend):
    m = nn.LayerNorm(4)
    assert list(m.parameters()) == ["weight", "bias"]
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    y = m(var(x))
    y.forward()
    np.testing.assert_allclose(y.d, ref_layer_norm(x, 1), rtol=1e-5, atol=1e-6)
    assert not nn.LayerNorm(4, elementwise_affine=False).parameters()
    with pytest.raises(ShapeError, match="normalized_shape \\(3,\\) does not match"):
        F.layer_norm(nna.array(x), (3,))
    with pytest.raises(ShapeError, match="weight has shape \\(3,\\), expected \\(4,\\)"):
        F.layer_norm(nna.array(x), 4, weight=nna.array(np.ones(3, np.float32)))
    with pytest.raises(nna.errors.InvalidValueError, match="takes ints.*array of shape \\(4,\\)"):
        F.layer_norm(nna.array(x), nna.array(np.ones(4, np.float32)))  # weight in its place


# -- gelu --------------------------------------------------------------------------------
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_reference_and_gradcheck(backend, approximate):
    x = np.linspace(-6, 6, 41)
    if approximate == "none":
        want = 0.5 * x * (1 + _erf(x / math.sqrt(2)))
    else:
        want = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    got = F.gelu(nna.array(x.astype(np.float32)), approximate=approximate).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)
    assert grad.gradcheck(lambda v: F.gelu(v, approximate=approximate), [var(x, True)],
                          eps=1e-6)
    y = nn.GELU(approximate)(var(x.astype(np.float32)))
    y.forward()
    np.testing.assert_allclose(y.d, got)


def test_gelu_rejects_unknown_approximation():
    with pytest.raises(ValueError, match="'none' or 'tanh'"):
        F.gelu(nna.array(np.ones(2, np.float32)), approximate="erf")
    with pytest.raises(ValueError, match="'none' or 'tanh'"):
        nn.GELU("fast")


# -- attention ---------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["plain", "causal", "bool", "float"])
def test_sdpa_matches_reference_and_gradcheck(backend, kind):
    rng = np.random.default_rng(2)
    q = rng.standard_normal((2, 4, 3))
    k, v = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 2))
    mask, kw = None, {}
    if kind == "causal":
        mask, kw = np.tril(np.ones((4, 5), bool)), {"is_causal": True}
    elif kind == "bool":
        mask = rng.random((4, 5)) > 0.4
        mask[:, 0] = True
        kw = {"attn_mask": nna.array(mask)}
    elif kind == "float":
        mask = rng.standard_normal((4, 5))
        kw = {"attn_mask": nna.array(mask.astype(np.float32)), "scale": 0.7}
    got = F.scaled_dot_product_attention(*(nna.array(a.astype(np.float32)) for a in (q, k, v)),
                                         **kw).numpy()
    want = ref_sdpa(q, k, v, mask, kw.get("scale"))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    if kind == "float":
        kw["attn_mask"] = nna.array(mask)  # float64 with the float64 inputs
    assert _gradcheck(lambda *a: F.scaled_dot_product_attention(*a, **kw),
                      [var(a, True) for a in (q, k, v)])


def test_sdpa_errors():
    a = nna.array(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="attn_mask or is_causal"):
        F.scaled_dot_product_attention(a, a, a, attn_mask=nna.array(np.ones((2, 2), bool)),
                                       is_causal=True)
    with pytest.raises(ShapeError, match="one feature size"):
        F.scaled_dot_product_attention(a, nna.array(np.ones((2, 4), np.float32)), a)
    with pytest.raises(DTypeError, match="attn_mask must be bool or floating"):
        F.scaled_dot_product_attention(a, a, a, attn_mask=nna.array(np.ones((2, 2), np.int32)))


def test_multihead_attention_matches_reference_and_is_causal(backend):
    rng = np.random.default_rng(3)
    m = nn.MultiheadAttention(6, 3, causal=True)
    P = {k: v.d.astype(np.float64) for k, v in m.parameters().items()}
    x = rng.standard_normal((2, 4, 6)).astype(np.float32)

    def heads(h):
        return h.reshape(2, 4, 3, 2).transpose(0, 2, 1, 3)

    q, k, v = (heads(x @ P[f"{s}.W"] + P[f"{s}.b"]) for s in "qkv")
    o = ref_sdpa(q, k, v, np.tril(np.ones((4, 4), bool))).transpose(0, 2, 1, 3).reshape(2, 4, 6)
    y = m(var(x))
    y.forward()
    np.testing.assert_allclose(y.d, o @ P["out.W"] + P["out.b"], rtol=1e-4, atol=1e-5)
    x2 = x.copy()
    x2[:, -1] += 5  # a later position changes nothing before it
    y2 = m(var(x2))
    y2.forward()
    np.testing.assert_allclose(y2.d[:, :-1], y.d[:, :-1], rtol=1e-5, atol=1e-6)
    assert not np.allclose(y2.d[:, -1], y.d[:, -1])
    with pytest.raises(ValueError, match="not divisible"):
        nn.MultiheadAttention(6, 4)


# -- pooling and flatten -----------------------------------------------------------------
def test_pooling_and_flatten_modules(backend):
    x = np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)
    xv = var(x, True)
    with grad.auto_forward():
        mp, ap = nn.MaxPool2d(2)(xv), nn.AvgPool2d(2, stride=2)(xv)
        fl = nn.Flatten()(mp)
        total = F.sum(fl)
    blocks = x.reshape(2, 3, 2, 2, 2, 2)
    np.testing.assert_array_equal(mp.d, blocks.max((3, 5)))
    np.testing.assert_allclose(ap.d, blocks.mean((3, 5)))
    assert fl.shape == (2, 12) and nn.Flatten(0, 1)(var(x)).shape == (6, 4, 4)
    total.backward()
    assert xv.g.sum() == 2 * 3 * 4  # one max per window receives the gradient
    with pytest.raises(ValueError, match="out of range"):
        nn.Flatten(2, 1)(var(x))
