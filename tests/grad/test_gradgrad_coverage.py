"""Every differentiable op is in one of the double-backward tables
(``tests/grad/test_gradgrad_*.py``): a new op with a backward rule and no second-order
test fails here, naming it."""

from __future__ import annotations

import gc

import test_gradgrad_complex_fft
import test_gradgrad_elementwise
import test_gradgrad_linalg
import test_gradgrad_nn
import test_gradgrad_reductions
import test_gradgrad_shapes
from double_backward import inputs

from nnarray import grad
from nnarray.ops.op import Op

FAMILIES = (test_gradgrad_elementwise, test_gradgrad_reductions, test_gradgrad_shapes,
            test_gradgrad_nn, test_gradgrad_linalg, test_gradgrad_complex_fft)


def _ops_in(y) -> set[str]:
    """The names of the ops recorded in the graph behind ``y``."""
    names, seen, stack = set(), set(), [y]
    while stack:
        n = stack.pop().parent
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n.function, Op):
            names.add(n.function.name)
        stack += [a for a in n.inputs if isinstance(a, grad.Variable)]
    return names


def test_every_differentiable_op_has_a_double_backward_case():
    covered: set[str] = set()
    for fam in FAMILIES:
        for case, (fn, _) in fam.CASES.items():
            if case in getattr(fam, "XFAIL", {}):  # known wrong: not coverage
                continue
            with grad.auto_forward():
                covered |= _ops_in(fn(*inputs(fam.CASES, case)))
    ops = {o.name for o in gc.get_objects() if issubclass(type(o), Op) and o.differentiable
           and o.backward is not None}
    assert {"matmul", "sin", "scatter_add"} <= ops  # the scan sees the ops of every module
    missing = sorted(ops - covered)
    assert not missing, f"no double-backward case records {missing}"
