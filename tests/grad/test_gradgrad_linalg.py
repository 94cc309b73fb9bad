"""Double backward of the products (matmul, affine, einsum, tensordot ...) and the dense
decompositions of ``nnarray.linalg``: ``gradgradcheck`` in float64 on every backend and
torch's second derivatives (``tests/double_backward.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from double_backward import check_gradgrad, check_torch, params

import nnarray as nna
import nnarray.functions as F

la = nna.linalg


def _sym(a):
    return (a + F.transpose(a, (1, 0))) * 0.5


def _tsym(a):
    return (a + a.T) * 0.5


def _shift(a):
    """``a + 3 I``: a well-conditioned complex matrix (``a`` is standard normal)."""
    return a + nna.eye(3, dtype=np.complex128) * 3.0


def _tshift(t, a):
    return a + 3.0 * t.eye(3, dtype=a.dtype)


def _herm(a):
    """A Hermitian positive definite matrix from a complex standard normal ``a``."""
    return (a + F.conj(F.transpose(a, (1, 0)))) * 0.5 + nna.eye(3, dtype=np.complex128) * 5.0


def _therm(t, a):
    return (a + a.mH) * 0.5 + 5.0 * t.eye(3, dtype=a.dtype)


#: name -> (function of Variables, [(shape, domain)]), small float64 inputs.
CASES: dict = {
    "matmul": (F.matmul, [((2, 3), "any"), ((3, 4), "any")]),
    "matmul_batched": (F.matmul, [((2, 2, 3), "any"), ((3, 2), "any")]),
    "affine": (lambda x, w, b: F.tanh(F.affine(x, w, b)), [((2, 3), "any"), ((3, 4), "any"),
                                                           ((4,), "any")]),
    "einsum_matmul": (lambda a, b: nna.einsum("ij,jk->ik", a, b * b),
                      [((2, 3), "any"), ((3, 2), "any")]),
    "einsum_diagonal": (lambda a: nna.einsum("ii->i", a * a), [((3, 3), "any")]),
    "einsum_batched": (lambda a, b: nna.einsum("bij,bkj->bik", a * a, b),
                       [((2, 2, 3), "any"), ((2, 2, 3), "any")]),
    "einsum_full_sums": (lambda a, b: nna.einsum("i,j->", a, b) * nna.einsum("i,i", a, a),
                         [((3,), "any"), ((2,), "any")]),
    "tensordot": (lambda a, b: nna.tensordot(a * a, b, axes=1), [((2, 3), "any"),
                                                                 ((3, 2), "any")]),
    "vecdot": (lambda a, b: nna.vecdot(a * a, b), [((2, 3), "any"), ((2, 3), "any")]),
    "outer": (lambda a, b: la.outer(a * a, b), [((3,), "any"), ((2,), "any")]),
    "cross": (lambda a, b: la.cross(a * a, b), [((2, 3), "any"), ((2, 3), "any")]),
    "trace_diagonal": (lambda x: la.trace(x * x) * la.diagonal(x, offset=1),
                       [((3, 3), "any")]),
    "matrix_power": (lambda x: la.matrix_power(x, 3), [((2, 2), "any")]),
    "matrix_power_negative": (lambda x: la.matrix_power(x, -2), [((2, 2), "spd")]),
    # dense decompositions (on the host on OpenCL)
    "det": (la.det, [((3, 3), "spd")]),
    "inv": (la.inv, [((3, 3), "spd")]),
    "slogdet": (lambda a: la.slogdet(a)[1], [((3, 3), "spd")]),
    "solve": (la.solve, [((3, 3), "spd"), ((3, 2), "any")]),
    "inv_complex": (lambda a: la.inv(_shift(a)), [((3, 3), "cplx")]),
    "det_complex": (lambda a: la.det(_shift(a)), [((3, 3), "cplx")]),
    "slogdet_complex": (lambda a: la.slogdet(_shift(a))[1], [((3, 3), "cplx")]),
    "solve_complex": (lambda a, b: la.solve(_shift(a), b), [((3, 3), "cplx"), ((3, 2), "cplx")]),
    "cholesky": (lambda a: la.cholesky(_sym(a)), [((3, 3), "spd")]),
    "cholesky_complex": (lambda a: la.cholesky(_herm(a)), [((3, 3), "cplx")]),
    "eigvalsh_complex": (lambda a: la.eigvalsh(_herm(a)), [((3, 3), "cplx")]),
    "eigh_values_complex": (lambda a: la.eigh(_herm(a))[0] ** 2, [((3, 3), "cplx")]),
    "eigh_vectors_complex": (lambda a: F.complex_abs(la.eigh(_herm(a))[1]), [((3, 3), "cplx")]),
    "qr_complex": (lambda a: la.qr(a)[0] * 1.0 + la.qr(a)[1], [((3, 3), "cplx")]),
    "svdvals_complex": (la.svdvals, [((3, 2), "cplx")]),
    "svd_vectors_complex": (lambda a: F.complex_abs(la.svd(a, full_matrices=False)[0]) +
                            F.sum(F.complex_abs(la.svd(a, full_matrices=False)[2])),
                            [((3, 2), "cplx")]),
    "pinv_complex": (la.pinv, [((3, 2), "cplx")]),
    "cholesky_upper": (lambda a: la.cholesky(_sym(a), upper=True), [((3, 3), "spd")]),
    "eigvalsh": (lambda a: la.eigvalsh(_sym(a)), [((3, 3), "spd")]),
    "eigh_values": (lambda a: la.eigh(_sym(a))[0] ** 2, [((3, 3), "spd")]),
    "eigh_vectors": (lambda a: F.abs(la.eigh(_sym(a))[1]), [((3, 3), "spd")]),
    "qr": (lambda a: la.qr(a)[0] * 1.0 + la.qr(a)[1], [((3, 3), "any")]),
    "svdvals": (la.svdvals, [((3, 2), "any")]),
    "svd_vectors": (lambda a: F.abs(la.svd(a, full_matrices=False)[0]) +
                    F.abs(F.sum(la.svd(a, full_matrices=False)[2])), [((3, 2), "any")]),
    "pinv": (la.pinv, [((3, 2), "any")]),
    "matrix_norm_nuc": (lambda x: la.matrix_norm(x, ord="nuc"), [((3, 2), "any")]),
    "matrix_norm_2": (lambda x: la.matrix_norm(x, ord=2), [((3, 2), "any")]),
}

#: The cases whose decompositions run on the host on OpenCL.
HOST = {"det", "inv", "slogdet", "solve", "cholesky", "cholesky_upper", "eigvalsh", "eigh_values",
        "eigh_vectors", "qr", "svdvals", "svd_vectors", "pinv", "matrix_norm_nuc",
        "matrix_norm_2", "matrix_power_negative"}
HOST |= {f"{n}_complex" for n in ("det", "inv", "slogdet", "solve", "cholesky", "eigvalsh",
                                  "eigh_values", "eigh_vectors", "qr", "svdvals",
                                  "svd_vectors", "pinv")}

#: name -> ``(torch, *tensors) -> tensor``: torch's counterpart of each case.
TORCH: dict = {
    "matmul": lambda t, a, b: a @ b,
    "matmul_batched": lambda t, a, b: a @ b,
    "affine": lambda t, x, w, b: t.tanh(x @ w + b),
    "einsum_matmul": lambda t, a, b: t.einsum("ij,jk->ik", a, b * b),
    "einsum_diagonal": lambda t, a: t.einsum("ii->i", a * a),
    "einsum_batched": lambda t, a, b: t.einsum("bij,bkj->bik", a * a, b),
    "einsum_full_sums": lambda t, a, b: t.einsum("i,j->", a, b) * t.einsum("i,i", a, a),
    "tensordot": lambda t, a, b: t.tensordot(a * a, b, dims=1),
    "vecdot": lambda t, a, b: t.linalg.vecdot(a * a, b),
    "outer": lambda t, a, b: t.outer(a * a, b),
    "cross": lambda t, a, b: t.linalg.cross(a * a, b),
    "trace_diagonal": lambda t, x: t.trace(x * x) * t.diagonal(x, offset=1),
    "matrix_power": lambda t, x: t.linalg.matrix_power(x, 3),
    "matrix_power_negative": lambda t, x: t.linalg.matrix_power(x, -2),
    "det": lambda t, a: t.linalg.det(a),
    "inv": lambda t, a: t.linalg.inv(a),
    "slogdet": lambda t, a: t.linalg.slogdet(a)[1],
    "solve": lambda t, a, b: t.linalg.solve(a, b),
    "inv_complex": lambda t, a: t.linalg.inv(_tshift(t, a)),
    "det_complex": lambda t, a: t.linalg.det(_tshift(t, a)),
    "slogdet_complex": lambda t, a: t.linalg.slogdet(_tshift(t, a))[1],
    "solve_complex": lambda t, a, b: t.linalg.solve(_tshift(t, a), b),
    "cholesky": lambda t, a: t.linalg.cholesky(_tsym(a)),
    "cholesky_complex": lambda t, a: t.linalg.cholesky(_therm(t, a)),
    "eigvalsh_complex": lambda t, a: t.linalg.eigvalsh(_therm(t, a)),
    "eigh_values_complex": lambda t, a: t.linalg.eigh(_therm(t, a))[0] ** 2,
    "eigh_vectors_complex": lambda t, a: t.linalg.eigh(_therm(t, a))[1].abs(),
    "qr_complex": lambda t, a: t.linalg.qr(a)[0] * 1.0 + t.linalg.qr(a)[1],
    "svdvals_complex": lambda t, a: t.linalg.svdvals(a),
    "svd_vectors_complex": lambda t, a: t.linalg.svd(a, full_matrices=False)[0].abs() +
    t.linalg.svd(a, full_matrices=False)[2].abs().sum(),
    "pinv_complex": lambda t, a: t.linalg.pinv(a),
    "cholesky_upper": lambda t, a: t.linalg.cholesky(_tsym(a), upper=True),
    "eigvalsh": lambda t, a: t.linalg.eigvalsh(_tsym(a)),
    "eigh_values": lambda t, a: t.linalg.eigh(_tsym(a))[0] ** 2,
    "eigh_vectors": lambda t, a: t.linalg.eigh(_tsym(a))[1].abs(),
    "qr": lambda t, a: t.linalg.qr(a)[0] * 1.0 + t.linalg.qr(a)[1],
    "svdvals": lambda t, a: t.linalg.svdvals(a),
    "svd_vectors": lambda t, a: t.linalg.svd(a, full_matrices=False)[0].abs() +
    t.linalg.svd(a, full_matrices=False)[2].sum().abs(),
    "pinv": lambda t, a: t.linalg.pinv(a),
    "matrix_norm_nuc": lambda t, x: t.linalg.matrix_norm(x, ord="nuc"),
    "matrix_norm_2": lambda t, x: t.linalg.matrix_norm(x, ord=2),
}


@pytest.mark.parametrize("case", params(CASES, HOST))
def test_gradgradcheck(backend, case):
    check_gradgrad(CASES, case)


@pytest.mark.parametrize("case", params(TORCH, HOST))
def test_second_derivatives_match_torch(backend, case):
    check_torch(CASES, TORCH, case)
