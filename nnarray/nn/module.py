"""``Module``: a container of parameters, state arrays and sub-modules (Chainer's Link).

Attributes register themselves by type when assigned: a ``grad.Variable`` with
``need_grad=True`` is a parameter, any other Variable or an ``NdArray`` is state (e.g.
batch-norm running statistics), a ``Module`` is a child. Names are dotted paths in
assignment order; ``save``/``load`` cover parameters and state.
"""

from __future__ import annotations

import os
import warnings
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from .. import grad
from ..context import Context
from ..grad import modes as _modes
from ..ndarray import NdArray
from . import dtype_cast as _dtype_cast
from . import parameter as _p
from . import serialization as _io
from .parameters import Parameters


def _eager_call(args: tuple, kwargs: dict) -> bool:
    """Whether the arguments hold an NdArray and no Variable (top level, or in a list or
    tuple argument)."""
    found = False
    for a in (*args, *kwargs.values()):
        for x in a if isinstance(a, (list, tuple)) else (a,):
            if isinstance(x, grad.Variable):
                return False
            found = found or isinstance(x, NdArray)
    return found


def _values(out: Any) -> Any:
    """``out`` with each Variable replaced by its data (in tuples, lists and dicts too)."""
    if isinstance(out, grad.Variable):
        return out.data
    if isinstance(out, tuple) and hasattr(out, "_fields"):  # a named tuple
        return type(out)(*map(_values, out))
    if isinstance(out, (list, tuple)):
        return type(out)(_values(o) for o in out)
    if isinstance(out, dict):
        return {k: _values(v) for k, v in out.items()}
    return out


def _is_array(value: Any) -> bool:
    return isinstance(value, (NdArray, grad.Variable))


