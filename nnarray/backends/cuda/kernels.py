"""CUDA kernels: the shared numpy-compatible set run by CuPy, plus overrides where
CuPy needs different handling (scalar promotion, 0-d reductions) or a fused kernel
pays (sigmoid, softmax family, im2col/col2im, random numbers, dropout).

Importing this module registers everything; ``load_kernels()`` does it once the
backend is known to be available.
"""

from __future__ import annotations

import cupy

from .._xp import register_xp_kernels
from . import scope
from .conv import register_conv
from .divmod import register_divmod
from .elementwise import register_elementwise
from .fused import register_fused
from .nextafter import register_nextafter
from .random import register_random
from .scope import register
from .softmax import register_softmax
from .vector import register_vector


def _empty(shape, dtype):
    return cupy.empty(shape, dtype)


# CuPy's memory pool already recycles device buffers, so the shared kernels need not
# write big results into preallocated buffers: `big` is never reached.
def _checked_linalg():
    import cupyx
    return cupyx.errstate(linalg="raise")


register_xp_kernels("cuda", cupy, _empty, big=1 << 62,
                    current_device=cupy.cuda.runtime.getDevice, checked_linalg=_checked_linalg)
_generic = scope.registered()


def _reduce_0d(fn):
    def k(x, axis, keepdims):
        if x.ndim == 0:  # axis == (): reduce a 1-element view instead
            return fn(x.reshape(1), (0,), False)
        return fn(x, axis, keepdims)
    return k


for _name in ("sum", "mean", "max", "min"):
    register(_name)(_reduce_0d(_generic[_name]))

register_elementwise(cupy)
register_divmod(cupy)
register_nextafter(cupy)
register_vector(cupy)  # after every elementwise override it wraps
register_softmax(cupy, _generic)
register_conv(cupy, _generic)
register_random(cupy)
register_fused(cupy)
