"""Dense matrix decompositions and solves (the Array API ``linalg`` extension's host part).

Each op takes stacks of matrices ``(..., M, N)``. Kernels exist for numpy and CuPy
(``backends/_xp/linalg.py``, the xp's own ``linalg``); an OpenCL context runs them through
the registry's numpy fallback, counted in ``fallback_stats()``. Multi-output ops put the
differentiable output first (``slogdet`` gives ``(logabsdet, sign)``, ``eigh`` gives
``(eigenvalues, eigenvectors)``): a backward rule receives the first output's gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..errors import DTypeError, ShapeError
from .common import require_array
from .op import Op


def _matrix(op: str, x: Any, square: bool = True) -> tuple[int, ...]:
    require_array(op, "x", x)
    if x.dtype not in dtypes.INEXACT:
        raise DTypeError(f"{op}: argument 'x' must be floating point, got {x.dtype} "
                         f"(shape {x.shape})")
    s = tuple(x.shape)
    if len(s) < 2 or (square and s[-1] != s[-2]):
        kind = "square matrices" if square else "matrices"
        raise ShapeError(f"{op}: argument 'x' must be a stack of {kind} (..., M, "
                         f"{'M' if square else 'N'}), got shape {s}")
    return s


def _infer_same(name: str):
    def infer(inputs, attrs):
        return ((_matrix(name, inputs[0]), inputs[0].dtype),)
    return infer


def _infer_scalar(inputs, attrs):
    s = _matrix("det", inputs[0])
    return ((s[:-2], inputs[0].dtype),)


def _infer_slogdet(inputs, attrs):
    s = _matrix("slogdet", inputs[0])  # (logabsdet: real, sign: the input's dtype)
    return ((s[:-2], dtypes.real_of(inputs[0].dtype)), (s[:-2], inputs[0].dtype))


def _infer_solve(inputs, attrs):
    a, b = inputs
    sa = _matrix("solve", a)
    require_array("solve", "x2", b)
    if b.dtype not in dtypes.INEXACT:
        raise DTypeError(f"solve: argument 'x2' must be floating point, got {b.dtype}")
    sb = tuple(b.shape)
    if len(sb) < 2 or sb[-2] != sa[-1]:
        raise ShapeError(f"solve: 'x2' {sb} does not match 'x1' {sa}")
    try:
        batch = np.broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        raise ShapeError(f"solve: batch dimensions of 'x1' {sa} and 'x2' {sb} do not "
                         "broadcast") from None
    return ((tuple(batch) + sb[-2:], np.result_type(a.dtype, b.dtype)),)


def _infer_eigh(inputs, attrs):
    s = _matrix("eigh", inputs[0])
    return ((s[:-1], dtypes.real_of(inputs[0].dtype)), (s, inputs[0].dtype))


def _infer_eigvalsh(inputs, attrs):
    s = _matrix("eigvalsh", inputs[0])
    return ((s[:-1], dtypes.real_of(inputs[0].dtype)),)


def _infer_qr(inputs, attrs):
    s = _matrix("qr", inputs[0], square=False)
    mode = attrs.setdefault("mode", "reduced")
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    m, n = s[-2:]
    k = min(m, n) if mode == "reduced" else m
    d = inputs[0].dtype
    return ((s[:-2] + (m, k), d), (s[:-2] + (k, n), d))


def _infer_svd(inputs, attrs):
    s = _matrix("svd", inputs[0], square=False)
    full = attrs["full_matrices"] = bool(attrs.get("full_matrices", True))
    m, n = s[-2:]
    k = min(m, n)
    d = inputs[0].dtype
    return ((s[:-2] + (m, m if full else k), d), (s[:-2] + (k,), dtypes.real_of(d)),
            (s[:-2] + (n if full else k, n), d))


def _infer_svdvals(inputs, attrs):
    s = _matrix("svdvals", inputs[0], square=False)
    return ((s[:-2] + (min(s[-2:]),), dtypes.real_of(inputs[0].dtype)),)


inv = Op("inv", _infer_same("inv"))
det = Op("det", _infer_scalar)
slogdet = Op("slogdet", _infer_slogdet)
solve = Op("solve", _infer_solve)
cholesky = Op("cholesky", _infer_same("cholesky"))
eigh = Op("eigh", _infer_eigh)
eigvalsh = Op("eigvalsh", _infer_eigvalsh)
#: ``eigh``'s eigenvectors as an op of their own, so their gradient has a rule (a rule
#: receives its op's first output's gradient only); ``linalg.eigh`` uses it for graphs.
eigh_vectors = Op("eigh_vectors", lambda inputs, attrs: (_infer_eigh(inputs, attrs)[1],))
qr = Op("qr", _infer_qr, differentiable=False)


def _infer_qr_part(part: int) -> Any:
    def infer(inputs, attrs):
        name = ("qr_q", "qr_r")[part]
        s = _matrix(name, inputs[0], square=False)
        if s[-2] < s[-1]:
            raise ShapeError(f"{name}: the gradient of qr needs rows >= columns, got shape "
                             f"{s}")
        return (_infer_qr(inputs, {"mode": "reduced"})[part],)
    return infer


def _infer_svd_part(part: int) -> Any:
    def infer(inputs, attrs):
        return (_infer_svd(inputs, {"full_matrices": False})[part],)
    return infer


#: The reduced ``svd``'s ``U`` and ``Vh`` as ops of their own (see ``qr_q``); with
#: ``svdvals`` they give ``linalg.svd(full_matrices=False)`` its gradients in graphs.
svd_u = Op("svd_u", _infer_svd_part(0))
svd_vh = Op("svd_vh", _infer_svd_part(2))


#: The reduced ``qr``'s factors as ops of their own, so each has a gradient rule (the
#: engine hands a rule its first output's gradient only); ``linalg.qr`` uses them in
#: graphs of tall or square matrices.
qr_q = Op("qr_q", _infer_qr_part(0))
qr_r = Op("qr_r", _infer_qr_part(1))
svd = Op("svd", _infer_svd, differentiable=False)
svdvals = Op("svdvals", _infer_svdvals)


# -- backward rules -------------------------------------------------------------------
# The rules call the ops below this one (``ops``' layers), as ``F`` exposes them.
from . import elementwise as _ew  # noqa: E402
from . import linalg as _la  # noqa: E402
from . import shape as _sh  # noqa: E402
from .backward import backward as _backward  # noqa: E402
from .backward import conj as _cj  # noqa: E402
from .backward import sum_to as _sum_to  # noqa: E402


def _reshape(x: Any, shape: tuple) -> Any:
    return _sh.reshape(x, shape=shape)


def _mT(x: Any) -> Any:
    n = x.ndim
    return _sh.transpose(x, axes=tuple(range(n - 2)) + (n - 1, n - 2))


def _mH(x: Any) -> Any:
    """The conjugate transpose of the last two axes (the transpose of a real ``x``):
    complex rules give PyTorch's ``g * conj(d)`` convention."""
    return _mT(_cj(x))


