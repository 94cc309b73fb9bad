"""Finding the world this process belongs to.

An MPI launcher (``mpiexec``, ``mpirun``, ``srun --mpi=pmix``) leaves its marks in the
environment; only then is mpi4py imported (which initializes MPI). A plain
``python script.py`` is a world of size 1 with no import of mpi4py at all, so users who
never installed the ``distributed`` extra train unchanged. Launched on several ranks
without mpi4py, every rank would silently train alone: that raises instead.
"""

from __future__ import annotations

import os
from typing import Any

from .errors import DistributedError

#: Variables set by MPICH/Intel MPI (PMI), Open MPI, PMIx and MVAPICH launchers.
_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "PMIX_SIZE")
_RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK", "PMIX_RANK")
#: Every variable by which a launcher marks the processes it starts.
LAUNCHER_VARS = _SIZE_VARS + _RANK_VARS + ("PMI_FD", "MPI_LOCALNRANKS", "MPI_LOCALRANKID")


def launched_size() -> int | None:
    """The world size an MPI launcher announced (``0`` when it names no size), or
    ``None`` when this process was not started by one."""
    for v in _SIZE_VARS:
        s = os.environ.get(v)
        if s and s.isdigit():
            return int(s)
    if any(os.environ.get(v) for v in _RANK_VARS):
        return 0
    return None


def mpi_world() -> Any | None:
    """``mpi4py.MPI.COMM_WORLD`` when launched by MPI, else ``None`` (a world of one)."""
    size = launched_size()
    if size is None:
        return None
    try:
        from mpi4py import MPI
    except ImportError as e:
        if size == 1:
            return None
        raise DistributedError(
            f"started by an MPI launcher ({size or 'several'} ranks) but mpi4py cannot be "
            f"imported ({e}); install it with: pip install 'nnarray[distributed]'") from None
    return MPI.COMM_WORLD


def local_rank(comm: Any) -> int:
    """This rank's index among the ranks on its node (shared-memory domain)."""
    from mpi4py import MPI
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return node.Get_rank()
    finally:
        node.Free()


def launch_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for ranks started from this process (tests, benchmarks): ``base``
    (default ``os.environ``) without the marks of a launcher this process may itself run
    under, and with Open MPI's consent to run as root (containers and CI run as root;
    MPICH ignores it)."""
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if k not in LAUNCHER_VARS}
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def launcher() -> tuple[str | None, str]:
    """``(path of mpiexec, "")`` for launching ranks from Python (tests, benchmarks), or
    ``(None, why not)`` when mpi4py or mpiexec is missing."""
    import shutil
    import sys
    from pathlib import Path
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None, "mpi4py not installed (pip install 'nnarray[distributed]')"
    exe = shutil.which("mpiexec") or shutil.which("mpiexec", path=str(Path(sys.executable).parent))
    if exe is None:
        return None, ("no mpiexec on PATH or beside the Python executable "
                      "(pip install 'nnarray[distributed]' installs MPICH's)")
    return exe, ""

