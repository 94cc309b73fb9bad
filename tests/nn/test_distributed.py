"""Data-parallel training (``nnarray.distributed``): the world of one in process, and two
ranks under ``mpiexec -n 2`` (``tests/mpi_worker.py``) for the collectives, the
equivalence with single-process training, mismatched models and failing ranks. The
modes that end normally share one job (``two_ranks``); each failing rank needs a job of
its own.

The MPI tests skip with the reason only where mpi4py or mpiexec is absent
(``pip install 'nnarray[distributed]'`` provides both); the NCCL tests need GPUs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import mpi_worker
import numpy as np
import pytest
from helpers import CHILD_LIMIT, child_env

import nnarray as nna
from nnarray import distributed as dist
from nnarray import nn, solvers
from nnarray.context import Context
from nnarray.distributed import checks, faults, placement, world
from nnarray.distributed.buckets import Bucket, plan
from nnarray.distributed.communicator import Communicator
from nnarray.distributed.transport import LocalTransport
from nnarray.training import Trainer, shard

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "tests" / "mpi_worker.py"
LAUNCHER_VARS = world.LAUNCHER_VARS


def _env() -> dict[str, str]:
    env = world.launch_env()
    # two ranks on two cores: no spinning BLAS threads
    return child_env(base=env, OPENBLAS_NUM_THREADS="1")


def _run(cmd: list[str], timeout: float) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``cmd`` in its own process group; on timeout kill the whole group (mpiexec and
    every rank), so a hang fails the test instead of leaving processes behind."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True, cwd=ROOT)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        pytest.fail(f"{' '.join(cmd[-3:])} hung for {timeout}s:\n{out}")
    return subprocess.CompletedProcess(cmd, p.returncode, out), time.monotonic() - t0


def _mpiexec() -> str:
    from nnarray.distributed.world import launcher
    exe, why = launcher()
    if exe is None:
        pytest.skip(why)
    return exe


def mpirun(*args: str, n: int = 2,
           timeout: float = CHILD_LIMIT) -> tuple[subprocess.CompletedProcess, float]:
    return _run([_mpiexec(), "-n", str(n), sys.executable, str(WORKER), *args], timeout)


def _usable(backend: str) -> None:
    if backend not in nna.backends.registered():
        pytest.skip(f"{backend} backend not registered")
    reason = nna.backends.why_unavailable(backend)
    if reason is not None:
        pytest.skip(f"{backend} unavailable: {reason}")


def _opencl_usable() -> bool:
    return "opencl" in nna.backends.registered() and nna.backends.why_unavailable("opencl") is None


def _once(request, tmp_path_factory, name: str, make: Callable[[Path], dict]) -> tuple[dict, Path]:
    """``(make(folder), folder)``, made once per test session: under pytest-xdist the first
    worker to ask makes it in a folder every worker shares (the session's temporary
    root) and the others wait for its JSON result, so a job several workers' tests read
    runs once, not once per worker."""
    if not hasattr(request.config, "workerinput"):  # no xdist: this process alone
        folder = tmp_path_factory.mktemp(name)
        return make(folder), folder
    folder = tmp_path_factory.getbasetemp().parent / name
    folder.mkdir(exist_ok=True)
    result = folder / "result.json"
    try:
        os.close(os.open(folder / "claimed", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:  # another worker makes it
        deadline = time.monotonic() + CHILD_LIMIT
        while not result.exists():
            if time.monotonic() > deadline:
                pytest.fail(f"no {name} result from another worker after {CHILD_LIMIT}s")
            time.sleep(0.05)
        got = json.loads(result.read_text())
        if "error" in got:
            pytest.fail(f"{name} failed on another worker: {got['error']}")
        return got["value"], folder
    try:
        value = make(folder)
        got = {"value": value}
        return value, folder
    except BaseException as e:
        got = {"error": f"{type(e).__name__}: {e}"}
        raise
    finally:
        (folder / "result.tmp").write_text(json.dumps(got))
        os.replace(folder / "result.tmp", result)


class TwoRanks:
    """One job of two ranks (``mpi_worker.py sections``) running every worker mode that
    ends normally, in turn: one mpiexec start (two interpreters' imports) for all their
    tests instead of one per test. ``section(name)`` is what the ranks printed in mode
    ``name``, asserting both ranks finished it (a mode that failed aborts the job: its
    test and those of the modes after it fail, with the job's whole output)."""

    def __init__(self, request, tmp_path_factory) -> None:
        _mpiexec()  # skips every worker alike where MPI is missing
        self.backends = ["numpy", "opencl"] if _opencl_usable() else ["numpy"]
        got, self.out = _once(request, tmp_path_factory, "two_ranks", self._job)
        self.status, self.stdout = got["status"], got["stdout"]

    def _specs(self, out: Path) -> dict[str, str]:
        specs = {f"ops {b}": f"ops {b}" for b in self.backends}
        specs["train"] = shlex.join(["train", str(out), *self.backends])
        specs.update({f"scaler {b}": f"scaler {b}" for b in self.backends})
        specs.update({m: m for m in ("local_check", "checks", "mismatch")})
        if importlib.util.find_spec("sklearn") is not None:  # the digits; last: it imports it
            specs["data_parallel"] = shlex.join([
                "example", "data_parallel.py", "--epochs", "1", "--train-size", "256",
                "--no-progress", "--log", str(out / "data_parallel.jsonl")])
        return specs

    def _job(self, out: Path) -> dict:
        """The job, run in ``out`` (the ``train`` mode's parameters: OUT/<backend>.npz)."""
        p, _ = mpirun("sections", *self._specs(out).values())
        return {"status": p.returncode, "stdout": p.stdout}

    def section(self, name: str) -> str:
        tag = self._specs(self.out)[name] + "| "
        text = "".join(line[len(tag):] + "\n" for line in self.stdout.splitlines()
                       if line.startswith(tag))
        assert text.count("section ended on rank") == 2, \
            f"{name!r} did not finish on both ranks (status {self.status}):\n{self.stdout}"
        return text


@pytest.fixture(scope="module")
def two_ranks(request, tmp_path_factory) -> TwoRanks:
    return TwoRanks(request, tmp_path_factory)


# -- the world of one --------------------------------------------------------------------
def test_plain_python_is_a_world_of_one_without_importing_mpi4py():
    code = ("import sys; from nnarray import distributed as dist; c = dist.init(); "
            "print(c.rank, c.size, c.local_rank, c.ctx, 'mpi4py' in sys.modules)")
    p, _ = _run([sys.executable, "-c", code], timeout=CHILD_LIMIT)
    assert p.returncode == 0, p.stdout
    ctx = "cuda:0" if nna.backends.why_unavailable("cuda") is None else "numpy:0"
    assert p.stdout.split() == ["0", "1", "0", ctx, "False"]  # init() prefers a GPU


def test_missing_mpi4py(monkeypatch):
    for v in LAUNCHER_VARS:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # import mpi4py raises ImportError
    assert world.mpi_world() is None  # not launched: a world of one
    monkeypatch.setenv("PMI_SIZE", "2")
    monkeypatch.setenv("PMI_RANK", "1")
    with pytest.raises(dist.DistributedError, match=r"2 ranks.*mpi4py.*nnarray\[distributed\]"):
        world.mpi_world()
    monkeypatch.setenv("PMI_SIZE", "1")
    assert world.mpi_world() is None  # `mpiexec -n 1` without mpi4py still trains alone


def test_world_of_one_collectives(backend):
    comm = Communicator(LocalTransport(), 0, Context(backend))
    a = nna.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    a.get_data("rw")
    for op in ("sum", "mean", "max", "min"):
        comm.all_reduce([a], op=op)
    comm.broadcast([a])
    comm.barrier()
    np.testing.assert_array_equal(a.numpy(), np.arange(6).reshape(2, 3))
    g = comm.all_gather(a)
    assert g.shape == (1, 2, 3) and g.head == nna.get_current_context().key
    np.testing.assert_array_equal(g.numpy()[0], a.numpy())
    assert comm.calls == 0 and comm.bcast_obj("x") == "x" and comm.allgather_obj(1) == [1]


def test_collectives_validate_their_arguments():
    comm = dist.init()
    a, i = nna.zeros(3), nna.zeros(3, np.int64)
    with pytest.raises(ValueError, match="op must be one of"):
        comm.all_reduce([a], op="prod")
    with pytest.raises(TypeError, match="list of NdArrays"):
        comm.all_reduce(a)
    with pytest.raises(TypeError, match=r"arrays\[1\] is a ndarray"):
        comm.all_reduce([a, np.zeros(3)])
    with pytest.raises(ValueError, match="twice"):
        comm.all_reduce([a, a])
    with pytest.raises(nna.DTypeError, match="mean.*floating"):
        comm.all_reduce([i])
    with pytest.raises(nna.DTypeError, match="bool"):
        comm.all_reduce([nna.zeros(2, np.bool_)], op="sum")
    with pytest.raises(ValueError, match="root"):
        comm.broadcast([a], root=1)


def test_buckets_group_by_dtype_keep_order_and_cap_bytes():
    f = [nna.zeros(n) for n in (100, 100, 300, 10)]  # 400, 400, 1200, 40 bytes
    i = nna.zeros(5, np.int64)
    assert plan([f[0], i, f[1], f[3]], bucket_bytes=1000) == [[0, 2, 3], [1]]
    assert plan(f, bucket_bytes=1000) == [[0, 1], [2], [3]]  # the big one alone
    assert plan(f, bucket_bytes=1 << 20) == [[0, 1, 2, 3]]
    assert plan([], 10) == []
    assert plan(f, bucket_bytes=0) == [[0], [1], [2], [3]]  # one call per array, no packing


def test_bucket_gathers_and_scatters_on_the_arrays_device(backend):
    xs = [nna.array(np.arange(6, dtype=np.float32).reshape(2, 3)),
          nna.array(np.float32([7, 8])), nna.zeros(())]
    for x in xs[:2]:
        x.get_data("rw")
    b = Bucket(xs)
    assert b.home.key == nna.get_current_context().key
    nna.reset_transfer_stats()
    flat = b.gather()
    assert flat.shape == (9,) and flat.head == b.home.key
    flat *= 2.0
    b.scatter(flat)
    assert nna.transfer_stats()["count"] == 0  # packed and unpacked on the device
    np.testing.assert_array_equal(xs[0].numpy(), np.arange(6).reshape(2, 3) * 2)
    np.testing.assert_array_equal(xs[1].numpy(), [14, 16])
    assert all(x.head == b.home.key for x in xs)


def test_bucket_of_lazily_zeroed_arrays_lives_on_the_current_device(backend):
    """A rank whose shard was empty holds zeroed gradients: they must take the same route
    (NCCL or MPI) as the other ranks' written ones."""
    b = Bucket([nna.zeros(3), nna.zeros((2, 2))])
    assert b.home == nna.get_current_context()
    flat = b.gather()
    assert flat.head == b.home.key and flat.numpy().tolist() == [0] * 7


def test_bucket_spread_over_devices_goes_through_the_host():
    _usable("opencl")
    a, b = nna.array(np.float32([1, 2])), nna.array(np.float32([[3], [4]]))
    a.get_data("rw", "opencl")
    bucket = Bucket([a, b])
    assert bucket.on_host  # spread: packed on the host
    buf = np.empty(4, np.float32)
    nna.reset_transfer_stats()
    bucket.pack(buf)
    np.testing.assert_array_equal(buf, [1, 2, 3, 4])
    bucket.unpack(buf * 10)
    assert nna.transfer_stats()["count"] == 2  # a read from and written back to opencl
    assert a.head == "opencl:0" and b.head == "numpy:0"
    np.testing.assert_array_equal(a.numpy(), [10, 20])
    np.testing.assert_array_equal(b.numpy(), [[30], [40]])


def test_placement():
    assert placement.choose("numpy", 3) == Context("numpy", 0)
    if nna.backends.why_unavailable("cuda") is not None:
        assert placement.choose(None, 1) == Context("numpy", 0)
        with pytest.raises(dist.DistributedError, match="cuda.*unavailable"):
            placement.choose("cuda", 0)
    if nna.backends.why_unavailable("opencl") is None:
        n = nna.backends.module("opencl").device_count()
        assert placement.choose("opencl", 3) == Context("opencl", 3 % n)


def test_parameter_list_differences_name_rank_and_entry():
    ref = [("w", (2, 3), "float32", True, "numpy"), ("b", (3,), "float32", True, "numpy")]
    assert checks.differences([ref, list(ref)]) == []
    other = [("w", (3, 3), "float64", True, "numpy"), ("c", (3,), "float32", True, "numpy")]
    d = checks.differences([ref, ref, other])
    assert "rank 2 lacks 'b'" in d and "rank 2 has 'c' that rank 0 lacks" in d
    assert "'w' has shape (3, 3) on rank 2 but (2, 3) on rank 0" in d
    assert "'w' has dtype float64 on rank 2 but float32 on rank 0" in d
    assert checks.differences([ref, ref[::-1]]) == [
        "rank 1 lists the parameters in another order than rank 0"]


def test_fault_message_names_rank_and_exception():
    msg = faults.message(1, 4, ValueError, ValueError("boom"))
    assert msg.startswith("nnarray.distributed: rank 1 of 4 failed with ValueError: boom")


def test_shards_cover_the_batch():
    for n in (0, 1, 7, 8):
        bounds = [shard(n, r, 3) for r in range(3)]
        assert bounds[0][0] == 0 and bounds[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
        assert max(b - a for a, b in bounds) - min(b - a for a, b in bounds) <= 1


def test_trainer_with_a_world_of_one_trains_unchanged():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((20, 3)).astype(np.float32)
    t = (x[:, 0] > 0).astype(np.int64)
    runs = []
    for comm in (None, dist.init()):
        model = nn.Linear(3, 2, rng=np.random.default_rng(1))
        trainer = Trainer(model, solvers.Adam(0.01), batch_size=6, progress=False,
                          report=False, comm=comm)
        hist = trainer.fit((x, t), epochs=2)
        runs.append(([r["loss"] for r in hist], model.parameters()["W"].data.numpy()))
    assert runs[0][0] == runs[1][0]
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


# -- two ranks under mpiexec -----------------------------------------------------------
@pytest.mark.parametrize("backend", ["numpy", "opencl"])
def test_collectives_on_two_ranks(backend, two_ranks):
    if backend != "numpy":
        _usable(backend)
    out = two_ranks.section(f"ops {backend}")
    assert out.count("ops ok on rank") == 2, out


def test_two_ranks_on_half_batches_match_one_process_on_whole_batches(tmp_path, two_ranks,
                                                                     capsys):
    """Mean loss, batches of 7 split 4/3 (and a last one of 1 split 1/0), Momentum SGD
    with weight decay, different initial weights per rank (rank 0's are broadcast):
    the parameters after 3 epochs agree to float32 rounding with a plain single run (the
    worker's ``train`` called in this process: a world of one)."""
    out = two_ranks.section("train")
    backends = two_ranks.backends
    mpi_worker.train(str(tmp_path), backends)
    assert "rank 0 of 1" in capsys.readouterr().out and "rank 1 of 2" in out
    for b in backends:
        two, one = np.load(two_ranks.out / f"{b}.npz"), np.load(tmp_path / f"{b}.npz")
        for k in one.files:
            if k != "history":
                np.testing.assert_allclose(two[k], one[k], rtol=1e-5, atol=1e-6,
                                           err_msg=f"{b} {k}")
        h2, h1 = json.loads(str(two["history"])), json.loads(str(one["history"]))
        for r2, r1 in zip(h2, h1, strict=True):
            for k in ("loss", "accuracy", "val/loss", "val/accuracy"):
                assert r2[k] == pytest.approx(r1[k], rel=1e-5), (b, k)


def test_mismatched_models_raise_on_every_rank_before_training(two_ranks):
    out = two_ranks.section("mismatch")
    for r in (0, 1):
        assert f"rank {r} caught: solver parameters differ across ranks" in out
    assert "'2.W' has shape (8, 4) on rank 1 but (8, 3) on rank 0" in out
    for r in (0, 1):
        assert f"rank {r} caught: Trainer.fit: the ranks disagree" in out
    assert "rank 0: (8, 4, 1, None), rank 1: (9, 4, 1, None)" in out


def test_a_failing_rank_ends_every_rank_within_seconds():
    p, _ = mpirun("fault")  # rank 0 alone would train on past the limit
    assert p.returncode != 0, p.stdout
    assert "rank 1 of 2 failed with ValueError: boom from rank one" in p.stdout
    assert "never stopped" not in p.stdout


def test_sys_exit_on_one_rank_ends_every_rank():
    p, _ = mpirun("exit")
    assert p.returncode == 3, p.stdout
    assert "rank 1 of 2 called sys.exit(3)" in p.stdout and "passed" not in p.stdout


def test_mismatched_collectives_and_validation_sets_raise_on_every_rank(two_ranks):
    out = two_ranks.section("checks")
    assert "passed unchecked" not in out and out.count("checks done") == 2
    for r in (0, 1):
        for what in ("dtype", "size", "op", "broadcast", "validation", "evaluate"):
            assert f"rank {r} caught {what}: " in out, (r, what, out)
    for text in ("'arrays[1]' has dtype int32 on rank 1 but float32 on rank 0",
                 "'arrays[0]' has shape (4,) on rank 1 but (3,) on rank 0",
                 "'arrays[0]' has op max on rank 1 but sum on rank 0",
                 "broadcast arrays differ across ranks",
                 "validation samples): rank 0: (8, 4, 1, 9), rank 1: (8, 4, 1, 10)",
                 "Trainer.evaluate: the ranks disagree on the number of samples: "
                 "rank 0: (9,), rank 1: (10,)"):
        assert text in out, (text, out)


@pytest.mark.parametrize("how, said", [("os_exit", "os._exit(0)"), ("sys_exit", "sys.exit(0)"),
                                       ("raise", "SystemExit(None)")])
def test_a_rank_leaving_training_with_status_0_ends_every_rank_with_an_error(how, said):
    p, _ = mpirun("leave", how)  # rank 0 alone would wait forever
    assert p.returncode != 0, p.stdout
    assert f"rank 1 of 2 called {said} during Trainer.fit; aborting all 2 ranks" in p.stdout
    assert "finished training" not in p.stdout


def test_a_local_check_failing_on_one_rank_raises_on_every_rank(two_ranks):
    """``all_reduce(op='mean')`` of int32 on rank 0 and float32 on rank 1: rank 0's own
    check failed and rank 1 waited forever in the all-reduce. Now rank 0 raises its
    DTypeError, rank 1 a DistributedError naming it, and both stay in step."""
    out = two_ranks.section("local_check")
    assert "rank 0 caught DTypeError: all_reduce: op='mean' needs floating" in out
    assert "rank 1 caught DistributedError: all_reduce arrays: the call failed its checks " \
           "on another rank" in out and "rank 0: DTypeError" in out
    assert "passed" not in out
    for r in (0, 1):
        assert f"rank {r} in step: [3.0, 3.0, 3.0]" in out, out


@pytest.mark.parametrize("backend", ["numpy", "opencl"])
def test_loss_scaler_skips_the_same_step_on_every_rank(backend, two_ranks):
    """Only rank 1's gradient is inf at step 0: with the found-inf flag agreed across
    the ranks (an all-reduce max) both skip that step and halve their scale, then both
    take step 1 as one process would on the mean gradient. Before, rank 0 stepped alone,
    its gradient all-reduce met rank 1's next step's, and the ranks hung in mismatched
    collectives."""
    if backend != "numpy":
        _usable(backend)
    out = two_ranks.section(f"scaler {backend}")
    got = {}
    for line in out.splitlines():
        if line.startswith("scaler "):
            d = json.loads(line[len("scaler "):])
            got[d["rank"], d["step"]] = d
    assert sorted(got) == [(0, 0), (0, 1), (1, 0), (1, 1)], out
    w0 = nn.Linear(4, 2, rng=np.random.default_rng(0))  # rank 0's weights, broadcast
    W0, b0 = w0.W.d, w0.b.d
    gw, gb = np.zeros_like(W0), np.zeros_like(b0)
    for r in (0, 1):  # the mean gradient of sum((x W + b)^2) over the ranks' inputs
        x = np.random.default_rng(5 + r).standard_normal((3, 4)).astype(np.float32)
        dy = 2 * (x @ W0 + b0)
        gw += x.T @ dy / 2
        gb += dy.sum(0) / 2
    for r in (0, 1):
        s0, s1 = got[r, 0], got[r, 1]
        assert not s0["ran"] and s0["scale"] == 2.0 ** 9  # skipped, scale halved
        np.testing.assert_array_equal(s0["params"]["W"], W0)
        assert s1["ran"] and s1["scale"] == 2.0 ** 9
        np.testing.assert_allclose(s1["params"]["W"], W0 - 0.1 * gw, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(s1["params"]["b"], b0 - 0.1 * gb, rtol=1e-5, atol=1e-6)
    assert got[0, 1]["params"] == got[1, 1]["params"]  # the replicas stay equal


@pytest.mark.parametrize("how, said", [
    ("raise", "rank 1 of 2 exited"), ("exit", "rank 1 of 2 exited"),
    ("uneven", "rank 1 of 2 exited"), ("os_exit", "rank 1 of 2 called os._exit(0)")])
def test_a_rank_leaving_a_manual_loop_ends_the_job_naming_it(how, said):
    """Rank 1 leaves a plain loop of all-reduces (``raise SystemExit(3)``, ``exit(3)``,
    fewer steps, ``os._exit(0)``) while rank 0 would loop for 4 minutes: the job ends
    (it hung before: the limit here only catches a hang) with a message naming rank 1."""
    p, _ = mpirun("loop", how)
    assert p.returncode != 0, p.stdout
    assert said in p.stdout, p.stdout
    assert "rank 0 was never stopped" not in p.stdout


def test_data_parallel_example_on_two_ranks(two_ranks):
    """``mpiexec -n 2 python examples/data_parallel.py ...``: the example's ``main`` on
    each rank of the shared job (``mpi_worker.py example``)."""
    pytest.importorskip("sklearn")
    out = two_ranks.section("data_parallel")
    assert "rank 0/2 on numpy:0: 128 samples" in out, out
    assert "rank 1/2 on numpy:0: 128 samples" in out
    assert out.count("epoch   1") == 1  # rank 0 alone reports
    log = two_ranks.out / "data_parallel.jsonl"
    assert len(log.read_text().splitlines()) == 2  # and logs (a run line, one epoch)


# -- NCCL (CUDA) ---------------------------------------------------------------------
def _gpus() -> int:
    reason = nna.backends.why_unavailable("cuda")
    if reason is not None:
        pytest.skip(f"no GPU for NCCL: cuda unavailable ({reason})")
    return nna.backends.module("cuda").device_count()


def test_nccl_on_one_gpu():
    _gpus()
    from nnarray.distributed.nccl import NcclTransport
    comm = Communicator(LocalTransport(), 0, Context("cuda", 0))
    comm._nccl = NcclTransport(comm._host, 0)  # a one-rank NCCL communicator
    comm.size = 2  # pretend a second rank so the NCCL path runs (it adds nothing)
    with nna.context_scope("cuda:0"):
        xs = [nna.array(np.full((2, 3), 3.0, np.float32)), nna.array(np.arange(4.0))]
        for x in xs:
            x.get_data("rw")
        nna.reset_transfer_stats()
        comm.all_reduce(xs, op="sum")
        comm.all_reduce(xs, op="mean")  # sum over one rank, divided by the pretended two
        comm.broadcast(xs, root=0)
        assert nna.transfer_stats()["count"] == 0  # NCCL on the device
        np.testing.assert_array_equal(xs[0].numpy(), np.full((2, 3), 1.5))
        np.testing.assert_array_equal(xs[1].numpy(), np.arange(4.0) / 2)
        assert all(x.head == "cuda:0" for x in xs)


def test_nccl_on_two_ranks():
    if _gpus() < 2:
        pytest.skip("NCCL across ranks needs two GPUs (one per rank)")
    p, _ = mpirun("ops", "cuda")
    assert p.returncode == 0, p.stdout
    assert p.stdout.count("ops ok on rank") == 2, p.stdout
