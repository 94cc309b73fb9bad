"""Data-parallel training over MPI (``pip install 'nnarray[distributed]'``).

    from nnarray import distributed as dist
    comm = dist.init()                     # under `mpiexec -n 4 python train.py`
    nna.set_default_context(comm.ctx)      # cuda:<local_rank>, opencl:<...> or numpy
    solver = solvers.Adam(1e-3, comm=comm) # gradients averaged over the ranks
    Trainer(model, solver, comm=comm).fit(...)   # each rank trains on its shard

A plain ``python train.py`` is a world of size 1 and never imports mpi4py. Under MPI an
uncaught exception on any rank aborts every rank with a message naming it.
"""

from __future__ import annotations

from . import faults, placement, world
from .buckets import DEFAULT_BUCKET_BYTES
from .communicator import Communicator
from .errors import DistributedError
from .transport import LocalTransport, MPITransport

__all__ = ["Communicator", "DistributedError", "init"]

_comms: dict[tuple[str | None, int], Communicator] = {}


def init(backend: str | None = None, bucket_bytes: int = DEFAULT_BUCKET_BYTES) -> Communicator:
    """This rank's communicator (the same object on a repeated call with the same
    arguments).

    ``comm.ctx`` is ``cuda:<local_rank>`` when CUDA is usable, ``<backend>:<local_rank % n>``
    when another ``backend`` is asked for (``"opencl"``), else ``numpy:0``. Launched by
    MPI with more than one rank, an uncaught exception on this rank aborts them all.
    """
    key = (backend, int(bucket_bytes))
    comm = _comms.get(key)
    if comm is not None:
        return comm
    mpi = world.mpi_world()
    if mpi is None:
        transport, local = LocalTransport(), 0
    else:
        transport, local = MPITransport(mpi), world.local_rank(mpi)
        if transport.size > 1:
            faults.install(transport.rank, transport.size, mpi.Abort, transport.departures)
    comm = _comms[key] = Communicator(transport, local, placement.choose(backend, local),
                                      bucket_bytes)
    return comm