def _expand2(x: Any) -> Any:
    return _reshape(x, tuple(x.shape) + (1, 1))


@_backward(inv, outputs=(0,))
def _inv_grad(c, g):
    y = _mH(c.outputs[0])
    return (_ew.neg(_la.matmul(_la.matmul(y, g), y)),)


@_backward(det, inputs=(0,), outputs=(0,))
def _det_grad(c, g):
    return (_ew.mul(_expand2(_ew.mul(g, _cj(c.outputs[0]))), _mH(inv(c.inputs[0]))),)


@_backward(slogdet, inputs=(0,))
def _slogdet_grad(c, g):
    return (_ew.mul(_expand2(g), _mH(inv(c.inputs[0]))),)


@_backward(solve, inputs=(0,), outputs=(0,))
def _solve_grad(c, g):
    a, x = c.inputs[0], c.outputs[0]
    gb = solve(_mH(a), g)
    ga = _ew.neg(_la.matmul(gb, _mH(x))) if c.need[0] else None
    return (_sum_to(ga, c.in_meta[0][0]) if ga is not None else None,
            _sum_to(gb, c.in_meta[1][0]) if c.need[1] else None)


def _tril_half(x: Any) -> Any:
    """The lower triangle of ``x`` with its diagonal halved."""
    n = x.shape[-1]
    w = np.tril(np.ones((n, n), x.dtype)) - 0.5 * np.eye(n, dtype=x.dtype)
    return _ew.mul(x, _const(w, x))


def _const(a: np.ndarray, like: Any) -> Any:
    from ..ndarray import NdArray, array
    dev = like.device if type(like) is NdArray else None
    return array(a) if dev is None else array(a).to_device(dev)


