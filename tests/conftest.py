"""Shared fixtures: every test that takes ``backend`` runs on every registered backend,
skipping with the reason where one is unavailable (no fake devices).

- ``NNARRAY_REQUIRE_BACKENDS=numpy,opencl`` (set by ``.ci/run``) turns that skip into a
  failure for the backends named: CI cannot pass having run no OpenCL test. Tests that
  need a backend without taking ``backend`` call ``needs(name)``.
- A test on a backend fails if any op fell back to another backend (it would not test
  the backend's own kernels); ``@pytest.mark.allow_fallback("why")`` opts out, with a
  reason. Tests that do not take ``backend`` can ask for the same check with the
  ``no_fallback`` fixture.
"""

from __future__ import annotations

import os

os.environ.setdefault("NNARRAY_DEBUG", "1")  # kernels' outputs are checked against specs
# pocl compiles each kernel twice without this: once generic (the binary nnarray caches on
# disk) and once specialized to the launch's local size. The tests build ~3,900 programs
# and launch each a few times, so the second compile is ~15% of a cold run and buys
# nothing; pocl's own setting, read per build (children inherit it).
os.environ.setdefault("POCL_WORK_GROUP_SPECIALIZATION", "0")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import nnarray as nna  # noqa: E402

BACKENDS = nna.backends.registered()

#: Backends that must run here (a missing one fails its tests instead of skipping them).
REQUIRED = tuple(b.strip() for b in os.environ.get("NNARRAY_REQUIRE_BACKENDS", "").split(",")
                 if b.strip())

#: Tolerances per dtype for comparing a backend's float results with numpy's, in one place.
TOL = {np.dtype(np.float16): (1e-2, 1e-2), np.dtype(np.float32): (1e-5, 1e-4),
       np.dtype(np.float64): (1e-10, 1e-8)}


def tol(dtype) -> dict:
    """``assert_allclose`` keyword arguments for ``dtype``."""
    rtol, atol = TOL.get(np.dtype(dtype), (0, 0))
    return {"rtol": rtol, "atol": atol}


def needs(name: str) -> None:
    """Skip the running test when backend ``name`` is unavailable, with the reason; fail
    instead when ``NNARRAY_REQUIRE_BACKENDS`` names it."""
    reason = nna.backends.why_unavailable(name)
    if reason is None:
        return
    if name in REQUIRED:
        pytest.fail(f"{name} unavailable but required by NNARRAY_REQUIRE_BACKENDS: {reason}",
                    pytrace=False)
    pytest.skip(f"{name} unavailable: {reason}")


def check_no_fallback(node) -> None:
    """Fail unless ``node`` is marked ``allow_fallback`` or no op fell back."""
    if node.get_closest_marker("allow_fallback") is not None:
        return
    fb = nna.fallback_stats()
    assert not fb, (f"ops fell back to another backend (op, from, to): {fb}; mark the test "
                    "@pytest.mark.allow_fallback('why') if that is intended")


def pytest_configure(config) -> None:
    # NNARRAY_DEBUG (set above) lets pyopencl's CompilerWarnings through for users who
    # debug kernels; in the test run they are noise (pocl's float16 ABI notes).
    config.addinivalue_line("filterwarnings", "ignore::UserWarning:pyopencl")
    config.addinivalue_line(
        "markers", "allow_fallback(reason): this test may fall back to another backend "
                   "(the default check fails a backend test whose ops fell back)")
    unknown = [b for b in REQUIRED if b not in BACKENDS]
    if unknown:
        raise pytest.UsageError(f"NNARRAY_REQUIRE_BACKENDS names {unknown}, not registered "
                                f"backends ({BACKENDS})")


def pytest_report_header(config) -> str:
    return f"nnarray backends: {BACKENDS}; required: {list(REQUIRED) or 'none'}"


def pytest_sessionstart(session) -> None:
    """Kernels compile inside tests, whose stderr pytest captures (so nnarray's own
    progress line is not seen): say up front when the OpenCL cache is cold (-q too)."""
    try:
        from nnarray.backends.opencl.programs import cache_dir
    except ImportError:  # no pyopencl
        return
    d = cache_dir()
    if d is not None and os.path.isdir(d) and any(os.scandir(d)):
        return
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.write_line(f"nnarray: the OpenCL kernel cache ({d or 'disabled'}) is empty: this "
                      "run compiles every kernel first (minutes on pocl; cached for later runs)")


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        m = item.get_closest_marker("allow_fallback")
        if m is not None and not (m.args and isinstance(m.args[0], str) and m.args[0]):
            raise pytest.UsageError(f"{item.nodeid}: allow_fallback needs a reason string")


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    needs(request.param)
    with nna.context_scope(request.param):
        yield request.param
    check_no_fallback(request.node)


@pytest.fixture(autouse=True)
def _reset_counters():
    nna.reset_transfer_stats()
    nna.reset_fallback_stats()
    yield


@pytest.fixture
def no_fallback(request):
    """Fail a test whose ops fell back to another backend: it would not test its own."""
    yield
    check_no_fallback(request.node)
