"""``DataLoader``: minibatches of host datasets, each batch moved to the current context
once (one explicit, counted upload per array per batch)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .ndarray import NdArray
from .nn.parameter import place


class DataLoader:
    """Iterate ``arrays`` (a sequence of arrays of one length, or one array) in batches of
    ``batch_size`` along the first axis, yielding a tuple of NdArrays on the current
    context per batch.

    ``shuffle``: a new permutation every pass, from a generator seeded by ``seed``
    (``None``: drawn from ``nna.seed``'s stream); ``drop_last``: skip a final short
    batch. Host arrays are indexed on the host and uploaded; NdArrays are gathered where
    they live.
    """

    def __init__(self, arrays: Sequence[Any] | Any, batch_size: int, shuffle: bool = False,
                 drop_last: bool = False, seed: int | None = None) -> None:
        if isinstance(arrays, (np.ndarray, NdArray)):
            arrays = (arrays,)
        self.arrays = tuple(a if isinstance(a, NdArray) else np.asarray(a) for a in arrays)
        if not self.arrays:
            raise ValueError("DataLoader: no arrays given")
        lengths = [a.shape[0] if a.ndim else None for a in self.arrays]
        if None in lengths or len(set(lengths)) != 1:
            raise ValueError(f"DataLoader: the arrays need one length along the first axis, "
                             f"got shapes {[tuple(a.shape) for a in self.arrays]}")
        if int(batch_size) <= 0:
            raise ValueError(f"DataLoader: batch_size must be positive, got {batch_size}")
        self.n, self.batch_size = lengths[0], int(batch_size)
        self.shuffle, self.drop_last = bool(shuffle), bool(drop_last)
        if seed is None:
            from .ops.random import next_seed
            seed = next_seed()
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self.n // self.batch_size if self.drop_last else -(-self.n // self.batch_size)

    def __iter__(self) -> Iterator[tuple[NdArray, ...]]:
        order = self.rng.permutation(self.n) if self.shuffle else None
        for k in range(len(self)):
            lo = k * self.batch_size
            hi = min(lo + self.batch_size, self.n)
            idx = order[lo:hi] if order is not None else slice(lo, hi)
            yield tuple(_batch(a, idx) for a in self.arrays)


def _batch(a: Any, idx: Any) -> NdArray:
    if isinstance(a, NdArray):
        return a[idx]
    return place(NdArray.from_numpy_array(np.ascontiguousarray(a[idx])))
