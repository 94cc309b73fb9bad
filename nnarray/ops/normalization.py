"""Batch normalization: one graph node whose forward is composed from F on NdArrays
(so every backend has it) and which updates the running statistics in training."""

from __future__ import annotations

from typing import Any

from ..errors import ShapeError
from ..registry import register_composite
from . import elementwise as _ew
from .common import norm_axis, require_float
from .inplace import assign as _assign
from .op import Op
from .reduction import mean as _mean
from .reduction import sum as _sum
from .shape import reshape as _reshape
from .surfaces import declare


def param_shapes(x_shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[tuple, tuple]:
    """The broadcastable ``(1, C, 1, 1)`` and compact ``(C,)`` parameter shapes."""
    full = tuple(s if i in axes else 1 for i, s in enumerate(x_shape))
    return full, tuple(x_shape[a] for a in axes)


def _infer(inputs, attrs):
    x, gamma, beta, rmean, rvar = inputs
    require_float("batch_normalization", "x", x)
    ax = attrs.get("axes", (1,))
    ax = (ax,) if isinstance(ax, int) else ax
    axes = attrs["axes"] = tuple(sorted(norm_axis("batch_normalization", a, x.ndim, "axes")
                                        for a in ax))
    decay = attrs["decay"] = float(attrs.get("decay", 0.9))
    eps = attrs["eps"] = float(attrs.get("eps", 1e-5))
    attrs["training"] = bool(attrs.get("training", True))
    if not 0.0 <= decay <= 1.0 or eps <= 0:
        raise ValueError(f"batch_normalization: need 0 <= decay <= 1 and eps > 0, got "
                         f"decay={decay}, eps={eps}")
    ok = param_shapes(x.shape, axes)
    for name, p in (("gamma", gamma), ("beta", beta), ("running_mean", rmean),
                    ("running_var", rvar)):
        require_float("batch_normalization", name, p)
        if p.shape not in ok:
            raise ShapeError(f"batch_normalization: {name} has shape {p.shape}, expected "
                             f"{ok[0]} or {ok[1]} for x {x.shape} with axes {axes}")
    return ((x.shape, x.dtype),)


batch_normalization_op = Op("batch_normalization", _infer)


def batch_norm_statistics(x: Any, axes: tuple[int, ...]) -> tuple[Any, Any, int]:
    """Batch mean and biased variance (broadcastable shapes) and the reduced count."""
    red = tuple(i for i in range(x.ndim) if i not in axes)
    m = 1
    for i in red:
        m *= x.shape[i]
    mu = _mean(x, axis=red, keepdims=True)
    xc = x - mu
    return mu, _mean(xc * xc, axis=red, keepdims=True), m


def _compose(x, gamma, beta, rmean, rvar, axes, decay, eps, training):
    full, _ = param_shapes(x.shape, axes)

    def b(p):
        return p if p.shape == full else _reshape(p, full)

    if training:
        mu, var, m = batch_norm_statistics(x, axes)
        unbiased = var * (m / max(m - 1, 1))
        _assign(rmean, _reshape(b(rmean) * decay + mu * (1.0 - decay), rmean.shape))
        _assign(rvar, _reshape(b(rvar) * decay + unbiased * (1.0 - decay), rvar.shape))
    else:
        mu, var = b(rmean), b(rvar)
    y = (x - mu) / _ew.functions["sqrt"](var + eps) * b(gamma) + b(beta)
    return y if y.dtype == x.dtype else _ew.cast(y, dtype=x.dtype)  # the spec: x's dtype


register_composite("batch_normalization", _compose)


def _onnx_batch_normalization(ex: Any, n: Any, outs: list) -> None:
    """ONNX's ``BatchNormalization`` in inference over channel axis 1; any other axes, or
    training mode (batch statistics; the running statistics' update is not part of an
    inference graph): the formula."""
    x, gamma, beta, rmean, rvar = n.inputs
    a = n.attrs
    c = x.shape[1] if x.ndim > 1 else None
    if a["axes"] == (1,) and not a["training"] and x.ndim >= 2:
        ps = []
        for p in (gamma, beta, rmean, rvar):
            v = ex.operand(p, x.dtype)
            if p.shape != (c,):
                v = ex.emit("Reshape", [v, ex.ints([c])])
            ps.append(v)
        ex.emit("BatchNormalization", [ex.value(x), *ps], outs, epsilon=float(a["eps"]))
        return
    axes = a["axes"]
    full = [s if i in axes else 1 for i, s in enumerate(x.shape)]
    red = [i for i in range(x.ndim) if i not in axes]
    xv = ex.value(x)

    def b(p):
        v = ex.operand(p, x.dtype)
        return v if tuple(p.shape) == tuple(full) else ex.emit("Reshape", [v, ex.ints(full)])

    if a["training"]:
        mu = ex.reduce("ReduceMean", xv, red, True)
        xc = ex.emit("Sub", [xv, mu])
        var = ex.reduce("ReduceMean", ex.emit("Mul", [xc, xc]), red, True)
    else:
        mu, var = b(rmean), b(rvar)
        xc = ex.emit("Sub", [xv, mu])
    den = ex.emit("Sqrt", [ex.emit("Add", [var, ex.const(a["eps"], x.dtype)])])
    y = ex.emit("Mul", [ex.emit("Div", [xc, den]), b(gamma)])
    ex.emit("Add", [y, b(beta)], outs)


@declare(batch_normalization_op, onnx=_onnx_batch_normalization, macro=True)
def batch_normalization(x: Any, gamma: Any, beta: Any, running_mean: Any, running_var: Any,
                        axes: Any = (1,), decay: float = 0.9, eps: float = 1e-5,
                        training: bool = True) -> Any:
    """Normalize over every axis but ``axes``; in training, use batch statistics and
    update ``running_mean``/``running_var`` in place (unbiased variance)."""
    return batch_normalization_op(x, gamma, beta, running_mean, running_var, axes=axes,
                                  decay=decay, eps=eps, training=training)


# -- backward rules -------------------------------------------------------------------
from .backward import backward as _backward  # noqa: E402
from .backward import fit as _fit  # noqa: E402


def _bn_retained(attrs: dict) -> tuple[int, ...]:
    return (0, 1) if attrs["training"] else (0, 1, 3, 4)


@_backward(batch_normalization_op, inputs=_bn_retained)
def _batch_normalization_grad(c, g):
    """Training: through the batch statistics; evaluation: the running ones are
    constants. The running statistics get no gradient."""
    x, gamma = c.inputs[0], c.inputs[1]
    axes, eps = c.attrs["axes"], c.attrs["eps"]
    full, _ = param_shapes(x.shape, axes)
    red = tuple(i for i in range(x.ndim) if i not in axes)

    def b(p):
        return p if p.shape == full else _reshape(p, full)

    if c.attrs["training"]:
        mu, var, _ = batch_norm_statistics(x, axes)
    else:
        mu, var = b(c.inputs[3]), b(c.inputs[4])
    inv = 1.0 / _ew.functions["sqrt"](var + eps)
    xhat = (x - mu) * inv
    gx = ggamma = gbeta = None
    if c.need[0]:
        gxhat = g * b(gamma)
        if c.attrs["training"]:
            gxhat = gxhat - _mean(gxhat, red, True) - xhat * _mean(gxhat * xhat, red, True)
        gx = _fit(c, 0, gxhat * inv)
    if c.need[1]:
        ggamma = _fit(c, 1, _reshape(_sum(g * xhat, red, True), c.in_meta[1][0]))
    if c.need[2]:
        gbeta = _fit(c, 2, _reshape(_sum(g, red, True), c.in_meta[2][0]))
    return gx, ggamma, gbeta, None, None
