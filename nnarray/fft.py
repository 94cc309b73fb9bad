"""The Array API ``fft`` extension (2023.12): transforms of NdArrays and graph values.

Every transform runs on its input's device (numpy's pocketfft, cuFFT through CuPy, and
nnarray's own OpenCL kernels) and is differentiable (``ops.fft``). ``n``/``s`` pad with
zeros or cut along the transformed axes before the transform, as numpy does; ``norm`` is
"backward" (default: the inverse divides by ``n``), "ortho" or "forward". A real input
to a complex transform is made complex first (float64 -> complex128, others complex64).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import dtypes
from . import functions as F
from . import xp as _xp
from .errors import DTypeError, ShapeError
from .ops.common import require_array
from .ops.fft import fft_c2c, fft_c2r, fft_r2c
from .ops.shape import _cut, _zeros

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft",
           "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _axis(op: str, x: Any, axis: int) -> int:
    if not isinstance(axis, (int, np.integer)) or not -x.ndim <= axis < x.ndim:
        raise ShapeError(f"{op}: axis {axis!r} is out of range for an array of shape {x.shape}")
    return int(axis) % x.ndim


def _axes(op: str, x: Any, s: Any, axes: Any) -> tuple[tuple[int, ...], list[int]]:
    """Normalized ``axes`` and the length along each (``s``, -1 meaning "as is")."""
    if axes is None:
        axes = range(x.ndim) if s is None else range(x.ndim - len(s), x.ndim)
    axes = tuple(_axis(op, x, a) for a in axes)
    if len(set(axes)) != len(axes):
        raise ShapeError(f"{op}: repeated axes {axes} for shape {x.shape}")
    if s is None:
        return axes, [x.shape[a] for a in axes]
    if not isinstance(s, Sequence) or len(s) != len(axes):
        raise ShapeError(f"{op}: argument 's' {s!r} must have one length per axis {axes}")
    return axes, [x.shape[a] if n == -1 else _length(op, n) for a, n in zip(axes, s)]


def _length(op: str, n: Any) -> int:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ValueError(f"{op}: a transform length must be a positive int, got {n!r}")
    return int(n)


def _resize(x: Any, axis: int, n: int) -> Any:
    """``x`` cut to, or padded with zeros to, length ``n`` along ``axis``."""
    m = x.shape[axis]
    if n < m:
        return _cut(x, axis, 0, n)
    if n > m:
        z = _zeros(x.shape[:axis] + (n - m,) + x.shape[axis + 1:], x.dtype)
        return F.concatenate([x, z], axis=axis)
    return x


def _complex(op: str, x: Any) -> Any:
    require_array(op, "x", x)
    if x.dtype in dtypes.COMPLEX:
        return x
    if x.dtype == np.bool_:
        raise DTypeError(f"{op}: argument 'x' must be numeric, got bool (shape {x.shape})")
    return F.cast(x, dtypes.complex_of(x.dtype))


def _real(op: str, x: Any) -> Any:
    require_array(op, "x", x)
    if x.dtype in dtypes.FLOATS:
        return x
    if x.dtype.kind not in "iu":
        raise DTypeError(f"{op}: argument 'x' must be real floating, got {x.dtype} "
                         f"(shape {x.shape})")
    return F.cast(x, np.dtype(np.float64 if x.dtype.itemsize > 4 else np.float32))


def _c2c(op: str, x: Any, s: Any, axes: Any, norm: str, inverse: bool) -> Any:
    x = _complex(op, x)
    axes, lengths = _axes(op, x, s, axes)
    if not axes:
        return x
    for a, n in zip(axes, lengths):
        x = _resize(x, a, n)
    return fft_c2c(x, axes=axes, inverse=inverse, norm=norm)


def fft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    """The 1-D discrete Fourier transform along ``axis``."""
    return _c2c("fft", x, None if n is None else [n], [axis], norm, False)


def ifft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    """The 1-D inverse discrete Fourier transform along ``axis``."""
    return _c2c("ifft", x, None if n is None else [n], [axis], norm, True)


def fftn(x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    """The n-D discrete Fourier transform over ``axes`` (every axis by default)."""
    return _c2c("fftn", x, s, axes, norm, False)


def ifftn(x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    """The n-D inverse discrete Fourier transform over ``axes``."""
    return _c2c("ifftn", x, s, axes, norm, True)


def rfftn(x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    """The n-D transform of a real ``x``: ``n // 2 + 1`` bins along the last of ``axes``."""
    x = _real("rfftn", x)
    axes, lengths = _axes("rfftn", x, s, axes)
    if not axes:
        return _complex("rfftn", x)
    for a, n in zip(axes, lengths):
        x = _resize(x, a, n)
    return fft_r2c(x, axes=axes, norm=norm)


