"""A rank that fails takes the whole job down, naming itself.

mpi4py does not abort the job on an uncaught exception: the failing rank would exit while
the others wait forever in their next collective. As ChainerMN's
``add_hook_for_global_except``, an ``excepthook`` prints the traceback and one line
naming the rank and its exception, then calls ``MPI.COMM_WORLD.Abort()``, on which the
launcher ends every rank with a non-zero status. ``sys.exit`` with a non-zero status
(``sys.exit(main())``, argparse errors) does the same: ``SystemExit`` never reaches the
excepthook, and MPICH's finalize on the exiting rank would wait for the ranks that wait
for it.

Inside ``together(what)`` (``Trainer.fit`` runs in one) leaving at all is a failure: the
other ranks still expect this one in their collectives. There ``sys.exit(0)``, ``raise
SystemExit`` (any status) and ``os._exit`` (any status) abort every rank naming this one.
Without that, ``os._exit(0)`` makes MPICH's launcher kill the other ranks at once and
report success (status 0), and a clean exit leaves them waiting forever. Outside such a
region an exit with status 0 is not caught.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

#: Seconds between writing the rank's last words and aborting: MPICH's launcher kills the
#: job on an abort and drops what it has not yet read from the ranks' pipes (under load a
#: flushed line was lost: a CI run saw an abort with no output at all).
FORWARD_S = 0.5
_installed: list[Callable[..., Any]] = []
#: What the ranks are doing together now (innermost last): leaving it is a failure.
_regions: list[str] = []
#: ``leave(how, status)`` of the installed hooks: report this rank's exit and abort.
_leave: list[Callable[[str, object], None]] = []


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
            time.sleep(FORWARD_S)
        finally:
            abort(1)

    exit_, os_exit, pid = sys.exit, os._exit, os.getpid()

    def leave(how: str, status: object) -> None:
        """Abort every rank with one line naming this one and how it left."""
        during = f" during {_regions[-1]}" if _regions else ""
        try:
            sys.stdout.flush()
            sys.stderr.write(f"nnarray.distributed: rank {rank} of {size} called {how}"
                             f"{during}; aborting all {size} ranks\n")
            sys.stderr.flush()
            time.sleep(FORWARD_S)
        finally:
            abort(status if isinstance(status, int) and status != 0 else 1)

    def exit(status: object = None) -> None:
        if (status is not None and status != 0) or _regions:
            leave(f"sys.exit({status!r})", status)
        exit_(status)

    def _exit(status: int) -> None:
        if _regions and os.getpid() == pid:  # not a forked child (multiprocessing)
            leave(f"os._exit({status!r})", status)
        os_exit(status)

    _installed.append(sys.excepthook)
    sys.excepthook = hook
    sys.exit = exit
    os._exit = _exit
    _leave.append(leave)


@contextlib.contextmanager
def together(what: str) -> Iterator[None]:
    """A region every rank runs to its end: a rank leaving it (``sys.exit``, ``raise
    SystemExit``, ``os._exit``, whatever the status) aborts every rank naming itself.
    Nothing happens outside a world of several ranks (``install`` not called)."""
    _regions.append(what)
    try:
        yield
    except SystemExit as e:
        if _leave:
            _leave[0](f"SystemExit({e.code!r})", e.code)
        raise
    finally:
        _regions.pop()
