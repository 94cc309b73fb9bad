"""pytest plugin: SciPy's and scikit-learn's own array-API tests also run on nnarray.

Loaded with ``-p tests.clients.plugin`` from the repository root (tests/clients/README.md
gives the commands). It adds nnarray to the backends the clients' tests parametrize over,
as their conftests do for torch and CuPy:

- SciPy: a ``nnarray`` parameter of SciPy's ``xp`` fixture (``-m array_api_backends``),
  with nnarray made known to SciPy's skip/xfail markers (``np_only`` skips it; ``cpu_only``
  does not, on any device: SciPy's host path reads an OpenCL array through ``np.asarray``,
  one counted read, where it cannot read a GPU array of CuPy or torch), the
  default float dtype float64 unless ``SCIPY_DEFAULT_DTYPE=float32`` (SciPy's rule for
  torch) and the default device ``NNARRAY_CLIENT_DEVICE`` (``set_default_device``: new
  arrays are made there, ops follow their inputs; SciPy's conftest calls
  ``torch.set_default_device``).
- scikit-learn: ``"nnarray"`` among the namespaces of ``sklearn.utils._array_api``'s
  generators, on the device ``NNARRAY_CLIENT_DEVICE`` (``tests/clients/sklearn_namespaces.py``).

``SCIPY_ARRAY_API=1`` must be set before SciPy is imported (it is read once): the plugin
sets it, and runs it in its own interpreter. Test ids name nnarray (``[nnarray]`` in SciPy,
``[nnarray-opencl-float32]`` in scikit-learn); ``-k nnarray`` selects them.

Expected failures: ``tests/clients/expected_failures.txt`` lists tests that fail on
nnarray for a stated reason (a test's own assumption, or a known nnarray gap), optionally
with the failure's message; the plugin reports such a failure ``xfailed`` with the reason
(a listed test that passes is named in the summary). Any other failure fails the run.
``NNARRAY_CLIENT_REPORT=path.json`` writes every nnarray test's outcome and message.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # before SciPy is imported

import pytest  # noqa: E402

import nnarray as nna  # noqa: E402

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "expected_failures.txt"


def client_device() -> str:
    """The first device of ``NNARRAY_CLIENT_DEVICE`` (default ``numpy``): where SciPy's
    tests make arrays (scikit-learn's run on each device listed)."""
    return os.environ.get("NNARRAY_CLIENT_DEVICE", "numpy").split(",")[0].strip() or "numpy"


def _configure_nnarray() -> None:
    nna.set_default_device(client_device())
    if os.environ.get("SCIPY_DEFAULT_DTYPE", "float64") == "float64":
        nna.set_default_dtype(nna.float64)


_configure_nnarray()

try:  # scikit-learn's generators read at its test modules' import: patch them now
    from tests.clients import sklearn_namespaces  # noqa: F401
except ImportError as e:  # no scikit-learn: its tests are not run either
    if "sklearn" not in str(e):
        raise


# -- SciPy's ``xp`` fixture ------------------------------------------------------------
_patched: set[int] = set()


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Add nnarray to the params of SciPy's ``xp`` fixture (before pytest's fixtures
    plugin parametrizes the test with them), and make SciPy's conftest know it."""
    for fixturedef in metafunc._arg2fixturedefs.get("xp", ()):
        if id(fixturedef) in _patched or fixturedef.params is None:
            continue
        module = sys.modules.get(getattr(fixturedef.func, "__module__", ""))
        if module is None or not hasattr(module, "xp_known_backends"):
            continue
        _patched.add(id(fixturedef))
        module.xp_known_backends.add("nnarray")
        fixturedef.params = (*fixturedef.params, pytest.param(
            nna, id="nnarray", marks=pytest.mark.array_api_backends))
        if fixturedef.ids is not None and not callable(fixturedef.ids):
            fixturedef.ids = (*fixturedef.ids, "nnarray")


# -- expected failures ------------------------------------------------------------------
def key(item: pytest.Item) -> str:
    """``module::[Class::]test[params]``: an item's name independent of where the
    client is installed (``scipy.special.tests.test_x::test_y[nnarray]``)."""
    mod = getattr(getattr(item, "module", None), "__name__", item.fspath.purebasename)
    return f"{mod}::{item.nodeid.split('::', 1)[1]}" if "::" in item.nodeid else mod


def expected_failures(device: str) -> list[tuple[str, re.Pattern | None, str]]:
    """``[(pattern, message regex or None, reason)]`` of ``expected_failures.txt`` for
    ``device``: lines ``DEVICE PATTERN [~ REGEX]  # reason`` (``DEVICE`` numpy, opencl or
    ``*``; ``PATTERN`` an ``fnmatch`` pattern of ``key``, where ``[`` is written ``[[]``;
    ``REGEX``, when given, must match the failure's message too)."""
    out = []
    for raw in EXPECTED.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        spec, _, reason = line.partition(" # ")
        dev, rest = spec.split(None, 1)
        pattern, _, regex = rest.partition(" ~ ")
        if not reason.strip():
            raise ValueError(f"{EXPECTED.name}: no reason given for {rest.strip()!r}")
        if dev in ("*", device):
            out.append((pattern.strip(), re.compile(regex.strip()) if regex.strip() else None,
                        reason.strip()))
    return out


def _is_nnarray(item: pytest.Item) -> bool:
    return "nnarray" in item.name


_listed: list = []
_listed_passed: set[str] = set()


def pytest_configure(config: pytest.Config) -> None:
    _listed[:] = expected_failures(client_device())


def _entries(item: pytest.Item) -> list:
    k = key(item)
    return [e for e in _listed if fnmatch.fnmatchcase(k, e[0])]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A listed nnarray test that fails (with the listed message, where the entry names
    one) is reported ``xfailed`` with its reason; any other failure stays a failure."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not _is_nnarray(item):
        return
    entries = _entries(item)
    if not entries:
        return
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        msg = crash.message if crash is not None else str(report.longrepr)
        for _, regex, reason in entries:
            if regex is None or regex.search(msg):
                report.outcome = "skipped"
                report.wasxfail = f"nnarray: {reason}"
                return
    elif report.passed and any(regex is None for _, regex, _ in entries):
        _listed_passed.add(key(item))


# -- the report -------------------------------------------------------------------------
_outcomes: dict[str, str] = {}
_messages: dict[str, str] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "nnarray" not in report.nodeid:
        return
    if report.when == "call" or report.outcome != "passed":
        outcome = "xfailed" if hasattr(report, "wasxfail") and report.skipped else (
            "xpassed" if hasattr(report, "wasxfail") else report.outcome)
        if outcome == "failed" and report.when != "call":
            outcome = "error"
        _outcomes[report.nodeid] = outcome
        crash = getattr(report.longrepr, "reprcrash", None)
        if outcome in ("failed", "error") and crash is not None:
            _messages[report.nodeid] = crash.message.splitlines()[0][:300]


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    counts: dict[str, int] = {}
    for o in _outcomes.values():
        counts[o] = counts.get(o, 0) + 1
    terminalreporter.write_line(
        f"nnarray on {client_device()}: " + ", ".join(f"{n} {o}" for o, n in sorted(
            counts.items())))
    for k in sorted(_listed_passed):
        terminalreporter.write_line(f"listed in {EXPECTED.name} but passed: {k}")
    path = os.environ.get("NNARRAY_CLIENT_REPORT")
    if path:
        Path(path).write_text(json.dumps({"device": client_device(), "counts": counts,
                                          "outcomes": _outcomes, "messages": _messages},
                                         indent=1))
