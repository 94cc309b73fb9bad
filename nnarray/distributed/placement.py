"""Which device each rank computes on (``comm.ctx``)."""

from __future__ import annotations

from .. import discovery as backends
from ..context import Context
from .errors import DistributedError


def choose(backend: str | None, local_rank: int) -> Context:
    """``cuda:<local_rank>`` when CUDA is usable (or asked for); ``<backend>:<local_rank
    % n>`` for another backend asked for (e.g. ``opencl``, whose CPU devices can be
    shared); else ``numpy:0``."""
    if backend is None:
        backend = "cuda" if "cuda" in backends.registered() and \
            backends.why_unavailable("cuda") is None else "numpy"
    if backend == "numpy":
        return Context("numpy", 0)
    reason = backends.why_unavailable(backend)
    if reason is not None:
        raise DistributedError(f"dist.init(backend={backend!r}): backend unavailable: {reason}")
    n = backends.module(backend).device_count()
    if n == 0:
        raise DistributedError(f"dist.init(backend={backend!r}): no {backend} device")
    if backend == "cuda":
        if local_rank >= n:  # NCCL refuses two ranks on one GPU
            raise DistributedError(
                f"dist.init: local rank {local_rank} has no GPU of its own ({n} on this "
                f"node); start at most {n} ranks per node")
        return Context("cuda", local_rank)
    return Context(backend, local_rank % n)
