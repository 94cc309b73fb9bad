"""Learning-rate schedules: each sets its solver's ``lr``; call ``.step()`` after every
``solver.update()``."""

from __future__ import annotations

import math

from .solver import Solver


class Schedule:
    """Base: ``lr_at(k)`` is the rate for the update after ``k`` steps; the solver's rate
    at construction is the base rate and the rate becomes ``lr_at(0)`` at once."""

    def __init__(self, solver: Solver) -> None:
        if not isinstance(solver, Solver):
            raise TypeError(f"{type(self).__name__}: expected a Solver, got "
                            f"{type(solver).__name__}")
        self.solver = solver
        self.base_lr = solver.learning_rate()
        self.steps = 0
        solver.set_learning_rate(self.lr_at(0))

    def lr_at(self, k: int) -> float:
        raise NotImplementedError

    def step(self) -> float:
        """Advance one step; returns (and sets) the new rate."""
        self.steps += 1
        lr = self.lr_at(self.steps)
        self.solver.set_learning_rate(lr)
        return lr

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

    def lr_at(self, k: int) -> float:
        if k < self.warmup:
            return self.base_lr * (k + 1) / self.warmup
        frac = min(k - self.warmup, self.total - self.warmup) / (self.total - self.warmup)
        return self.min_lr + (self.base_lr - self.min_lr) * (1 + math.cos(math.pi * frac)) / 2


class StepSchedule(Schedule):
    """``base * gamma ** (k // step_size)``, as torch's ``StepLR``."""

    def __init__(self, solver: Solver, step_size: int, gamma: float = 0.1) -> None:
        self.step_size, self.gamma = int(step_size), float(gamma)
        if self.step_size <= 0 or self.gamma < 0:
            raise ValueError(f"StepSchedule: need step_size > 0 and gamma >= 0, got "
                             f"step_size={step_size}, gamma={gamma}")
        super().__init__(solver)

    def lr_at(self, k: int) -> float:
        return self.base_lr * self.gamma ** (k // self.step_size)
