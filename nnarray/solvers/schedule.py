"""Learning-rate schedules: each sets its solver's ``lr``; call ``.step()`` after every
``solver.update()``."""

from __future__ import annotations

import math

from .solver import Solver


class Schedule:
    """Base: ``lr_at(k, base)`` is the rate for the update after ``k`` steps from the base
    rate ``base``; each parameter group's rate at construction is its base rate (as
    torch's schedulers: ``base_lr`` is the first group's) and every group's rate becomes
    ``lr_at(0, base)`` at once."""

    def __init__(self, solver: Solver) -> None:
        if not isinstance(solver, Solver):
            raise TypeError(f"{type(self).__name__}: expected a Solver, got "
                            f"{type(solver).__name__}")
        self.solver = solver
        self.base_lrs = [float(g["lr"]) for g in solver.param_groups]
        self.base_lr = self.base_lrs[0]
        self.steps = 0
        self._set(0)

    def lr_at(self, k: int, base: float | None = None) -> float:
        raise NotImplementedError

    def step(self) -> float:
        """Advance one step; returns the new rate (the first group's) and sets every
        group's."""
        self.steps += 1
        return self._set(self.steps)

    def _set(self, k: int) -> float:
        for g, base in zip(self.solver.param_groups, self.base_lrs):
            g["lr"] = self.lr_at(k, base)
        return self.solver.learning_rate()

    @property
    def lr(self) -> float:
        """The rate the next update uses."""
        return self.solver.learning_rate()


class CosineSchedule(Schedule):
    """Linear warmup to the base rate over ``warmup_steps`` (``base * (k+1) / warmup``),
    then a cosine from the base rate to ``min_lr`` over the remaining steps, staying at
    ``min_lr`` after ``total_steps``. With ``warmup_steps=0`` this is torch's
    ``CosineAnnealingLR(T_max=total_steps, eta_min=min_lr)``."""

    def __init__(self, solver: Solver, total_steps: int, warmup_steps: int = 0,
                 min_lr: float = 0.0) -> None:
        self.total, self.warmup, self.min_lr = int(total_steps), int(warmup_steps), float(min_lr)
        if self.total <= 0 or not 0 <= self.warmup < self.total or self.min_lr < 0:
            raise ValueError(f"CosineSchedule: need 0 <= warmup_steps < total_steps and "
                             f"min_lr >= 0, got total_steps={total_steps}, "
                             f"warmup_steps={warmup_steps}, min_lr={min_lr}")
        super().__init__(solver)

    def lr_at(self, k: int, base: float | None = None) -> float:
        base = self.base_lr if base is None else base
        if k < self.warmup:
            return base * (k + 1) / self.warmup
        frac = min(k - self.warmup, self.total - self.warmup) / (self.total - self.warmup)
        return self.min_lr + (base - self.min_lr) * (1 + math.cos(math.pi * frac)) / 2


class StepSchedule(Schedule):
    """``base * gamma ** (k // step_size)``, as torch's ``StepLR``."""

    def __init__(self, solver: Solver, step_size: int, gamma: float = 0.1) -> None:
        self.step_size, self.gamma = int(step_size), float(gamma)
        if self.step_size <= 0 or self.gamma < 0:
            raise ValueError(f"StepSchedule: need step_size > 0 and gamma >= 0, got "
                             f"step_size={step_size}, gamma={gamma}")
        super().__init__(solver)

    def lr_at(self, k: int, base: float | None = None) -> float:
        return (self.base_lr if base is None else base) * self.gamma ** (k // self.step_size)
