"""Shared fixtures: every test that takes ``backend`` runs on every registered backend,
skipping with the reason where one is unavailable (no fake devices)."""

from __future__ import annotations

import os

os.environ.setdefault("NNARRAY_DEBUG", "1")  # kernels' outputs are checked against specs

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import nnarray as nna  # noqa: E402

BACKENDS = nna.backends.registered()

#: Tolerances per dtype for comparing a backend's float results with numpy's, in one place.
TOL = {np.dtype(np.float16): (1e-2, 1e-2), np.dtype(np.float32): (1e-5, 1e-4),
       np.dtype(np.float64): (1e-10, 1e-8)}


def tol(dtype) -> dict:
    """``assert_allclose`` keyword arguments for ``dtype``."""
    rtol, atol = TOL.get(np.dtype(dtype), (0, 0))
    return {"rtol": rtol, "atol": atol}


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    reason = nna.backends.why_unavailable(request.param)
    if reason is not None:
        pytest.skip(f"{request.param} unavailable: {reason}")
    with nna.context_scope(request.param):
        yield request.param


@pytest.fixture(autouse=True)
def _reset_counters():
    nna.reset_transfer_stats()
    nna.reset_fallback_stats()
    yield


@pytest.fixture
def no_fallback():
    """Fail a test whose ops fell back to another backend: it would not test its own."""
    yield
    fb = nna.fallback_stats()
    assert not fb, f"ops fell back to another backend (op, from, to): {fb}"
