"""nnarray: device-agnostic n-d arrays (numpy, CUDA, OpenCL) with a thin autograd layer."""

from __future__ import annotations

# Import order: ``functions`` first. It imports the op specs (``ops``), which import
# ``ndarray`` and ``registry``; ``ndarray``/``operators`` bind the functions module that
# is importing them and call it only at run time. Nothing is patched in afterwards.
from . import (
    backends,
    fft,  # noqa: F401  (the Array API fft extension)
    functions,  # noqa: I001
    linalg,  # noqa: F401  (the Array API linalg extension)
    namespace,
    registry,
    xp_functions,
)
from .context import (
    Context,
    context_scope,
    device_synchronize,
    get_current_context,
    set_default_context,
)
from .dlpack import from_dlpack
from .errors import (
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
from .memory import empty_cache, memory_stats, reset_peak_memory
from .namespace import *  # noqa: F403  (the Array API names; some shadow builtins)
from .ndarray import NdArray, array
from .ops.random import seed  # noqa: E402
from .registry import fallback_stats, register_kernel, reset_fallback_stats
from .transfers import reset_transfer_stats, strict_transfers, transfer_stats
from .xp_functions import *  # noqa: E402, F403  (the standard's functions; after ndarray)
from .xp_functions import full, ones, zeros

__version__ = "0.1.0"

__all__ = [
    "BackendError", "BackendUnavailableError", "Context", "DeviceMismatchError", "DTypeError",
    "GraphError", "InvalidValueError", "KernelNotFoundError", "NdArray", "NnarrayError",
    "OutOfMemoryError", "ShapeError", "TransferError",
    "array", "backends", "context_scope", "device_synchronize", "empty_cache", "fallback_stats",
    "from_dlpack", "full", "functions", "get_current_context", "memory_stats", "ones",
    "register_kernel", "registry", "reset_fallback_stats", "reset_peak_memory",
    "reset_transfer_stats", "seed", "set_default_context",
    "strict_transfers", "transfer_stats", "zeros",
    *namespace.__all__, *xp_functions.__all__,
]


def __getattr__(name: str):
    """``nna.grad``, ``nn``, ``solvers``, ``training``, ``data``, ``distributed`` import on
    first use."""
    if name in ("data", "distributed", "grad", "nn", "solvers", "training"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
