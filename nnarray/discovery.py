"""Backend discovery: every package under ``nnarray/backends/`` is a backend, except
those whose name starts with ``_`` (code shared by backends, such as ``_xp``).

This module imports no backend: it finds them by folder and imports one by name when it
is first asked for, so the core (which imports this, as ``nnarray.backends`` re-exports
it) sits below the backend packages, which import the registry, memory and op tables.

A backend package exposes ``why_unavailable() -> str | None``, ``device_count() -> int``,
``get_device(device_id) -> Device``, ``describe_devices() -> list[str]`` and
``load_kernels()`` (imports the modules that call ``register_kernel``). Adding a backend
touches no file outside its folder.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from types import ModuleType
from typing import Any

from . import late
from .device import Device, made_once
from .errors import BackendError, BackendUnavailableError

#: The package whose subpackages are the backends.
PACKAGE = "nnarray.backends"
_names: list[str] = sorted((m.name for m in pkgutil.iter_modules(
                                [os.path.join(os.path.dirname(__file__), "backends")])
                            if m.ispkg and not m.name.startswith("_")),
                           key=lambda n: (n != "numpy", n))
_modules: dict[str, ModuleType] = {}
_devices: dict[tuple[str, int], Device] = {}
_loaded: set[str] = set()
#: ``nnarray.context`` (above: it picks devices from here), told of each device made
_context: Any = late.bind(__name__, "_context", "nnarray.context")


def registered() -> list[str]:
    """Names of every backend the package knows, numpy first."""
    return list(_names)


def module(name: str) -> ModuleType:
    """The backend package ``name``; ``BackendError`` lists the known ones otherwise."""
    m = _modules.get(name)
    if m is None:
        if name not in _names:
            raise BackendError(f"unknown backend {name!r}; registered backends: {_names}")
        m = _modules[name] = importlib.import_module(f"{PACKAGE}.{name}")
    return m


def why_unavailable(name: str) -> str | None:
    """A one-line reason why ``name`` cannot run here, or ``None`` when it can."""
    return module(name).why_unavailable()


def available() -> list[tuple[str, list[str]]]:
    """``(name, [device descriptions])`` for every backend usable right now."""
    return [(n, module(n).describe_devices()) for n in _names if why_unavailable(n) is None]


def ensure_loaded(name: str) -> None:
    """Import the kernels of an available backend (once)."""
    if name not in _loaded:
        if why_unavailable(name) is None:
            module(name).load_kernels()
        _loaded.add(name)


def load_all() -> None:
    """Load the kernels of every available backend."""
    for n in _names:
        ensure_loaded(n)


def get_device(name: str, device_id: int = 0) -> Device:
    """The device object for ``name:device_id`` (cached), validated."""
    dev = _devices.get((name, device_id))
    if dev is not None:
        return dev
    return made_once(_devices, (name, device_id), lambda: _make_device(name, device_id))


def _make_device(name: str, device_id: int) -> Device:
    m = module(name)
    reason = m.why_unavailable()
    if reason is not None:
        raise BackendUnavailableError(f"backend {name!r} is unavailable: {reason}")
    n = m.device_count()
    if not 0 <= device_id < n:
        raise BackendUnavailableError(
            f"{name}:{device_id}: no such device ({name} has {n} device(s))")
    dev = m.get_device(device_id)
    _context.device_created(name)
    return dev


def host_device() -> Device:
    """The numpy device: the hub for copies between devices with no direct route."""
    return get_device("numpy", 0)
