"""Double backward of the network ops: softmax and the losses, convolution and pooling,
batch and layer normalization, attention, embedding and dropout: ``gradgradcheck`` in
float64 on every backend and torch's second derivatives (``tests/double_backward.py``)."""

from __future__ import annotations

import numpy as np
from double_backward import family_tests

import nnarray as nna
import nnarray.functions as F

_IDX = np.array([[2, 0], [1, 2]])
_REPEATED = np.array([[0, 0], [2, 0]])
_LABELS = np.array([[1], [0], [2]])
_LABELS_AXIS0 = np.array([[1, 0, 2]])
_MASK = np.array([[0., -1., 0.5], [0., 0., -2.], [1., 0., 0.], [0., 0.5, 0.]])


def _a(v):
    return nna.asarray(v)


def _bn(training: bool):
    def fn(x, g, b):
        mean, var = (nna.full((1, 3, 1), v, dtype=np.float64) for v in (0.1, 2.0))
        y = F.batch_normalization(x, g, b, mean, var, axes=(1,), training=training)
        return y if training else y ** 2
    return fn


def _torch_bn(training: bool):
    def fn(t, x, g, b):
        mean, var = t.full((3,), 0.1, dtype=x.dtype), t.full((3,), 2.0, dtype=x.dtype)
        y = t.nn.functional.batch_norm(x, mean, var, g.reshape(3), b.reshape(3),
                                       training=training)
        return y if training else y ** 2
    return fn


#: name -> (function of Variables, [(shape, domain)]), small float64 inputs.
CASES: dict = {
    # softmax and losses
    "softmax": (F.softmax, [((2, 3), "any")]),
    "softmax_axis0": (lambda x: F.softmax(x, axis=0), [((2, 3), "any")]),
    "log_softmax": (F.log_softmax, [((2, 3), "any")]),
    "softmax_cross_entropy": (lambda x: F.softmax_cross_entropy(x, _a(_LABELS)),
                              [((3, 3), "any")]),
    "softmax_cross_entropy_axis0": (
        lambda x: F.softmax_cross_entropy(x, _a(_LABELS_AXIS0), axis=0), [((3, 3), "any")]),
    "mean_squared_error": (lambda a, b: F.mean_squared_error(a * a, b), [((2, 3), "any"),
                                                                       ((2, 3), "any")]),
    # convolution and pooling
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, pad=1), [((1, 2, 4, 4), "any"),
                                                          ((2, 2, 3, 3), "any"), ((2,), "any")]),
    "conv2d_stride": (lambda x, w: F.conv2d(x * x, w, stride=2), [((1, 1, 5, 5), "any"),
                                                                 ((2, 1, 3, 3), "any")]),
    "conv2d_groups_dilation": (lambda x, w: F.conv2d(x * x, w, pad=1, dilation=2, groups=2),
                               [((1, 2, 5, 5), "any"), ((4, 1, 2, 2), "any")]),
    "im2col_col2im": (lambda x: F.col2im(F.im2col(x, (2, 2)) ** 2, (1, 3, 3), (2, 2)),
                      [((1, 1, 3, 3), "any")]),
    "max_pooling": (lambda x: F.max_pooling(x * x, (2, 2)), [((1, 1, 4, 4), "any")]),
    "max_pooling_overlap": (lambda x: F.max_pooling(x * x, (3, 3), stride=1, pad=1),
                            [((1, 1, 4, 4), "any")]),
    "max_pooling_pad": (lambda x: F.max_pooling(x * x, (2, 2), stride=(2, 1), pad=1),
                        [((1, 1, 3, 4), "any")]),
    "average_pooling": (lambda x: F.average_pooling(x * x, (2, 2)), [((1, 1, 4, 4), "any")]),
    "average_pooling_pad": (lambda x: F.average_pooling(x * x, (3, 3), stride=1, pad=1),
                            [((1, 1, 3, 3), "any")]),
    # normalization
    "batch_normalization": (_bn(True), [((4, 3, 2), "any"), ((1, 3, 1), "pos"),
                                        ((1, 3, 1), "any")]),
    "batch_normalization_eval": (_bn(False), [((4, 3, 2), "any"), ((1, 3, 1), "pos"),
                                              ((1, 3, 1), "any")]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (3,), w, b), [((2, 3), "any"),
                                                                 ((3,), "pos"), ((3,), "any")]),
    "layer_norm_plain": (lambda x: F.layer_norm(x, (2, 3)), [((2, 2, 3), "any")]),
    # attention
    "attention": (F.scaled_dot_product_attention,
                  [((1, 4, 2), "any"), ((1, 3, 2), "any"), ((1, 3, 2), "any")]),
    "attention_causal": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                         [((1, 3, 2), "any"), ((1, 3, 2), "any"), ((1, 3, 2), "any")]),
    "attention_mask": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v,
                                                                      attn_mask=_a(_MASK)),
                       [((1, 4, 2), "any"), ((1, 3, 2), "any"), ((1, 3, 2), "any")]),
    # embedding, dropout
    "embedding": (lambda w: F.embedding(_a(_IDX), w) ** 2, [((3, 2), "any")]),
    "embedding_repeated": (lambda w: F.embedding(_a(_REPEATED), w * w), [((3, 2), "any")]),
    "dropout": (lambda a: F.dropout(a * a, 0.5, seed=3), [((2, 4), "any")]),
}

