"""The devices a client run uses: ``NNARRAY_CLIENT_DEVICE`` (a comma list, default numpy),
those unavailable here dropped (read by ``plugin.py`` and ``sklearn_namespaces.py``)."""

from __future__ import annotations

import functools
import os

import nnarray as nna


@functools.cache
def client_devices() -> tuple[str, ...]:
    """The devices of ``NNARRAY_CLIENT_DEVICE`` that are available here, in its order (read
    once: the plugin asks per test)."""
    wanted = os.environ.get("NNARRAY_CLIENT_DEVICE", "numpy").split(",")
    names = (c.strip().partition(":")[0] for c in wanted if c.strip())
    return tuple(c for c in names
                 if c in nna.backends.registered() and nna.backends.why_unavailable(c) is None)
