"""The public function surface (``import nnarray.functions as F``).

Every function takes NdArrays (runs now on the current context) or graph values such as
``grad.Variable`` (records a node), validates its inputs before any kernel runs, and
dispatches through the op registry. The semantics live in ``nnarray.ops``.

Every function also takes ``name=`` (the graph node's name, ``nnarray.grad.naming``;
ignored on NdArrays): ops in ``Op.__call__``, the functions defined here through one
wrapper (``_takes_name``), which also marks the calls of functions whose nodes depend on
their input shapes so that graph re-inference calls them again.
"""

from __future__ import annotations

from typing import Any

from . import late
from .ops import attention as _attention
from .ops import complex as _complex
from .ops import elementwise as _ew
from .ops import gelu as _gelu
from .ops import inplace as _inplace
from .ops import linalg as _linalg
from .ops import op as _op
from .ops import random as _random
from .ops import surfaces as _surfaces
from .ops import update as _update
from .ops.op import GraphValue as _GraphValue

# Elementwise: every function of the tables in ``ops/elementwise.py`` (add, mul, exp,
# sin, ...). Ops are called directly: the hot path has no wrapper.
globals().update(_ew.functions)
add, sub, mul, div, pow = (_ew.functions[n] for n in ("add", "sub", "mul", "div", "pow"))
maximum, minimum = _ew.functions["maximum"], _ew.functions["minimum"]
equal, not_equal, less, less_equal, greater, greater_equal = (
    _ew.functions[n] for n in ("equal", "not_equal", "less", "less_equal", "greater",
                               "greater_equal"))
neg, abs, sign, exp, log, sqrt, tanh, sigmoid, relu = (
    _ew.functions[n] for n in ("neg", "abs", "sign", "exp", "log", "sqrt", "tanh", "sigmoid",
                               "relu"))
where = _ew.where
inplace, assign = _inplace.inplace, _inplace.assign

# Parts of complex numbers (``real``/``imag``/``conj``/``angle`` of real arrays: the
# namespace's functions).
real, imag, conj, angle = _complex.real, _complex.imag, _complex.conj, _complex.angle
complex_abs, make_complex = _complex.complex_abs, _complex.make_complex

# Linear algebra.
matmul, affine = _linalg.matmul, _linalg.affine

# Functions without an op of their own (the others are declared beside their op:
# ``ops/surfaces.py``, read below): composites of other ops, an in-place solver update
# (a registry entry, no graph node) and the generator's seed.
gelu = _gelu.gelu
scaled_dot_product_attention = _attention.scaled_dot_product_attention
sgd_update = _update.sgd_update
seed = _random.seed


def leaky_relu(x: Any, alpha: float = 0.1) -> Any:
    """``x`` where positive, ``alpha * x`` elsewhere."""
    return _ew.leaky_relu(x, alpha=alpha)


def clip(x: Any, a_min: Any = None, a_max: Any = None) -> Any:
    """Limit values to ``[a_min, a_max]`` (either may be ``None``)."""
    return _ew.clip(x, a_min=a_min, a_max=a_max)


def cast(x: Any, dtype: Any) -> Any:
    """A new array of ``dtype``."""
    return _ew.cast(x, dtype=dtype)


# Functions declared beside their op specs (``ops/surfaces.py``): F reads them there.
_DECLARED = _surfaces.declared()
globals().update({n: s.function for n, s in _DECLARED.items()})


def _takes_name(fn: Any) -> Any:
    """``fn`` taking ``name=`` too: its output node gets the name, its inner nodes the
    scope ``name/`` (``nnarray.grad.naming``); Ops take ``name=`` in ``Op.__call__``."""
    import functools

    fname = fn.__name__
    if fname in _COMPOSITES:  # several ops: the output node is named after the function
        @functools.wraps(fn)
        def named(*args: Any, name: Any = None, **kwargs: Any) -> Any:
            if name is None:
                out = fn(*args, **kwargs)
                first = out[0] if type(out) is list and out else out
                if not isinstance(first, _GraphValue):
                    return out  # NdArrays: no graph, nothing to mark
                return _op.naming.composite_result(out, fname, args, fn, kwargs)
            out = _op.call_named(fn, args, kwargs, name)
            if _op.naming is None:
                return out
            return _op.naming.composite_result(out, fname, args, fn, kwargs, rename=False)
        return named

    @functools.wraps(fn)
    def named(*args: Any, name: Any = None, **kwargs: Any) -> Any:
        if name is None:
            return fn(*args, **kwargs)
        return _op.call_named(fn, args, kwargs, name)
    return named


