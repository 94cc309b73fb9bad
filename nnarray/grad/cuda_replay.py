"""CUDA-graph replay of static schedules: the switch, the capture key and when a
schedule is captured again (issue 39 item 1, the host side).

On CUDA a static graph's schedule, after a plain first run (kernels compiled, buffers
allocated), is captured once into a CUDA graph and then replayed with one launch per
run (``nnarray.backends.cuda.graphs``). A captured graph reads and writes fixed device
buffers, so it stays valid only while the run would launch the same kernels on the same
buffers: the ``CaptureKey`` holds what decides that (the context; every leaf's shape and
dtype, the batch size among them; the identity of each parameter's device buffer).
Inputs (leaves that need no gradient) are copied into the captured buffers before a
replay, so their buffers are not in the key; a parameter the user replaced (a new
buffer) is. ``Replay.decide`` is the pure decision: run plain, capture, replay, or
capture again after a key change, with the reason.

``cuda_graphs(enabled)`` (per thread, as the graph modes; ``NNARRAY_CUDA_GRAPHS=0``
sets the default off) switches it: called, it switches for the rest of the thread's
context; used as a ``with`` block, it restores the previous setting at the end.

Status: ``run`` is the hook where ``forward`` would replay; until ``WIRED`` it runs the
schedule plainly and makes no decision. Launching the captured graph in place of the
run (output buffers bound to the graph's, inputs copied in, ``Captured``) needs a GPU to
be checked and is not written yet.
"""

from __future__ import annotations

import contextvars
import os
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: Whether ``run`` launches the captured graph (not yet: see the module doc).
WIRED = False

#: ``run``/``decide`` actions.
PLAIN, CAPTURE, REPLAY = "plain", "capture", "replay"


def _default() -> bool:
    return os.environ.get("NNARRAY_CUDA_GRAPHS", "1").strip().lower() not in ("0", "",
                                                                             "off", "false")


#: The process default (``NNARRAY_CUDA_GRAPHS``), read once at import.
DEFAULT = _default()
_enabled: contextvars.ContextVar[bool] = contextvars.ContextVar("nnarray_cuda_graphs",
                                                                default=DEFAULT)


class cuda_graphs:  # noqa: N801 (a switch and a context manager, named as torch's)
    """Turn CUDA-graph replay of static schedules on or off in this thread: now, and
    back to the previous setting at the end of a ``with cuda_graphs(...)`` block."""

    def __init__(self, enabled: bool = True) -> None:
        if not isinstance(enabled, bool):
            raise TypeError(f"cuda_graphs: enabled must be a bool, got {enabled!r}")
        self._token = _enabled.set(enabled)

    def __enter__(self) -> cuda_graphs:
        return self

    def __exit__(self, *exc: Any) -> None:
        _enabled.reset(self._token)


def cuda_graphs_enabled() -> bool:
    """Whether CUDA-graph replay is on in this thread (``cuda_graphs``)."""
    return _enabled.get()


@dataclass(frozen=True)
class CaptureKey:
    """What a captured graph depends on: the context's key; each leaf's ``(shape,
    dtype)`` in the graph's order; ``params``, the identity of each parameter's device
    buffer (``None``: not on the device yet); ``batch``, the first input's leading size
    (``None`` without inputs)."""

    ctx: str
    leaves: tuple[tuple[tuple[int, ...], str], ...]
    params: tuple[Any, ...]
    batch: int | None

    def changes(self, old: CaptureKey) -> str | None:
        """Why a graph captured under ``old`` cannot replay under this key (``None``:
        it can)."""
        if old.ctx != self.ctx:
            return f"context changed from {old.ctx} to {self.ctx}"
        if old.batch != self.batch:
            return f"batch size changed from {old.batch} to {self.batch}"
        if len(old.leaves) != len(self.leaves):
            return "the graph's inputs changed"
        for k, ((s0, d0), (s1, d1)) in enumerate(zip(old.leaves, self.leaves)):
            if s0 != s1:
                return f"input {k} changed shape from {s0} to {s1}"
            if d0 != d1:
                return f"input {k} changed dtype from {d0} to {d1}"
        if old.params != self.params:
            k = next(i for i, (a, b) in enumerate(zip(old.params, self.params)) if a != b) \
                if len(old.params) == len(self.params) else 0
            return f"parameter {k}'s buffer was replaced"
        return None


