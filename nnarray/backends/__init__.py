"""The backends: one package each (``numpy``, ``opencl``, ``cuda``), found and loaded by
name by ``nnarray.discovery``, whose functions this package re-exports
(``nnarray.backends.registered()`` and the rest). See ``nnarray/discovery.py`` for what a
backend package exposes; adding a backend touches no file outside its folder.
"""

from __future__ import annotations

from ..discovery import (  # noqa: F401  (the public names; _devices: tests' device list)
    _devices,
    available,
    ensure_loaded,
    get_device,
    host_device,
    load_all,
    module,
    registered,
    why_unavailable,
)