class Module:
    """Base class of layers and models: assign parameters and sub-modules as attributes,
    implement ``forward``, call the module like a function."""

    training: bool

    def __new__(cls, *args: Any, **kwargs: Any) -> Module:
        self = super().__new__(cls)
        object.__setattr__(self, "_arrays", {})
        object.__setattr__(self, "_children", {})
        object.__setattr__(self, "training", True)
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        self._arrays.pop(name, None)
        self._children.pop(name, None)
        if isinstance(value, Module):
            self._children[name] = value
        elif _is_array(value):
            self._arrays[name] = value
        elif isinstance(value, (list, dict)):
            _warn_unregistered(self, name, value)
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        self._arrays.pop(name, None)
        self._children.pop(name, None)
        object.__delattr__(self, name)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """``forward(*args, **kwargs)``. Outside ``auto_forward`` a call on NdArrays (no
        Variable among the arguments) runs now and returns NdArrays, as ``F`` functions
        do on NdArrays; on Variables it records (static or define-by-run)."""
        if _modes.mode.get() != _modes.AUTO and _eager_call(args, kwargs):
            with _modes.no_grad():
                return _values(self.forward(*args, **kwargs))
        return self.forward(*args, **kwargs)

    # -- traversal -------------------------------------------------------------------
    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Direct sub-modules in registration order."""
        yield from self._children.items()

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """This module and every descendant, with dotted names (``""`` for self)."""
        yield prefix, self
        for name, child in self._children.items():
            yield from child.named_modules(f"{prefix}.{name}" if prefix else name)

    def named_arrays(self) -> dict[str, Any]:
        """Every parameter and state array, ``{dotted_name: Variable or NdArray}``."""
        out: dict[str, Any] = {}
        for prefix, m in self.named_modules():
            for name, a in m._arrays.items():
                out[f"{prefix}.{name}" if prefix else name] = a
        return out

    def parameters(self) -> Parameters:
        """Ordered ``{dotted_name: Variable}`` of the trainable (``need_grad``) Variables
        (nnabla's dict, not torch's iterator of tensors: iterating gives names, which
        say so when used as parameters; see ``named_parameters()``)."""
        return Parameters((k, v) for k, v in self.named_arrays().items()
                          if isinstance(v, grad.Variable) and v.need_grad)

    def named_parameters(self, prefix: str = "",
                         recurse: bool = True) -> Iterator[tuple[str, Any]]:
        """torch's ``(name, parameter)`` pairs: those of ``parameters()`` (only this
        module's own with ``recurse=False``), each name after ``prefix + "."``."""
        for k, v in self.parameters().items():
            if recurse or "." not in k:
                yield (f"{prefix}.{k}" if prefix else k), v

    def state(self) -> dict[str, Any]:
        """The non-trainable arrays (running statistics and the like)."""
        params = self.parameters()
        return {k: v for k, v in self.named_arrays().items() if k not in params}

    # -- modes and gradients ---------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set ``.training`` on this module and every descendant; returns self."""
        for _, m in self.named_modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self) -> Module:
        """Evaluation mode (dropout off, batch norm uses running statistics)."""
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Zero every parameter's gradient (lazily: no allocation, no transfer).
        ``set_to_none`` is torch's argument, accepted either way (a lazily zeroed
        gradient is what the next backward overwrites, as torch's ``None``)."""
        for p in self.parameters().values():
            g = p.grad
            if g is not None:
                g.zero()

    def to(self, ctx: Context | str | Any = None, dtype: Any = None) -> Module:
        """Move every parameter and state array, and every gradient holding values, to
        ``ctx`` (explicit transfers). Gradients accumulate across ``backward()`` calls,
        so one left behind would be pulled over implicitly by the next backward.

        ``dtype`` (or a first argument that is not a context or a string, as torch's
        ``to(torch.float16)``) casts every floating Variable (parameters and frozen
        ones) on its device (``nn.dtype_cast``); NdArray state such as batch-norm running
        statistics stays float32. The Variables are replaced: give a solver the new
        ``parameters()``."""
        if ctx is not None and not isinstance(ctx, (Context, str)):
            if dtype is not None:
                raise TypeError(f"Module.to: ctx must be a context or a string, got "
                                f"{type(ctx).__name__}")
            ctx, dtype = None, ctx
        if dtype is not None:
            _dtype_cast.cast_module(self, dtype)
        if ctx is None:
            return self
        for a in self.named_arrays().values():
            _p.place(_p.storage(a), ctx)
            if isinstance(a, grad.Variable) and a.grad.head is not None:
                _p.place(a.grad, ctx)
        return self

    def half(self) -> Module:
        """``to(dtype=float16)``: floating Variables in float16."""
        return self.to(dtype=np.float16)

    def bfloat16(self) -> Module:
        """``to(dtype=nna.bfloat16)``: floating Variables in bfloat16."""
        from ..dtypes import bfloat16
        return self.to(dtype=bfloat16)

    def float(self) -> Module:
        """``to(dtype=float32)``: floating Variables in float32."""
        return self.to(dtype=np.float32)

    # -- checkpoints -----------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write every parameter and state array to an ``.npz`` file, atomically."""
        _io.save_npz(path, {k: _p.to_host(a) for k, a in self.named_arrays().items()})

    def load(self, path: str | os.PathLike) -> None:
        """Read a checkpoint written by ``save``.

        Every entry is checked (missing, extra, shape, dtype) before anything is
        assigned: on ``CheckpointError`` the module is unchanged. Values go back to the
        device that held each array.
        """
        arrays = self.named_arrays()
        found = _io.load_checked(path, array_summary(arrays))
        for k, a in arrays.items():
            _p.write(a, found[k])

    def state_dict(self) -> OrderedDict[str, NdArray]:
        """Every parameter and state array by dotted name (the NdArrays themselves, not
        copies), as torch's ``state_dict``."""
        return OrderedDict((k, _p.storage(a)) for k, a in self.named_arrays().items())

    def load_state_dict(self, state: Mapping[str, Any], strict: bool = True) -> LoadResult:
        """Copy ``state`` (NdArrays, Variables or numpy arrays by dotted name) into the
        module's arrays, each on the device that holds it.

        Shapes and dtypes must match; with ``strict`` the names must too (no missing,
        no unexpected). Everything is checked before anything is written
        (``nn.CheckpointError`` listing each problem). Returns ``(missing_keys,
        unexpected_keys)``."""
        arrays = self.named_arrays()
        missing = [k for k in arrays if k not in state]
        unexpected = [k for k in state if k not in arrays]
        problems = [f"{k}: shape {tuple(v.shape)} in the state, {a.shape} in the module"
                    if tuple(v.shape) != tuple(a.shape) else
                    f"{k}: dtype {v.dtype} in the state, {_p.storage(a).dtype} in the module"
                    for k, a in arrays.items() if k in state
                    for v in (_value(state[k]),)
                    if tuple(v.shape) != tuple(a.shape) or v.dtype != _p.storage(a).dtype]
        if strict:
            problems += [f"missing key {k!r}" for k in missing]
            problems += [f"unexpected key {k!r}" for k in unexpected]
        if problems:
            raise _io.CheckpointError(f"load_state_dict into {type(self).__name__}: "
                                      + "; ".join(problems))
        for k, a in arrays.items():
            if k in state:
                _assign(_p.storage(a), _value(state[k]))
        return LoadResult(missing, unexpected)

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}({self.extra_repr()}"]
        for name, child in self._children.items():
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        return lines[0] + ")" if len(lines) == 1 else "\n".join(lines) + "\n)"

    def extra_repr(self) -> str:
        """Arguments shown by ``repr``."""
        return ""


class LoadResult(tuple):
    """``(missing_keys, unexpected_keys)`` of ``load_state_dict``."""

    def __new__(cls, missing: list[str], unexpected: list[str]) -> LoadResult:
        return super().__new__(cls, (missing, unexpected))

    @property
    def missing_keys(self) -> list[str]:
        return self[0]

    @property
    def unexpected_keys(self) -> list[str]:
        return self[1]


def _value(v: Any) -> Any:
    """A state entry as an NdArray, or a numpy array for anything else."""
    if isinstance(v, grad.Variable):
        return v.data
    return v if isinstance(v, NdArray) else np.asarray(v)


def _assign(dst: NdArray, src: Any) -> None:
    """Write ``src`` into ``dst`` where ``dst`` lives (a device copy stays on devices)."""
    if isinstance(src, NdArray):
        if src is dst:
            return
        from ..context import context_scope, get_current_context
        with context_scope(dst.head or get_current_context()):
            dst.copy_from(src)
        return
    _p.write(dst, np.ascontiguousarray(src))


def _warn_unregistered(owner: Module, name: str, value: list | dict) -> None:
    """Warn that Modules kept in a plain list or dict are not registered."""
    items = value.values() if isinstance(value, dict) else value
    if any(isinstance(v, Module) for v in items):
        kind = "ModuleDict" if isinstance(value, dict) else "ModuleList"
        warnings.warn(f"{type(owner).__name__}.{name}: a plain {type(value).__name__} holding "
                      "Modules: their parameters are not registered (not trained, saved or "
                      f"moved); use nn.{kind}", UserWarning, stacklevel=3)


def array_summary(arrays: dict[str, Any]) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """``{name: (shape, dtype)}`` of a dict of Variables / NdArrays."""
    return {k: (tuple(a.shape), _p.storage(a).dtype) for k, a in arrays.items()}
