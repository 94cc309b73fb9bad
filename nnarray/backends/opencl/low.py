"""16-bit floats on OpenCL beyond the generated kernels: elementwise, reductions, casts,
indexing and shape kernels load and store float16/bfloat16 through ``cltypes`` and
compute in float; the kernels below have no 16-bit code of their own (the tiled GEMM and
what is built on it) and run on float32 copies of bfloat16 inputs, rounding once at the
end (``ops/upcast.py``, counted in ``nna.upcast_stats()``)."""

from __future__ import annotations

from ...dtypes import DTypeSet
from ...ops.upcast import wrap_kernels
from ...registry import backend_kernels
from . import conv, elementwise, matmul, scatter_add  # noqa: F401  (wrapped here)

#: Kernels computed in float32 for bfloat16 inputs.
WIDENED = ("matmul", "conv2d", "scatter_add")

_cast = backend_kernels("opencl")["cast"]
wrap_kernels("opencl", WIDENED, lambda x, dtype: _cast(x, dtype), DTypeSet(bf16=True))
