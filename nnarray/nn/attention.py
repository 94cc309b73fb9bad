"""``MultiheadAttention``: multi-head scaled dot-product attention over ``(N, L, dim)``."""

from __future__ import annotations

from typing import Any

from .. import functions as F
from .linear import Linear
from .module import Module


def project(x: Any, layer: Linear) -> Any:
    """``x @ W + b`` over the last axis of ``x`` (``Linear`` flattens its input)."""
    y = F.matmul(x, layer.W)
    return y + layer.b if layer.b is not None else y


class MultiheadAttention(Module):
    """Batch-first attention with ``heads`` heads of ``dim // heads`` features.

    ``q``, ``k``, ``v``, ``out`` are ``Linear(dim, dim)`` projections applied over the last
    axis; ``causal=True`` masks later positions (``is_causal`` of
    ``F.scaled_dot_product_attention``). ``forward(query, key=None, value=None,
    attn_mask=None)``: self-attention when ``key``/``value`` are omitted.
    """

    def __init__(self, dim: int, heads: int, causal: bool = False, bias: bool = True) -> None:
        self.dim, self.heads, self.causal = int(dim), int(heads), bool(causal)
        if self.heads <= 0 or self.dim % self.heads:
            raise ValueError(f"MultiheadAttention: dim {dim} is not divisible by heads "
                             f"{heads}")
        for name in ("q", "k", "v", "out"):
            setattr(self, name, Linear(self.dim, self.dim, bias=bias))

    def _split(self, x: Any) -> Any:
        n, length, _ = x.shape
        x = F.reshape(x, (n, length, self.heads, self.dim // self.heads))
        return F.transpose(x, (0, 2, 1, 3))

    def forward(self, query: Any, key: Any = None, value: Any = None,
                attn_mask: Any = None) -> Any:
        key = query if key is None else key
        value = key if value is None else value
        for name, a in (("query", query), ("key", key), ("value", value)):
            if a.ndim != 3 or a.shape[-1] != self.dim:
                raise ValueError(f"MultiheadAttention: {name} must be (N, L, {self.dim}), "
                                 f"got shape {a.shape}")
        q, k, v = (self._split(project(a, p)) for a, p in
                   ((query, self.q), (key, self.k), (value, self.v)))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask,
                                           is_causal=self.causal)
        n, _, length, _ = y.shape
        y = F.reshape(F.transpose(y, (0, 2, 1, 3)), (n, length, self.dim))
        return project(y, self.out)

    def extra_repr(self) -> str:
        return f"{self.dim}, heads={self.heads}, causal={self.causal}"
