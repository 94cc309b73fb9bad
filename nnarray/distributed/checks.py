"""Ranks must hold the same parameter list before they train together, and the same
arrays in every collective.

Every rank gathers every rank's ``(name, shape, dtype, need_grad, backend)`` list and
compares it with rank 0's; all of them see the same gathered lists, so all raise the same
``DistributedError`` (naming each difference) or none does, before any collective moves
parameter data whose buckets would not line up. ``agree`` does the same for every
collective call at the cost of one all-reduce of two integers: a digest of the list
(cached per list) and its negation, max-reduced; only when they differ are the lists
gathered to name the difference.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import DistributedError

Signature = tuple[str, tuple[int, ...], str, Any, str]
FIELDS = ("shape", "dtype", "need_grad", "backend")
#: How many lists a cache passed to ``agree`` keeps digests of.
MAX_CACHED = 64


def differences(lists: Sequence[Sequence[Signature]],
                fields: Sequence[str] = FIELDS) -> list[str]:
    """Human-readable differences of each rank's list from rank 0's (``fields`` names
    the entries of a signature after its name)."""
    ref = list(lists[0])
    ref_by = {s[0]: s for s in ref}
    out = []
    for r, sigs in enumerate(lists[1:], start=1):
        by = {s[0]: s for s in sigs}
        missing = [n for n in ref_by if n not in by]
        extra = [n for n in by if n not in ref_by]
        if missing:
            out.append(f"rank {r} lacks {', '.join(map(repr, missing))}")
        if extra:
            out.append(f"rank {r} has {', '.join(map(repr, extra))} that rank 0 lacks")
        for name, s in by.items():
            t = ref_by.get(name)
            if t is None:
                continue
            for i, what in enumerate(fields, start=1):
                if s[i] != t[i]:
                    out.append(f"{name!r} has {what} {s[i]} on rank {r} but {t[i]} on rank 0")
        if not (missing or extra) and [s[0] for s in sigs] != [s[0] for s in ref]:
            out.append(f"rank {r} lists the parameters in another order than rank 0")
    return out


def same_everywhere(comm: Any, sigs: list[Signature], what: str,
                    fields: Sequence[str] = FIELDS) -> None:
    """Raise on every rank when ``sigs`` differ across ranks."""
    lists = comm.allgather_obj(sigs)
    diffs = differences(lists, fields)
    if diffs:
        shown = "; ".join(diffs[:10]) + (f"; ... ({len(diffs) - 10} more)"
                                          if len(diffs) > 10 else "")
        raise DistributedError(f"{what} differ across ranks (seen on rank {comm.rank} of "
                               f"{comm.size}): {shown}")


def agree(comm: Any, sigs: tuple[Signature, ...], what: str, cache: dict,
          fields: Sequence[str] = FIELDS, failed: Exception | None = None) -> None:
    """``same_everywhere`` for every call of a collective: one all-reduce of the list's
    digest (kept in ``cache``) and its negation; equal digests everywhere exactly when
    ``max(d) == -max(-d)``. Every rank sees the same result, so all raise or none does.
    ``failed``: this rank's arguments failed its own checks (raised here, after the
    all-reduce: a rank raising alone would leave the others waiting in it)."""
    d = cache.get(sigs)
    if d is None:
        if len(cache) >= MAX_CACHED:
            cache.clear()
        d = cache[sigs] = _digest(sigs)
    header = np.array([d, -d, failed is not None], np.int64)
    comm._host.allreduce(header, "max")
    if header[2]:
        failed_somewhere(comm, failed, what)
    if header[0] != -header[1]:
        same_everywhere(comm, list(sigs), what, fields)
        raise DistributedError(f"{what} differ across ranks (seen on rank {comm.rank} of "
                               f"{comm.size}) in a way their descriptions do not show")


def failed_somewhere(comm: Any, failed: Exception | None, what: str) -> None:
    """Raise on every rank: ``failed`` on the ranks whose own checks failed, on the others
    a ``DistributedError`` naming those ranks and their errors."""
    said = comm.allgather_obj(None if failed is None else f"{type(failed).__name__}: {failed}")
    if failed is not None:
        raise failed
    bad = "; ".join(f"rank {r}: {m}" for r, m in enumerate(said) if m is not None)
    raise DistributedError(f"{what}: the call failed its checks on another rank, so no rank "
                           f"moved data (seen on rank {comm.rank} of {comm.size}): {bad}")


def _digest(sigs: Any) -> int:
    """A 63-bit digest of ``sigs``, the same in every process (``hash`` of a str is not)."""
    h = hashlib.blake2b(repr(sigs).encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") >> 1
