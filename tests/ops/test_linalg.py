"""nnarray.linalg against numpy.linalg on every backend: values, gradients, errors and the
counted host fallback of the decompositions on OpenCL."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad
from nnarray import linalg as la
from nnarray.grad import Variable

RNG = np.random.default_rng(0)
A = RNG.standard_normal((2, 4, 4))
SPD = A @ A.swapaxes(-1, -2) + 4 * np.eye(4)
R = RNG.standard_normal((2, 5, 3))
HOST = ["cholesky", "det", "eigh", "eigvalsh", "inv", "pinv", "qr", "slogdet", "solve", "svd",
        "svdvals", "matrix_rank"]


def _x(a, dtype=np.float64):
    return nna.asarray(a.astype(dtype), device=nna.get_current_context())


def _close(r, e, tol=1e-5):
    np.testing.assert_allclose(r.numpy(), e, rtol=tol, atol=tol)


def _check_case(case, a) -> None:
    """``case = (fn, ref)`` on ``a``: the result stays on the current device, matches."""
    fn, ref = case
    r = fn(_x(a))
    assert r.device == nna.get_current_context()
    _close(r, ref(a))


DEVICE_CASES = {
    "matmul": (lambda x: la.matmul(x, x), lambda a: a @ a),
    "matrix_transpose": (la.matrix_transpose, lambda a: a.swapaxes(-1, -2)),
    "tensordot": (lambda x: la.tensordot(x, x[0], axes=1), lambda a: np.tensordot(a, a[0], 1)),
    "vecdot": (lambda x: la.vecdot(x, x), lambda a: (a * a).sum(-1)),
    "outer": (lambda x: la.outer(x[0, 0], x[1, 1]), lambda a: np.outer(a[0, 0], a[1, 1])),
    "trace": (lambda x: la.trace(x, offset=1), lambda a: np.trace(a, 1, -2, -1)),
    "diagonal": (lambda x: la.diagonal(x, offset=-2), lambda a: np.diagonal(a, -2, -2, -1)),
    "cross": (lambda x: la.cross(x[..., :3], x[..., 1:], axis=-1),
              lambda a: np.cross(a[..., :3], a[..., 1:])),
    "cross_axis": (lambda x: la.cross(x[:, :3], x[0, 1:], axis=1),
                   lambda a: np.cross(a[:, :3], np.broadcast_to(a[0, 1:], (2, 3, 4)), axis=1)),
    "vector_norm": (lambda x: la.vector_norm(x, axis=(0, 2), keepdims=True),
                    lambda a: np.sqrt((a * a).sum((0, 2), keepdims=True))),
    "vector_norm_3": (lambda x: la.vector_norm(x, ord=3),
                      lambda a: (np.abs(a) ** 3).sum() ** (1 / 3)),
    "vector_norm_inf": (lambda x: la.vector_norm(x, ord=-np.inf, axis=1),
                        lambda a: np.abs(a).min(1)),
    "vector_norm_0": (lambda x: la.vector_norm(x, ord=0), lambda a: np.count_nonzero(a)),
    "matrix_norm_fro": (la.matrix_norm, lambda a: np.linalg.norm(a, axis=(-2, -1))),
    "matrix_norm_1": (lambda x: la.matrix_norm(x, ord=1),
                      lambda a: np.linalg.norm(a, 1, axis=(-2, -1))),
    "matrix_norm_-inf": (lambda x: la.matrix_norm(x, ord=-np.inf, keepdims=True),
                         lambda a: np.linalg.norm(a, -np.inf, axis=(-2, -1), keepdims=True)),
    "matrix_power": (lambda x: la.matrix_power(x, 5), lambda a: np.linalg.matrix_power(a, 5)),
    "matrix_power_0": (lambda x: la.matrix_power(x, 0), lambda a: np.linalg.matrix_power(a, 0)),
}


@pytest.mark.parametrize("name", sorted(DEVICE_CASES))
def test_on_device(backend: str, name: str) -> None:
    _check_case(DEVICE_CASES[name], A)
    assert nna.fallback_stats() == {}


HOST_CASES = {
    "cholesky": (lambda x: la.cholesky(x, upper=True), lambda a: np.linalg.cholesky(a).mT),
    "det": (la.det, np.linalg.det),
    "eigvalsh": (la.eigvalsh, np.linalg.eigvalsh),
    "inv": (la.inv, np.linalg.inv),
    "pinv": (lambda x: la.pinv(x[..., :3]), lambda a: np.linalg.pinv(a[..., :3])),
    "matrix_rank": (lambda x: la.matrix_rank(x[..., :3]),
                    lambda a: np.linalg.matrix_rank(a[..., :3])),
    "slogdet": (lambda x: la.slogdet(x).logabsdet, lambda a: np.linalg.slogdet(a)[1]),
    "solve": (lambda x: la.solve(x, x[0, 0]),
              lambda a: np.linalg.solve(a, a[0, 0][None, :, None])[..., 0]),
    "svdvals": (la.svdvals, lambda a: np.linalg.svd(a, compute_uv=False)),
    "matrix_norm_nuc": (lambda x: la.matrix_norm(x, ord="nuc"),
                        lambda a: np.linalg.norm(a, "nuc", axis=(-2, -1))),
    "matrix_power_-2": (lambda x: la.matrix_power(x, -2),
                        lambda a: np.linalg.matrix_power(a, -2)),
}


@pytest.mark.allow_fallback("the dense decompositions run on the host on OpenCL")
@pytest.mark.parametrize("name", sorted(HOST_CASES))
def test_decompositions(backend: str, name: str) -> None:
    _check_case(HOST_CASES[name], SPD)
    fb = nna.fallback_stats()
    if backend == "opencl":
        assert fb and all(k[1:] == ("opencl", "numpy") for k in fb)
    else:
        assert fb == {}


@pytest.mark.allow_fallback("the dense decompositions run on the host on OpenCL")
def test_factorizations(backend: str) -> None:
    q, r = la.qr(_x(R))
    assert type(la.qr(_x(R))) is la.QRResult and q.shape == (2, 5, 3) and r.shape == (2, 3, 3)
    _close(la.matmul(q, r), R)
    u, s, vh = la.svd(_x(R), full_matrices=False)
    _close(la.matmul(u * F.reshape(s, (2, 1, 3)), vh), R)
    assert la.svd(_x(R)).U.shape == (2, 5, 5)
    w, v = la.eigh(_x(SPD))
    _close(w, np.linalg.eigvalsh(SPD))
    _close(la.matmul(la.matmul(v, _x(SPD)), la.matrix_transpose(v)) * 0 + la.matmul(
        v * F.reshape(w, (2, 1, 4)), la.matrix_transpose(v)), SPD)
    sg = la.slogdet(_x(A))
    _close(sg.sign, np.linalg.slogdet(A)[0])
    if backend == "opencl":
        assert nna.fallback_stats()[("qr", "opencl", "numpy")] == 2


@pytest.mark.allow_fallback("inv runs on the host on OpenCL")
def test_fallback_transfers(backend: str) -> None:
    x = _x(SPD)
    nna.reset_transfer_stats()
    y = la.inv(x)
    assert y.device == x.device
    assert nna.transfer_stats()["count"] == (2 if backend == "opencl" else 0)


def _var(a):
    return Variable.from_numpy_array(np.ascontiguousarray(a), need_grad=True)



def _svd_t(x):
    """The reduced SVD of a wide (…, 3, 4) slice."""
    return la.svd(F.transpose(x, (0, 2, 1))[..., :3, :], full_matrices=False)

GRAD_CASES = {
    "trace": lambda x: la.trace(x, offset=1),
    "diagonal": lambda x: la.diagonal(x, offset=-1),
    "outer": lambda x: la.outer(x[0, 0], x[1, 2]),
    "cross": lambda x: la.cross(x[..., :3], x[..., 1:]),
    "vector_norm": lambda x: la.vector_norm(x, axis=(0, 2)),
    "vector_norm_3": lambda x: la.vector_norm(x, ord=3, axis=-1),
    "matrix_norm": lambda x: la.matrix_norm(x),
    "matrix_power": lambda x: la.matrix_power(x, 3),
    "inv": la.inv,
    "det": la.det,
    "slogdet": lambda x: la.slogdet(x).logabsdet,
    "solve_a": lambda x: la.solve(x, F.reshape(x[0, 1], (4, 1)) * 1.0 + 2.0),
    "solve_vec": lambda x: la.solve(x[0], x[1, 0]),
    "cholesky": lambda x: la.cholesky(F.matmul(x, F.transpose(x, (0, 2, 1))) + 4.0),
    "eigvalsh": lambda x: la.eigvalsh(x + F.transpose(x, (0, 2, 1))),
    "eigh": lambda x: la.eigh(x + F.transpose(x, (0, 2, 1))).eigenvalues,
    # eigenvectors up to sign: squared entries, weighted so every vector counts
    "qr_q": lambda x: la.qr(x[..., :3]).Q * np.arange(1.0, 4.0),
    "qr_r": lambda x: la.qr(x[..., :3]).R * np.arange(1.0, 4.0),
    "qr_both": lambda x: F.matmul(la.qr(x).Q, la.qr(x).R * 0.5) + la.qr(x).Q,
    # singular vectors up to sign: products of pairs, which are sign-free
    "svd_u": lambda x: F.matmul(la.svd(x[..., :3], full_matrices=False).U,
                                la.svd(x[..., :3], full_matrices=False).Vh),
    "svd_uv_wide": lambda x: F.matmul(_svd_t(x)[0] * np.arange(1.0, 4.0), _svd_t(x)[2]),
    "svd_u_only": lambda x: la.svd(x, full_matrices=False).U ** 2 * np.arange(1.0, 5.0),
    "svd_vh_only": lambda x: la.svd(x, full_matrices=False).Vh ** 2 * np.arange(1.0, 5.0),
    "eigh_vectors": lambda x: la.eigh(x + F.transpose(x, (0, 2, 1))).eigenvectors ** 2
    * np.arange(1.0, 5.0),
    "matrix_power_-1": lambda x: la.matrix_power(x, -2),
    "svdvals": la.svdvals,
    "matrix_norm_nuc": lambda x: la.matrix_norm(x[..., :3], ord="nuc"),
}


#: Cases whose gradcheck replays their graphs unfused: on a compiling backend each of
#: their fused replays would be a program of its own (the other cases' fused replays
#: build programs other tests build too; fusion itself: tests/grad/test_fusion_graphs.py).
UNFUSED = frozenset({"cross", "eigh_vectors", "matrix_norm", "qr_both", "qr_q", "svd_u",
                     "svd_u_only", "svd_uv_wide", "svd_vh_only", "vector_norm",
                     "vector_norm_3"})


@pytest.mark.allow_fallback("the dense decompositions run on the host on OpenCL")
@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients(backend: str, name: str) -> None:
    a = A + 3 * np.eye(4)
    with grad.fusion_enabled(False) if name in UNFUSED else contextlib.nullcontext():
        assert grad.gradcheck(GRAD_CASES[name], [_var(a)], eps=1e-6, atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize("fn", [la.inv, la.det, la.cholesky, la.eigh, la.slogdet,
                                la.eigvalsh, lambda x: la.matrix_power(x, 2)])
def test_non_square_raises(backend: str, fn) -> None:
    with pytest.raises(nna.ShapeError, match=r"\(2, 5, 3\)"):
        fn(_x(R))


@pytest.mark.parametrize("fn", [la.inv, la.det, la.svd, la.qr, la.vector_norm,
                                la.matrix_norm, la.svdvals, la.cholesky])
def test_integer_raises(backend: str, fn) -> None:
    with pytest.raises(nna.DTypeError, match="floating"):
        fn(_x(SPD, np.int64))


def test_named_results() -> None:
    assert la.EighResult._fields == ("eigenvalues", "eigenvectors")
    assert la.QRResult._fields == ("Q", "R")
    assert la.SlogdetResult._fields == ("sign", "logabsdet")
    assert la.SVDResult._fields == ("U", "S", "Vh")
    assert nna.linalg is la and len([n for n in la.__all__ if n[0].islower()]) == 23
