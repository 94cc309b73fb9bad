"""Graph-building modes, thread-local (contextvars): static (default), define-by-run
(``auto_forward``) and ``no_grad`` (run now, record nothing, retain nothing), and how
schedules built now fuse (``fusion_enabled``)."""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator

STATIC, AUTO, NO_GRAD = 0, 1, 2
#: A backward pass traced while it runs (``program.trace(run=...)``): every function on
#: Variables runs now and is appended to the ``recording.tape`` as a program step.
TRACE = 3

#: The mode in force; ``NO_GRAD`` wins over ``AUTO``.
mode: contextvars.ContextVar[int] = contextvars.ContextVar("nnarray_grad_mode", default=STATIC)
_auto: contextvars.ContextVar[bool] = contextvars.ContextVar("nnarray_auto", default=False)
_nograd: contextvars.ContextVar[bool] = contextvars.ContextVar("nnarray_nograd", default=False)


def _set(auto: bool, nograd: bool) -> list:
    return [_auto.set(auto), _nograd.set(nograd),
            mode.set(NO_GRAD if nograd else AUTO if auto else STATIC)]


def _reset(tokens: list) -> None:
    _auto.reset(tokens[0])
    _nograd.reset(tokens[1])
    mode.reset(tokens[2])


@contextlib.contextmanager
def auto_forward(enabled: bool = True) -> Iterator[None]:
    """Define-by-run inside the block: every function runs as it is called."""
    tokens = _set(bool(enabled), _nograd.get())
    try:
        yield
    finally:
        _reset(tokens)


@contextlib.contextmanager
def no_grad() -> Iterator[None]:
    """Inside the block functions on Variables run now and record no graph."""
    tokens = _set(_auto.get(), True)
    try:
        yield
    finally:
        _reset(tokens)


@contextlib.contextmanager
def enable_grad() -> Iterator[None]:
    """Define-by-run with recording inside the block, even within ``no_grad()`` (torch's
    ``enable_grad``; ``gradgradcheck`` differentiates inside its numerical passes)."""
    tokens = _set(True, False)
    try:
        yield
    finally:
        _reset(tokens)


@contextlib.contextmanager
def static() -> Iterator[None]:
    """Inside the block functions on Variables record a graph and run nothing (the
    default mode), whatever mode encloses the block."""
    tokens = _set(False, False)
    try:
        yield
    finally:
        _reset(tokens)


def is_auto_forward() -> bool:
    """True inside ``auto_forward()`` (or ``no_grad()``: both run functions now)."""
    return mode.get() != STATIC


#: What ``fusion_enabled(recompute=...)`` accepts.
RECOMPUTE = ("auto", "all", "off")


def _fusion_default() -> tuple[bool, str]:
    env = os.environ.get("NNARRAY_RECOMPUTE", "auto")
    return (os.environ.get("NNARRAY_FUSION", "1") not in ("0", "", "off"),
            "off" if env in ("0", "") else env if env in RECOMPUTE else "auto")


#: ``(fuse, recompute)`` for schedules built now (``fusion_enabled``; per thread, as the
#: graph modes; ``NNARRAY_FUSION`` / ``NNARRAY_RECOMPUTE`` set the default).
_FUSION_DEFAULT = _fusion_default()
fusion: contextvars.ContextVar[tuple[bool, str]] = contextvars.ContextVar(
    "nnarray_fusion", default=_FUSION_DEFAULT)


@contextlib.contextmanager
def fusion_enabled(on: bool = True, recompute: str | None = None) -> Iterator[None]:
    """Build the schedules of graphs run inside (in this thread) with (``on``) or
    without fusion, and with what backward ``recompute``s (``"auto"``, ``"all"``,
    ``"off"``; ``None``: as before); a schedule built before keeps how it was built,
    except a static graph's and a traced backward's, which are built again when this
    differs (``Variable.forward``, ``backward``)."""
    if recompute is not None and recompute not in RECOMPUTE:
        raise ValueError(f"fusion_enabled: recompute must be one of {RECOMPUTE}, "
                         f"got {recompute!r}")
    token = fusion.set((bool(on), fusion.get()[1] if recompute is None else recompute))
    try:
        yield
    finally:
        fusion.reset(token)


#: Marks an NdArray saved for a backward pass (``NdArray._snap``): ``Variable.d`` then
#: keeps a snapshot, so that a write through the numpy view it hands out is detected.
SAVED = object()
