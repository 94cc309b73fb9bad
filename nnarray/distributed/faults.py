"""A rank that fails takes the whole job down, naming itself.

mpi4py does not abort the job on an uncaught exception: the failing rank would exit while
the others wait forever in their next collective. As ChainerMN's
``add_hook_for_global_except``, an ``excepthook`` prints the traceback and one line
naming the rank and its exception, then calls ``MPI.COMM_WORLD.Abort()``, on which the
launcher ends every rank with a non-zero status. ``sys.exit`` with a non-zero status
(``sys.exit(main())``, argparse errors) does the same: ``SystemExit`` never reaches the
excepthook, and MPICH's finalize on the exiting rank would wait for the ranks that wait
for it. (A bare ``raise SystemExit(n)`` and a rank exiting with status 0 while the others
still expect it in a collective are not caught: as in mpi4py and PyTorch DDP, those hang.)
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

    exit_ = sys.exit

    def exit(status: object = None) -> None:
        if status is not None and status != 0:
            try:
                sys.stdout.flush()
                sys.stderr.write(f"nnarray.distributed: rank {rank} of {size} called "
                                 f"sys.exit({status!r}); aborting all {size} ranks\n")
                sys.stderr.flush()
            finally:
                abort(status if isinstance(status, int) else 1)
        exit_(status)

    _installed.append(sys.excepthook)
    sys.excepthook = hook
    sys.exit = exit
