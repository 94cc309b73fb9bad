"""numpy kernels: the shared numpy-compatible set, served by the host pool."""

from __future__ import annotations

import numpy as np

from ...ops.common import check_int_pow, check_labels
from ...registry import backend_kernels, register_kernel
from .._xp import register_xp_kernels
from .device import DEVICE as _device

# Results of 256 Ki elements (1 MiB of float32) or more come from the caching pool.
register_xp_kernels("numpy", np, _device.pool.empty, big=1 << 18)

_power = backend_kernels("numpy")["pow"]


@register_kernel("pow", "numpy")
def pow(a, b, out=None):
    """numpy's power, with nnarray's error (naming the op) for integers to negative
    integer powers, raised before computing, as on every backend."""
    check_int_pow(a, b, np.min)
    return _power(a, b, out)


_sce = backend_kernels("numpy")["softmax_cross_entropy"]


@register_kernel("softmax_cross_entropy", "numpy")
def softmax_cross_entropy(x, t, axis):
    """Labels checked first: ``take_along_axis`` picked the last class for -1."""
    check_labels("softmax_cross_entropy", t, x.shape[axis])
    return _sce(x, t, axis)
