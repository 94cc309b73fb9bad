"""nnarray.fft against numpy's pocketfft on every backend, and its gradients (numerical,
``d/dx sum |fft(x)|^2 = 2 n x`` and torch's)."""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray.errors import DTypeError, ShapeError
from nnarray.grad import Variable, gradcheck, modes

_RNG = np.random.default_rng(1)


def _cplx(shape, dtype=np.complex128):
    return (_RNG.standard_normal(shape) + 1j * _RNG.standard_normal(shape)).astype(dtype)


@pytest.mark.parametrize("n", [1, 2, 8, 12, 17, 30, 49, 97, 1000, 1024])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_fft_sizes(backend, n, dtype):
    x = _cplx((3, n), dtype)
    tol = 2e-5 if dtype == np.complex64 else 1e-12
    for name in ("fft", "ifft"):
        for norm in ("backward", "ortho", "forward"):
            got = getattr(nna.fft, name)(nna.asarray(x), norm=norm)
            assert got.dtype == dtype and got.device.backend == backend
            want = getattr(np.fft, name)(x, norm=norm)
            err = np.abs(np.asarray(got) - want).max() / np.abs(want).max()
            assert err < tol, (name, norm, err)


@pytest.mark.parametrize("n", [2, 8, 12, 30, 34, 7, 17, 1000])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_real_transforms_sizes(backend, n, dtype):
    """rfft/irfft of even n (OpenCL: half-length complex transforms plus a twiddle pass;
    34 = 2 * 17 takes Bluestein at the half length) and odd n, every norm, along the last
    axis and along the first."""
    tol = 2e-5 if dtype == np.complex64 else 1e-12
    rdt = np.float32 if dtype == np.complex64 else np.float64
    x = _RNG.standard_normal((3, n)).astype(rdt)
    spec = _cplx((3, n // 2 + 1), dtype)
    for norm in ("backward", "ortho", "forward"):
        for axis, xs, ss in ((-1, x, spec), (0, x.T.copy(), spec.T.copy())):
            cases = ((nna.fft.rfft, np.fft.rfft, xs, {}),
                     (nna.fft.irfft, np.fft.irfft, ss, {"n": n}))
            for mine, ref, a, kw in cases:
                got = mine(nna.asarray(a), axis=axis, norm=norm, **kw)
                assert got.device.backend == backend
                want = ref(a.astype(np.result_type(a.dtype, np.float64)), axis=axis, norm=norm,
                           **kw)
                err = np.abs(np.asarray(got) - want).max() / np.abs(want).max()
                assert err < tol, (mine.__name__, norm, axis, err)


_CASES = {
    "fft_axis0": lambda m, a: m.fft(a, n=5, axis=0),
    "fftn_s": lambda m, a: m.fftn(a, s=(5, 12), axes=(0, 2)),
    "ifftn": lambda m, a: m.ifftn(a, axes=(1, 0), norm="ortho"),
    "rfft": lambda m, a: m.rfft(a, n=7, axis=1),
    "rfftn": lambda m, a: m.rfftn(a),
    "rfft_last_even": lambda m, a: m.rfft(a, norm="ortho"),  # OpenCL: the half-size path
    "rfft_last_odd": lambda m, a: m.rfft(a, n=9, norm="forward"),
    "irfft": lambda m, a: m.irfft(m.rfft(a), n=9, axis=-1),
    "irfftn": lambda m, a: m.irfftn(m.rfftn(a), s=(6, 10), axes=(1, 2)),
    "irfftn_axes": lambda m, a: m.irfftn(m.rfftn(a, axes=(0, 1)), axes=(0, 1)),
    "hfft": lambda m, a: m.hfft(m.ifft(a), n=11),
    "ihfft": lambda m, a: m.ihfft(a, axis=0, norm="forward"),
    "fftshift": lambda m, a: m.fftshift(a),
    "ifftshift": lambda m, a: m.ifftshift(a, axes=(1,)),
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_functions_match_numpy(backend, case):
    x = _RNG.standard_normal((4, 6, 10))
    got = _CASES[case](nna.fft, nna.asarray(x))
    want = _CASES[case](np.fft, x)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert got.device.backend == backend
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-10)


def test_freqs(backend):
    np.testing.assert_allclose(np.asarray(nna.fft.fftfreq(8, d=0.5)), np.fft.fftfreq(8, 0.5))
    f = nna.fft.rfftfreq(9, dtype=nna.float64)
    assert f.dtype == nna.float64
    np.testing.assert_allclose(np.asarray(f), np.fft.rfftfreq(9))


def test_bad_input():
    x = nna.asarray(_cplx((4,)))
    with pytest.raises(ValueError, match="norm"):
        nna.fft.fft(x, norm="bogus")
    with pytest.raises(ShapeError, match="axis"):
        nna.fft.fft(x, axis=3)
    with pytest.raises(ValueError, match="length"):
        nna.fft.fft(x, n=0)
    with pytest.raises(DTypeError):
        nna.fft.rfft(x)


def test_power_gradient_is_2nx(backend):
    n = 16
    x = _RNG.standard_normal(n)
    v = Variable((n,), need_grad=True, dtype=np.float64)
    v.d = x
    with modes.auto_forward():
        y = nna.fft.fft(v)
        loss = F.sum(F.add(F.mul(F.real(y), F.real(y)), F.mul(F.imag(y), F.imag(y))))
        loss.backward()
    np.testing.assert_allclose(v.grad.numpy(), 2 * n * x, rtol=1e-12)


_GRADS = {
    "fft": (True, lambda a: nna.fft.fft(a, norm="ortho")),
    "ifftn": (True, lambda a: nna.fft.ifftn(a, s=(4, 7))),
    "irfft": (True, lambda a: nna.fft.irfft(a, n=9)),
    "irfftn": (True, lambda a: nna.fft.irfftn(a, s=(3, 8), axes=(0, 1))),
    "hfft": (True, lambda a: nna.fft.hfft(a, n=10, norm="forward")),
    "rfft": (False, lambda a: nna.fft.rfft(a, n=8)),
    "rfftn": (False, lambda a: nna.fft.rfftn(a, norm="ortho")),
    "ihfft": (False, lambda a: nna.fft.ihfft(a)),
    "fft_of_real": (False, lambda a: nna.fft.fft(a, n=5)),
}


@pytest.mark.parametrize("case", sorted(_GRADS))
def test_gradcheck(backend, case):
    complex_in, fn = _GRADS[case]
    a = Variable((3, 6), need_grad=True, dtype=np.complex128 if complex_in else np.float64)
    a.d = _cplx((3, 6)) if complex_in else _RNG.standard_normal((3, 6))
    assert gradcheck(fn, [a], eps=1e-6, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("case", ["fft", "irfft", "hfft", "rfft", "ihfft"])
def test_gradients_match_torch(backend, case):
    torch = pytest.importorskip("torch")
    complex_in, fn = _GRADS[case]
    x = _cplx((3, 6)) if complex_in else _RNG.standard_normal((3, 6))
    a = Variable((3, 6), need_grad=True, dtype=x.dtype)
    a.d = x
    w = _cplx(np.asarray(fn(nna.asarray(x))).shape)
    tfn = {"fft": lambda t: torch.fft.fft(t, norm="ortho"),
           "irfft": lambda t: torch.fft.irfft(t, n=9),
           "hfft": lambda t: torch.fft.hfft(t, n=10, norm="forward"),
           "rfft": lambda t: torch.fft.rfft(t, n=8), "ihfft": torch.fft.ihfft}[case]
    t = torch.tensor(x, requires_grad=True)
    ty = tfn(t)
    tw = torch.tensor(w if ty.is_complex() else w.real)
    (ty.real * tw.real + (ty.imag * tw.imag if ty.is_complex() else 0)).sum().backward()
    with modes.auto_forward():
        y = fn(a)
        y.backward(w if y.dtype.kind == "c" else w.real)
    np.testing.assert_allclose(a.grad.numpy(), t.grad.resolve_conj().numpy(), rtol=1e-10,
                               atol=1e-12)
