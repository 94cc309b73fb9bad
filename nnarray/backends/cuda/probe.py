"""Whether CUDA can run here: one cached, one-line reason, never an exception.

The reasons name the layer that failed: ``"cupy not installed"``, ``"cupy failed to
import: ..."``, ``"CUDA driver too old for this CuPy: ..."``, ``"no CUDA device: ..."``.
"""

from __future__ import annotations

import importlib
from typing import Any

_UNSET = object()
_reason: Any = _UNSET
_count: list[int] = []


def why_unavailable() -> str | None:
    """The reason CUDA cannot run here, or ``None`` (probed once, then cached)."""
    global _reason
    if _reason is _UNSET:
        try:
            _reason = _probe()
        except Exception as e:  # never raise: any surprise becomes the reason
            _reason = f"CUDA probe failed: {_one_line(e)}"
    return _reason


def device_count() -> int:
    """GPUs visible to CuPy (0 when the backend is unavailable)."""
    if not _count:
        if why_unavailable() is not None:
            return 0
        import cupy
        _count.append(cupy.cuda.runtime.getDeviceCount())
    return _count[0]


def reset() -> None:
    """Forget the cached reason (tests re-probe after changing the environment)."""
    global _reason
    _reason = _UNSET


def _probe() -> str | None:
    try:
        cupy = importlib.import_module("cupy")
    except ModuleNotFoundError as e:
        if (e.name or "cupy").split(".")[0] == "cupy":
            return "cupy not installed"
        return f"cupy failed to import: {_one_line(e)}"
    except Exception as e:
        return f"cupy failed to import: {_one_line(e)}"
    return diagnose(cupy.cuda.runtime, getattr(cupy, "__version__", "?"))


def diagnose(runtime: Any, cupy_version: str = "?") -> str | None:
    """Classify what ``runtime.getDeviceCount()`` says (``runtime``: CuPy's CUDA runtime)."""
    try:
        n = runtime.getDeviceCount()
    except Exception as e:
        msg = _one_line(e)
        if "InsufficientDriver" not in msg:
            return f"no CUDA device: {msg}"
        driver = _version(runtime, "driverGetVersion")
        if not driver:
            return f"no CUDA device: no NVIDIA driver found ({msg})"
        need = _version(runtime, "runtimeGetVersion")
        return (f"CUDA driver too old for this CuPy: the driver supports CUDA "
                f"{_fmt(driver)}, CuPy {cupy_version} needs CUDA {_fmt(need)} ({msg})")
    if n <= 0:
        return "no CUDA device: the driver reports 0 devices"
    return None


def _version(runtime: Any, fn: str) -> int:
    try:
        return int(getattr(runtime, fn)())
    except Exception:
        return 0


def _fmt(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}" if v else "?"


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__
