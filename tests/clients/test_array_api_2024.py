"""The Array API 2024.12 additions and the numpy-compatible extras (``einsum``, ``pad``):
numpy's results on every backend, on the array's device, and typed errors."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import A, check, ids, sample

import nnarray as nna
import nnarray.functions as F
from nnarray import grad


def test_cumulative_prod_gradient_with_zeros(backend):
    """Exact where a line has one zero, several, or a zero first (no division by 0)."""
    x = np.array([[2.0, 0.0, 3.0, 4.0], [0.0, 2.0, 0.0, 5.0], [1.5, -2.0, 0.5, 3.0]])
    g = np.arange(1.0, 13.0).reshape(3, 4)
    v = grad.Variable.from_numpy_array(x, need_grad=True)
    with grad.auto_forward():
        y = F.cumulative_prod(v, axis=1)
    y.backward(nna.array(g))
    want = np.zeros_like(x)
    for r in range(3):
        for i in range(4):
            for j in range(i, 4):
                want[r, i] += g[r, j] * np.prod(np.delete(x[r, :j + 1], i))
    np.testing.assert_allclose(v.grad.numpy(), want, rtol=1e-12)


def test_count_nonzero(backend):
    a = np.array([[0, 1, 2], [0, 0, 3]], np.int16)
    check(nna.count_nonzero(A(a)), np.count_nonzero(a))
    check(nna.count_nonzero(A(a), axis=1, keepdims=True),
          np.count_nonzero(a, axis=1, keepdims=True))
    assert nna.count_nonzero(A(a), axis=0).dtype == np.int64


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_], ids=ids)
def test_diff(backend, dtype):
    a = sample((3, 5), dtype, -3, 3)
    check(nna.diff(A(a)), np.diff(a))
    check(nna.diff(A(a), axis=0, n=2), np.diff(a, 2, axis=0))
    p = a[:, :1]
    check(nna.diff(A(a), prepend=A(p), append=A(p)), np.diff(a, prepend=p, append=p))
    check(nna.diff(A(a), n=0), a)
    with pytest.raises(ValueError, match="diff: argument 'n'"):
        nna.diff(A(a), n=-1)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64], ids=ids)
def test_nextafter(backend, dtype):
    x = np.array([1, 0, -0.0, -1, np.inf, np.nan, 3, 65504], dtype)
    y = np.array([2, -1, 1, 0, 0, 1, 3, np.inf], dtype)
    with np.errstate(over="ignore"):  # 65504 -> inf in float16
        got = nna.nextafter(A(x), A(y))
        want = np.nextafter(x, y)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.numpy(), want)


def test_reciprocal(backend):
    a = sample((2, 3), np.float32, 0.5, 2)
    check(nna.reciprocal(A(a)), 1 / a)
    assert nna.reciprocal(A(a)).dtype == np.float32


def test_take_along_axis(backend):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    for axis, shape in ((2, (3, 4, 2)), (1, (1, 6, 5)), (0, (2, 4, 1))):
        i = rng.integers(-a.shape[axis], a.shape[axis], shape)
        got = nna.take_along_axis(A(a), A(i), axis=axis)
        want = np.take_along_axis(a, np.where(i < 0, i + a.shape[axis], i), axis)
        check(got, np.broadcast_to(want, got.shape))
        assert got.device.backend == backend
    with pytest.raises(IndexError, match="take_along_axis: index 5 is out of bounds"):
        nna.take_along_axis(A(a), A(np.array([[[5]]])), axis=2)
    with pytest.raises(ValueError, match="same number"):
        nna.take_along_axis(A(a), A(np.array([0])), axis=0)
    with pytest.raises(nna.DTypeError):
        nna.take_along_axis(A(a), A(np.zeros((1, 1, 1), np.float32)), axis=0)


EINSUM = ["ijk,kl->ijl", "ijk->", "ii->i", "ii", "ij,jk", "...k,kl->...l", "bij,bjk->bik",
          "ijk,ijk->ij", "i,j->ij", "ij->ji", "i,i", "ij,jk,kl->il", "bii->bi"]


@pytest.mark.parametrize("subscripts", EINSUM)
def test_einsum(backend, subscripts):
    rng = np.random.default_rng(1)
    sizes = {"i": 3, "j": 4, "k": 5, "l": 2, "b": 2}
    ins = subscripts.split("->")[0].split(",")
    ops = []
    for t in ins:
        shape = [sizes[c] for c in t.replace("...", "")]
        if "..." in t:
            shape = [2, 3] + shape
        if t == "bii":
            shape = [2, 3, 3]
        if t == "ii":
            shape = [3, 3]
        ops.append(rng.standard_normal(shape).astype(np.float32))
    got = nna.einsum(subscripts, *[A(o) for o in ops])
    np.testing.assert_allclose(got.numpy(), np.einsum(subscripts, *ops), rtol=1e-4, atol=1e-4)
    assert got.device.backend == backend


def test_einsum_errors(backend):
    x = A(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="einsum: 1 operand subscripts for 2 operands"):
        nna.einsum("ij", x, x)
    with pytest.raises(ValueError, match="label 'j' has sizes 3 and 2"):
        nna.einsum("ij,jk", x, x)
    with pytest.raises(ValueError, match="output labels"):
        nna.einsum("ij->iz", x)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
@pytest.mark.parametrize("width", [1, (1, 2), ((0, 1), (2, 0), (1, 3))])
def test_pad(backend, mode, width):
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    kw = {"constant_values": 7} if mode == "constant" else {}
    got = nna.pad(A(a), width, mode, **kw)
    check(got, np.pad(a, width, mode, **kw))
    assert got.device.backend == backend


def test_pad_errors():
    x = A(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="pad: mode 'wrap' is not supported"):
        nna.pad(x, 1, "wrap")
    with pytest.raises(ValueError, match="reflect widths"):
        nna.pad(x, 2, "reflect")
    with pytest.raises(ValueError, match="must be >= 0"):
        nna.pad(x, -1)


def test_api_version_2024_12():
    x = nna.asarray([1.0])
    assert x.__array_namespace__(api_version="2024.12") is nna
    assert nna.__array_api_version__ == "2023.12"  # the default revision stays
    # 'max dimensions' is 2024.12's key: reported for that revision only
    assert nna.__array_namespace_info__(api_version="2024.12").capabilities()[
        "max dimensions"] is None
    assert "max dimensions" not in nna.__array_namespace_info__().capabilities()
    with pytest.raises(ValueError):
        x.__array_namespace__(api_version="2099.12")
