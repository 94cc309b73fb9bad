"""What the chapters share: the argument check every function makes, the standard's
``axis`` rule and the wrapper that lets a static graph call a shape-dependent function
again.
"""

from __future__ import annotations

import functools
import inspect
import operator
from collections.abc import Callable
from typing import Any

from .. import functions as F
from ..ops import surfaces as _surfaces
from ..ops.common import norm_axes


def _require(op: str, x: Any) -> None:
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        raise TypeError(f"{op}: argument 'x' must be an NdArray or Variable, "
                        f"got {type(x).__name__}")


def _axes(op: str, x: Any, axis: Any) -> Any:
    """``axis`` as ``None``, an int or a tuple; on a 0-D ``x`` only ``None`` and ``()``
    (numpy's rule: any axis is out of range there, as past a 1-D array's last)."""
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        axis = tuple(operator.index(a) for a in axis)
    else:
        axis = operator.index(axis)
    if x.ndim == 0 and axis != ():
        norm_axes(op, axis, x.shape)  # raises, naming op, axis and shape
    return axis


def _recalled(fn: Any) -> Any:
    """``fn`` builds its graph from its inputs' shapes (``F.recalled``): binding a static
    graph to new shapes calls it again."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        return F.recalled(fn(*args, **kwargs), fn, args, kwargs)
    return F.recalls(call)


def keywords(s: Any) -> Callable:
    """The form of a declaration whose standard signature is ``F``'s with its first
    argument positional-only and the others keyword-only (``argmax(x, /, *, axis,
    keepdims)``)."""
    fn = getattr(F, s.name)
    sig = inspect.signature(s.function)
    first, *rest = sig.parameters.values()
    kinds = [first.replace(kind=inspect.Parameter.POSITIONAL_ONLY),
             *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in rest)]

    std = sig.replace(parameters=kinds)
    call = _generated(fn, first.name, rest)
    call.__signature__ = std  # type: ignore[attr-defined]
    call.__doc__ = s.function.__doc__
    return call


def _generated(fn: Callable, first: str, rest: list) -> Callable:
    """``def call(first, /, *, a=..., b=...): return fn(first, a=a, b=b)``, compiled once:
    Python itself refuses a keyword the standard lacks, with no per-call binding (which
    cost ``argmax`` 2.7 us of its 4.6)."""
    ns: dict[str, Any] = {"_fn": fn}
    params = []
    for p in rest:
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            raise TypeError(f"keywords form: {fn.__name__} has a {p.kind} parameter")
        if p.default is p.empty:
            params.append(p.name)
        else:
            ns[f"_d_{p.name}"] = p.default
            params.append(f"{p.name}=_d_{p.name}")
    head = first + ", /" + (", *, " + ", ".join(params) if params else "")
    args = ", ".join([first] + [f"{p.name}={p.name}" for p in rest])
    exec(f"def call({head}):\n    return _fn({args})\n", ns)  # noqa: S102
    return ns["call"]


def declared(chapter: str, forms: dict[str, Callable] | None = None) -> dict[str, Callable]:
    """The functions the op specs declare for ``chapter`` (``ops/surfaces.py``), by the
    standard's name: ``F``'s function, or the one ``forms[form]`` (or ``keywords``) makes
    of its declaration (the standard's signature), named after it. A form calls ``F``'s
    function (``getattr(F, s.name)``: a graph call records as ``F``'s does)."""
    forms = {"keywords": keywords, **(forms or {})}
    out = {}
    for name, s in _surfaces.chapter(chapter).items():
        form = s.xp[1] if s.xp is not None else None
        fn = getattr(F, name) if form is None else forms[form](s)
        if form is not None:
            fn.__name__ = fn.__qualname__ = name
            fn.__module__ = f"{__package__}.{chapter}"
        out[name] = fn
    return out
