"""The loss scaler's kernel for numpy-compatible array modules (``ops/unscale.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...registry import register_kernel


def register_xp_amp(backend: str, xp: Any) -> None:
    """Register ``amp_unscale`` for ``backend`` (numpy on the host, CuPy on CUDA)."""

    @register_kernel("amp_unscale", backend)
    def amp_unscale(targets, inputs, inv_scale):
        *gs, found = targets
        inv = np.float32(inv_scale)
        for g in gs:
            if inv_scale != 1.0:  # in float32, rounded once into g's dtype
                xp.multiply(g, inv, out=g, casting="unsafe")
            # on the device: no host read here (the caller reads ``found`` once)
            xp.maximum(found, (~xp.isfinite(g)).any().astype(found.dtype), out=found)