def irfftn(x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    """The inverse of ``rfftn``: a real result of ``s`` (by default ``2 * (m - 1)`` along the
    last axis, where the input has ``m`` bins)."""
    x = _complex("irfftn", x)
    axes, lengths = _axes("irfftn", x, s, axes)
    if not axes:
        return F.real(x)
    if s is None or s[-1] == -1:
        lengths[-1] = 2 * (x.shape[axes[-1]] - 1)
        if lengths[-1] < 1:
            raise ValueError(f"irfftn: output length {lengths[-1]} along axis {axes[-1]} "
                             f"is invalid (shape {x.shape})")
    for a, n in zip(axes[:-1], lengths[:-1]):
        x = _resize(x, a, n)
    x = _resize(x, axes[-1], lengths[-1] // 2 + 1)
    return fft_c2r(x, axes=axes, n=lengths[-1], norm=norm)


def rfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    """The 1-D transform of a real ``x``: ``n // 2 + 1`` bins."""
    return rfftn(x, s=None if n is None else [n], axes=[axis], norm=norm)


def irfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    """The inverse of ``rfft``: ``n`` (by default ``2 * (m - 1)``) real values."""
    return irfftn(x, s=None if n is None else [n], axes=[axis], norm=norm)


def hfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    """The transform of a Hermitian-symmetric signal given by its first half: real."""
    return irfft(F.conj(_complex("hfft", x)), n=n, axis=axis, norm=_SWAP[_norm("hfft", norm)])


def ihfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    """The inverse of ``hfft``: ``n // 2 + 1`` bins of a real ``x``."""
    return F.conj(rfft(x, n=n, axis=axis, norm=_SWAP[_norm("ihfft", norm)]))


def _norm(op: str, norm: Any) -> str:
    if norm not in _SWAP:
        raise ValueError(f"{op}: argument 'norm' must be one of {tuple(_SWAP)}, got {norm!r}")
    return norm


def _freq_dtype(op: str, dtype: Any) -> np.dtype:
    d = dtypes.default_float() if dtype is None else dtypes.normalize(dtype, op)
    if d not in dtypes.FLOATS:
        raise DTypeError(f"{op}: argument 'dtype' must be real floating, got {d}")
    return d


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Any:
    """The sample frequencies of an ``n``-point transform of spacing ``d``."""
    n = _length("fftfreq", n)
    return _xp.asarray(np.fft.fftfreq(n, d), dtype=_freq_dtype("fftfreq", dtype),
                       device=device)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Any:
    """The ``n // 2 + 1`` non-negative sample frequencies of ``rfft``."""
    n = _length("rfftfreq", n)
    return _xp.asarray(np.fft.rfftfreq(n, d), dtype=_freq_dtype("rfftfreq", dtype),
                       device=device)


def _shift(op: str, x: Any, axes: Any, sign: int) -> Any:
    require_array(op, "x", x)
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, (int, np.integer)):
        axes = (axes,)
    axes = tuple(_axis(op, x, a) for a in axes)
    if not axes:
        return x
    shifts = tuple(sign * (x.shape[a] // 2) for a in axes)
    return _xp.roll(x, shifts, axis=axes)


def fftshift(x: Any, /, *, axes: Any = None) -> Any:
    """``x`` with the zero frequency moved to the middle of ``axes`` (all by default)."""
    return _shift("fftshift", x, axes, 1)


def ifftshift(x: Any, /, *, axes: Any = None) -> Any:
    """The inverse of ``fftshift``."""
    return _shift("ifftshift", x, axes, -1)
