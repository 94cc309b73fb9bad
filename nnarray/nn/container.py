"""Containers: ``Sequential`` (modules or plain functions such as ``F.relu`` applied in
order), ``ModuleList`` and ``ModuleDict`` (registered sub-modules)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from .module import Module


class Sequential(Module):
    """Apply each layer to the previous one's output. Modules register under their
    position (parameters ``"0.W"``, ``"2.b"``, ...); plain callables hold no state."""

    def __init__(self, *layers: Module | Callable[[Any], Any]) -> None:
        for i, layer in enumerate(layers):
            if not callable(layer):
                raise TypeError(f"Sequential: layer {i} is not callable: {layer!r}")
            if isinstance(layer, Module):
                setattr(self, str(i), layer)
        self.layers = tuple(layers)

    def forward(self, x: Any) -> Any:
        for layer in self.layers:
            x = layer(x)
        return x

    def __getitem__(self, i: int) -> Module | Callable[[Any], Any]:
        return self.layers[i]

    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self) -> Iterator[Module | Callable[[Any], Any]]:
        return iter(self.layers)

    def __repr__(self) -> str:
        lines = ["Sequential("]
        for i, layer in enumerate(self.layers):
            body = repr(layer) if isinstance(layer, Module) else getattr(
                layer, "__name__", repr(layer))
            lines.append(f"  ({i}): " + body.replace("\n", "\n  "))
        return "\n".join(lines) + "\n)"


class ModuleList(Module):
    """A list of Modules registered under their positions (``"0.W"``, ``"1.b"``...)."""

    def __init__(self, modules: Iterable[Module] = ()) -> None:
        object.__setattr__(self, "_list", [])
        self.extend(modules)

    def append(self, module: Module) -> ModuleList:
        if not isinstance(module, Module):
            raise TypeError(f"ModuleList: expected a Module, got {type(module).__name__}")
        setattr(self, str(len(self._list)), module)
        self._list.append(module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def __getitem__(self, i: int) -> Module:
        return self._list[i]

    def __setitem__(self, i: int, module: Module) -> None:
        if not isinstance(module, Module):
            raise TypeError(f"ModuleList: expected a Module, got {type(module).__name__}")
        i = range(len(self._list))[i]
        self._list[i] = module
        setattr(self, str(i), module)

    def __len__(self) -> int:
        return len(self._list)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._list)


class ModuleDict(Module):
    """A dict of Modules registered under their keys (``"enc.W"``...), in insertion
    order."""

    def __init__(self, modules: Mapping[str, Module] | None = None) -> None:
        for k, m in (modules or {}).items():
            self[k] = m

    def __setitem__(self, key: str, module: Module) -> None:
        if not isinstance(key, str) or not key or "." in key:
            raise KeyError(f"ModuleDict: keys must be non-empty strings without '.', got "
                           f"{key!r}")
        if not isinstance(module, Module):
            raise TypeError(f"ModuleDict: expected a Module, got {type(module).__name__}")
        setattr(self, key, module)

    def __getitem__(self, key: str) -> Module:
        return self._children[key]

    def __delitem__(self, key: str) -> None:
        delattr(self, key)

    def __contains__(self, key: object) -> bool:
        return key in self._children

    def __len__(self) -> int:
        return len(self._children)

    def __iter__(self) -> Iterator[str]:
        return iter(self._children)

    def keys(self) -> Any:
        return self._children.keys()

    def values(self) -> Any:
        return self._children.values()

    def items(self) -> Any:
        return self._children.items()
