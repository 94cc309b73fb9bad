"""Buckets: several arrays of one dtype packed into one contiguous flat array, so one
collective call moves them all (after ChainerMN's packed all-reduce and PyTorch DDP's
gradient buckets).

``plan`` groups arrays by dtype, in the order given, into buckets of at most
``bucket_bytes`` (an array larger than that is a bucket of its own); it depends only on
the arrays' dtypes and sizes, so every rank holding the same list plans the same buckets.
A ``Bucket`` on the host packs its arrays into a reusable numpy buffer and unpacks them
(one copy each way); a bucket on one device gathers its arrays into one flat array there
(the array itself when it is alone) and scatters a flat result back with writes there.
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
    """Arrays of one dtype moved together. ``home`` is the device they share (the current
    context when none holds data yet, e.g. gradients zeroed on a rank whose shard was
    empty), or the host when they are spread over several devices."""

    __slots__ = ("arrays", "dtype", "home", "size", "_cuts")

    def __init__(self, arrays: Sequence[NdArray]) -> None:
        self.arrays = list(arrays)
        self.dtype = self.arrays[0].dtype
        heads = {a.head for a in self.arrays} - {None}
        if not heads:  # lazily filled (zeroed gradients): they materialize where we work,
            self.home = get_current_context()  # as on the ranks that wrote theirs
        else:
            self.home = _context(heads.pop() if len(heads) == 1 else HOST)
        sizes = [a.size for a in self.arrays]
        self.size = sum(sizes)
        self._cuts = np.cumsum(sizes)[:-1].tolist()

    @property
    def on_host(self) -> bool:
        return self.home.key == HOST

    # -- host buckets: packed straight into a reusable numpy buffer ----------------------
    def pack(self, out: np.ndarray) -> None:
        """Copy the arrays into the flat host buffer ``out`` (explicit, counted reads for
        arrays held on a device)."""
        np.concatenate([a.get_data("r", HOST).reshape(-1) for a in self.arrays], out=out)

    def unpack(self, buf: np.ndarray) -> None:
        """Copy ``buf`` back into the arrays; an array held on a device gets its new
        values there (one counted transfer)."""
        for a, part in zip(self.arrays, np.split(buf, self._cuts)):
            where = a.head
            a.get_data("w", HOST)[...] = part.reshape(a.shape)
            if where not in (None, HOST):
                a.get_data("rw", _context(where))

    # -- device buckets: packed on the device ----------------------------------------
    def gather(self) -> NdArray:
        """One flat-packed array on ``home`` (the array itself when the bucket holds one:
        callers treat it as flat)."""
        if len(self.arrays) == 1:
            return self.arrays[0]
        with context_scope(self.home):
            return F.concatenate([a if a.ndim == 1 else F.reshape(a, (a.size,))
                                  for a in self.arrays])

    def scatter(self, flat: NdArray) -> None:
        """Write ``flat`` (from ``gather``, current on ``home``) back into the arrays with
        a write on ``home``."""
        if len(self.arrays) == 1:
            return
        with context_scope(self.home):
            for a, p in zip(self.arrays, F.split(flat, self._cuts)):
                F.assign(a, p if a.ndim == 1 else F.reshape(p, a.shape))
