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
``os._exit`` anywhere does the same: it skips MPI's finalize, and MPICH's launcher would
kill the other ranks at once and report success.

Any other way out (the script's end, ``raise SystemExit(3)``, ``exit(3)``, a rank running
fewer steps than the others) is announced to every rank at exit (``Departures``): each
collective is waited for while listening for departures, so a rank left waiting for a
departed one ends the job within ``GRACE_S`` seconds, naming the rank that left, instead
of waiting forever. A rank that never calls a collective again is not waiting for anyone.
"""

from __future__ import annotations

import atexit
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


#: Seconds a collective may still take to finish after a rank it waits for departed
#: (its messages sent before leaving are still delivered), before the job is aborted.
GRACE_S = 3.0
#: Tag of the departure messages (on a communicator of their own).
_DEPART = 7


class Departures:
    """This rank's side of the departure protocol on ``comm`` (its own duplicate, so no
    collective ever matches its messages): ``announce`` tells every other rank that this
    one is leaving; ``wait`` waits for a collective's request, listening for such
    messages, and aborts the job naming the departed rank when the request is still
    unfinished ``GRACE_S`` seconds after one arrived."""

    def __init__(self, comm: Any) -> None:
        from mpi4py import MPI
        self.ctl = comm.Dup()
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.abort = comm.Abort
        self.departed: dict[int, str] = {}
        self._status = MPI.Status()
        self._any = MPI.ANY_SOURCE

    def announce(self, how: str) -> None:
        """Tell every other rank that this one leaves (``how``); never blocks for long."""
        reqs = [self.ctl.isend(how, dest=r, tag=_DEPART)
                for r in range(self.size) if r != self.rank]
        deadline = time.monotonic() + 1.0
        while reqs and time.monotonic() < deadline:
            reqs = [q for q in reqs if not q.Test()]
            time.sleep(0.001)

    def listen(self) -> None:
        """Take every departure message that arrived."""
        st = self._status
        while self.ctl.Iprobe(source=self._any, tag=_DEPART, status=st):
            src = st.Get_source()
            self.departed[src] = self.ctl.recv(source=src, tag=_DEPART)

    def wait(self, req: Any, what: str) -> None:
        """Wait for ``req`` (a collective's request); abort every rank when a rank it
        needs departed and it stays unfinished ``GRACE_S`` seconds."""
        spins, since = 0, None
        while not req.Test():
            spins += 1
            if spins < 200:
                continue  # a collective between ranks in step finishes in microseconds
            self.listen()
            if self.departed:
                now = time.monotonic()
                since = since or now
                if now - since > GRACE_S:
                    self.stranded(what)
            time.sleep(0.0002 if spins < 5000 else 0.002)

    def stranded(self, what: str) -> None:
        """Abort every rank: this one waits in ``what`` for a rank that departed."""
        gone = ", ".join(f"rank {r} of {self.size} {how}"
                         for r, how in sorted(self.departed.items()))
        abort_with(f"nnarray.distributed: {gone} while rank {self.rank} waits for it in "
                   f"{what}; aborting all {self.size} ranks\n", self.abort, 1)


def abort_with(text: str, abort: Callable[[int], Any], status: int) -> None:
    """Write ``text`` to stderr, give MPI a moment to forward it, then ``abort(status)``
    (every rank), whatever the write does."""
    try:
        sys.stdout.flush()
        sys.stderr.write(text)
        sys.stderr.flush()
        time.sleep(FORWARD_S)
    finally:
        abort(status)


def install(rank: int, size: int, abort: Callable[[int], Any],
            departures: Departures | None = None) -> None:
    """Make an uncaught exception on this rank abort every rank (once per process), and
    (with ``departures``) announce this rank's exit to the others."""
    if _installed:
        return

    def hook(etype: type, value: BaseException, tb: Any) -> None:
        try:
            text = "".join(traceback.format_exception(etype, value, tb)) + \
                message(rank, size, etype, value) + "\n"
        except Exception:  # the abort must happen whatever formatting does
            text = f"nnarray.distributed: rank {rank} of {size}: {etype.__name__}\n"
        abort_with(text, abort, 1)

    exit_, os_exit, pid = sys.exit, os._exit, os.getpid()

    def leave(how: str, status: object) -> None:
        """Abort every rank with one line naming this one and how it left."""
        during = f" during {_regions[-1]}" if _regions else ""
        abort_with(f"nnarray.distributed: rank {rank} of {size} called {how}{during}; "
                   f"aborting all {size} ranks\n", abort,
                   status if isinstance(status, int) and status != 0 else 1)

    def exit(status: object = None) -> None:
        if (status is not None and status != 0) or _regions:
            leave(f"sys.exit({status!r})", status)
        exit_(status)

    def _exit(status: int) -> None:
        if os.getpid() == pid:  # not a forked child (multiprocessing)
            leave(f"os._exit({status!r})", status)
        os_exit(status)

    def depart() -> None:  # at exit: the script's end, SystemExit (exit(3)) of any status
        if os.getpid() == pid and departures is not None:
            departures.announce("exited (its script ended or raised SystemExit)")

    _installed.append(sys.excepthook)
    sys.excepthook = hook
    sys.exit = exit
    os._exit = _exit
    _leave.append(leave)
    atexit.register(depart)


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