@_backward(cholesky, outputs=(0,))
def _cholesky_grad(c, g):
    lo = c.outputs[0]
    li = inv(lo)
    p = _tril_half(_la.matmul(_mH(lo), g))
    s = _la.matmul(_la.matmul(_mH(li), p), li)
    return (_ew.mul(_ew.add(s, _mH(s)), 0.5),)


def _v_diag_vt(v: Any, g: Any) -> Any:
    """``V diag(g) Vᴴ``: the eigenvalues' gradient."""
    return _la.matmul(_ew.mul(v, _reshape(g, tuple(g.shape[:-1]) + (1, g.shape[-1]))), _mH(v))


@_backward(eigh, outputs=(1,))
def _eigh_grad(c, g):
    v = c.outputs[1]
    if _graphed(v):  # the vectors with a rule of their own (a gradient graph reads them)
        v = eigh_vectors(c.args[0])
    return (_v_diag_vt(v, g),)


def _inverse_gaps(w: Any) -> Any:
    """``F_ij = 1 / (w_j - w_i)`` off the diagonal, 0 on it (the eigenvector and singular
    vector rules' factor)."""
    n = w.shape[-1]
    lead = tuple(w.shape[:-1])
    e = _ew.sub(_reshape(w, lead + (1, n)), _reshape(w, lead + (n, 1)))
    eye = _const(np.eye(n, dtype=bool), e)
    return _ew.where(eye, 0.0, _ew.div(1.0, _ew.where(eye, 1.0, e)))


def _imag_diagonal(x: Any) -> Any:
    """``i Im(diag(x))`` as a diagonal matrix: the part of ``QᴴdQ`` a complex QR's real
    diagonal of ``R`` fixes (``None`` for a real ``x``, where it is 0)."""
    if x.dtype.kind != "c":
        return None
    eye = _const(np.eye(x.shape[-1], dtype=bool), x)
    return _ew.where(eye, _ew.mul(_ew.sub(x, _cj(x)), 0.5), 0.0)


def _with_imag_diagonal(low: Any, x: Any, sign: float) -> Any:
    d = _imag_diagonal(x)
    return low if d is None else _ew.add(low, _ew.mul(d, sign))


@_backward(eigh_vectors, inputs=(0,), outputs=(0,))
def _eigh_vectors_grad(c, g):
    """``V (F ∘ Vᵀg) Vᵀ``, symmetrized, ``F`` the inverse eigenvalue gaps (distinct
    eigenvalues assumed, as every eigenvector gradient must)."""
    v = c.outputs[0]
    f = _inverse_gaps(eigvalsh(c.inputs[0]))
    ga = _la.matmul(_la.matmul(v, _ew.mul(f, _la.matmul(_mH(v), g))), _mH(v))
    return (_ew.mul(_ew.add(ga, _mH(ga)), 0.5),)


def _row(s: Any) -> Any:
    return _reshape(s, tuple(s.shape[:-1]) + (1, s.shape[-1]))


@_backward(svd_u, inputs=(0,), outputs=(0,))
def _svd_u_grad(c, g):
    """The ``dU`` part of the reduced SVD gradient (distinct nonzero singular values):
    ``U (F ∘ (UᴴdU - dUᴴU)) S Vᴴ + (I - UUᴴ) dU S⁻¹ Vᴴ``; for complex ``U`` plus
    ``U (i Im diag(UᴴdU) / 2S) Vᴴ`` (with V's half: the phases' term of a loss that does
    not depend on the singular vectors' phases, as PyTorch assumes)."""
    u = c.outputs[0]
    _, s, vh = _reduced_svd(c.inputs[0])
    ug = _la.matmul(_mH(u), g)
    inner = _ew.mul(_ew.mul(_inverse_gaps(_ew.mul(s, s)), _ew.sub(ug, _mH(ug))), _row(s))
    phase = _imag_diagonal(ug)  # complex: half of the phases' term, V's rule the rest
    if phase is not None:
        inner = _ew.add(inner, _ew.div(phase, _ew.mul(_row(s), 2.0)))
    rest = _ew.div(_ew.sub(g, _la.matmul(u, ug)), _row(s))
    return (_la.matmul(_ew.add(_la.matmul(u, inner), rest), vh),)


