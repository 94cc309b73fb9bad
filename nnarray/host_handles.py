"""The registry of writable host handles (API.md §7: a write through a live handle is never
lost).

``np.asarray(a)``, ``a.data``, ``Variable.d`` and a host DLPack export hand out numpy
arrays over an array's host copy (``SyncedArray.hand_out``); the host copy may then be
written behind nnarray's back. This module tracks those handles while they, or any view
of them, live: ``live`` says whether an array has any, ``revoke`` makes them read-only
(a write elsewhere then raises instead of being lost). The copy state machine
(``synced.py``) asks it before every write and every device read.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

#: Live writable host handles: ``id(array) -> (weakref to the array, [weakrefs to its
#: handles])``. Empty in the usual case, so ``synced.py``'s checks cost one truth test
#: of this dict.
registry: dict[int, tuple] = {}


def track(owner: Any, x: np.ndarray) -> np.ndarray:
    """A writable handle on ``x`` (``owner``'s host copy), registered under ``owner``
    while it or any view of it lives."""
    # views of h keep h (not x) as their base; a dtype the buffer protocol lacks
    # (bfloat16) is handed out as a view of its bits' handle, which is tracked
    t = np.asarray(memoryview(x if x.dtype.char != "E" else x.view(np.uint16)))
    h = t if t.dtype == x.dtype else t.view(x.dtype)
    k = id(owner)
    e = registry.get(k)
    if e is None or e[0]() is not owner:
        fresh = (weakref.ref(owner, lambda _, k=k: registry.pop(k, None)), [])
        e = registry.setdefault(k, fresh) if e is None else fresh
        registry[k] = e  # (atomic setdefault: threads handing out at once share one)
    e[1].append(weakref.ref(t, lambda r, k=k: _gone(k, r)))
    return h


def live(owner: Any) -> list | None:
    """``owner``'s live handles' weakrefs (pruned), else ``None`` (entry dropped)."""
    e = registry.get(id(owner))
    if e is None:
        return None
    hs = [r for r in e[1] if r() is not None] if e[0]() is owner else []
    if not hs:
        registry.pop(id(owner), None)
        return None
    e[1][:] = hs
    return hs


def revoke(owner: Any) -> None:
    """Make every live handle of ``owner`` read-only and forget them."""
    for r in live(owner) or ():
        h = r()
        if h is not None:
            h.flags.writeable = False
    registry.pop(id(owner), None)


def _gone(k: int, r: Any) -> None:
    """A handle died: forget it, and the array's entry with its last handle (so the
    registry is empty again once temporary handles such as ``p.d.copy()`` are gone)."""
    e = registry.get(k)
    if e is not None:
        hs = e[1]
        if r in hs:
            hs.remove(r)
        if not hs:
            registry.pop(k, None)