def buffer_id(native: Any) -> Any:
    """A device buffer's address (what a captured graph reads): CuPy's ``data.ptr``, a
    numpy array's data pointer, a pyopencl array's buffer handle and offset; else the
    native object's ``id``. A freed buffer's address given to a new one reads as the
    same buffer, as it is for the graph."""
    ptr = getattr(getattr(native, "data", None), "ptr", None)
    if isinstance(ptr, int):
        return ptr
    face = getattr(native, "__array_interface__", None)
    if face is not None:
        return face["data"][0]
    base = getattr(native, "base_data", None)
    if base is not None:
        return (base.int_ptr, native.offset)
    return id(native)


def key_of(ctx: Any, leaves: Iterable[tuple[Any, Any]], dev: Any = None) -> CaptureKey:
    """The ``CaptureKey`` of a run under ``ctx`` of a graph whose leaves are ``leaves``
    (``(Variable, shape)`` pairs, the plan's); ``dev``: the context's device, whose copy
    of each parameter's data identifies its buffer."""
    metas, params, batch = [], [], None
    for v, _ in leaves:
        d = v.data
        metas.append((tuple(d.shape), str(d.dtype)))
        if v.need_grad:
            x = d.current_copy(dev) if dev is not None else None
            params.append(None if x is None else buffer_id(x))
        elif batch is None and d.shape:
            batch = int(d.shape[0])
    return CaptureKey(getattr(ctx, "key", str(ctx)), tuple(metas), tuple(params), batch)


class Replay:
    """One schedule's capture state: ``decide(key)`` says what its next run does.

    The first run under a key is plain (it compiles and allocates; a capture must not);
    the second captures; later runs replay. A new key drops the graph (``reason`` says
    why) and starts over; with replay off, or off CUDA, every run is plain."""

    def __init__(self) -> None:
        self.key: CaptureKey | None = None
        self.runs = 0  # runs under ``key``
        self.graph: Any = None
        self.reason: str | None = None  # why the last graph was dropped
        self.captures = 0

    def decide(self, key: CaptureKey, cuda: bool, enabled: bool) -> str:
        if not (cuda and enabled):
            return PLAIN
        if self.key is None or key != self.key:
            if self.key is not None:
                self.reason = key.changes(self.key) or "the key changed"
            self.key, self.runs, self.graph = key, 0, None
        self.runs += 1
        if self.runs == 1:
            return PLAIN
        if self.graph is None:
            self.captures += 1
            return CAPTURE
        return REPLAY

    def captured(self, graph: Any) -> None:
        """The capture ``decide`` asked for was made: later runs under the key replay."""
        self.graph = graph


#: Each schedule's ``Replay`` (weakly: a schedule dropped with its plan drops its own).
_states: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def state_of(schedule: Any) -> Replay:
    s = _states.get(schedule)
    if s is None:
        s = _states[schedule] = Replay()
    return s


def decision(schedule: Any, leaves: Any, dev: Any) -> str:
    """What this run of ``schedule`` does (``PLAIN``, ``CAPTURE``, ``REPLAY``): its
    ``Replay`` fed the run's key (``dev``: the context's device)."""
    return state_of(schedule).decide(key_of(schedule.ctx, leaves, dev),
                                     schedule.ctx.backend == "cuda", cuda_graphs_enabled())


def run(schedule: Any, root: Any, leaves: Any) -> None:
    """Run a static forward ``schedule`` (the hook ``executor.forward`` calls). Once the
    launch is wired (``WIRED``), a CUDA run asks ``decision`` and captures or replays;
    until then it runs plainly and pays nothing for the hook (the key costs a few
    microseconds a run, which a launch-bound step would feel)."""
    if WIRED and schedule.ctx.backend == "cuda":  # pragma: no cover (not wired yet)
        from .. import discovery
        ctx = schedule.ctx
        action = decision(schedule, leaves, discovery.get_device(ctx.backend, ctx.device_id))
        if action != PLAIN:
            raise NotImplementedError(f"cuda graph {action}: see the module doc")
    schedule.run(root)


def describe(schedule: Any) -> str:
    """``print_schedule``'s line: whether the schedule replays as a CUDA graph."""
    ctx = schedule.ctx
    if ctx.backend != "cuda":
        return f"cuda graph: no (runs on {ctx.key}; graphs replay on CUDA only)"
    if not cuda_graphs_enabled():
        return "cuda graph: no (grad.cuda_graphs(False) or NNARRAY_CUDA_GRAPHS=0)"
    if schedule.kind != "forward":
        return "cuda graph: no (backward schedules are not captured yet)"
    if schedule.program is None:
        return "cuda graph: no (a step is not a plain kernel call on one device)"
    st = _states.get(schedule)
    tail = f"; captured {st.captures}x, last recapture: {st.reason}" if st and st.reason \
        else ""
    return "cuda graph: yes, would replay as one graph from its second run" + tail
