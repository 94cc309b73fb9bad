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
  generators, on each device of ``NNARRAY_CLIENT_DEVICE`` (``tests/clients/sklearn_namespaces.py``).

Several devices (``NNARRAY_CLIENT_DEVICE=numpy,opencl``): one run serves them all. SciPy's
``xp`` gets one nnarray parameter per device (ids ``nnarray-numpy``, ``nnarray-opencl``;
with one device the id stays ``nnarray``), each test runs with its device as the default,
and the summary has a line per device.

``NNARRAY_CLIENT_ONLY=1``: nnarray's tests only, for a fast run (tests/clients/
test_clients_ci.py): SciPy's ``xp`` is parametrized over nnarray alone, and SciPy's conftest
does not import torch (nor CuPy unless ``cuda`` is a listed device), which it would only
parametrize over. ``NNARRAY_CLIENT_EACH=1``: of each test function's parametrizations on
each device, only those that take every parameter value once (and those
``NNARRAY_CLIENT_KEEP`` names). ``NNARRAY_CLIENT_CALLS=calls.json`` counts the nnarray
names each device's tests reach (``tests/clients/call_census.py``): how a subset is
compared with a wider run.

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
import importlib.abc
import importlib.util
import json
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # before SciPy is imported

import pytest  # noqa: E402

import nnarray as nna  # noqa: E402
from tests.clients.devices import client_devices  # noqa: E402
from tests.clients.subset import each_value_once  # noqa: E402

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "expected_failures.txt"
ONLY = os.environ.get("NNARRAY_CLIENT_ONLY", "") == "1"
EACH = os.environ.get("NNARRAY_CLIENT_EACH", "") == "1"
CALLS = os.environ.get("NNARRAY_CLIENT_CALLS", "")


def client_device() -> str:
    """The first device of ``NNARRAY_CLIENT_DEVICE`` (default ``numpy``): the default device
    of tests that do not choose one (scikit-learn's default-namespace tests)."""
    return os.environ.get("NNARRAY_CLIENT_DEVICE", "numpy").split(",")[0].strip() or "numpy"


def _devices() -> tuple[str, ...]:
    """The devices SciPy's tests run on: the available ones listed, else the first."""
    return client_devices() or (client_device(),)


class _Unimported(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Fails ``import`` of the named packages with ImportError (``NNARRAY_CLIENT_ONLY``):
    SciPy's conftest then leaves them out of ``xp``, as when they are not installed."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in self.names:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        raise ImportError(f"{spec.name}: not imported in an nnarray-only client run")

    def exec_module(self, module) -> None:  # never reached: create_module refuses
        raise ImportError(module.__name__)


def _configure_nnarray() -> None:
    nna.set_default_device(client_device())
    if os.environ.get("SCIPY_DEFAULT_DTYPE", "float64") == "float64":
        nna.set_default_dtype(nna.float64)
    if ONLY:
        blocked = ("torch",) + (() if "cuda" in _devices() else ("cupy",))
        sys.meta_path.insert(0, _Unimported(tuple(b for b in blocked if b not in sys.modules)))
    if CALLS:
        from tests.clients import call_census
        call_census.install()


_configure_nnarray()


def _patch_sklearn() -> None:
    """Add nnarray to scikit-learn's namespace generators, which its test modules read at
    their import (a run of SciPy's tests alone does not import scikit-learn)."""
    try:
        from tests.clients import sklearn_namespaces  # noqa: F401
    except ImportError as e:  # no scikit-learn: its tests are not run either
        if "sklearn" not in str(e):
            raise


# -- SciPy's ``xp`` fixture ------------------------------------------------------------
_patched: set[int] = set()


def _xp_params() -> list:
    """nnarray's parameters of SciPy's ``xp``: one per device, marked with it."""
    devices = _devices()
    return [pytest.param(nna, id="nnarray" if len(devices) == 1 else f"nnarray-{d}",
                         marks=[pytest.mark.array_api_backends, pytest.mark.nnarray_device(d)])
            for d in devices]


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Add nnarray to the params of SciPy's ``xp`` fixture (before pytest's fixtures
    plugin parametrizes the test with them; in place of SciPy's own with
    ``NNARRAY_CLIENT_ONLY``), and make SciPy's conftest know it."""
    for fixturedef in metafunc._arg2fixturedefs.get("xp", ()):
        if id(fixturedef) in _patched or fixturedef.params is None:
            continue
        module = sys.modules.get(getattr(fixturedef.func, "__module__", ""))
        if module is None or not hasattr(module, "xp_known_backends"):
            continue
        _patched.add(id(fixturedef))
        module.xp_known_backends.add("nnarray")
        mine = _xp_params()
        fixturedef.params = (*(() if ONLY else fixturedef.params), *mine)
        if fixturedef.ids is not None and not callable(fixturedef.ids):
            fixturedef.ids = (*(() if ONLY else fixturedef.ids), *(p.id for p in mine))


