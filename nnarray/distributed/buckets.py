"""Buckets: several arrays of one dtype packed into one contiguous flat array, so one
collective call moves them all (after ChainerMN's packed all-reduce and PyTorch DDP's
gradient buckets).

``plan`` groups arrays by dtype, in the order given, into buckets of at most
``bucket_bytes`` (an array larger than that is a bucket of its own); it depends only on
the arrays' dtypes and sizes, so every rank holding the same list plans the same buckets.
A ``Bucket`` gathers its arrays into one flat array on their device (the array itself when
it is alone) and scatters a flat result back with a write on each array's device.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import functions as F
from ..context import Context, context_scope, get_current_context
from ..ndarray import NdArray

#: Default bucket size: a few MiB, as the issue asks (PyTorch DDP uses 25 MiB, ChainerMN
#: packs everything into one buffer).
DEFAULT_BUCKET_BYTES = 4 << 20

HOST = "numpy:0"


def plan(arrays: Sequence[NdArray], bucket_bytes: int = DEFAULT_BUCKET_BYTES) -> list[list[int]]:
    """Indices of ``arrays`` in buckets: one dtype each, order kept, ``bucket_bytes`` each at
    most (unless one array alone is bigger); buckets are ordered by their first index."""
    open_: dict[np.dtype, tuple[list[int], int]] = {}
    done: list[list[int]] = []
    for i, a in enumerate(arrays):
        idx, nbytes = open_.get(a.dtype, (None, 0))
        if idx is not None and nbytes + a.nbytes > bucket_bytes:
            done.append(idx)
            idx = None
        if idx is None:
            idx, nbytes = [], 0
        idx.append(i)
        open_[a.dtype] = (idx, nbytes + a.nbytes)
    done += [idx for idx, _ in open_.values()]
    return sorted(done, key=lambda b: b[0])


def _context(key: str) -> Context:
    return Context.parse(key, get_current_context().fallback)


class Bucket:
    """Arrays of one dtype moved together. ``home`` is the device they share (the host
    when they are spread over several devices, or when none was ever written)."""

    __slots__ = ("arrays", "dtype", "home", "_cuts")

    def __init__(self, arrays: Sequence[NdArray]) -> None:
        self.arrays = list(arrays)
        self.dtype = self.arrays[0].dtype
        heads = {a.head for a in self.arrays} - {None}
        key = heads.pop() if len(heads) == 1 else HOST
        self.home = _context(key)
        self._cuts = np.cumsum([a.size for a in self.arrays])[:-1].tolist()

    @property
    def size(self) -> int:
        return sum(a.size for a in self.arrays)

    @property
    def on_host(self) -> bool:
        return self.home.key == HOST

    def gather(self) -> NdArray:
        """One flat-packed array on ``home`` (the array itself when the bucket holds one:
        callers treat it as flat)."""
        if len(self.arrays) == 1:
            return self.arrays[0]
        with context_scope(self.home):
            for a in self.arrays:  # spread over devices: explicit, counted reads first
                if a.head not in (None, self.home.key):
                    a.get_data("r", self.home)
            return F.concatenate([F.reshape(a, (a.size,)) for a in self.arrays])

    def scatter(self, flat: NdArray) -> None:
        """Write ``flat`` (from ``gather``, its head on ``home``) back into the arrays,
        each with a write on the device that holds it."""
        if len(self.arrays) == 1:
            return
        with context_scope(self.home):
            parts = F.split(flat, self._cuts)
            for a, p in zip(self.arrays, parts):
                p = F.reshape(p, a.shape)
                where = a.head
                if where is None or where == self.home.key:
                    F.assign(a, p)
                    continue
                ctx = _context(where)
                p.get_data("r", ctx)  # explicit, counted move to the array's device
                with context_scope(ctx):
                    F.assign(a, p)
