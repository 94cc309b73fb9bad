"""The error distributed training raises."""

from __future__ import annotations

from ..errors import NnarrayError


class DistributedError(NnarrayError):
    """Ranks that disagree (parameter lists, shapes), or an MPI/NCCL setup that cannot
    work; raised on every rank that sees it, naming the ranks involved."""
