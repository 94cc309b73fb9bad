"""Late binding: the one way a lower layer calls a higher one at run time.

Modules import only the layers below them (``docs/architecture.md``; ``lint-imports``
checks it). Where a lower module must call a higher one when it runs (``NdArray``'s
operators call ``nnarray.functions``, a backward rule calls ``F``), it declares a module
global bound to the higher module::

    F: Any = late.bind(__name__, "F", "nnarray.functions")

and the higher module, at the end of its import, calls ``late.provide(__name__)``, which
sets that global in every module that declared it (one that declares it later gets it at
once). Calls read a plain module global: no cost on the hot path. ``nnarray/__init__``
imports every provider of the core before any array exists. Until then a slot holds an
``Unbound`` placeholder, which names the provider when used; a slot bound to a module that
loads on first use (``nnarray.grad.naming``) is declared ``optional`` and reads ``None``
until then. Each module declares its own slots: ``from .backward import F`` copies the
placeholder before it is bound, which then forwards every attribute (correct, but slower
than a bound slot; ``tests/core/test_late.py`` finds such copies).
"""

from __future__ import annotations

import sys
from typing import Any

#: provider module name -> [(declaring module name, global name)]
_waiting: dict[str, list[tuple[str, str]]] = {}
_provided: dict[str, Any] = {}


class Unbound:
    """A slot's value until its provider is imported."""

    __slots__ = ("provider",)

    def __init__(self, provider: str) -> None:
        self.provider = provider

    def __getattr__(self, name: str) -> Any:
        module = _provided.get(self.provider)
        if module is None:
            raise RuntimeError(f"{self.provider}.{name}: {self.provider} is not imported "
                               f"yet (a late-bound slot used before its provider)")
        return getattr(module, name)  # a copy of a slot taken before it was bound: slow

    def __repr__(self) -> str:
        return f"<unbound {self.provider}>"


def bind(module: str, attr: str, provider: str, optional: bool = False) -> Any:
    """The initial value of ``module``'s global ``attr``: the ``provider`` module if it
    was already imported (provided), else a placeholder (``None`` where ``optional``)
    until ``provide(provider)``."""
    _waiting.setdefault(provider, []).append((module, attr))
    got = _provided.get(provider)
    if got is None and not optional:
        return Unbound(provider)
    return got


def provide(provider: str) -> None:
    """``provider`` finished importing: bind it in every module that declared it."""
    value = _provided[provider] = sys.modules[provider]
    for module, attr in _waiting.get(provider, ()):
        setattr(sys.modules[module], attr, value)
