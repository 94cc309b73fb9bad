"""Names of graph nodes: ``"<op><k>"`` auto-names, explicit ``name=``, ``name_scope``.

Every node has a name. Nodes recorded in static mode are named when they are recorded:
``<scope><op><k>`` where ``<scope>`` is the active ``name_scope`` prefixes joined by
``/`` (``"layer1/"``, ``"a/b/"``) and ``k`` counts the nodes of that op named under that
scope (MXNet's ``NameManager``), restarting from 0 once every node named from a counter
was freed: the first ``add`` is ``add0``, the next ``add1``; inside
``name_scope("layer1")`` the first ``affine`` is ``layer1/affine0``. Nodes recorded under
``auto_forward`` are named on first request (the counters are not touched on the
define-by-run hot path). ``reset_names()`` starts every counter again from 0. A function
called with ``name="fc1"`` gives its output node that name (in the active scope) and the
nodes it makes inside a scope of that name (``fc1/matmul0``).
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import weakref
from collections.abc import Iterator
from typing import Any

from .. import late
from ..ops.op import check_name

scope: contextvars.ContextVar[str] = contextvars.ContextVar("nnarray_name_scope", default="")
#: Per (scope, op): ``[next k, nodes named so that are alive]``; when the last such node
#: is freed the counter starts again from 0, so a graph built after earlier ones were
#: dropped reads ``add0`` again, while live nodes' names stay distinct.
_counters: dict[tuple[str, str], list] = {}


@contextlib.contextmanager
def name_scope(prefix: str) -> Iterator[str]:
    """Prefix the auto-names of nodes made inside with ``prefix/`` (scopes nest)."""
    if not isinstance(prefix, str) or not prefix or "/" in prefix:
        raise ValueError(f"name_scope: the prefix must be a non-empty string without '/', "
                         f"got {prefix!r}")
    full = scope.get() + prefix + "/"
    tok = scope.set(full)
    try:
        yield full
    finally:
        scope.reset(tok)


def auto_name(op: str, prefix: str | None = None, node: Any = None) -> str:
    """The next name ``<prefix><op><k>`` (``prefix``: the active scope); ``node``: the
    node taking it, counted alive until it is freed (``release``). No lock: ``next`` on
    a counter is atomic."""
    sc = scope.get() if prefix is None else prefix
    key = (sc, op)
    e = _counters.get(key)
    if e is None:
        e = _counters.setdefault(key, [itertools.count(), 0])
    k = next(e[0])
    if node is not None:  # counted alive until freed
        e[1] += 1
        _alive[_ref(node, _freed)] = e
    return f"{sc}{op}{k}"


#: A weak reference per named node -> its counter (a callback releases it).
_alive: dict = {}
_ref = weakref.ref


def _freed(r: Any) -> None:
    e = _alive.pop(r, None)
    if e is not None:
        release(e)


def release(e: list) -> None:
    """A node named from counter ``e`` was freed (a weak reference's callback)."""
    e[1] -= 1
    if e[1] <= 0:
        e[1] = 0
        e[0] = itertools.count()


def reset_names() -> None:
    """Start every auto-name counter again from 0."""
    for e in list(_counters.values()):
        e[0] = itertools.count()


def scoped(name: str) -> str:
    """An explicit ``name`` in the active scope."""
    return scope.get() + name


def name_result(out: Any, name: str, inputs: tuple = ()) -> Any:
    """Give the node that produced ``out`` (a Variable or a tuple of them) the explicit
    ``name`` in the active scope; values that are inputs or leaves keep their names."""
    check_name(name)
    first = out[0] if isinstance(out, tuple) and out else out
    node = getattr(first, "_parent", None)
    if node is None or any(first is x for x in inputs):
        return out
    node.label = scoped(name)
    return out


def call_named(fn: Any, args: tuple, kwargs: dict, name: str) -> Any:
    """``fn(*args, **kwargs)`` with its inner nodes in ``name_scope(name)`` and its output
    node named ``name`` (how every ``F`` function takes ``name=``)."""
    check_name(name)
    tok = scope.set(scope.get() + name + "/")
    try:
        out = fn(*args, **kwargs)
    finally:
        scope.reset(tok)
    return name_result(out, name, args)


def composite_result(out: Any, fname: str, inputs: tuple, fn: Any = None,
                     kwargs: Any = None, rename: bool = True) -> Any:
    """A function made of several ops names its static output node after itself
    (``affine0``, not the ``add`` it ends with) and marks it with the call, so that
    shape inference on new inputs calls the function again (``Node.macro``)."""
    t = type(out)
    if t is list or t is tuple:  # split: each output's node re-runs the call
        for j, o in enumerate(out):
            node = getattr(o, "_parent", None)
            if node is not None and fn is not None and not any(o is x for x in inputs):
                node.macro = (fn, inputs, kwargs or {}, j)
        return out
    node = getattr(out, "_parent", None)
    if node is None:
        return out
    for x in inputs:
        if x is out:
            return out
    if fn is not None:
        node.macro = (fn, inputs, kwargs or _NO_KWARGS, None)
    if rename and not node.dynamic and node.function.name != fname:
        node.label = auto_name(fname, None, node)  # the op's counter is released at death
    return out


_NO_KWARGS: dict = {}


late.provide(__name__)  # names for the ops and functions below (nnarray.late)
