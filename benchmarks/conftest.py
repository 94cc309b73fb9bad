"""Shared machinery for the benchmark suite.

Every workload runs once per registered nnarray backend (``backend`` fixture, skipped with
the reason where unavailable) and once per reference implementation (``ref`` fixture: raw
numpy, torch on CPU and CUDA, CuPy), all in one pytest-benchmark group so a single table
compares them. ``measure`` times one call including a device synchronization, after an
untimed first call whose duration (kernel compilation included) goes to
``extra_info["first_call_s"]``.

Every benchmark checks what it times, in the smoke run (``--benchmark-disable``) too:
``measure`` takes a ``check`` of the first call's result against numpy (``expect``
builds one), and for nnarray runs a second warm call under ``strict_transfers()``
that must make no transfer (or exactly ``transfers``) and fall back to no other backend.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("NNARRAY_DEBUG", "0")  # no output checking inside timed regions

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import nnarray as nna  # noqa: E402

BACKENDS = nna.backends.registered()


def _targets() -> list[str]:
    """Every registered backend (device 0), plus each further device of a different kind
    (pocl's ``basic`` and ``pthread`` CPU drivers, not a second identical GPU)."""
    out = []
    for b in BACKENDS:
        out.append(b)
        if nna.backends.why_unavailable(b) is None:
            kinds = [d.partition(" ")[2] for d in nna.backends.module(b).describe_devices()]
            out += [f"{b}:{i}" for i, k in enumerate(kinds) if i and k not in kinds[:i]]
    return out


TARGETS = _targets()
REFERENCES = ["numpy", "torch-cpu", "torch-cuda", "cupy"]


def _is_gpu(target: str) -> bool:
    ctx = nna.Context.parse(target)
    if ctx.backend == "cuda":
        return True
    return "gpu" in nna.backends.module(ctx.backend).describe_devices()[ctx.device_id].lower()


def gpu_present() -> bool:
    """Whether any nnarray backend, torch or CuPy can run on a GPU here."""
    for b in BACKENDS:
        if nna.backends.why_unavailable(b) is None and _is_gpu(b):
            return True
    return _torch_cuda_reason() is None or _cupy_reason() is None


def _torch_cuda_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch not installed"
    return None if torch.cuda.is_available() else "torch: no CUDA device"


def _cupy_reason() -> str | None:
    try:
        import cupy
    except ImportError:
        return "cupy not installed"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001  (any CUDA runtime failure means "no device")
        return f"cupy: no usable CUDA device ({str(e).split(':')[0]})"
    return None if n > 0 else "cupy: no CUDA device"


def _no_sync() -> None:
    pass


class Backend:
    """An nnarray backend (``name[:device_id]``) under test: whether it is a GPU, how to
    synchronize."""

    reference = False

    def __init__(self, name: str) -> None:
        self.name = name
        self.gpu = _is_gpu(name)
        self.label = f"nnarray-{name}"
        if name.split(":")[0] == "numpy":  # synchronous: nothing to wait for (as torch-cpu)
            self.sync = _no_sync  # type: ignore[method-assign]

    def sync(self) -> None:
        nna.device_synchronize()


class Reference:
    """A reference implementation: ``numpy``, ``torch-cpu``, ``torch-cuda`` or ``cupy``.

    ``xp`` is the array module (numpy, torch or cupy); ``device`` the torch device.
    """

    reference = True

    def __init__(self, name: str) -> None:
        self.name = name
        self.label = name
        self.gpu = name in ("torch-cuda", "cupy")
        self.device: str | None = None
        if name == "numpy":
            import numpy
            self.xp: Any = numpy
        elif name.startswith("torch"):
            import torch
            self.xp = torch
            self.device = "cuda" if name == "torch-cuda" else "cpu"
        else:
            import cupy
            self.xp = cupy

    def asarray(self, a: Any) -> Any:
        """A host numpy array as this implementation's array."""
        if self.name == "numpy":
            return a.copy()
        if self.name == "cupy":
            return self.xp.asarray(a)
        return self.xp.from_numpy(a.copy()).to(self.device)

    def sync(self) -> None:
        if self.name == "torch-cuda":
            self.xp.cuda.synchronize()
        elif self.name == "cupy":
            self.xp.cuda.Device().synchronize()


#: As in tests/conftest.py: NNARRAY_REQUIRE_BACKENDS=numpy,opencl (set by .ci/run) makes
#: an unavailable backend fail its benchmarks instead of skipping them.
REQUIRED = {b.strip() for b in os.environ.get("NNARRAY_REQUIRE_BACKENDS", "").split(",")
            if b.strip()}


@pytest.fixture(params=TARGETS)
def backend(request) -> Backend:
    """An available nnarray backend, made the current context for the test."""
    name = request.param.partition(":")[0]
    reason = nna.backends.why_unavailable(name)
    if reason is not None:
        if name in REQUIRED:
            pytest.fail(f"{request.param} unavailable but required by "
                        f"NNARRAY_REQUIRE_BACKENDS: {reason}", pytrace=False)
        pytest.skip(f"{request.param} unavailable: {reason}")
    with nna.context_scope(request.param):
        yield Backend(request.param)


@pytest.fixture(params=REFERENCES)
def ref(request) -> Reference:
    """A reference implementation, skipped with the reason where it cannot run."""
    name = request.param
    if name.startswith("torch"):
        try:
            import torch  # noqa: F401
        except ImportError:
            pytest.skip("torch not installed")
        if name == "torch-cuda" and _torch_cuda_reason():
            pytest.skip(_torch_cuda_reason())
    elif name == "cupy" and _cupy_reason():
        pytest.skip(_cupy_reason())
    return Reference(name)


def require(module: str, *attrs: str) -> Any:
    """Import ``module`` or skip: for the layers (grad, nn, solvers) that may not have landed."""
    try:
        m = importlib.import_module(module)
    except ImportError as e:
        pytest.skip(f"{module} not importable: {e}")
    missing = [a for a in attrs if not hasattr(m, a)]
    if missing:
        pytest.skip(f"{module} has no {', '.join(missing)} yet")
    return m


def small(benchmark: Any) -> bool:
    """True under ``--benchmark-disable`` (the CI smoke run): workloads shrink."""
    return bool(benchmark.disabled)


def host(r: Any) -> np.ndarray:
    """A result as a host numpy array: NdArray, grad Variable, torch tensor, CuPy array,
    numpy array or scalar."""
    if isinstance(r, nna.NdArray):
        return r.get_data("r", "numpy")
    if hasattr(r, "data") and isinstance(r.data, nna.NdArray):  # grad.Variable
        return r.data.get_data("r", "numpy")
    if hasattr(r, "detach"):  # torch
        return r.detach().cpu().numpy()
    if hasattr(r, "get") and type(r).__module__.startswith("cupy"):
        return r.get()
    return np.asarray(r)


def expect(*want: Any, rtol: float = 1e-5, atol: float = 1e-6) -> Callable[[Any], None]:
    """A ``check`` for ``measure``: the result (a tuple when several ``want``) equals
    ``want`` (numpy arrays or scalars) within ``rtol``/``atol``."""
    def check(got: Any) -> None:
        gots = got if len(want) > 1 else (got,)
        assert len(gots) == len(want), f"{len(gots)} results, {len(want)} expected"
        for i, (g, w) in enumerate(zip(gots, want)):
            g = host(g)
            w = np.asarray(w)
            assert g.shape == w.shape, f"result {i}: shape {g.shape}, numpy says {w.shape}"
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol,
                                       err_msg=f"result {i} differs from numpy")
    return check


