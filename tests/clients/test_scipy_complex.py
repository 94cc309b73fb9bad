"""SciPy's signal and fft functions that need complex numbers (issue 27) give numpy's values
on NdArrays, as NdArrays on the data's device. ``SCIPY_ARRAY_API=1`` must be set before SciPy
is imported, so the calls run in a child process: one for numpy's values (the reference) and
every available backend's, with the same SciPy."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import available, run_json_child

import nnarray as nna

pytest.importorskip("scipy")

_CHILD = r"""
import json, os, sys, warnings
os.environ["SCIPY_ARRAY_API"] = "1"
warnings.simplefilter("ignore")
import numpy as np
import nnarray as nna
from scipy import fft as sfft, signal

rng = np.random.default_rng(0)
a, b = rng.standard_normal(64), rng.standard_normal(9)
cases = {
    "fftconvolve": lambda x, k, period: signal.fftconvolve(x, k),
    "oaconvolve": lambda x, k, period: signal.oaconvolve(x, k),
    "resample": lambda x, k, period: signal.resample(x, 40),
    "hilbert": lambda x, k, period: signal.hilbert(x),
    "envelope": lambda x, k, period: signal.envelope(x),
    "freqz": lambda x, k, period: signal.freqz(k, worN=16)[1],
    # the period as a float64 array: a Python float makes a float32 array in nnarray
    "vectorstrength": lambda x, k, period: signal.vectorstrength(x[20:40], period(2.0)),
    "fft.fft": lambda x, k, period: sfft.fft(x),
    "fft.rfft": lambda x, k, period: sfft.rfft(x),
}


def run(where):
    # each case's values (real and imaginary parts) and results' devices, on numpy's
    # arrays (where == "reference") or on NdArrays on where
    X, K = (a, b) if where == "reference" else (nna.asarray(a, device=where),
                                                nna.asarray(b, device=where))
    period = (lambda v: np.asarray(v)) if where == "reference" else (
        lambda v: nna.asarray(v, dtype=nna.float64, device=where))
    out = {}
    for name, f in cases.items():
        r = f(X, K, period)
        rs = r if isinstance(r, tuple) else (r,)
        devs = [str(v.device) if isinstance(v, nna.NdArray) else None for v in rs]
        vals = [np.asarray(v.numpy() if isinstance(v, nna.NdArray) else v,
                           dtype=np.complex128) for v in rs]
        out[name] = [[[v.real.tolist(), v.imag.tolist()] for v in vals], devs]
    return out


print(json.dumps({"reference": run("reference"),
                  "got": {where: run(where) for where in sys.argv[1:]}}))
"""


@pytest.fixture(scope="module")
def runs() -> dict:
    """numpy's values and each available backend's, from one child."""
    return run_json_child(_CHILD, *available())


def test_scipy_complex_calls_run_on_ndarrays(backend, runs):
    reference, got = runs["reference"], runs["got"][backend]
    key = str(nna.Context.parse(backend))
    for name, (want, _) in reference.items():
        vals, devs = got[name]
        for v, w in zip(vals, want):
            v = np.asarray(v[0]) + 1j * np.asarray(v[1])
            w = np.asarray(w[0]) + 1j * np.asarray(w[1])
            np.testing.assert_allclose(v, w, rtol=1e-8, atol=1e-8 * np.abs(w).max(),
                                       err_msg=name)
        assert devs == [key] * len(devs), f"{name}: results on {devs}, data on {key}"
