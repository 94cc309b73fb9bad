"""numpy kernels: the shared numpy-compatible set, served by the host pool."""

from __future__ import annotations

import numpy as np

from .._xp import register_xp_kernels
from . import _device

# Results of 256 Ki elements (1 MiB of float32) or more come from the caching pool.
register_xp_kernels("numpy", np, _device.pool.empty, big=1 << 18)
