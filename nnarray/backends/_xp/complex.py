"""Kernels of ``ops.complex`` (real, imag, conj, angle, complex_abs, make_complex) for
numpy and CuPy."""

from __future__ import annotations

from typing import Any

from ...registry import register_kernel


def register_xp_complex(backend: str, xp: Any) -> None:
    """Register the complex-part kernels of ``backend`` (numpy or CuPy as ``xp``)."""
    def fresh(r: Any) -> Any:
        return xp.ascontiguousarray(r)

    def make_complex(re, im):
        out = xp.empty(re.shape, xp.result_type(re.dtype, 1j))
        out.real, out.imag = re, im
        return out

    for name, fn in (("real", lambda x: fresh(x.real)), ("imag", lambda x: fresh(x.imag)),
                     ("conj", xp.conj), ("angle", xp.angle), ("complex_abs", xp.abs),
                     ("make_complex", make_complex)):
        register_kernel(name, backend)(fn)
