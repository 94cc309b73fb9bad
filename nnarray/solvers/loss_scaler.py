"""``LossScaler``: dynamic loss scaling for 16-bit training, torch's ``GradScaler``.

The loss is multiplied by a scale ``S`` before ``backward`` so that small gradients stay
representable in float16; ``step(solver)`` unscales the gradients (``g / S``) and skips
the update when any of them is inf or NaN (then ``update()`` lowers ``S``); after
``growth_interval`` finite steps in a row ``S`` grows. Gradients are unscaled and checked
on their device in one pass each (``ops/unscale.py``: the flag is set by the unscale
kernel itself), and the step reads one scalar per device.

    scaler = solvers.LossScaler()
    scaler.scale(loss).backward()
    scaler.step(solver)     # skipped when a gradient is not finite
    scaler.update()

With a solver's ``master_dtype`` the gradients of 16-bit parameters are checked where
they are and unscaled as the solver widens them (in float32: an unscaled float16
gradient would underflow); they stay scaled in ``.grad``.

With a data-parallel solver (``comm=``) the found-inf flag is agreed across the ranks
(``Communicator.any_rank``: an all-reduce max) before the step, so an inf on one rank
makes every rank skip the step and lower its scale: the replicas and their scales stay
equal (the gradients are all-reduced only inside the step).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import grad
from ..context import context_scope
from ..ndarray import NdArray, zeros
from ..ops.unscale import unscale_ as _unscale
from . import master as _master

_KEYS = ("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker")


class LossScaler:
    """torch's ``GradScaler(init_scale=2**16, growth_factor=2.0, backoff_factor=0.5,
    growth_interval=2000, enabled=True)``, nnabla's dynamic loss-scaling updater."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        if not init_scale > 0 or not np.isfinite(init_scale):
            raise ValueError(f"LossScaler: init_scale must be finite and > 0, got {init_scale}")
        if not growth_factor > 1.0:
            raise ValueError(f"LossScaler: growth_factor must be > 1, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(f"LossScaler: backoff_factor must be in (0, 1), got "
                             f"{backoff_factor}")
        if int(growth_interval) != growth_interval or growth_interval < 1:
            raise ValueError(f"LossScaler: growth_interval must be an integer >= 1, got "
                             f"{growth_interval}")
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._enabled = bool(enabled)
        #: per solver (by id) this step: ``None`` (not unscaled yet) or whether a gradient
        #: was not finite
        self._found: dict[int, bool] = {}
        self._stepped = False

    # -- the step --------------------------------------------------------------------
    def scale(self, loss: Any) -> Any:
        """``loss * scale`` (a Variable or NdArray; a 16-bit loss is widened to float32
        first, so the product cannot overflow there); ``loss`` itself when disabled."""
        if not self._enabled:
            return loss
        if isinstance(loss, (grad.Variable, NdArray)) and _master.is_low(loss.dtype):
            from .. import functions as F
            loss = F.cast(loss, np.float32)
        return loss * self._scale

    def unscale_(self, solver: Any) -> None:
        """Unscale ``solver``'s gradients in place and record whether any is not finite
        (torch's ``unscale_``: call it before clipping; ``step`` then does not unscale
        again). Twice in one step raises ``RuntimeError``."""
        if not self._enabled:
            return
        if id(solver) in self._found:
            raise RuntimeError("LossScaler.unscale_: already called for this solver since "
                               "the last update()")
        self._found[id(solver)] = _check_and_unscale(solver, 1.0 / self._scale)

    def step(self, solver: Any, *args: Any, **kwargs: Any) -> Any:
        """``solver.step(*args, **kwargs)`` unless a gradient is inf or NaN (then the step
        is skipped, the solver's step count unchanged); returns the step's value, or
        ``None`` when skipped."""
        if not self._enabled:
            return solver.step(*args, **kwargs)
        if id(solver) not in self._found:
            self.unscale_(solver)
        self._stepped = True
        if self._found[id(solver)]:
            solver.grad_factor = 1.0
            return None
        return solver.step(*args, **kwargs)

    def update(self, new_scale: float | None = None) -> None:
        """torch's rule: a non-finite gradient this step multiplies the scale by
        ``backoff_factor`` and restarts the count; ``growth_interval`` finite steps in a row
        multiply it by ``growth_factor``. ``new_scale`` sets it instead."""
        if not self._enabled:
            return
        found = any(self._found.values())
        self._found = {}
        if new_scale is not None:
            if not new_scale > 0 or not np.isfinite(new_scale):
                raise ValueError(f"LossScaler.update: new_scale must be finite and > 0, got "
                                 f"{new_scale}")
            self._scale = float(new_scale)
            self._stepped = False
            return
        if not self._stepped:
            raise RuntimeError("LossScaler.update: no step(solver) since the last update()")
        self._stepped = False
        if found:
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
            return
        self._growth_tracker += 1
        if self._growth_tracker == self._growth_interval:
            grown = self._scale * self._growth_factor
            if np.isfinite(np.float32(grown)):  # torch keeps its scale in float32
                self._scale = grown
            self._growth_tracker = 0

    # -- state -----------------------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """torch's keys: ``scale``, ``growth_factor``, ``backoff_factor``,
        ``growth_interval``, ``_growth_tracker`` (empty when disabled)."""
        if not self._enabled:
            return {}
        return dict(zip(_KEYS, (self._scale, self._growth_factor, self._backoff_factor,
                                self._growth_interval, self._growth_tracker)))

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a ``state_dict()`` (checked whole before anything changes)."""
        if not self._enabled:
            return
        missing = [k for k in _KEYS if k not in state]
        if missing or not state:
            raise ValueError(f"LossScaler.load_state_dict: missing {missing or list(_KEYS)}")
        scale = float(state["scale"])
        if not scale > 0 or not np.isfinite(scale):
            raise ValueError(f"LossScaler.load_state_dict: scale must be finite and > 0, "
                             f"got {scale}")
        self._scale = scale
        self._growth_factor = float(state["growth_factor"])
        self._backoff_factor = float(state["backoff_factor"])
        self._growth_interval = int(state["growth_interval"])
        self._growth_tracker = int(state["_growth_tracker"])

    def __repr__(self) -> str:
        return (f"LossScaler(scale={self.get_scale()}, growth_tracker={self._growth_tracker}, "
                f"enabled={self._enabled})")


def _check_and_unscale(solver: Any, inv: float) -> bool:
    """Unscale ``solver``'s gradients by ``inv`` on their devices (those of master-weight
    parameters only checked: the solver unscales them as it widens them) and say whether
    any element is not finite: one host read per device, and with a ``comm`` one
    all-reduce (max) of the flag, so every rank sees any rank's inf."""
    by_device: dict[Any, tuple[list, list]] = {}
    for name, p in solver.params.items():
        if not p.need_grad:
            continue
        g = p.grad
        if g.head is None:  # never written: zeros, nothing to unscale or check
            continue
        low = _master.KEY in solver.states.get(name, {})
        by_device.setdefault(g.head, ([], []))[low].append(g)
    found = False
    for where, (plain, low) in by_device.items():
        with context_scope(where):
            flag = zeros((1,), np.float32)  # lazily filled: made on the device
            _unscale(plain, inv, flag)
            _unscale(low, 1.0, flag)
            found = found or bool(flag.item())  # the one read of this device
    if solver.comm is not None:  # data-parallel: every rank skips the same step
        found = solver.comm.any_rank(found)
    if not found and inv != 1.0:
        solver.grad_factor = inv
    return found
