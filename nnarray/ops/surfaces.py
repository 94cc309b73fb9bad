"""Where an op shows up: its declaration, beside its spec.

An op's spec module declares the public function that calls it and the surfaces that
offer it (``declare``): its ``F`` name (the function's own), its place in the Array API
namespace (``xp="chapter"`` or ``"chapter:form"``), its numpy counterpart
(``numpy="name"`` or ``"name:form"``, dispatched through ``__array_function__``) and its
ONNX translation. ``nnarray.functions``, the namespace's chapters (``nnarray/xp``),
``numpy_protocol`` and ``grad/onnx_export`` read the declarations here instead of each
keeping an entry per op. A form names how a surface adapts the function (the standard's
keywords, numpy's ``axis=None``); each surface defines its few forms, and ``params``
gives a form what differs per op (a scan's initial value)::

    @declare(cumulative_prod_op, xp="statistics:cumulative", numpy="cumprod:scan",
             params={"initial": 1})
    def cumulative_prod(x, axis=None): ...

A new op is then its spec (inference, backward rule, declaration), a kernel per backend
only where a composite will not do, one test module and its docs.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field

from .op import Op


@dataclass(frozen=True)
class Surface:
    """One op's public function and the surfaces offering it."""

    op: Op
    #: ``F``'s function (its name is ``F``'s; its signature and docstring are the op's)
    function: Callable
    #: the Array API chapter (``nnarray/xp/<chapter>.py``) and the form adapting
    #: ``function`` to the standard's signature (``None``: ``function`` itself)
    xp: tuple[str, str | None] | None = None
    #: numpy's function name and the form mapping its arguments (``None``: numpy's
    #: keywords are ``function``'s)
    numpy: tuple[str, str | None] | None = None
    #: the ONNX translation: ``onnx(exporter, node, output_names)``
    onnx: Callable | None = None
    #: what the forms need beyond the op (e.g. ``{"initial": 1}``)
    params: dict = field(default_factory=dict)
    #: its static graph depends on its inputs' shapes beyond the op's inference (a
    #: reshape's ``-1``): ``F`` registers it (``F.recalls``) so that a saved graph calling
    #: it loads in another process
    recalled: bool = False
    #: its graph depends on its inputs' shapes beyond its op's inference (several ops, or
    #: attributes computed from the shapes): ``F`` records the call on its output node
    #: (``Node.macro``, ``F._COMPOSITES``) so that re-inference calls it again
    macro: bool = False

    @property
    def name(self) -> str:
        return self.function.__name__


#: ``F`` name -> its declaration, filled as the spec modules are imported
_DECLARED: dict[str, Surface] = {}


def _split(spec: str | None) -> tuple[str, str | None] | None:
    if spec is None:
        return None
    where, _, form = spec.partition(":")
    return where, form or None


def declare(op: Op, *, xp: str | None = None, numpy: str | None = None,
            onnx: Callable | None = None, params: dict | None = None,
            recalled: bool = False, macro: bool = False) -> Callable:
    """Decorator on the public function calling ``op``: declares it for ``F`` and the
    surfaces named (see the module docstring)."""
    def deco(fn: Callable) -> Callable:
        name = fn.__name__
        if name in _DECLARED and _DECLARED[name].function is not fn:
            raise RuntimeError(f"declare: two functions named '{name}'")
        _DECLARED[name] = Surface(op, fn, _split(xp), _split(numpy), onnx, params or {},
                                  recalled, macro)
        return fn
    return deco


def declared() -> dict[str, Surface]:
    """Every declaration, by ``F`` name (every spec module of ``nnarray.ops`` imported
    first, so none is missed)."""
    package = importlib.import_module(__package__)
    for m in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{__package__}.{m.name}")
    return dict(_DECLARED)


def chapter(name: str) -> dict[str, Surface]:
    """The declarations the Array API chapter ``name`` offers, by the standard's name."""
    return {n: s for n, s in declared().items() if s.xp is not None and s.xp[0] == name}