def measure(benchmark: Any, impl: Backend | Reference, fn: Callable[[], Any],
            baseline: bool = False, label: str | None = None, variant: str | None = None,
            *, check: Callable[[Any], None], transfers: int = 0, **info: Any) -> Any:
    """Benchmark ``fn`` on ``impl``, synchronizing inside the timed region.

    The first call runs untimed (compilation, allocation pools, first transfers; its
    duration is recorded as ``first_call_s``) and ``check`` (required: see ``expect``)
    asserts on its result. For nnarray, a second untimed call runs under
    ``strict_transfers()``: it must make exactly ``transfers`` explicit transfers and no
    implicit one (``TransferError``), and no op may fall back to another backend; both
    counts go to ``extra_info``. All of this runs in the smoke run too. ``baseline``
    marks the row the ratio table divides by; ``label`` names the column (default: the
    implementation's label); ``variant`` (e.g. ``"static"``) gives the row its own line
    in the ratio table, still divided by the group's baseline.
    """
    sync = impl.sync

    def call() -> Any:
        r = fn()
        sync()
        return r

    benchmark.extra_info.update(impl=label or impl.label, baseline=baseline, variant=variant,
                                **info)
    t0 = time.perf_counter()
    first = call()
    if not benchmark.disabled:
        benchmark.extra_info["first_call_s"] = time.perf_counter() - t0
    check(first)  # before any later call can overwrite what ``first`` refers to
    del first
    if not impl.reference:  # what one warm call moves between devices or falls back
        nna.reset_transfer_stats()
        nna.reset_fallback_stats()
        with nna.strict_transfers():
            call()
        moved, fb = nna.transfer_stats()["count"], nna.fallback_stats()
        benchmark.extra_info["transfers"] = moved
        benchmark.extra_info["fallbacks"] = sum(fb.values())
        assert not fb, f"{impl.label}: ops fell back to another backend (op, from, to): {fb}"
        assert moved == transfers, (f"{impl.label}: a warm call made {moved} transfers, "
                                    f"expected {transfers}: {nna.transfer_stats()}")
    return benchmark(call)


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def pytest_benchmark_update_machine_info(config: Any, machine_info: dict) -> None:
    """Record library versions and the devices each backend sees in the saved JSON."""
    import numpy
    versions = {"numpy": numpy.__version__}
    for dist in ("pyopencl", "pocl-binary-distribution", "torch", "cupy-cuda12x"):
        versions[dist] = _version(dist)
    try:
        import pyopencl
        versions["opencl platforms"] = [p.version.split("  ")[0]
                                        for p in pyopencl.get_platforms()]
    except Exception:  # noqa: BLE001  (no pyopencl, no ICD)
        pass
    machine_info["versions"] = versions
    knobs = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "POCL_MAX_PTHREAD_COUNT",
             "NNARRAY_OPENCL_CACHE_DIR", "PYOPENCL_NO_CACHE", "POCL_KERNEL_CACHE",
             "POCL_DEVICES", "NNARRAY_OPENCL_DEVICES")
    machine_info["env"] = {k: os.environ.get(k) for k in knobs}
    machine_info["nnarray_backends"] = {
        b: nna.backends.why_unavailable(b) or nna.backends.module(b).describe_devices()
        for b in BACKENDS}
