"""Discrete Fourier transforms: three primitive ops and their adjoints.

Kernel contract (native arrays in, a new C-contiguous native array out; ``axes`` distinct
non-negative ints, ``norm`` one of "backward", "ortho", "forward"; sizes along ``axes`` are
those of the input, already padded or cut by ``nnarray.fft``):

- ``fft_c2c(x, axes, inverse, norm)``: complex ``x`` -> complex, numpy's ``fftn``/``ifftn``;
- ``fft_r2c(x, axes, norm)``: real ``x`` -> complex with ``n // 2 + 1`` along ``axes[-1]``,
  numpy's ``rfftn``;
- ``fft_c2r(x, axes, n, norm)``: complex ``x`` (``n // 2 + 1`` along ``axes[-1]``) -> real
  with ``n`` there, numpy's ``irfftn`` (the imaginary parts of the self-conjugate bins are
  ignored).

Gradients are PyTorch's: the adjoint of a transform of norm ``m`` is the opposite transform
of the dual norm (backward <-> forward, ortho <-> ortho).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..errors import DTypeError, ShapeError
from .common import require_array
from .op import Op

NORMS = ("backward", "ortho", "forward")
_DUAL = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def scale(n: int, inverse: bool, norm: str) -> float:
    """The factor a 1-D transform of length ``n`` multiplies by."""
    if norm == "ortho":
        return 1.0 / np.sqrt(n) if n else 1.0
    return 1.0 / n if (norm == "forward") != inverse and n else 1.0


def _check(op: str, x, attrs, kinds: frozenset) -> tuple[int, ...]:
    require_array(op, "x", x)
    if x.dtype not in kinds:
        raise DTypeError(f"{op}: argument 'x' has dtype {x.dtype} (shape {x.shape}); expected "
                         f"one of {', '.join(sorted(d.name for d in kinds))}")
    norm = attrs.get("norm", "backward")
    if norm not in NORMS:
        raise ValueError(f"{op}: argument 'norm' must be one of {NORMS}, got {norm!r}")
    attrs["norm"] = norm
    axes = attrs["axes"] = tuple(int(a) for a in attrs["axes"])
    if not axes or len(set(axes)) != len(axes) or any(not 0 <= a < x.ndim for a in axes):
        raise ShapeError(f"{op}: argument 'axes' {axes} must be distinct axes of x "
                         f"(shape {x.shape})")
    if any(x.shape[a] < 1 for a in axes):
        raise ShapeError(f"{op}: every transformed axis needs length >= 1, got shape "
                         f"{x.shape} along axes {axes}")
    return axes


def _infer_c2c(inputs, attrs):
    (x,) = inputs
    _check("fft_c2c", x, attrs, dtypes.COMPLEX)
    attrs["inverse"] = bool(attrs.get("inverse", False))
    return ((x.shape, x.dtype),)


def _infer_r2c(inputs, attrs):
    (x,) = inputs
    axes = _check("fft_r2c", x, attrs, dtypes.FLOATS)
    shape = list(x.shape)
    shape[axes[-1]] = shape[axes[-1]] // 2 + 1
    return ((tuple(shape), dtypes.complex_of(x.dtype)),)


def _infer_c2r(inputs, attrs):
    (x,) = inputs
    axes = _check("fft_c2r", x, attrs, dtypes.COMPLEX)
    n = attrs["n"] = int(attrs["n"])
    if n < 1 or x.shape[axes[-1]] != n // 2 + 1:
        raise ShapeError(f"fft_c2r: output length n={n} needs {n // 2 + 1} bins along axis "
                         f"{axes[-1]}, got shape {x.shape}")
    shape = list(x.shape)
    shape[axes[-1]] = n
    return ((tuple(shape), dtypes.real_of(x.dtype)),)


fft_c2c = Op("fft_c2c", _infer_c2c)
fft_r2c = Op("fft_r2c", _infer_r2c)
fft_c2r = Op("fft_c2r", _infer_c2r)


# -- backward rules -------------------------------------------------------------------
from .backward import backward as _backward  # noqa: E402
from .elementwise import mul as _mul  # noqa: E402
from .shape import _cut, _zeros, concatenate_op  # noqa: E402


@_backward(fft_c2c)
def _c2c_grad(c, g):
    a = c.attrs
    return (fft_c2c(g, axes=a["axes"], inverse=not a["inverse"], norm=_DUAL[a["norm"]]),)


@_backward(fft_r2c)
def _r2c_grad(c, g):
    """``Re(F^H P g)``: ``g`` padded with zeros to the input's length, transformed back."""
    a = c.attrs
    ax, n = a["axes"][-1], c.in_meta[0][0][a["axes"][-1]]
    m = g.shape[ax]
    if n > m:
        shape = g.shape[:ax] + (n - m,) + g.shape[ax + 1:]
        g = concatenate_op(g, _zeros(shape, g.dtype), axis=ax)
    full = fft_c2c(g, axes=a["axes"], inverse=True, norm=_DUAL[a["norm"]])
    from .complex import real
    return (real(full),)


@_backward(fft_c2r)
def _c2r_grad(c, g):
    """``rfft`` of ``g`` (dual norm) with the bins that stand for two doubled (PyTorch)."""
    a = c.attrs
    ax, n = a["axes"][-1], a["n"]
    gi = fft_r2c(g, axes=a["axes"], norm=_DUAL[a["norm"]])
    twice = n - gi.shape[ax]  # bins 1 .. (n - 1) // 2
    if twice > 0:
        from .complex import imag, make_complex, real
        mid = _cut(gi, ax, 1, 1 + twice)
        mid = make_complex(_mul(real(mid), 2.0), _mul(imag(mid), 2.0))
        parts = [_cut(gi, ax, 0, 1), mid]
        if gi.shape[ax] > 1 + twice:
            parts.append(_cut(gi, ax, 1 + twice, gi.shape[ax]))
        gi = concatenate_op(*parts, axis=ax)
    return (gi,)


