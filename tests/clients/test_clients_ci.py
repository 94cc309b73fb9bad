"""SciPy's and scikit-learn's own array-API tests pass on nnarray (issues 23 and 43): a
fixed, fast subset run through ``tests/clients/plugin.py``, one child pytest per suite
serving every available backend (SciPy reads ``SCIPY_ARRAY_API`` once, at import, so the
suites cannot run in this process). A failure not listed in
``tests/clients/expected_failures.txt`` fails the child, and so this test.

The child runs nnarray's tests only (``NNARRAY_CLIENT_ONLY``) and, of each test
function's parametrizations on each backend, those that take every parameter value once
(``NNARRAY_CLIENT_EACH``): every test function of the subset still runs on every backend
with each of its values, without the cross products. Measured with
``NNARRAY_CLIENT_CALLS`` (tests/clients/README.md), that subset reaches the same nnarray
names on each backend as the full cross products did. The full runs are in
tests/clients/README.md."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
from conftest import BACKENDS, REQUIRED

import nnarray as nna

pytest.importorskip("scipy")
pytest.importorskip("sklearn")
pytest.importorskip("array_api_strict")

ROOT = Path(__file__).resolve().parents[2]


class Subset(NamedTuple):
    args: list[str]  #: the child's pytest arguments
    fewest: int  #: the fewest nnarray tests that must pass on each backend
    skips: str | None = None  #: a regex every skipped nnarray test must match (None: any)


#: SciPy test functions of the subset that skip every nnarray case (on any device): the
#: hypothesis one unless SCIPY_XSLOW, the others "output=dtype is numpy-specific" (``-k``
#: matches substrings: ``name[`` names the function alone)
_SCIPY_ALWAYS_SKIPPED = (
    "test_support_alternative_backends_hypothesis", "test_correlate13", "test_correlate15",
    "test_correlate16", "test_correlate18", "test_correlate19", "test_uniform06",
    "test_correlate_complex_kernel", "test_correlate_complex_kernel_cval",
    "test_correlate1d_complex_kernel", "test_correlate1d_complex_kernel_cval",
    "test_correlate_complex_input", "test_correlate1d_complex_input",
    "test_correlate1d_complex_input_cval", "test_correlate_complex_input_and_kernel",
    "test_correlate_complex_input_and_kernel_cval",
    "test_correlate1d_complex_input_and_kernel",
    "test_correlate1d_complex_input_and_kernel_cval", "test_uniform06_complex")

SUBSETS = {
    # scipy.special's dispatch of every function it supports, a slice of scipy.ndimage's
    # filters, and scipy.stats' device and dtype propagation. Passed per backend: numpy
    # 460, OpenCL 329 (of 491 each: a few of SciPy's own skips, and on OpenCL ndimage's
    # listed read-only class).
    "scipy": Subset([
        "--pyargs", "scipy.special.tests.test_support_alternative_backends",
        "scipy.ndimage.tests.test_filters", "scipy.stats.tests.test_device_dtype", "-m",
        "array_api_backends", "-k", "nnarray and (test_support_alternative_backends or "
        "TestThreading or gaussian or uniform or correlate or test_device_dtype) and not ("
        + " or ".join(f"{name}[" for name in _SCIPY_ALWAYS_SKIPPED) + ")"], 300),
    # sklearn.metrics' common tests, sklearn.preprocessing's label tests, sklearn's
    # array-API helpers, the clustering metrics and PCA. Passed per backend: numpy 210,
    # OpenCL 244 (and 3 listed); nothing skips (complex dtypes were the one reason).
    "sklearn": Subset([
        "--pyargs", "sklearn.metrics.tests.test_common",
        "sklearn.preprocessing.tests.test_label", "sklearn.utils.tests.test_array_api",
        "sklearn.metrics.cluster.tests.test_common", "sklearn.decomposition.tests.test_pca",
        "-k", "array_api and nnarray"], 190, skips="average_raises_with_wrong_dtype"),
}


def _devices() -> list[str]:
    """Every backend available here; one that ``NNARRAY_REQUIRE_BACKENDS`` requires but
    is unavailable fails the test (as the ``backend`` fixture does)."""
    why = {b: nna.backends.why_unavailable(b) for b in BACKENDS}
    missing = {b: why[b] for b in REQUIRED if why[b] is not None}
    if missing:
        pytest.fail(f"required by NNARRAY_REQUIRE_BACKENDS but unavailable: {missing}",
                    pytrace=False)
    return [b for b in BACKENDS if why[b] is None]


@pytest.mark.parametrize("suite", list(SUBSETS))
def test_client_suite_subset(suite, tmp_path):
    """On every available backend, the subset ran (enough nnarray tests passed on each),
    none failed unlisted, and only the expected ones skipped."""
    subset, devices = SUBSETS[suite], _devices()
    report = tmp_path / "report.json"
    env = dict(os.environ, NNARRAY_CLIENT_DEVICE=",".join(devices), NNARRAY_CLIENT_ONLY="1",
               NNARRAY_CLIENT_EACH="1", NNARRAY_CLIENT_REPORT=str(report),
               OPENBLAS_NUM_THREADS="1", SCIPY_ARRAY_API="1")
    cmd = [sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "tests.clients.plugin",
           "-p", "no:cacheprovider", "-q", "-W", "ignore", "--tb=line", *subset.args]
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    log = f"(rc {p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-2000:]}"
    assert report.exists(), f"no nnarray report {log}"
    r = json.loads(report.read_text())
    bad = [f"{t}: {r['messages'].get(t, '')}" for t, o in r["outcomes"].items()
           if o in ("failed", "error")]
    assert p.returncode == 0 and not bad, \
        f"{suite}: failures not in expected_failures.txt:\n" + "\n".join(bad) + log
    for d in devices:
        assert r["counts"].get(d, {}).get("passed", 0) >= subset.fewest, (d, r["counts"])
    if subset.skips is not None:
        skipped = [t for t, o in r["outcomes"].items() if o == "skipped"]
        assert all(re.search(subset.skips, t) for t in skipped), skipped
