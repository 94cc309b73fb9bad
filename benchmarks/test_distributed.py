"""Data-parallel training on 1 and 2 MPI ranks: the MLP step and the all-reduce cost.

The work runs in an MPI job (``data_parallel_job.py`` under ``mpiexec -n N``), which times
every call on rank 0 with ``perf_counter`` (device synchronized, after a barrier); each
test then replays those per-call durations into pytest-benchmark (``benchmark.pedantic``
with a timer that advances by the measured duration), so the table shows the job's own
timings, not the launch. Rows:

- ``data-parallel mlp step`` · ``N rank(s)``: one SGD step of the benchmark MLP on a
  global batch of 64 rows split over the ranks, gradients averaged (baseline: 1 rank);
- ``all-reduce ... 2 ranks`` · ``bucketed`` / ``per array``: averaging the MLP's gradients
  (4 arrays, 0.4 MB) or a 20-layer list (40 arrays, 5.3 MB) in buckets of 4 MiB vs one
  collective call per array (``extra_info``: ``calls`` and ``transfers`` per all-reduce).

Skipped with the reason where mpi4py or mpiexec is missing. The smoke run
(``--benchmark-disable``) launches each job once with two timed calls.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import nnarray as nna
from nnarray.distributed import world

ROOT = Path(__file__).resolve().parent.parent
STEP = "data-parallel mlp step 64x1000-100-10 sgd (global batch)"


class Replay:
    """A clock that runs with ``perf_counter`` and jumps by each replayed duration."""

    def __init__(self) -> None:
        self.offset = 0.0
        self.queue: list[float] = []

    def timer(self) -> float:
        return time.perf_counter() + self.offset

    def call(self) -> None:
        if self.queue:
            self.offset += self.queue.pop(0)


REPLAY = Replay()


def _mpiexec() -> str:
    from nnarray.distributed.world import launcher
    exe, why = launcher()
    if exe is None:
        pytest.skip(why)
    return exe


@functools.cache
def job(backend: str, ranks: int, steps: int) -> dict:
    """Run the job once per (backend, ranks, steps) and return rank 0's measurements."""
    reason = nna.backends.why_unavailable(backend)
    if reason is not None:
        pytest.skip(f"{backend} unavailable: {reason}")
    env = world.launch_env()
    env["PYTHONPATH"] = str(ROOT)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")  # two ranks on two cores: no BLAS threads
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [_mpiexec(), "-n", str(ranks), sys.executable, "-m",
               "benchmarks.data_parallel_job", backend, str(steps), str(out)]
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=600)
        assert p.returncode == 0, f"{' '.join(cmd)} failed:\n{p.stdout}\n{p.stderr}"
        return json.loads(out.read_text())


def replay(benchmark, durations: list[float], label: str, variant: str,
           baseline: bool = False, **info) -> None:
    benchmark.extra_info.update(impl=label, variant=variant, baseline=baseline, **info)
    REPLAY.queue = list(durations)
    benchmark.pedantic(REPLAY.call, rounds=len(durations), iterations=1)


def _steps(benchmark) -> int:
    return 2 if benchmark.disabled else 200


BACKENDS = pytest.mark.parametrize("backend", ["numpy", "opencl"])


@BACKENDS
@pytest.mark.parametrize("ranks", [1, 2])
@pytest.mark.benchmark(timer=REPLAY.timer)
def test_data_parallel_step(benchmark, backend, ranks):
    r = job(backend, ranks, _steps(benchmark))
    benchmark.group = STEP
    replay(benchmark, r["step"], f"nnarray-{backend}", f"{ranks} rank{'s' * (ranks > 1)}",
           baseline=backend == "numpy" and ranks == 1, first_call_s=r["first_call_s"],
           transfers=r["step_transfers"], calls=r["step_calls"])


@BACKENDS
@pytest.mark.parametrize("grads", ["mlp", "deep"])
@pytest.mark.parametrize("how", ["bucketed", "per array"])
@pytest.mark.benchmark(timer=REPLAY.timer)
def test_all_reduce_cost(benchmark, backend, grads, how):
    r = job(backend, 2, _steps(benchmark))
    n, mb = r[f"{grads} arrays"], r[f"{grads} bytes"] / 1e6
    benchmark.group = f"all-reduce mean, 2 ranks: {grads} grads ({n} arrays, {mb:.1f} MB)"
    replay(benchmark, r[f"{grads} {how}"], f"nnarray-{backend}", how,
           baseline=backend == "numpy" and how == "bucketed",
           calls=r[f"{grads} {how} calls"], transfers=r[f"{grads} {how} transfers"])
