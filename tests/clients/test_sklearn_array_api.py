"""scikit-learn's own array-API tests pass with nnarray as a namespace (issue 23): a fast,
representative subset (sklearn's array-API helpers, clustering metrics, PCA) run through
``tests/clients/plugin.py`` on every available context, in one child pytest (one
sklearn import and collection). The full run is documented in tests/clients/README.md."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("array_api_strict")

import nnarray as nna  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MODULES = ("sklearn.utils.tests.test_array_api", "sklearn.metrics.cluster.tests.test_common",
           "sklearn.decomposition.tests.test_pca")
_LINE = re.compile(r"^(.*::.+) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)( |$)")


def _available() -> list[str]:
    return [b for b in nna.backends.registered() if nna.backends.why_unavailable(b) is None]


@pytest.fixture(scope="module")
def sklearn_run() -> dict[str, str]:
    """Each nnarray test id of the subset mapped to its outcome, for every available
    context, from one child pytest."""
    env = dict(os.environ, SCIPY_ARRAY_API="1", OPENBLAS_NUM_THREADS="1",
               NNARRAY_CLIENT_DEVICE=",".join(_available()))
    cmd = [sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "tests.clients.plugin",
           "-p", "no:cacheprovider", "-v", "--tb=short", "-W", "ignore", "--pyargs", *MODULES,
           "-k", "array_api and nnarray"]
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    out = {m.group(1): m.group(2) for m in map(_LINE.match, p.stdout.splitlines()) if m}
    assert out, f"no sklearn test ran (rc {p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-2000:]}"
    out["__log__"] = p.stdout
    return out


def test_sklearn_array_api_subset(backend, sklearn_run):
    """On ``backend``'s context, sklearn's array-API tests of the subset ran and none failed
    (complex dtypes, which nnarray lacks, skip with that reason)."""
    mine = {t: s for t, s in sklearn_run.items() if f"nnarray-{backend}-" in t}
    assert len(mine) > 100, f"only {len(mine)} sklearn tests ran on nnarray-{backend}"
    bad = sorted(t for t, s in mine.items() if s in ("FAILED", "ERROR"))
    assert not bad, f"{len(bad)} failed on nnarray-{backend}: {bad[:10]}\n" + \
        sklearn_run["__log__"][-6000:]
    skipped = [t for t, s in mine.items() if s == "SKIPPED"]
    assert all("average_raises_with_wrong_dtype" in t for t in skipped), skipped  # complex
