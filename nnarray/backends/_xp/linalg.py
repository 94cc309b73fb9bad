"""Dense linear-algebra kernels for numpy and CuPy: the xp's own ``linalg`` module."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np

from ...registry import register_kernel


def register_xp_linalg(backend: str, xp: Any,
                       checked: Callable[[], AbstractContextManager] = nullcontext) -> None:
    """Register the ``ops.decomp`` kernels for ``backend`` (numpy or CuPy as ``xp``).
    ``inv``, ``solve`` and ``cholesky`` run inside ``checked()``, where singular or
    non-positive-definite input raises ``LinAlgError`` (numpy always raises; CuPy returns
    NaN/inf unless asked: ``cupyx.errstate(linalg="raise")``)."""
    la = xp.linalg

    def reg(name: str, fn: Any) -> None:
        register_kernel(name, backend)(fn)

    def fresh(r: Any) -> Any:
        return xp.asarray(r, order="C")

    def slogdet(a):
        s, ld = la.slogdet(a)
        return fresh(ld), fresh(s)

    def eigh(a):
        w, v = la.eigh(a)
        return fresh(w), fresh(v)

    def qr(a, mode="reduced"):
        q, r = la.qr(a, mode=mode)
        return fresh(q), fresh(r)

    def svd(a, full_matrices=True):
        u, s, vh = la.svd(a, full_matrices=full_matrices)
        return fresh(u), fresh(s), fresh(vh)

    def solve(a, b):
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a = xp.broadcast_to(a, batch + a.shape[-2:])
        b = xp.broadcast_to(b, batch + b.shape[-2:])
        dt = xp.result_type(a, b)
        with checked():
            return fresh(la.solve(a.astype(dt), b.astype(dt)))

    def inv(a):
        with checked():
            return fresh(la.inv(a))

    def cholesky(a):
        with checked():
            return fresh(la.cholesky(a))

    reg("inv", inv)
    reg("det", lambda a: fresh(xp.asarray(la.det(a))))
    reg("slogdet", slogdet)
    reg("solve", solve)
    reg("cholesky", cholesky)
    reg("eigh", eigh)
    reg("eigvalsh", lambda a: fresh(la.eigvalsh(a)))
    reg("eigh_vectors", lambda a: fresh(la.eigh(a)[1]))
    reg("qr", qr)
    reg("svd_u", lambda a: fresh(la.svd(a, full_matrices=False)[0]))
    reg("svd_vh", lambda a: fresh(la.svd(a, full_matrices=False)[2]))
    reg("qr_q", lambda a: fresh(la.qr(a, mode="reduced")[0]))
    reg("qr_r", lambda a: fresh(la.qr(a, mode="reduced")[1]))
    reg("svd", svd)
    reg("svdvals", lambda a: fresh(la.svd(a, compute_uv=False)))