#: name -> ``(torch, *tensors) -> tensor``: torch's counterpart of each case (dropout's
#: mask comes from another generator: none).
TORCH: dict = {
    "softmax": lambda t, x: t.softmax(x, -1),
    "softmax_axis0": lambda t, x: t.softmax(x, 0),
    "log_softmax": lambda t, x: t.log_softmax(x, -1),
    "softmax_cross_entropy": lambda t, x: t.nn.functional.cross_entropy(
        x, t.tensor(_LABELS[:, 0]), reduction="none"),
    "softmax_cross_entropy_axis0": lambda t, x: t.nn.functional.cross_entropy(
        x.T, t.tensor(_LABELS_AXIS0[0]), reduction="none"),
    "mean_squared_error": lambda t, a, b: ((a * a - b) ** 2).mean(),
    "conv2d": lambda t, x, w, b: t.nn.functional.conv2d(x, w, b, padding=1),
    "conv2d_stride": lambda t, x, w: t.nn.functional.conv2d(x * x, w, stride=2),
    "conv2d_groups_dilation": lambda t, x, w: t.nn.functional.conv2d(
        x * x, w, padding=1, dilation=2, groups=2),
    "im2col_col2im": lambda t, x: t.nn.functional.fold(
        t.nn.functional.unfold(x, (2, 2)) ** 2, (3, 3), (2, 2)),
    "max_pooling": lambda t, x: t.nn.functional.max_pool2d(x * x, 2),
    "max_pooling_overlap": lambda t, x: t.nn.functional.max_pool2d(x * x, 3, 1, 1),
    "max_pooling_pad": lambda t, x: t.nn.functional.max_pool2d(x * x, 2, (2, 1), 1),
    "average_pooling": lambda t, x: t.nn.functional.avg_pool2d(x * x, 2),
    "average_pooling_pad": lambda t, x: t.nn.functional.avg_pool2d(x * x, 3, 1, 1),
    "batch_normalization": _torch_bn(True),
    "batch_normalization_eval": _torch_bn(False),
    "layer_norm": lambda t, x, w, b: t.nn.functional.layer_norm(x, (3,), w, b),
    "layer_norm_plain": lambda t, x: t.nn.functional.layer_norm(x, (2, 3)),
    "attention": lambda t, q, k, v: t.nn.functional.scaled_dot_product_attention(q, k, v),
    "attention_causal": lambda t, q, k, v: t.nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=True),
    "attention_mask": lambda t, q, k, v: t.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=t.tensor(_MASK)),
    "embedding": lambda t, w: t.nn.functional.embedding(t.tensor(_IDX), w) ** 2,
    "embedding_repeated": lambda t, w: t.nn.functional.embedding(t.tensor(_REPEATED), w * w),
}


#: The cases whose gradgradcheck replays fused (``double_backward.family_tests``).
FUSED = frozenset({"softmax", "dropout", "embedding"})

test_gradgradcheck, test_second_derivatives_match_torch = family_tests(CASES, TORCH, fused=FUSED)
