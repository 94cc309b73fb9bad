"""Shared by ``tests/grad/test_gradgrad_*.py``: every differentiable op's double backward,
one op family per module, each a table ``CASES`` (name -> (function of Variables,
[(shape, domain)])) checked two ways:

- ``check_gradgrad``: ``grad.gradgradcheck`` in float64 (central differences of the
  vector-Jacobian product in the inputs and in the output gradient);
- ``check_torch``: the Hessian-vector-like product ``d/dx <d fn/dx^T u, v>`` against
  ``torch.autograd.grad(..., create_graph=True)`` differentiated again, for every case
  torch shares (a module's ``TORCH``: name -> ``(torch, *tensors) -> tensor``).

Each case draws its values from its own seed (its name), so a case's numbers do not
depend on which other cases ran.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Callable

import numpy as np
import pytest

import nnarray.functions as F
from nnarray import grad
from nnarray.grad import Variable, gradgradcheck

#: Where the domains keep an op's inputs (away from its kinks and poles).
DOMAINS = ("any", "pos", "unit", "prob", "gt1", "away", "spd", "cplx")


def vals(rng: np.random.Generator, shape: tuple, dom: str = "any") -> np.ndarray:
    """float64 (complex128 for ``cplx``) values of ``shape`` in the domain ``dom``."""
    r = rng.standard_normal(shape)
    if dom == "pos":
        return 0.5 + np.abs(r)
    if dom == "unit":
        return np.tanh(r) * 0.8
    if dom == "prob":  # inside (0, 1), away from its ends (logit)
        return 0.5 + np.tanh(r) * 0.4
    if dom == "gt1":
        return 1.2 + np.abs(r)
    if dom == "away":  # away from kinks at 0 (relu, abs, max ...)
        return np.sign(r) * (0.3 + np.abs(r))
    if dom == "spd":  # symmetric positive definite, well conditioned
        return r @ r.T + r.shape[0] * np.eye(r.shape[0])
    if dom == "cplx":
        return r + 1j * rng.standard_normal(shape)
    if dom != "any":
        raise ValueError(f"unknown domain {dom!r} (one of {DOMAINS})")
    return r


def rng_of(case: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(case.encode()))


def inputs(cases: dict, case: str, rng: np.random.Generator | None = None) -> list:
    """The case's input Variables (``need_grad``), on the current context."""
    rng = rng_of(case) if rng is None else rng
    return [Variable.from_numpy_array(vals(rng, s, d), need_grad=True)
            for s, d in cases[case][1]]


def params(names, host: frozenset | set = frozenset(), xfail: dict | None = None) -> list:
    """``names`` as pytest params; those in ``host`` (dense decompositions that run on the
    host on OpenCL) may fall back; those in ``xfail`` (name -> reason) are known to fail
    (strict: a fix makes them pass and the mark must go)."""
    fallback = pytest.mark.allow_fallback("the dense decompositions run on the host on OpenCL")
    xfail = xfail or {}

    def marks(c: str) -> list:
        out = [fallback] if c in host else []
        if c in xfail:
            out.append(pytest.mark.xfail(reason=xfail[c], strict=True))
        return out
    return [pytest.param(c, marks=marks(c)) for c in sorted(names)]


def check_gradgrad(cases: dict, case: str, fuse: bool = True) -> None:
    """``gradgradcheck`` of the case in float64 on the current context (its replayed
    graphs fused as the default says, or with ``fuse`` false each op's own kernels)."""
    with contextlib.nullcontext() if fuse else grad.fusion_enabled(False):
        assert gradgradcheck(cases[case][0], inputs(cases, case), eps=1e-6, atol=1e-5,
                             rtol=1e-4)


def second(fn: Callable, xs: list, u: Variable, vs: list, create: bool) -> list:
    """``d/dx <d fn/dx^T u, v>``: the double backward of ``fn``, in nnarray (``None``
    where an input gets no gradient)."""
    gs = grad.grad(fn(*xs), xs, grad_outputs=u, create_graph=True)
    s = None
    for g, v in zip(gs, vs):
        t = F.sum(F.real(g * v) if g.dtype.kind == "c" else g * v)
        s = t if s is None else s + t
    return grad.grad(s, xs, allow_unused=True, create_graph=create)


def _kind(x) -> str:
    return "cplx" if x.dtype.kind == "c" else "any"


def check_torch(cases: dict, torch_cases: dict, case: str) -> None:
    """The case's double backward (define-by-run) against torch's, to 1e-9."""
    torch = pytest.importorskip("torch")
    rng = rng_of(case)
    xs = inputs(cases, case, rng)
    fn = cases[case][0]
    with grad.auto_forward():
        y = fn(*xs)
    u = vals(rng, y.shape, _kind(y))
    vs = [vals(rng, x.shape, _kind(x)) for x in xs]
    with grad.auto_forward():
        hs = second(fn, xs, Variable.from_numpy_array(u.astype(y.dtype)),
                    [Variable.from_numpy_array(np.conj(v)) for v in vs], False)
    ts = [torch.tensor(x.d, requires_grad=True) for x in xs]
    ty = torch_cases[case](torch, *ts)
    assert ty.numel() == y.size, (tuple(ty.shape), y.shape)
    tgs = torch.autograd.grad(ty, ts, torch.tensor(u).reshape(ty.shape), create_graph=True,
                              allow_unused=True)
    s = sum((torch.real(g * torch.tensor(v).conj()) if g.is_complex() else
             g * torch.tensor(v)).sum() for g, v in zip(tgs, vs) if g is not None)
    ths = torch.autograd.grad(s, ts, allow_unused=True) if torch.is_tensor(s) and \
        s.requires_grad else [None] * len(ts)
    for x, h, th in zip(xs, hs, ths):
        got = np.zeros(x.shape) if h is None else h.d
        want = np.zeros(x.shape) if th is None else th.detach().resolve_conj().numpy(force=True)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)


def family_tests(cases: dict, torch_cases: dict, xfail: dict | None = None,
                 fused: set | frozenset | None = None) -> tuple:
    """A family module's two tests: every case's ``gradgradcheck`` and its second
    derivative against torch's (bind them to ``test_*`` names at module level).
    ``fused``: the cases whose ``gradgradcheck`` replays its graphs fused (``None``:
    all); the others replay each op's own kernels, which their first, eager run
    compiled already: on a compiling backend every fused replay is a program of its own
    (fusion itself: tests/grad/test_fusion_graphs.py and the families without ``fused``)."""
    @pytest.mark.parametrize("case", params(cases, xfail=xfail))
    def gradgradcheck_case(backend, case):
        check_gradgrad(cases, case, fuse=fused is None or case in fused)

    @pytest.mark.parametrize("case", params(torch_cases, xfail=xfail))
    def torch_case(backend, case):
        check_torch(cases, torch_cases, case)
    return gradgradcheck_case, torch_case
