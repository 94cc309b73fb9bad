"""The memory plan: which step reads each value for the last time.

One last-use pass serves every runner, run once on a schedule's final steps (after
every rewriting pass, ``schedule.plan_frees``): ``Variable.forward(clear_buffer=True)``
and the executors drop an intermediate after its last consumer (``forward_releasable``),
a traced backward program frees its temporaries and the saved data bound to them
(``program_releases``), and generated code ``del``s a local after its last reader
(``last_readers``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .variable import Variable


def last_readers(steps: Sequence, indices: Iterable[int] | None = None) -> dict[int, int]:
    """``{id(value): index}``: the last of ``steps`` (each with ``inputs``) reading each
    value, numbered by ``indices`` (default: the positions)."""
    last: dict[int, int] = {}
    for i, st in zip(range(len(steps)) if indices is None else indices, steps):
        for a in st.inputs:
            last[id(a)] = i
    return last


def releases(steps: Sequence, releasable: Callable[[Any], bool]) -> list[list]:
    """Per step, the inputs for which ``releasable`` holds that it reads for the last time
    (each value once, in first-read order)."""
    last: dict[int, tuple[int, Any]] = {}
    for s, st in enumerate(steps):
        for a in st.inputs:
            if releasable(a):
                last[id(a)] = (s, a)
    rel: list[list] = [[] for _ in steps]
    for s, a in last.values():
        rel[s].append(a)
    return rel


def program_releases(steps: Sequence, binds: Iterable, results: set) -> list[list]:
    """Per step of a traced backward program: the program Variables (not the gradients
    it returns, ``results``) it reads for the last time, then the forward node indices
    whose saved data was bound (``binds``: ``(proxy, node index, slot)``) to them."""
    bound = {id(v): k for v, k, _ in binds}
    rel = releases(steps, lambda a: isinstance(a, Variable) and id(a) not in results)
    for r in rel:
        r += [bound[id(a)] for a in r if id(a) in bound]
    return rel


def forward_releasable(outputs: Iterable[Variable]) -> Callable[[Any], bool]:
    """What a forward frees after its last consumer: the intermediate Variables (not
    ``outputs``, not leaves)."""
    keep = {id(v) for v in outputs}
    return lambda a: isinstance(a, Variable) and a._parent is not None and id(a) not in keep