def device_of(item: pytest.Item) -> str:
    """The device an nnarray test runs on: its ``xp`` parameter's (SciPy), the one its id
    names (scikit-learn's ``nnarray-opencl-float32``, ``nnarray opencl to numpy``), else
    the first listed."""
    m = item.get_closest_marker("nnarray_device")
    if m is not None:
        return m.args[0]
    for d in client_devices():
        if f"nnarray-{d}-" in item.name or f"nnarray {d}" in item.name:
            return d
    return client_device()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Each test makes its arrays on its device (SciPy's conftest sets torch's default
    device the same way, once)."""
    if _is_nnarray(item):
        device = device_of(item)
        nna.set_default_device(device)
        if CALLS:
            from tests.clients import call_census
            call_census.set_label(device)


# -- expected failures ------------------------------------------------------------------
def key(item: pytest.Item) -> str:
    """``module::[Class::]test[params]``: an item's name independent of where the
    client is installed (``scipy.special.tests.test_x::test_y[nnarray]``)."""
    mod = getattr(getattr(item, "module", None), "__name__", item.fspath.purebasename)
    k = f"{mod}::{item.nodeid.split('::', 1)[1]}" if "::" in item.nodeid else mod
    m = item.get_closest_marker("nnarray_device")
    return k if m is None else k.replace(f"[nnarray-{m.args[0]}", "[nnarray")


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


#: device -> its entries of expected_failures.txt
_listed: dict[str, list] = {}
_listed_passed: set[str] = set()


def pytest_configure(config: pytest.Config) -> None:
    if any("sklearn" in str(a) for a in config.args) or "sklearn" in sys.modules:
        _patch_sklearn()
    config.addinivalue_line("markers", "nnarray_device(name): the device of an nnarray "
                                       "parameter of SciPy's xp (tests/clients/plugin.py)")
    for d in {client_device(), *_devices()}:
        _listed[d] = expected_failures(d)


def _entries(item: pytest.Item) -> list:
    k = key(item)
    return [e for e in _listed[device_of(item)] if fnmatch.fnmatchcase(k, e[0])]


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


# -- the subset (NNARRAY_CLIENT_EACH) ---------------------------------------------------
def _keep_patterns() -> list[str]:
    """``NNARRAY_CLIENT_KEEP``: ``;``-separated ``fnmatch`` patterns of ``key`` (as in
    expected_failures.txt) of tests that ``NNARRAY_CLIENT_EACH`` keeps whatever it
    drops."""
    return [p.strip() for p in os.environ.get("NNARRAY_CLIENT_KEEP", "").split(";")
            if p.strip()]


#: nodeid -> device, of the nnarray tests collected
_device: dict[str, str] = {}


@pytest.hookimpl(trylast=True)  # after -k and -m deselected
def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    if EACH:
        mine = [i for i in items if _is_nnarray(i)]
        chosen = {id(i) for i in each_value_once(mine, device_of, key, _keep_patterns())}
        dropped = [i for i in mine if id(i) not in chosen]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [i for i in items if not _is_nnarray(i) or id(i) in chosen]
    for item in items:
        if _is_nnarray(item):
            _device[item.nodeid] = device_of(item)


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


def _counts() -> dict[str, dict[str, int]]:
    """device -> outcome -> number of nnarray tests."""
    counts: dict[str, dict[str, int]] = {}
    for nodeid, o in _outcomes.items():
        per = counts.setdefault(_device.get(nodeid, client_device()), {})
        per[o] = per.get(o, 0) + 1
    return counts


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    counts = _counts()
    for d in dict.fromkeys([client_device(), *_devices()]):
        if d in counts or d == client_device():
            terminalreporter.write_line(f"nnarray on {d}: " + ", ".join(
                f"{n} {o}" for o, n in sorted(counts.get(d, {}).items())))
    for k in sorted(_listed_passed):
        terminalreporter.write_line(f"listed in {EXPECTED.name} but passed: {k}")
    path = os.environ.get("NNARRAY_CLIENT_REPORT")
    if path:
        Path(path).write_text(json.dumps({
            "device": client_device(), "counts": counts, "outcomes": _outcomes,
            "devices": {n: _device.get(n, client_device()) for n in _outcomes},
            "messages": _messages}, indent=1))
    if CALLS:
        from tests.clients import call_census
        call_census.write(CALLS)
