"""Host transports: collectives on contiguous numpy buffers, in place.

``MPITransport`` runs them through mpi4py (``Allreduce``/``Bcast``/``Allgather`` on
buffers, ``bcast``/``allgather`` on picklable objects); ``LocalTransport`` is the world of
one process, where every collective is the identity and nothing imports mpi4py.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class LocalTransport:
    """A world of size 1."""

    rank, size = 0, 1

    def allreduce(self, buf: np.ndarray, op: str) -> None:
        pass

    def bcast(self, buf: np.ndarray, root: int) -> None:
        pass

    def allgather(self, send: np.ndarray, recv: np.ndarray) -> None:
        recv[...] = send

    def barrier(self) -> None:
        pass

    def bcast_obj(self, obj: Any, root: int = 0) -> Any:
        return obj

    def allgather_obj(self, obj: Any) -> list[Any]:
        return [obj]


class MPITransport:
    """Collectives over an ``mpi4py.MPI.Comm``, each waited for while listening for
    departures (``faults.Departures``): a collective that a departed rank left unfinished
    ends the job, naming that rank, instead of waiting forever."""

    def __init__(self, comm: Any) -> None:
        from mpi4py import MPI

        from .faults import Departures
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self._in_place = MPI.IN_PLACE
        self._ops = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}
        self._bool_ops = {"max": MPI.LOR, "min": MPI.LAND}
        self.departures = Departures(comm)

    def allreduce(self, buf: np.ndarray, op: str) -> None:
        """``op`` in ``sum``/``max``/``min`` over every rank's ``buf``, into ``buf``."""
        mpi_op = self._bool_ops[op] if buf.dtype == np.bool_ else self._ops[op]
        self.departures.wait(self.comm.Iallreduce(self._in_place, buf, op=mpi_op),
                             "an all-reduce")

    def bcast(self, buf: np.ndarray, root: int) -> None:
        self.departures.wait(self.comm.Ibcast(buf, root=root), "a broadcast")

    def allgather(self, send: np.ndarray, recv: np.ndarray) -> None:
        self.departures.wait(self.comm.Iallgather(send, recv), "an all-gather")

    def barrier(self) -> None:
        self.departures.wait(self.comm.Ibarrier(), "a barrier")

    def bcast_obj(self, obj: Any, root: int = 0) -> Any:
        self.barrier()  # every rank is here: the pickled collective cannot hang
        return self.comm.bcast(obj, root=root)

    def allgather_obj(self, obj: Any) -> list[Any]:
        self.barrier()
        return self.comm.allgather(obj)
