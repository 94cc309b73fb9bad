"""Late binding: the one way a lower layer calls a higher one at run time.

Modules import only the layers below them (``docs/architecture.md``; ``lint-imports``
checks it). Where a lower module must call a higher one when it runs (``NdArray``'s
operators call ``nnarray.functions``, a backward rule calls ``F``), it declares a module
global bound to the higher module::

    F: Any = late.bind(__name__, "F", "nnarray.functions")

and the higher module, at the end of its import, calls ``late.provide(__name__)``, which
sets that global in every module that declared it (one that declares it later gets it at
once). Calls read a plain module global: no cost on the hot path. ``nnarray/__init__``
imports every provider of the core before any array exists; a slot bound to a module
that loads on first use (``nnarray.grad.naming``) reads ``None`` until then.
"""

from __future__ import annotations

import sys
from typing import Any

#: provider module name -> [(declaring module name, global name)]
_waiting: dict[str, list[tuple[str, str]]] = {}
_provided: dict[str, Any] = {}


def bind(module: str, attr: str, provider: str) -> Any:
    """The initial value of ``module``'s global ``attr``: the ``provider`` module if it
    was already imported (provided), else ``None`` until ``provide(provider)``."""
    _waiting.setdefault(provider, []).append((module, attr))
    return _provided.get(provider)


def provide(provider: str) -> None:
    """``provider`` finished importing: bind it in every module that declared it."""
    value = _provided[provider] = sys.modules[provider]
    for module, attr in _waiting.get(provider, ()):
        setattr(sys.modules[module], attr, value)
