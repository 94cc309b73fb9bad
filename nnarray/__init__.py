"""nnarray: device-agnostic n-d arrays (numpy, CUDA, OpenCL) with a thin autograd layer."""

from __future__ import annotations

# Every module imports only the layers below it (docs/architecture.md). The layers above
# that a lower one calls at run time bind its ``nnarray.late`` slots as they are imported:
# every such provider is imported here, before any array exists.
from . import (
    backends,
    fft,  # noqa: F401  (the Array API fft extension)
    functions,
    late,
    linalg,  # noqa: F401  (the Array API linalg extension)
    numpy_protocol,  # noqa: F401
    pickling,  # noqa: F401
    registry,
    values,  # noqa: F401
    xp,
)
from .context import (
    Context,
    context_scope,
    device_synchronize,
    get_current_context,
    set_default_context,
    set_default_device,
)
from .dlpack import from_dlpack
from .dtypes import get_default_dtype, set_default_dtype
from .einsum import einsum
from .errors import (
    AttributeShapeError,
    BackendError,
    BackendUnavailableError,
    DeviceMismatchError,
    DTypeError,
    GraphError,
    InvalidValueError,
    KernelNotFoundError,
    NnarrayError,
    OutOfMemoryError,
    ShapeError,
    TransferError,
)
from .kernel import kernel_stats, reset_kernel_stats
from .memory import empty_cache, memory_stats, reset_peak_memory
from .ndarray import NdArray, array
from .ops.random import seed  # noqa: E402
from .ops.upcast import reset_stats as reset_upcast_stats
from .ops.upcast import stats as upcast_stats
from .pad import pad
from .registry import fallback_stats, register_kernel, reset_fallback_stats
from .transfers import reset_transfer_stats, strict_transfers, transfer_stats
from .xp import *  # noqa: E402, F403  (the Array API names; some shadow builtins)
from .xp import full, ones, zeros

__version__ = "0.1.0"
#: Public names imported on first use (``__getattr__``): they import ``ml_dtypes``.
_ML_DTYPES = ("autocast", *xp.LAZY)

__all__ = [
    "AttributeShapeError", "BackendError", "BackendUnavailableError", "Context",
    "DeviceMismatchError", "DTypeError",
    "GraphError", "InvalidValueError", "KernelNotFoundError", "NdArray", "NnarrayError",
    "OutOfMemoryError", "ShapeError", "TransferError",
    "array", "backends", "context_scope", "device_synchronize", "einsum", "empty_cache",
    "fallback_stats", "kernel_stats", "pad",
    "from_dlpack", "full", "functions", "get_current_context", "memory_stats", "ones",
    "register_kernel", "registry", "reset_fallback_stats", "reset_kernel_stats",
    "reset_peak_memory", "reset_transfer_stats", "seed", "set_default_context",
    "set_default_device", "set_default_dtype", "get_default_dtype",
    "strict_transfers", "transfer_stats", "zeros", "upcast_stats", "reset_upcast_stats",
    *xp.__all__, *_ML_DTYPES,
]


def __getattr__(name: str):
    """``nna.grad``, ``nn``, ``solvers``, ``training``, ``data``, ``distributed`` import on
    first use, and ``nna.bfloat16`` and ``nna.autocast`` (whose default is bfloat16):
    those import ``ml_dtypes``."""
    if name in ("data", "distributed", "grad", "nn", "solvers", "training"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    if name in xp.LAZY:
        return getattr(xp, name)
    if name == "autocast":
        from .autocast_block import autocast
        return autocast
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


late.provide(__name__)  # NdArray.__array_namespace__
