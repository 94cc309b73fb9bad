"""What ``Module.parameters()`` returns: nnabla's ordered ``{dotted name: Variable}``,
whose iteration gives names that say so when used as torch's parameters."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


class ParameterName(str):
    """A parameter's dotted name (a ``str`` in every way) that, asked for an attribute a
    ``str`` lacks (``p.size()``, ``p.grad``, ``p.numel()``: torch's
    ``for p in model.parameters()``), says that it is a name and where the parameters
    are, instead of ``'str' object has no attribute``."""

    __slots__ = ()

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise AttributeError(
            f"{str(self)!r} is a parameter's name, not the parameter: Module.parameters() is "
            f"a dict {{name: Variable}} (nnabla's), so iterating it gives names (torch's "
            f"'for p in model.parameters()' gives tensors); use model.parameters().values(), "
            f".items() or model.named_parameters() for the Variables (.{attr} was asked)")


class Parameters(dict):
    """``{dotted name: Variable}`` in registration order; iterating it (and ``list()`` of
    it) gives the names as ``ParameterName``."""

    __slots__ = ()

    def __iter__(self) -> Iterator[str]:
        return map(ParameterName, dict.__iter__(self))
