"""``Sequential``: modules (or plain functions such as ``F.relu``) applied in order."""

from __future__ import annotations

from collections.abc import Callable, Iterator
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
