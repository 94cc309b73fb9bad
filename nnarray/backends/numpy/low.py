"""16-bit floats on the host: the kernels that accumulate (reductions, products,
softmax and the losses, convolution, linear algebra) run on float32 copies of float16 and
bfloat16 inputs and round once at the end (``ops/upcast.py``, counted in
``nna.upcast_stats()``): a sum of 10^6 bfloat16 ones is 10^6 rounded to bfloat16, not
256, and a float16 product runs BLAS's float32 SGEMM, not numpy's float16 loop (~100x
slower at 1024^3). Elementwise kernels run numpy's (``ml_dtypes``') 16-bit ufuncs, each
computed in float32 and rounded once; the few composed of several ufuncs (``COMPOSED``)
compute bfloat16 in float32 too, rounding once, as the device kernels do."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ...dtypes import is_bfloat16
from ...ops.ufuncs import ROWS
from ...ops.upcast import count, wrap_kernels
from ...registry import backend_kernels, register_kernel
from . import conv, elementwise, fused, kernels, matmul, reduction  # noqa: F401  (wrapped here)

#: Kernels computed in float32 for 16-bit inputs (``clip``: numpy's gives float32 for a
#: bfloat16 array and float bounds). ``sum``, ``mean`` and ``matmul`` test their dtypes
#: inline instead (``reduction.py``, ``matmul.py``): no wrapper on their float32 path.
UPCAST = ("prod", "cumulative_sum", "cumulative_prod", "softmax", "log_softmax",
          "softmax_cross_entropy", "mean_squared_error", "conv2d", "average_pooling",
          "batch_normalization", "det", "inv", "solve",
          "cholesky", "qr", "qr_q", "qr_r", "slogdet", "svd", "svd_u", "svd_vh",
          "svdvals", "eigh", "eigh_vectors", "eigvalsh", "clip")
#: Elementwise kernels composed of several ufuncs (rounding bfloat16 at each): the rows
#: whose numpy function is a composite, and ``sigmoid`` (written out in ``_xp/kernels.py``).
COMPOSED = (*(r.name for r in ROWS if callable(r.xp)), "sigmoid")

wrap_kernels("numpy", UPCAST, lambda x, dtype: x.astype(dtype))


def _rounded_once(name: str) -> None:
    fn = backend_kernels("numpy")[name]
    small = getattr(fn, "small", None)

    def wide(f: Any) -> Any:
        @functools.wraps(f)
        def g(x: Any, out: Any = None) -> Any:
            if not is_bfloat16(x.dtype):
                return f(x) if out is None else f(x, out)
            count(name, "numpy", x.dtype)
            r = f(x.astype(np.float32)).astype(x.dtype)
            if out is None:
                return r
            out[...] = r
            return out
        return g

    k = register_kernel(name, "numpy")(wide(fn))
    if small is not None:  # the fast path's ufunc, for small arrays (kernel.fast_runner)
        k.small = (wide(small[0]), small[1])  # type: ignore[attr-defined]


for _name in COMPOSED:
    _rounded_once(_name)
