"""Many threads doing math on one device at once: correct results, and no hang.

pocl's basic driver (the PyPI wheel, ``opencl:0`` here) deadlocked with two threads
enqueueing on one queue while one held the GIL, so the work runs in a child interpreter
(``forked.run``): a join timeout cannot fire in a process whose GIL a hung thread holds.
The child dumps every thread's stack (``faulthandler``) and exits when its threads do not
finish in time; the parent kills it after a longer limit.

The threads probe their backends at once, then make their devices at once (barriers; the
child has used none before): each must get the one device object. Threads making
``opencl:1`` together once got several, each with its own queue and pool on one context,
and copies between them computed wrong results on pocl's pthread driver (``made_once`` in
``nnarray/device.py``).
"""

from __future__ import annotations

import subprocess

import forked
import pytest
from helpers import CHILD_LIMIT

import nnarray as nna

_CHILD = r"""
import faulthandler, sys, threading
import numpy as np
import nnarray as nna
import nnarray.functions as F

ctxs, n_threads, iters = sys.argv[1].split(","), int(sys.argv[2]), int(sys.argv[3])
limit = int(sys.argv[5])  # a hang guard well inside the parent's limit, never a speed check
full = sys.argv[4] == "full"  # also matmul, sum and synchronize each step (else only ew)
faulthandler.dump_traceback_later(limit + 30, exit=True)  # fires even if the GIL is held
errors = []
devices = {}  # context -> ids of the device objects its threads got
start = threading.Barrier(n_threads)

def work(ctx, seed):
    try:
        name, _, i = ctx.partition(":")
        start.wait(limit)
        nna.backends.why_unavailable(name)  # every thread probes the platform at once,
        start.wait(limit)  # then makes its device at once
        devices.setdefault(ctx, set()).add(id(nna.backends.get_device(name, int(i))))
        with nna.context_scope(ctx):
            rng = np.random.default_rng(seed)
            a_np = (rng.integers(-4, 5, (64, 64)) / 4).astype(np.float32)
            a = nna.array(a_np)
            want = 2 * a_np * a_np
            for _ in range(iters):
                c = F.mul(F.add(a, a), a)  # the temporary is freed as soon as mul is queued
                if not full:
                    np.testing.assert_array_equal(np.asarray(c), want)
                    continue
                m = F.matmul(c, a)
                assert float(F.sum(c)) == float(want.sum())
                np.testing.assert_allclose(np.asarray(m), want @ a_np, rtol=1e-5)
                nna.device_synchronize()
    except BaseException as e:
        errors.append(f"{ctx}: {e!r}")

ts = [threading.Thread(target=work, args=(ctxs[i % len(ctxs)], i), daemon=True)
      for i in range(n_threads)]
for t in ts:
    t.start()
for t in ts:
    t.join(limit)
hung = sum(t.is_alive() for t in ts)
twins = {c: len(ids) for c, ids in devices.items() if len(ids) > 1}
print(f"hung={hung} errors={errors[:4]} device objects per context beyond one={twins}")
sys.exit(1 if hung or errors or twins else 0)
"""


def _run_threads(ctxs: list[str], n_threads: int = 8, iters: int = 100,
                 work: str = "full") -> None:
    try:
        r = forked.run(_CHILD, ",".join(ctxs), str(n_threads), str(iters), work,
                       str(CHILD_LIMIT - 60), timeout=CHILD_LIMIT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{n_threads} threads on {ctxs} hung (killed after {CHILD_LIMIT} s)")
    assert r.returncode == 0, (f"{n_threads} threads on {ctxs}: rc {r.returncode}\n"
                               f"{r.stdout}\n{r.stderr[-4000:]}")


def test_many_threads_one_device(backend):
    _run_threads([f"{backend}:0"])


def _devices_of(backends: list[str]) -> list[str]:
    return [f"{b}:{i}" for b in backends if nna.backends.why_unavailable(b) is None
            for i in range(nna.backends.module(b).device_count())]


def test_threads_across_devices():
    ctxs = _devices_of(nna.backends.registered())
    _run_threads(ctxs, n_threads=3 * len(ctxs))


def test_threads_first_touch_every_device(backend):
    """Six threads per device of ``backend`` touch it first together, then run a chain of
    elementwise ops whose temporary is freed while the next op is queued: one device
    object each, exact results (threads making ``opencl:1`` together gave wrong results
    in about 1 of 8 processes, and two or more device objects in most)."""
    ctxs = _devices_of([backend])
    _run_threads(ctxs, n_threads=6 * len(ctxs), iters=300, work="ew")


_VIEWS = r"""
import faulthandler, sys, threading
import numpy as np
import nnarray as nna

ctxs, rounds, limit = sys.argv[1].split(","), int(sys.argv[2]), int(sys.argv[3])
faulthandler.dump_traceback_later(limit + 30, exit=True)  # fires even if the GIL is held
rows, adds, lost, errors = 40, 5, 0, []
for r in range(rounds):
    with nna.context_scope(ctxs[r % len(ctxs)]):
        a = nna.array(np.zeros((rows, 8), np.float32)) + 0
    start = threading.Barrier(len(ctxs))

    def work(k, ctx):
        try:
            start.wait(limit)
            with nna.context_scope(ctx):
                for _ in range(adds):
                    for i in range(k, rows, len(ctxs)):
                        if r % 2:
                            a[i] += 1  # a view, then setitem of the root's region
                        else:
                            v = a[i]
                            v += 1
        except BaseException as e:
            errors.append(f"{ctx}: {e!r}")

    ts = [threading.Thread(target=work, args=(k, c), daemon=True) for k, c in enumerate(ctxs)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(limit)
    if any(t.is_alive() for t in ts):
        print("hung")
        sys.exit(2)
    lost += int((np.asarray(a) != adds).any(axis=1).sum())
print(f"rows lost={lost} of {rounds * rows} errors={errors[:3]}")
sys.exit(1 if lost or errors else 0)
"""


@pytest.mark.parametrize("pair", ["numpy:0,opencl:0", "opencl:0,opencl:1", "numpy:0,opencl:1",
                                  "numpy:0,cuda:0", "cuda:0,opencl:0"])
def test_writes_through_views_from_threads_on_two_devices_are_kept(pair):
    """Two threads, each on its own device, add to disjoint rows of one array through
    views, ten rounds: every row has every add (10 of 40 rows were lost for numpy +
    ``opencl:1``, 24 for ``opencl:0`` + ``opencl:1``: one thread synced the root before
    the other's kernel wrote it, then made that copy stale; without the root locks, 10
    rounds lost 30-180 of 400 rows in each of 9 runs, 4 rounds 21-94 of 160)."""
    have = _devices_of(nna.backends.registered())
    if any(c not in have for c in pair.split(",")):
        pytest.skip(f"{pair}: not every device is available here")
    try:
        r = forked.run(_VIEWS, pair, "10", str(CHILD_LIMIT - 60), timeout=CHILD_LIMIT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"threads on {pair} hung (killed after {CHILD_LIMIT} s)")
    assert r.returncode == 0, f"{pair}: rc {r.returncode}\n{r.stdout}\n{r.stderr[-4000:]}"
