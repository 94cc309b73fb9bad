"""The communicator: this rank's place in the world and the collectives on NdArrays.

Collectives run bucket by bucket (``buckets.py``). A bucket whose arrays live on a CUDA
device goes through NCCL on the device. A bucket on another device goes through the host
transport (MPI): packed into one flat array on its device, read to the host once
(``get_data("rw", "numpy")``, one counted transfer), reduced in place there, written back
to its device once (one counted transfer) and scattered into the arrays there. A bucket
on the host is packed into a reusable numpy buffer (an array alone is reduced in place)
and moves nothing. In a world of size 1 ``all_reduce`` and ``broadcast`` return at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import functions as F
from ..context import Context, context_scope, get_current_context
from ..errors import DTypeError, NnarrayError
from ..ndarray import NdArray
from . import checks
from .buckets import DEFAULT_BUCKET_BYTES, HOST, Bucket, plan

OPS = ("sum", "mean", "max", "min")
#: The fields of ``Communicator._layout``'s signatures, for messages.
LAYOUT_FIELDS = ("shape", "dtype", "op", "route")


class Communicator:
    """``rank``, ``size``, ``local_rank`` and ``ctx`` (this rank's context), with
    ``all_reduce``, ``broadcast``, ``all_gather`` and ``barrier``.

    ``calls`` counts the collective calls issued on data (MPI or NCCL), which bucketing
    keeps low; ``bucket_bytes`` caps a bucket.
    """

    def __init__(self, transport: Any, local_rank: int, ctx: Context,
                 bucket_bytes: int = DEFAULT_BUCKET_BYTES) -> None:
        self._host = transport
        self.rank: int = transport.rank
        self.size: int = transport.size
        self.local_rank = int(local_rank)
        self.ctx = ctx
        self.bucket_bytes = int(bucket_bytes)
        self.calls = 0
        self._nccl: Any = None
        self._buffers: dict[tuple[np.dtype, int], np.ndarray] = {}
        self._layouts: dict[tuple, int] = {}  # checks.agree's digests

    # -- collectives on arrays ---------------------------------------------------------
    def all_reduce(self, arrays: Sequence[NdArray], op: str = "mean") -> None:
        """Reduce each array over every rank with ``op`` (``sum``, ``mean``, ``max``,
        ``min``), in place, in buckets of at most ``bucket_bytes``."""
        arrays, layout = self._agreed("all_reduce", lambda: _reduce_args(arrays, op),
                                      lambda a: self._layout(a, op))
        if self.size == 1:
            return
        reduce_op = "sum" if op == "mean" else op
        for idx in plan(arrays, self.bucket_bytes):
            b = Bucket([arrays[i] for i in idx])
            if b.home.backend == "cuda":
                flat = b.gather()
                x = flat.get_data("rw", b.home).reshape(-1)
                self._device().allreduce(x, op, self.size)  # mean scaled in its scope
                b.scatter(flat)
            elif b.on_host:
                single = len(b.arrays) == 1
                x = b.arrays[0].get_data("rw", HOST).reshape(-1) if single else self._buffer(b)
                if not single:
                    b.pack(x)
                self._host.allreduce(x, reduce_op)
                if op == "mean":
                    np.divide(x, self.size, out=x)
                if not single:
                    b.unpack(x)
            else:  # one device: packed there, one transfer to the host and one back
                flat = b.gather()
                x = flat.get_data("rw", HOST).reshape(-1)
                self._host.allreduce(x, reduce_op)
                if op == "mean":
                    np.divide(x, self.size, out=x)
                flat.get_data("rw", b.home)
                b.scatter(flat)
            self.calls += 1

    def broadcast(self, arrays: Sequence[NdArray], root: int = 0) -> None:
        """Overwrite each array with rank ``root``'s, in place, in buckets."""
        def args() -> list[NdArray]:
            self._check_root(root)
            return _checked_list("broadcast", arrays)

        arrays, _ = self._agreed("broadcast", args, lambda a: self._layout(a, f"root {root}"))
        if self.size == 1:
            return
        sender = self.rank == root
        for idx in plan(arrays, self.bucket_bytes):
            b = Bucket([arrays[i] for i in idx])
            single = len(b.arrays) == 1
            if b.home.backend == "cuda":
                flat = b.gather() if sender else _flat_like(b)
                x = flat.get_data("r" if sender else "w", b.home).reshape(-1)
                self._device().bcast(x, root)
                if not sender:
                    b.scatter(flat)
            elif b.on_host:
                if single:  # the root only reads, the others only write
                    x = b.arrays[0].get_data("r" if sender else "w", HOST).reshape(-1)
                else:
                    x = self._buffer(b)
                    if sender:
                        b.pack(x)
                self._host.bcast(x, root)
                if not sender and not single:
                    b.unpack(x)
            else:  # the root reads once to the host, the others write once to the device
                flat = b.gather() if sender else _flat_like(b)
                self._host.bcast(flat.get_data("r" if sender else "w", HOST).reshape(-1),
                                 root)
                if not sender:
                    flat.get_data("rw", b.home)
                    b.scatter(flat)
            self.calls += 1

    def all_gather(self, x: NdArray) -> NdArray:
        """Every rank's ``x`` stacked along a new first axis: shape ``(size, *x.shape)``,
        on ``x``'s device. Shapes and dtypes must agree across ranks."""
        ((x,), _) = self._agreed("all_gather", lambda: _checked_list("all_gather", [x]),
                                 lambda a: (("x", a[0].shape, str(a[0].dtype), False, ""),),
                                 checks.FIELDS)
        home = Bucket([x]).home
        out = NdArray((self.size, *x.shape), x.dtype)
        if self.size == 1:
            with context_scope(home):
                F.assign(out, F.reshape(x, out.shape))
            return out
        if home.backend == "cuda":
            self._device().allgather(x.get_data("r", home).reshape(-1),
                                     out.get_data("w", home).reshape(-1))
        else:
            send = x.get_data("r", HOST).reshape(-1)
            self._host.allgather(send, out.get_data("w", HOST).reshape(-1))
            if home.key != HOST:
                out.get_data("rw", home)
        self.calls += 1
        return out

    def barrier(self) -> None:
        """Wait until every rank gets here."""
        self._host.barrier()

    def any_rank(self, flag: bool) -> bool:
        """Whether ``flag`` is true on any rank: one all-reduce (max) of one host value,
        so every rank gets the same answer (the loss scaler's found-inf flag: every rank
        skips the same step)."""
        if self.size == 1:
            return bool(flag)
        x = np.array([1.0 if flag else 0.0], np.float64)
        self._host.allreduce(x, "max")
        self.calls += 1
        return bool(x[0])

    # -- Python objects (small metadata; pickled) ----------------------------------------
    def bcast_obj(self, obj: Any, root: int = 0) -> Any:
        """Rank ``root``'s ``obj`` on every rank."""
        self._check_root(root)
        return self._host.bcast_obj(obj, root)

    def allgather_obj(self, obj: Any) -> list[Any]:
        """Every rank's ``obj``, in rank order."""
        return self._host.allgather_obj(obj)

    # -- helpers -------------------------------------------------------------------------
    def _agreed(self, name: str, args: Any, layout: Any,
                fields: Sequence[str] = LAYOUT_FIELDS) -> tuple[list[NdArray], tuple]:
        """``(args(), layout of them)`` once every rank's call passed its own checks and the
        layouts agree (``checks.agree``); a rank whose ``args()`` raised raises that error,
        and every other rank a ``DistributedError`` naming it, all before moving data."""
        try:
            arrays = args()
            sigs = layout(arrays) if self.size > 1 else ()
        except (TypeError, ValueError, NnarrayError) as e:
            if self.size == 1:
                raise
            arrays, sigs, failed = [], (), e
        else:
            failed = None
        if self.size > 1:
            checks.agree(self, sigs, f"{name} arrays", self._layouts, fields, failed)
        return arrays, sigs

    def _layout(self, arrays: list[NdArray], op: str) -> tuple:
        """What every rank's call must agree on: per array its shape, dtype, the ``op``
        and whether it goes through NCCL (a CUDA array) or MPI."""
        here = get_current_context().backend
        return tuple((f"arrays[{i}]", a.shape, a.dtype.name, op,
                      "nccl" if (a.head or here).startswith("cuda") else "mpi")
                     for i, a in enumerate(arrays))

    def _buffer(self, b: Bucket) -> np.ndarray:
        """A flat host buffer for ``b``, reused across calls (fresh large arrays cost page
        faults on every touch)."""
        key = (b.dtype, b.size)
        x = self._buffers.get(key)
        if x is None:
            if len(self._buffers) >= 16:
                self._buffers.clear()
            x = self._buffers[key] = np.empty(b.size, b.dtype)
        return x

    def _device(self) -> Any:
        if self._nccl is None:
            from .nccl import NcclTransport
            device_id = self.ctx.device_id if self.ctx.backend == "cuda" else self.local_rank
            self._nccl = NcclTransport(self._host, device_id)
        return self._nccl

    def _check_root(self, root: int) -> None:
        if not 0 <= root < self.size:
            raise ValueError(f"root must be in [0, {self.size}), got {root}")

    def __repr__(self) -> str:
        return (f"Communicator(rank={self.rank}, size={self.size}, "
                f"local_rank={self.local_rank}, ctx={self.ctx.key!r})")


def _flat_like(b: Bucket) -> NdArray:
    """A fresh array to receive a bucket (the array itself when it is alone)."""
    if len(b.arrays) == 1:
        return b.arrays[0]
    return NdArray((b.size,), b.dtype)


def _reduce_args(arrays: Any, op: str) -> list[NdArray]:
    """``arrays`` as a list, checked for ``all_reduce`` with ``op``."""
    arrays = _checked_list("all_reduce", arrays)
    if op not in OPS:
        raise ValueError(f"all_reduce: op must be one of {OPS}, got {op!r}")
    for a in arrays:
        if op == "mean" and a.dtype.kind != "f":
            raise DTypeError(f"all_reduce: op='mean' needs floating arrays, got {a.dtype} "
                             "(use op='sum')")
        if op == "sum" and a.dtype == np.bool_:
            raise DTypeError("all_reduce: op='sum' on a bool array (use 'max' for or)")
    return arrays


def _checked_list(op: str, arrays: Any) -> list[NdArray]:
    if isinstance(arrays, NdArray) or not isinstance(arrays, (list, tuple)):
        raise TypeError(f"{op}: expected a list of NdArrays, got {type(arrays).__name__}")
    seen: set[int] = set()
    for i, a in enumerate(arrays):
        if not isinstance(a, NdArray):
            raise TypeError(f"{op}: arrays[{i}] is a {type(a).__name__}, expected an NdArray")
        if id(a) in seen:
            raise ValueError(f"{op}: arrays[{i}] appears twice in the list")
        seen.add(id(a))
    return list(arrays)
