"""``Solver``: the base of the optimizers; keeps parameters, per-parameter state and the
step count, and runs each update on the device that holds the parameter.

Updates are NdArray in-place ops and ``F`` calls on the parameter's device, so a step
moves no data between devices. State arrays are created lazily zero-filled: they
materialize on the parameter's device at the first update, with no transfer.

With ``comm`` (``nnarray.distributed``) the solver trains data-parallel: ``set_parameters``
checks that every rank holds the same parameter list and broadcasts rank 0's values;
``update`` averages the gradients over the ranks (bucketed all-reduce) before the step, so
every rank applies the same update to the same parameters.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import numbers
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ..context import Context, context_scope, get_current_context
from ..ndarray import NdArray, zeros
from ..nn import parameter as _p
from ..nn import serialization as _io
from ..nn.module import _assign, _value
from . import groups as _groups
from . import master as _master


def _signatures(items: dict[str, Any]) -> list[tuple]:
    """What must agree across ranks: name, shape, dtype, need_grad, backend of the data."""
    return [(k, tuple(p.shape), str(p.data.dtype), bool(p.need_grad),
             (p.data.head or "").partition(":")[0]) for k, p in items.items()]


_SAME_DEVICE = contextlib.nullcontext()  # the parameter already lives on the current device


def _takes_params(init: Any) -> Any:
    """``init`` also taking torch's spelling ``Solver(params, lr=...)``: a first argument
    that is not a number is the parameters, set after ``init`` ran."""
    @functools.wraps(init)
    def wrapped(self: Any, *args: Any, master_dtype: Any = None, **kwargs: Any) -> None:
        params = None
        if args and not isinstance(args[0], numbers.Real):
            params, args = args[0], args[1:]
        init(self, *args, **kwargs)
        if master_dtype is not None:  # None: parameters update in their own dtype
            self.master_dtype = _master.check_dtype(type(self).__name__, master_dtype)
        if params is not None:
            self.set_parameters(params)
    sig = inspect.signature(init)
    extra = inspect.Parameter("master_dtype", inspect.Parameter.KEYWORD_ONLY, default=None)
    ps = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
    wrapped.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[*ps, extra, *[p for p in sig.parameters.values()
                                  if p.kind is p.VAR_KEYWORD]])
    return wrapped


class Solver(ABC):
    """Base class: ``set_parameters``, ``zero_grad``, ``weight_decay``, ``update`` (torch's
    ``step``), ``save_states``/``load_states``, ``state_dict``/``load_state_dict`` and
    torch's ``param_groups``. Subclasses name their state (``state_names``) and implement
    ``update_one``, which reads the rate of the group being updated as ``self.lr``."""

    state_names: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            cls.__init__ = _takes_params(cls.__dict__["__init__"])

    def __init__(self, lr: float, *, comm: Any = None) -> None:
        if lr < 0:
            raise ValueError(f"{type(self).__name__}: lr must be >= 0, got {lr}")
        #: torch's groups: ``{"params": [Variable, ...], "lr": rate}``; writing a group's
        #: ``"lr"`` changes its next update
        self.param_groups: list[dict[str, Any]] = [{"params": [], "lr": float(lr)}]
        self._names: list[list[str]] = [[]]  # each group's parameter names
        self._active: float | None = None  # the rate of the group being updated
        self.comm = comm
        self.t = 0
        self.params: dict[str, Any] = {}
        self.states: dict[str, dict[str, NdArray]] = {}
        self._contexts: dict[str, Context] = {}
        #: ``master_dtype=``: 16-bit parameters are updated through a copy of this dtype
        #: (``solvers/master.py``); ``None``: in their own dtype
        self.master_dtype: np.dtype | None = None
        #: multiplies the gradients of master-weight parameters as they are widened (the
        #: loss scaler's unscale, applied in the master dtype); reset by every update
        self.grad_factor = 1.0

    @property
    def lr(self) -> float:
        """The learning rate: the first group's (during an update, the group's own);
        setting it sets every group's."""
        return self.param_groups[0]["lr"] if self._active is None else self._active

    @lr.setter
    def lr(self, value: float) -> None:
        for g in self.param_groups:
            g["lr"] = float(value)

    def set_parameters(self, params: Mapping[str, Any] | Iterable[Any]) -> None:
        """Take ``{name: Variable}`` (e.g. ``module.parameters()``), a sequence of
        Variables, or torch's list of groups ``[{"params": ..., "lr": ...}, ...]`` (each
        parameter then named ``"<group>.<name>"``, each group at its own ``lr``: default
        the solver's); new parameters get fresh state, known ones keep theirs.

        With ``comm`` of several ranks: a parameter list that differs across ranks
        (names, shapes, dtypes) raises ``DistributedError`` on every rank; else every
        rank's parameters become rank 0's."""
        name = type(self).__name__
        if _groups.is_group_list(params):
            items, groups, names = _groups.split(name, list(params), self.lr)
        else:
            items = _groups.named(params)
            if list(items) == list(self.params) and \
                    all(p is self.params[k] for k, p in items.items()):
                groups, names = self.param_groups, self._names  # the same: groups kept
            else:
                groups = [{"params": list(items.values()), "lr": self.lr}]
                names = [list(items)]
        if self._distributed:
            from ..distributed import checks
            checks.same_everywhere(self.comm, _signatures(items), "solver parameters")
            self.comm.broadcast([p.data for p in items.values()], root=0)
        old, self.params, self.states = self.states, items, {}
        self.param_groups, self._names = groups, names
        for k, p in items.items():
            master = _master.make(p, self.master_dtype, self._scope(p)) \
                if self.master_dtype is not None else None
            dtype = p.data.dtype if master is None else master.dtype
            st = old.get(k)
            if st is None or any(a.shape != p.shape or a.dtype != dtype
                                 for n, a in st.items() if n != _master.KEY):
                st = {s: zeros(p.shape, dtype) for s in self.state_names}
            else:
                st.pop(_master.KEY, None)
            if master is not None:
                st[_master.KEY] = master
            self.states[k] = st

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Zero every parameter's gradient (lazily). ``set_to_none`` is torch's
        argument, accepted either way: a gradient zeroed here allocates nothing, and the
        next backward writes it as torch's does a ``None`` one."""
        for p in self.params.values():
            p.grad.zero()

    def weight_decay(self, rate: float) -> None:
        """``grad += rate * data`` for every parameter (call before ``update``)."""
        if rate == 0:
            return
        for p in self._trainable():
            g = p.grad
            with self._scope(p):
                g += p.data * rate

    def scale_grad(self, factor: float) -> None:
        """``grad *= factor`` for every parameter, on its device."""
        if factor == 1:
            return
        for p in self._trainable():
            g = p.grad
            with self._scope(p):
                g *= factor

    def update(self) -> None:
        """One optimization step for every parameter with a gradient (averaged over the
        ranks first when the solver has a ``comm``), each on its parameter's device and
        at its group's rate."""
        if not self.params:
            raise RuntimeError(f"{type(self).__name__}.update: no parameters; call "
                               "set_parameters(model.parameters()) first or pass them: "
                               f"{type(self).__name__}(model.parameters(), lr=...)")
        self.t += 1
        if self._distributed:
            self.comm.all_reduce([p.grad for p in self._trainable()], op="mean")
        try:
            for group, names in zip(self.param_groups, self._names):
                self._active = float(group["lr"])
                self._update_names(names)
        finally:
            self._active = None
            self.grad_factor = 1.0

    def step(self, closure: Any = None) -> Any:
        """torch's name for ``update()``; ``closure`` (torch's: re-evaluates the model
        and returns the loss) is called first and its loss returned."""
        loss = closure() if closure is not None else None
        self.update()
        return loss

    def _update_names(self, names: list[str]) -> None:
        """Update the parameters ``names`` (one group), each on its device."""
        cur = get_current_context()
        key = cur.key
        states, params = self.states, self.params
        here: list = []  # the usual case: data and gradient written on the current device
        elsewhere: dict[Any, list] | None = None
        for name in names:
            p = params[name]
            if p.need_grad:
                g, data = p.grad, p.data
                ctx = None if data.head == key and g.head in (key, None) else \
                    self._context_of(p, cur)
                if ctx is None:
                    here.append((data, g, states[name]))
                else:
                    if elsewhere is None:
                        elsewhere = {}
                    elsewhere.setdefault(ctx, []).append((data, g, states[name]))
        if here:
            self._update_items(here)
        for ctx, items in (elsewhere or {}).items():
            with context_scope(ctx):
                self._update_items(items)

    def _update_items(self, items: list[tuple[NdArray, NdArray, dict]]) -> None:
        """``update_group(items)``, the master-weight parameters through their copies
        (``solvers/master.py``)."""
        if self.master_dtype is None:
            self.update_group(items)
            return
        items, written = _master.widen(items, self.grad_factor)
        self.update_group(items)
        _master.write_back(written)

    def update_group(self, items: list[tuple[NdArray, NdArray, dict]]) -> None:
        """Update the ``(data, grad, state)`` of parameters on one device (the current
        context); solvers with a fused kernel override this."""
        for w, g, state in items:
            self.update_one(w, g, state)

    @abstractmethod
    def update_one(self, w: NdArray, g: NdArray, state: dict[str, NdArray]) -> None:
        """Update the parameter data ``w`` in place from its gradient ``g``."""

    def learning_rate(self) -> float:
        """The first group's rate."""
        return self.lr

    def set_learning_rate(self, lr: float) -> None:
        """Set every group's rate."""
        self.lr = float(lr)

    # -- torch's state_dict ----------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """torch's layout, with parameter names for torch's indices: ``{"state": {name:
        {state name: NdArray}}, "param_groups": [{"lr": rate, "params": [names]}],
        "t": steps}``; the state arrays themselves (not copies), as torch's."""
        return {"state": {k: dict(st) for k, st in self.states.items()},
                "param_groups": [{"lr": g["lr"], "params": list(n)}
                                 for g, n in zip(self.param_groups, self._names)],
                "t": self.t}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Copy a ``state_dict()`` of a solver of the same parameters and groups into
        this one's state arrays (on their devices), rates and step count; everything is
        checked first (``nn.CheckpointError`` listing each problem)."""
        problems = self._state_dict_problems(state_dict)
        if problems:
            raise _io.CheckpointError(f"{type(self).__name__}.load_state_dict: "
                                      + "; ".join(problems))
        for k, st in self.states.items():
            for s, a in st.items():
                _assign(a, _value(state_dict["state"][k][s]))
        for g, saved in zip(self.param_groups, state_dict["param_groups"]):
            g["lr"] = float(saved["lr"])
        self.t = int(state_dict["t"])

    def _state_dict_problems(self, sd: Any) -> list[str]:
        if not isinstance(sd, Mapping) or set(sd) != {"state", "param_groups", "t"}:
            return ["expected a solver state_dict() with keys 'state', 'param_groups' and "
                    f"'t', got {sorted(sd) if isinstance(sd, Mapping) else type(sd).__name__}"]
        problems = []
        groups = list(sd["param_groups"])
        if [list(g.get("params", ())) for g in groups] != self._names:
            problems.append(f"parameter groups {[g.get('params') for g in groups]} differ "
                            f"from this solver's {self._names}")
        for k, st in self.states.items():
            saved = sd["state"].get(k, {})
            for s, a in st.items():
                if s not in saved:
                    problems.append(f"missing state {k}/{s}")
                    continue
                v = _value(saved[s])
                if tuple(v.shape) != a.shape or v.dtype != a.dtype:
                    problems.append(f"state {k}/{s} is {tuple(v.shape)} {v.dtype}, expected "
                                    f"{a.shape} {a.dtype}")
        extra = [f"{k}/{s}" for k, st in sd["state"].items() for s in st
                 if s not in self.states.get(k, {})]
        if extra:
            problems.append(f"unexpected states {extra}")
        return problems

    # -- state checkpoints -------------------------------------------------------------
    def save_states(self, path: str | os.PathLike) -> None:
        """Write the step count and every state array to an ``.npz`` file, atomically
        (with a ``comm`` of several ranks, rank 0 alone writes: the states are equal)."""
        if self._distributed and self.comm.rank != 0:
            return
        arrays = {f"{k}/{s}": _p.to_host(a) for k, st in self.states.items()
                  for s, a in st.items()}
        arrays["t"] = np.array(self.t, np.int64)
        _io.save_npz(path, arrays)

    def load_states(self, path: str | os.PathLike) -> None:
        """Read ``save_states`` output for the same parameters; validated before any
        state changes (``nn.CheckpointError`` naming the offending entries)."""
        expected = {f"{k}/{s}": (a.shape, a.dtype) for k, st in self.states.items()
                    for s, a in st.items()}
        expected["t"] = ((), np.dtype(np.int64))
        found = _io.load_checked(path, expected)
        for k, st in self.states.items():
            where = self.params[k].data.head
            for s, a in st.items():
                _p.write(a, found[f"{k}/{s}"], where)
        self.t = int(found["t"])

    # -- helpers -------------------------------------------------------------------
    @property
    def _distributed(self) -> bool:
        return self.comm is not None and self.comm.size > 1

    def _trainable(self) -> Iterable[Any]:
        return (p for p in self.params.values() if p.need_grad and p.grad is not None)

    def _scope(self, p: Any):
        """A context scope on the device that holds ``p``'s data (``_context_of``)."""
        ctx = self._context_of(p, get_current_context())
        return _SAME_DEVICE if ctx is None else context_scope(ctx)

    def _context_of(self, p: Any, cur: Context) -> Context | None:
        """The context to update ``p`` in (``None``: the current one): where its gradient
        was written if the data is current there too (a parameter set from the host, then
        used on a device, has current copies on both and its head on the host; updating
        on the host would move the gradient down and the data back up every step), else
        where the data was last written (``cur``: the current context)."""
        data = p.data
        head = data.head
        g = p._grad
        ghead = None if g is None else g.head
        if ghead is not None and ghead != head and ghead in data.devices:
            head = ghead
        if head is None or head == cur.key:
            return None
        ctx = self._contexts.get(head)
        if ctx is None:
            ctx = self._contexts[head] = Context.parse(head, cur.fallback)
        return ctx

    def __repr__(self) -> str:
        return f"{type(self).__name__}(lr={self.lr}, t={self.t}, params={len(self.params)})"


Solver.__init__ = _takes_params(Solver.__init__)  # type: ignore[method-assign]
