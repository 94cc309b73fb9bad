"""Complex elementwise: ``multiply``, ``divide``, ``abs``, ``sign``, ``exp``, ``log``, ``sqrt``,
``sin``, ``tanh`` of 2^20 complex64 values, beside the same function of 2^21 float32 values (the
same number of floats: the ``float32 2^21`` variant row of each backend). numpy's complex64
ufunc is the baseline.

The target (issue 27): each complex row within 2x of its backend's float row. ``exp`` and
``tanh`` contain a ``sin`` and a ``cos`` of the imaginary part (one exact argument reduction,
``sincos``, on OpenCL CPU devices), so they compare with the float ``sin`` row rather than
``exp``.
"""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna

from .conftest import expect, measure, small

FUNCS = ["multiply", "divide", "abs", "sign", "exp", "log", "sqrt", "sin", "tanh"]
_BINARY = {"multiply", "divide"}


def _group(name: str) -> str:
    return f"complex {name} 2^20 c64"


def _n(benchmark) -> int:
    return 1 << 12 if small(benchmark) else 1 << 20


def _complex(n: int, k: int) -> list[np.ndarray]:
    rng = np.random.default_rng(k)
    return [(rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
            for _ in range(2)]


def _floats(n: int) -> list[np.ndarray]:
    """Positive floats (``log`` and ``sqrt`` stay real)."""
    rng = np.random.default_rng(2)
    return [(np.abs(rng.standard_normal(n)) + 0.1).astype(np.float32) for _ in range(2)]


def _check(name: str, xs: list[np.ndarray]):
    args = [x.astype(np.complex128 if x.dtype.kind == "c" else np.float64) for x in xs]
    want = getattr(np, name)(*args[:2 if name in _BINARY else 1])
    return expect(want, rtol=1e-4, atol=1e-5 * float(np.abs(want).max()))


def _run(benchmark, impl, name: str, xs: list[np.ndarray], asarray, fn, **kw):
    args = [asarray(x) for x in xs[:2 if name in _BINARY else 1]]
    measure(benchmark, impl, lambda: fn(*args), check=_check(name, xs), **kw)


@pytest.mark.parametrize("name", FUNCS)
def test_complex_nnarray(benchmark, backend, name):
    benchmark.group = _group(name)
    _run(benchmark, backend, name, _complex(_n(benchmark), 0), nna.asarray, getattr(nna, name))


@pytest.mark.parametrize("name", FUNCS)
def test_complex_float_work(benchmark, backend, name):
    """The same function of twice as many float32 values: the per-element yardstick."""
    benchmark.group = _group(name)
    _run(benchmark, backend, name, _floats(2 * _n(benchmark)), nna.asarray, getattr(nna, name),
         variant="float32 2^21")


@pytest.mark.parametrize("name", FUNCS)
def test_complex_reference(benchmark, ref, name):
    if ref.name != "numpy":
        pytest.skip("numpy is this group's reference")
    benchmark.group = _group(name)
    _run(benchmark, ref, name, _complex(_n(benchmark), 0), np.asarray, getattr(np, name),
         baseline=True)
