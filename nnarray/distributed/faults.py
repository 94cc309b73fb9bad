"""A rank that fails takes the whole job down, naming itself.

mpi4py does not abort the job on an uncaught exception: the failing rank would exit while
the others wait forever in their next collective. As ChainerMN's
``add_hook_for_global_except``, an ``excepthook`` prints the traceback and one line
naming the rank and its exception, then calls ``MPI.COMM_WORLD.Abort()``, on which the
launcher ends every rank with a non-zero status.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from typing import Any

_installed: list[Callable[..., Any]] = []


def message(rank: int, size: int, etype: type, value: BaseException) -> str:
    text = f"{etype.__name__}: {value}" if str(value) else etype.__name__
    return (f"nnarray.distributed: rank {rank} of {size} failed with {text}; "
            f"aborting all {size} ranks")


def install(rank: int, size: int, abort: Callable[[int], Any]) -> None:
    """Make an uncaught exception on this rank abort every rank (once per process)."""
    if _installed:
        return

    def hook(etype: type, value: BaseException, tb: Any) -> None:
        try:
            sys.stdout.flush()
            sys.stderr.write("".join(traceback.format_exception(etype, value, tb)))
            sys.stderr.write(message(rank, size, etype, value) + "\n")
            sys.stderr.flush()
        finally:
            abort(1)

    _installed.append(sys.excepthook)
    sys.excepthook = hook
