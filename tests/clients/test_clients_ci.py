"""SciPy's and scikit-learn's own array-API tests pass on nnarray (issue 43): a fixed, fast
subset run through ``tests/clients/plugin.py`` in a child pytest per suite and backend
(SciPy reads ``SCIPY_ARRAY_API`` once, at import). A failure not listed in
``tests/clients/expected_failures.txt`` fails the child, and so this test. The full runs
are in tests/clients/README.md."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("scipy")
pytest.importorskip("sklearn")

ROOT = Path(__file__).resolve().parents[2]

#: suite -> (pytest arguments, the fewest nnarray tests that must pass per backend)
SUBSETS = {
    "scipy": ([
        "--pyargs", "scipy.special.tests.test_support_alternative_backends",
        "scipy.ndimage.tests.test_filters", "scipy.stats.tests.test_device_dtype", "-m",
        "array_api_backends", "-k", "nnarray and (test_support_alternative_backends or "
        "TestThreading or gaussian or uniform or correlate or test_device_dtype)"], 1000),
    "sklearn": ([
        "--pyargs", "sklearn.metrics.tests.test_common",
        "sklearn.preprocessing.tests.test_label", "-k", "array_api and nnarray"], 150),
}
_SUMMARY = re.compile(r"^nnarray on (\w+): (.*)$", re.M)


@pytest.mark.parametrize("suite", list(SUBSETS))
def test_client_suite_subset(backend, suite):
    """The subset ran on ``backend`` (enough nnarray tests passed) and every failure is
    listed with its reason."""
    args, fewest = SUBSETS[suite]
    env = dict(os.environ, NNARRAY_CLIENT_DEVICE=backend, OPENBLAS_NUM_THREADS="1",
               SCIPY_ARRAY_API="1")
    cmd = [sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "tests.clients.plugin",
           "-p", "no:cacheprovider", "-q", "-W", "ignore", "--tb=line", *args]
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    m = _SUMMARY.search(p.stdout)
    assert m, f"no nnarray summary (rc {p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-2000:]}"
    counts = {o: int(n) for n, o in re.findall(r"(\d+) (\w+)", m.group(2))}
    failures = "\n".join(line for line in p.stdout.splitlines() if line.startswith("FAILED"))
    assert p.returncode == 0 and not counts.get("failed") and not counts.get("error"), \
        f"{suite} on {backend}: failures not in expected_failures.txt:\n{failures}\n" \
        f"{p.stdout[-3000:]}"
    assert counts.get("passed", 0) >= fewest, counts
