"""Double backward of the reductions (cumulative ones included), the statistics and
norms built on them, and sorting: ``gradgradcheck`` in float64 on every backend and
torch's second derivatives (``tests/double_backward.py``)."""

from __future__ import annotations

from double_backward import family_tests

import nnarray as nna
import nnarray.functions as F

_INF = float("inf")

#: name -> (function of Variables, [(shape, domain)]), small float64 inputs.
CASES: dict = {
    "sum": (lambda x: F.sum(x * x, axis=1), [((2, 3), "any")]),
    "mean": (lambda x: F.mean(F.sin(x), axis=0, keepdims=True), [((2, 3), "any")]),
    "max": (lambda x: F.max(x, axis=1) * F.max(x), [((2, 3), "any")]),
    "min": (lambda x: F.min(x, axis=0) ** 2, [((2, 3), "any")]),
    "prod": (lambda x: F.prod(x, axis=1), [((2, 3), "pos")]),
    "prod_complex": (lambda z: F.prod(z, axis=1), [((2, 3), "cplx")]),
    "xp_sum_max_mean": (lambda x: nna.sum(x * x, axis=1) + nna.max(x, axis=1) *
                        nna.mean(x, axis=1), [((2, 3), "any")]),
    "cumsum": (lambda x: F.cumulative_sum(x * x, axis=1), [((2, 3), "any")]),
    "cumsum_initial": (lambda x: nna.cumulative_sum(x * x, axis=1, include_initial=True),
                       [((2, 3), "any")]),
    "cumprod": (lambda x: F.cumulative_prod(x, axis=1), [((2, 3), "pos")]),
    "logsumexp": (lambda x: F.logsumexp(x, axis=1), [((2, 3), "any")]),
    "cumprod_complex": (lambda z: F.cumulative_prod(z, axis=1), [((2, 3), "cplx")]),
    "diff": (lambda x: nna.diff(x * x, axis=1), [((2, 4), "any")]),
    "std": (lambda x: nna.std(x, axis=1), [((2, 3), "any")]),
    "var": (lambda x: nna.var(x, axis=0, correction=1), [((3, 3), "any")]),
    "vector_norm": (nna.linalg.vector_norm, [((2, 4), "any")]),
    "vector_norm_1": (lambda x: nna.linalg.vector_norm(x, ord=1, axis=1), [((2, 3), "away")]),
    "vector_norm_3": (lambda x: nna.linalg.vector_norm(x, ord=3), [((2, 3), "away")]),
    "vector_norm_inf": (lambda x: nna.linalg.vector_norm(x, ord=_INF, axis=0),
                        [((2, 3), "away")]),
    "matrix_norm_fro": (nna.linalg.matrix_norm, [((2, 3), "any")]),
    "sort": (lambda a: nna.sort(a * a, axis=1), [((2, 4), "any")]),
    "sort_descending": (lambda a: nna.sort(a * a, axis=0, descending=True), [((3, 2), "any")]),
}

#: name -> ``(torch, *tensors) -> tensor``: torch's counterpart of each case.
TORCH: dict = {
    "sum": lambda t, x: (x * x).sum(1),
    "mean": lambda t, x: t.sin(x).mean(0, keepdim=True),
    "max": lambda t, x: x.max(1).values * x.max(),
    "min": lambda t, x: x.min(0).values ** 2,
    "prod": lambda t, x: x.prod(1),
    "prod_complex": lambda t, x: x.prod(1),
    "xp_sum_max_mean": lambda t, x: (x * x).sum(1) + x.max(1).values * x.mean(1),
    "cumsum": lambda t, x: t.cumsum(x * x, 1),
    "cumsum_initial": lambda t, x: t.cat([t.zeros(2, 1, dtype=x.dtype),
                                          t.cumsum(x * x, 1)], 1),
    "cumprod": lambda t, x: x.cumprod(1),
    "logsumexp": lambda t, x: t.logsumexp(x, 1),
    "cumprod_complex": lambda t, x: x.cumprod(1),
    "diff": lambda t, x: t.diff(x * x, dim=1),
    "std": lambda t, x: t.std(x, dim=1, correction=0),
    "var": lambda t, x: t.var(x, dim=0, correction=1),
    "vector_norm": lambda t, x: t.linalg.vector_norm(x),
    "vector_norm_1": lambda t, x: t.linalg.vector_norm(x, ord=1, dim=1),
    "vector_norm_3": lambda t, x: t.linalg.vector_norm(x, ord=3),
    "vector_norm_inf": lambda t, x: t.linalg.vector_norm(x, ord=_INF, dim=0),
    "matrix_norm_fro": lambda t, x: t.linalg.matrix_norm(x),
    "sort": lambda t, a: t.sort(a * a, dim=1).values,
    "sort_descending": lambda t, a: t.sort(a * a, dim=0, descending=True).values,
}


#: The cases whose gradgradcheck replays fused (``double_backward.family_tests``).
FUSED = frozenset({"sum", "cumsum", "logsumexp"})

test_gradgradcheck, test_second_derivatives_match_torch = family_tests(CASES, TORCH, fused=FUSED)
