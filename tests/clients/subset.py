"""Which of a client suite's parametrized tests to run (``NNARRAY_CLIENT_EACH`` of
``plugin.py``): every parameter value once per test function and device, not the cross
products."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence


def each_value_once(items: Sequence, group: Callable[[object], str],
                    name: Callable[[object], str], keep: Sequence[str] = ()) -> list:
    """Of each test function's parametrizations in each ``group`` (a device), the first
    ones, in order, that together take every value of every parameter, and those whose
    ``name`` matches a ``keep`` pattern (``fnmatch``): a test over 10 x 10 dtype pairs
    keeps 19 of its 100. Items without parameters are all kept."""
    seen: dict[tuple, set] = {}
    kept = []
    for item in items:
        spec = getattr(item, "callspec", None)
        if spec is None:
            kept.append(item)
            continue
        done = seen.setdefault((item.nodeid.partition("[")[0], group(item)), set())
        # each parametrize call's id of the value taken (pytest's ``indices`` number the
        # whole parameter sets)
        values = set(enumerate(getattr(spec, "_idlist", None) or spec.id.split("-")))
        if not values <= done or any(fnmatch.fnmatchcase(name(item), p) for p in keep):
            done |= values
            kept.append(item)
    return kept
