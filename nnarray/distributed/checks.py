"""Ranks must hold the same parameter list before they train together.

Every rank gathers every rank's ``(name, shape, dtype, need_grad, backend)`` list and
compares it with rank 0's; all of them see the same gathered lists, so all raise the same
``DistributedError`` (naming each difference) or none does, before any collective moves
parameter data whose buckets would not line up.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import DistributedError

Signature = tuple[str, tuple[int, ...], str, bool, str]


def differences(lists: Sequence[Sequence[Signature]]) -> list[str]:
    """Human-readable differences of each rank's list from rank 0's."""
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
            for i, what in ((1, "shape"), (2, "dtype"), (3, "need_grad"), (4, "backend")):
                if s[i] != t[i]:
                    out.append(f"{name!r} has {what} {s[i]} on rank {r} but {t[i]} on rank 0")
        if not (missing or extra) and [s[0] for s in sigs] != [s[0] for s in ref]:
            out.append(f"rank {r} lists the parameters in another order than rank 0")
    return out


def same_everywhere(comm: Any, sigs: list[Signature], what: str) -> None:
    """Raise on every rank when ``sigs`` differ across ranks."""
    lists = comm.allgather_obj(sigs)
    diffs = differences(lists)
    if diffs:
        shown = "; ".join(diffs[:10]) + (f"; ... ({len(diffs) - 10} more)"
                                          if len(diffs) > 10 else "")
        raise DistributedError(f"{what} differ across ranks (seen on rank {comm.rank} of "
                               f"{comm.size}): {shown}")
