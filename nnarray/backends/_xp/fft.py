"""Kernels of ``ops.fft`` for numpy (pocketfft) and CuPy (cuFFT): the xp's ``fft`` module."""

from __future__ import annotations

from typing import Any

from ...registry import register_kernel


def register_xp_fft(backend: str, xp: Any) -> None:
    """Register ``fft_c2c``, ``fft_r2c`` and ``fft_c2r`` for ``backend`` (numpy or CuPy as
    ``xp``); results keep the input's precision (numpy 2 and CuPy transform float32 as is)."""
    f = xp.fft

    def fresh(r: Any, dtype: Any) -> Any:
        return xp.ascontiguousarray(r.astype(dtype, copy=False))

    def c2c(x, axes, inverse, norm):
        return fresh((f.ifftn if inverse else f.fftn)(x, axes=axes, norm=norm), x.dtype)

    def r2c(x, axes, norm):
        return fresh(f.rfftn(x, axes=axes, norm=norm), xp.result_type(x.dtype, 1j))

    def c2r(x, axes, n, norm):
        s = [x.shape[a] for a in axes[:-1]] + [n]
        return fresh(f.irfftn(x, s=s, axes=axes, norm=norm), x.real.dtype)

    register_kernel("fft_c2c", backend)(c2c)
    register_kernel("fft_r2c", backend)(r2c)
    register_kernel("fft_c2r", backend)(c2r)