#: Functions whose recorded nodes depend on their input shapes beyond each op's own
#: inference (several ops, or attributes computed from the shapes): graph re-inference
#: calls them again (``Node.macro``). Declared ones say so (``macro=True``); these have
#: no declaration (no op of their own, or a table row).
_COMPOSITES = frozenset(("affine", "square", "scaled_dot_product_attention",
                         *(n for n, s in _DECLARED.items() if s.macro)))


#: Functions whose graph depends on their inputs' shapes beyond each op's inference
#: (a mean's N, a reshape target's -1): their static output node keeps the call
#: (``Node.macro``), so binding the graph to new shapes calls them again. By name, for
#: graphs loaded from JSON (besides ``_COMPOSITES``); filled when the modules defining
#: them are imported (``recalls``), so a fresh process loads what another saved.
_RECALLED: dict[str, Any] = {}


def recalls(fn: Any) -> Any:
    """Register ``fn`` in ``_RECALLED`` by its name (at import time: a graph file names
    its calls); two different functions under one name are a programming error."""
    name = fn.__name__
    have = _RECALLED.get(name)
    if have is not None and getattr(have, "__wrapped__", have) is not \
            getattr(fn, "__wrapped__", fn):
        raise RuntimeError(f"recalls: two functions named '{name}'")
    _RECALLED[name] = fn
    return fn


def recalled(out: Any, fn: Any, args: tuple, kwargs: dict) -> Any:
    """Mark ``out`` (a static graph value, or a list of them) as made by
    ``fn(*args, **kwargs)``, which must be registered in ``_RECALLED`` (``recalls``);
    anything else passes as is."""
    first = out[0] if type(out) in (list, tuple) and out else out
    node = getattr(first, "_parent", None)
    if node is None or node.dynamic:
        return out
    have = _RECALLED.get(fn.__name__)
    if have is None or getattr(have, "__wrapped__", have) is not getattr(fn, "__wrapped__", fn):
        raise RuntimeError(f"recalled: '{fn.__name__}' is not registered (F.recalls), so "
                           "a saved graph calling it would not load in another process")
    return _op.naming.composite_result(out, fn.__name__, args, fn, kwargs)


def _wrap_all() -> None:
    from .ops.op import Op
    g = globals()
    for n, v in list(g.items()):
        if n.startswith("_") or not callable(v) or isinstance(v, (Op, type)) or \
                hasattr(v, "op") or n in ("Any", "seed", "inplace", "assign", "sgd_update",
                                          "recalled", "recalls"):
            continue  # Ops and the binary ops' functions (``fn.op``) take name= themselves
        if getattr(v, "__module__", "").startswith("nnarray"):
            g[n] = _takes_name(v)


_wrap_all()
for _n in (n for n, s in _DECLARED.items() if s.recalled):
    recalls(globals()[_n])  # after wrapping: the function a graph's call names


def _picklable() -> None:
    """``pickle`` finds a function by module and name: the table ops' functions are
    built in ``ops.elementwise`` under the op's name (which names the Op there), and
    the declared ones (``ops/surfaces.py``) are wrapped here, so they are named after
    this module, where they live (a model holding ``F.relu`` pickles)."""
    import sys
    g = globals()
    for n, v in list(g.items()):
        if n.startswith("_") or not callable(v) or not (hasattr(v, "op") or n in _DECLARED):
            continue
        mod = sys.modules.get(getattr(v, "__module__", ""), None)
        if getattr(mod, getattr(v, "__qualname__", ""), None) is not v:
            v.__module__, v.__qualname__ = __name__, n


_picklable()

__all__ = sorted(n for n, v in globals().items()
                 if not n.startswith("_") and callable(v) and n not in ("Any",))


def __dir__() -> list[str]:
    """The public functions only (not the module's imports)."""
    return list(__all__)


late.provide(__name__)  # bind the lower layers' slots (nnarray.late)
