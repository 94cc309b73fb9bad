"""Double backward of the complex ops (parts, magnitude, angle, complex products and
functions) and the FFTs: ``gradgradcheck`` in float64/complex128 on every backend and
torch's second derivatives (``tests/double_backward.py``; a complex input's gradient is
``d/d(real) + i d/d(imag)`` of a real loss, as in torch)."""

from __future__ import annotations

from double_backward import family_tests

import nnarray as nna
import nnarray.functions as F

fft = nna.fft

#: name -> (function of Variables, [(shape, domain)]), small float64/complex128 inputs.
CASES: dict = {
    "make_complex_abs": (lambda a, b: F.complex_abs(F.make_complex(a, b) * F.make_complex(b, a)),
                         [((2, 3), "any"), ((2, 3), "away")]),
    "make_complex_cube": (lambda a, b: F.real(F.make_complex(a, b) ** 3),
                          [((2, 3), "any"), ((2, 3), "any")]),
    "parts": (lambda z: F.real(z * z) + F.imag(F.conj(z) * z * z) + F.angle(z),
              [((2, 3), "cplx")]),
    "imag_conj": (lambda z: F.imag(F.conj(z) * z * z), [((2, 3), "cplx")]),
    "complex_abs": (lambda z: F.complex_abs(z * z), [((2, 3), "cplx")]),
    "angle": (lambda z: F.angle(z * z), [((2, 3), "cplx")]),
    "exp_sin": (lambda z: F.exp(z) * F.sin(z), [((2, 3), "cplx")]),
    "matmul": (lambda a, b: F.matmul(a, b * b), [((2, 3), "cplx"), ((3, 2), "cplx")]),
    # fft
    "fft": (lambda z: fft.fft(z * z), [((2, 4), "cplx")]),
    "ifft": (lambda z: fft.ifft(z * z, n=5), [((2, 4), "cplx")]),
    "fftn_ortho": (lambda z: fft.fftn(z * z, norm="ortho"), [((2, 3), "cplx")]),
    "ifftn": (lambda z: fft.ifftn(z * z), [((2, 3), "cplx")]),
    "rfft": (lambda x: fft.rfft(x * x), [((2, 6), "any")]),
    "irfft": (lambda z: fft.irfft(z * z, n=6), [((2, 4), "cplx")]),
    "rfftn": (lambda x: fft.rfftn(x * x), [((2, 4), "any")]),
    "irfftn": (lambda z: fft.irfftn(z * z, s=(2, 4)), [((2, 3), "cplx")]),
    "hfft": (lambda z: fft.hfft(z * z, n=4), [((2, 3), "cplx")]),
    "ihfft": (lambda x: fft.ihfft(x * x), [((2, 4), "any")]),
    "fftshift": (lambda x: fft.fftshift(x * x) + fft.ifftshift(x), [((2, 3), "any")]),
}

#: name -> ``(torch, *tensors) -> tensor``: torch's counterpart of each case.
TORCH: dict = {
    "make_complex_abs": lambda t, a, b: t.abs(t.complex(a, b) * t.complex(b, a)),
    "make_complex_cube": lambda t, a, b: t.real(t.complex(a, b) ** 3),
    "parts": lambda t, z: t.real(z * z) + t.imag(t.conj(z) * z * z) + t.angle(z),
    "imag_conj": lambda t, z: t.imag(t.conj(z) * z * z),
    "complex_abs": lambda t, z: t.abs(z * z),
    "angle": lambda t, z: t.angle(z * z),
    "exp_sin": lambda t, z: t.exp(z) * t.sin(z),
    "matmul": lambda t, a, b: a @ (b * b),
    "fft": lambda t, z: t.fft.fft(z * z),
    "ifft": lambda t, z: t.fft.ifft(z * z, n=5),
    "fftn_ortho": lambda t, z: t.fft.fftn(z * z, norm="ortho"),
    "ifftn": lambda t, z: t.fft.ifftn(z * z),
    "rfft": lambda t, x: t.fft.rfft(x * x),
    "irfft": lambda t, z: t.fft.irfft(z * z, n=6),
    "rfftn": lambda t, x: t.fft.rfftn(x * x),
    "irfftn": lambda t, z: t.fft.irfftn(z * z, s=(2, 4)),
    "hfft": lambda t, z: t.fft.hfft(z * z, n=4),
    "ihfft": lambda t, x: t.fft.ihfft(x * x),
    "fftshift": lambda t, x: t.fft.fftshift(x * x) + t.fft.ifftshift(x),
}


test_gradgradcheck, test_second_derivatives_match_torch = family_tests(CASES, TORCH)