@_backward(svd_vh, inputs=(0,), outputs=(0,))
def _svd_vh_grad(c, g):
    """The ``dVh`` part: ``U S (F ∘ (VᴴdV - dVᴴV)) Vᴴ + U S⁻¹ dVᴴ (I - VVᴴ)`` with
    ``V = Vhᴴ``, ``dV = dVhᴴ``; for complex ``V`` minus ``U (i Im diag(VᴴdV) / 2S) Vᴴ``."""
    vh = c.outputs[0]
    u, s, _ = _reduced_svd(c.inputs[0])
    vg = _la.matmul(vh, _mH(g))  # Vᴴ dV
    col = _reshape(s, tuple(s.shape) + (1,))
    inner = _ew.mul(col, _ew.mul(_inverse_gaps(_ew.mul(s, s)), _ew.sub(vg, _mH(vg))))
    phase = _imag_diagonal(vg)
    if phase is not None:
        inner = _ew.sub(inner, _ew.div(phase, _ew.mul(col, 2.0)))
    rest = _ew.div(_ew.sub(g, _la.matmul(_mH(vg), vh)), col)  # S⁻¹ dVᴴ (I - V Vᴴ)
    return (_la.matmul(u, _ew.add(_la.matmul(inner, vh), rest)),)


def _tril_strict(x: Any) -> Any:
    n = x.shape[-1]
    return _ew.mul(x, _const(np.tril(np.ones((n, n), x.dtype), -1), x))


def _solve_rt(x: Any, r: Any) -> Any:
    """``x R⁻ᴴ``."""
    return _la.matmul(x, _mH(inv(r)))


@_backward(qr_q, inputs=(0,), outputs=(0,))
def _qr_q_grad(c, g):
    """The ``dQ`` part of the reduced QR gradient (rows >= columns):
    ``Q (tril(QᴴdQ - dQᴴQ, -1) + i Im diag(QᴴdQ)) R⁻ᴴ + (dQ - Q QᴴdQ) R⁻ᴴ`` (the
    imaginary diagonal only for complex ``Q``)."""
    q = c.outputs[0]
    r = qr_r(c.inputs[0])
    qdq = _la.matmul(_mH(q), g)
    low = _with_imag_diagonal(_tril_strict(_ew.sub(qdq, _mH(qdq))), qdq, 1.0)
    rest = _solve_rt(_ew.sub(g, _la.matmul(q, qdq)), r)
    return (_ew.add(_la.matmul(q, _solve_rt(low, r)), rest),)


@_backward(qr_r, inputs=(0,), outputs=(0,))
def _qr_r_grad(c, g):
    """The ``dR`` part: ``Q (dR + (tril(R dRᴴ - dR Rᴴ, -1) - i Im diag(dR Rᴴ)) R⁻ᴴ)``."""
    r = c.outputs[0]
    q = qr_q(c.inputs[0])
    rdr = _la.matmul(r, _mH(g))
    low = _with_imag_diagonal(_tril_strict(_ew.sub(rdr, _mH(rdr))), _mH(rdr), -1.0)
    return (_la.matmul(q, _ew.add(g, _solve_rt(low, r))),)


@_backward(eigvalsh, inputs=(0,))
def _eigvalsh_grad(c, g):
    x = c.inputs[0]
    return (_v_diag_vt(eigh_vectors(x) if _graphed(x) else eigh(x)[1], g),)


def _graphed(x: Any) -> bool:
    """``x`` is a value of a gradient graph being built (``grad.grad(create_graph=True)``):
    a rule reading a decomposition of it takes the ops with rules (``eigh_vectors``,
    ``svd_u``...), not the one-call decomposition whose further outputs carry none."""
    return bool(getattr(x, "need_grad", False))


def _reduced_svd(x: Any) -> tuple:
    """``svd(x, full_matrices=False)``; differentiable parts where ``_graphed``."""
    if _graphed(x):
        return svd_u(x), svdvals(x), svd_vh(x)
    return svd(x, full_matrices=False)


@_backward(svdvals, inputs=(0,))
def _svdvals_grad(c, g):
    """``U diag(g) Vh`` from the reduced SVD (distinct singular values assumed)."""
    u, _, vh = _reduced_svd(c.inputs[0])
    return (_la.matmul(_ew.mul(u, _reshape(g, tuple(g.shape[:-1]) + (1, g.shape[-1]))), vh),)
