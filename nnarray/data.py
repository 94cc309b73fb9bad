"""``DataLoader``: minibatches of host datasets, each batch moved to the current context
once (one explicit, counted upload per array per batch), or with ``device=`` uploaded one
batch ahead on the backend's side queue or stream while the step runs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .context import Context, as_context
from .device import Device
from .discovery import get_device
from .errors import BackendError, InvalidValueError
from .ndarray import NdArray
from .nn.parameter import place
from .ops.random import Generator, next_seed
from .prefetch import Prefetcher


def batch_size_of(where: str, value: Any) -> int:
    """``value`` as a batch size: a positive int (a numpy integer too; a bool, float or
    string is a ``TypeError``, zero or less an ``InvalidValueError``, both naming
    ``where``, ``batch_size`` and the value)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{where}: batch_size must be a positive int, got {value!r} "
                        f"({type(value).__name__})")
    if value <= 0:
        raise InvalidValueError(f"{where}: batch_size must be positive, got {value}")
    return int(value)


class DataLoader:
    """Iterate ``arrays`` (a sequence of arrays of one length, or one array) in batches of
    ``batch_size`` along the first axis, yielding a tuple of NdArrays on the current
    context per batch.

    ``batch_size``: a positive int (``batch_size_of``); ``shuffle``: a new permutation
    every pass, pass ``k`` the stable order of the Philox words of
    ``ops.random.Generator(seed)``'s ``k``-th seed, the same on every backend and numpy
    version (``seed=None``: drawn from ``nna.seed``'s stream); ``drop_last``: skip a final
    short batch. Arrays that give no batch (no samples, or fewer than ``batch_size`` with
    ``drop_last``) raise ``InvalidValueError``. Host arrays are indexed on the host and
    uploaded; NdArrays are gathered where they live.

    ``device`` (a context or its string): batches land there instead, and each batch's
    upload is started while the previous batch is in use (``Prefetcher``): on OpenCL on
    a second queue of the device's context, on CUDA on a side stream with an event per
    batch (``pin_memory``: host batches gathered into page-locked buffers, so the copy
    is asynchronous; it changes nothing on backends without them). The same batches,
    in the same order, as without ``device``.
    """

    def __init__(self, arrays: Sequence[Any] | Any, batch_size: int, shuffle: bool = False,
                 drop_last: bool = False, seed: int | None = None,
                 device: Context | str | None = None, pin_memory: bool = False) -> None:
        if isinstance(arrays, (np.ndarray, NdArray)):
            arrays = (arrays,)
        self.arrays = tuple(a if isinstance(a, NdArray) else np.asarray(a) for a in arrays)
        if not self.arrays:
            raise ValueError("DataLoader: no arrays given")
        lengths = [a.shape[0] if a.ndim else None for a in self.arrays]
        if None in lengths or len(set(lengths)) != 1:
            raise ValueError(f"DataLoader: the arrays need one length along the first axis, "
                             f"got shapes {[tuple(a.shape) for a in self.arrays]}")
        self.n, self.batch_size = lengths[0], batch_size_of("DataLoader", batch_size)
        self.shuffle, self.drop_last = bool(shuffle), bool(drop_last)
        if len(self) == 0:
            raise InvalidValueError(
                f"DataLoader: {self.n} samples in batches of {self.batch_size}"
                f"{' with drop_last' if self.drop_last else ''} give no batch")
        self.device, self.pin_memory = _device_of(device, pin_memory)
        self.rng = Generator(next_seed() if seed is None else seed)

    def __len__(self) -> int:
        return self.n // self.batch_size if self.drop_last else -(-self.n // self.batch_size)

    def _indices(self) -> list[Any]:
        """Each batch's rows: a slice, or the pass's permutation's part (a new pass)."""
        order = self.rng.permutation(self.n) if self.shuffle else None
        out = []
        for k in range(len(self)):
            lo = k * self.batch_size
            hi = min(lo + self.batch_size, self.n)
            out.append(order[lo:hi] if order is not None else slice(lo, hi))
        return out

    def __iter__(self) -> Iterator[tuple[NdArray, ...]]:
        if self.device is not None:
            return self._prefetched(self._indices())
        return (tuple(_batch(a, idx) for a in self.arrays) for idx in self._indices())

    def _prefetched(self, indices: list[Any]) -> Iterator[tuple[NdArray, ...]]:
        """Batch ``k + 1``'s upload started before batch ``k`` is yielded; an abandoned
        pass (the generator closed or collected) waits for the upload in flight."""
        pf = Prefetcher(self.device, self.pin_memory)
        try:
            pending = pf.start(self.arrays, indices[0])
            for k in range(len(indices)):
                ahead = pf.start(self.arrays, indices[k + 1]) if k + 1 < len(indices) else None
                yield pf.finish(pending)
                pending = ahead
        finally:
            pf.close()


def _device_of(device: Any, pin_memory: Any) -> tuple[Device | None, bool]:
    """``DataLoader``'s ``device`` as a Device (``None`` stays ``None``), and
    ``pin_memory`` checked: a bool, and only with a ``device``."""
    if not isinstance(pin_memory, (bool, np.bool_)):
        raise TypeError(f"DataLoader: pin_memory must be a bool, got {pin_memory!r}")
    if device is None:
        if pin_memory:
            raise InvalidValueError("DataLoader: pin_memory=True needs device=... (the "
                                    "device the pinned batches are prefetched to)")
        return None, False
    try:
        ctx = as_context(device)
        return get_device(ctx.backend, ctx.device_id), bool(pin_memory)
    except BackendError as e:
        raise type(e)(f"DataLoader: argument 'device' {device!r}: {e}") from None


def _batch(a: Any, idx: Any) -> NdArray:
    if isinstance(a, NdArray):
        return a[idx]
    return place(NdArray.from_numpy_array(np.ascontiguousarray(a[idx])))
