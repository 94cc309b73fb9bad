"""FFTs: a 1-D complex64 transform of 2^20 points (and of 10^6, a size with radices 4 and
5) and a batched 2-D real transform of 64 x 256 x 256 float32."""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna

from .conftest import expect, measure, small


def _signal(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)


def _batch(benchmark) -> np.ndarray:
    b = 4 if small(benchmark) else 64
    return np.random.default_rng(1).standard_normal((b, 256, 256), dtype=np.float32)


def _fft_check(xs: np.ndarray):
    want = np.fft.fft(xs.astype(np.complex128))
    return expect(want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("n", [2**20, 10**6], ids=["2^20", "10^6"])
def test_fft_nnarray(benchmark, backend, n):
    benchmark.group = f"fft {'2^20' if n == 2**20 else '10^6'} c64"
    xs = _signal(n // 64 if small(benchmark) else n)
    x = nna.asarray(xs)
    measure(benchmark, backend, lambda: nna.fft.fft(x), check=_fft_check(xs))


@pytest.mark.parametrize("n", [2**20, 10**6], ids=["2^20", "10^6"])
def test_fft_reference(benchmark, ref, n):
    benchmark.group = f"fft {'2^20' if n == 2**20 else '10^6'} c64"
    xs = _signal(n // 64 if small(benchmark) else n)
    x = ref.asarray(xs)
    measure(benchmark, ref, lambda: ref.xp.fft.fft(x), baseline=ref.name == "numpy",
            check=_fft_check(xs))


def _rfft2_check(xs: np.ndarray):
    want = np.fft.rfft2(xs.astype(np.float64))
    return expect(want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.benchmark(group="rfft2 64x256x256 f32")
def test_rfft2_nnarray(benchmark, backend):
    xs = _batch(benchmark)
    x = nna.asarray(xs)
    measure(benchmark, backend, lambda: nna.fft.rfftn(x, axes=(1, 2)), check=_rfft2_check(xs))


@pytest.mark.benchmark(group="rfft2 64x256x256 f32")
def test_rfft2_reference(benchmark, ref):
    xs = _batch(benchmark)
    x = ref.asarray(xs)
    measure(benchmark, ref, lambda: ref.xp.fft.rfft2(x), baseline=ref.name == "numpy",
            check=_rfft2_check(xs))
