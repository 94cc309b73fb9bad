"""Atomic file writes (``nnarray.atomic_file``): concurrent writers of one path, threads
and processes, leave a whole file from one of them, never a torn one, and never fail."""

from __future__ import annotations

import inspect
import json
import os
import select
import subprocess
import sys
import threading

import numpy as np
import pytest
from helpers import CHILD_LIMIT

import nnarray.functions as F
from nnarray import atomic_file
from nnarray.grad import Graph, Variable
from nnarray.nn import serialization

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _graphs(n: int) -> list[Graph]:
    """``n`` graphs whose JSON texts differ in length (a torn mix is never one of them)."""
    out = []
    for k in range(n):
        y = Variable((3, 4), name="x")
        for _ in range(3 + 30 * k):
            y = F.tanh(y)
        out.append(Graph(y))
    return out


def _temp_files(folder) -> list[str]:
    return [n for n in os.listdir(folder) if n.startswith(".tmp-")]


class _Reader(threading.Thread):
    """Reads ``path`` until stopped; records every read that is not one of ``texts``."""

    def __init__(self, path, texts) -> None:
        super().__init__()
        self.path, self.texts, self.bad, self.reads = path, texts, [], 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            with open(self.path, encoding="utf-8") as f:  # exists throughout
                text = f.read()
            self.reads += 1
            if text not in self.texts:
                self.bad.append(len(text))


def test_concurrent_graph_saves_from_threads(tmp_path):
    path = tmp_path / "net.json"
    graphs = _graphs(6)
    texts = {g.to_json() for g in graphs}
    graphs[0].save(path)
    reader = _Reader(path, texts)
    reader.start()
    errors = []

    def save(g):
        try:
            for _ in range(15):
                g.save(path)
        except Exception as e:  # FileNotFoundError when writers shared "<path>.tmp"
            errors.append(repr(e))

    threads = [threading.Thread(target=save, args=(g,)) for g in graphs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    reader.stop.set()
    reader.join()
    assert errors == [] and reader.bad == [] and reader.reads > 0
    assert path.read_text(encoding="utf-8") in texts
    assert Graph.load(path).to_json() in texts
    assert _temp_files(tmp_path) == []


# One child Python builds the graphs with ``_graphs``' own source (``Graph.from_json`` would first
# import every op module, ~1 s), then forks a writer process per graph: the writers start
# together and still have their own pids (a child Python each paid its imports, ~2 s, at
# its own time). The parent's reader starts when the child is ready to fork, not while it
# imports.
_WRITERS = r"""
from __future__ import annotations
import json, os, sys, traceback
import numpy as np
import nnarray.functions as F
from nnarray.grad import Graph, Variable
from nnarray.nn import serialization
""" + inspect.getsource(_graphs) + r"""
net, ckpt, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
graphs = _graphs(n)
print(json.dumps([g.to_json() for g in graphs]), flush=True)  # what the writers write
print("ready", flush=True)
sys.stdin.readline()  # the parent's reader runs
pids = []
for k, g in enumerate(graphs):
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            for _ in range(15):
                g.save(net)
                serialization.save_npz(ckpt, {"w": np.full(1000 * (k + 1), k, np.int32)})
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stderr.flush()
        os._exit(code)
    pids.append(pid)
codes = [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids]
sys.exit(f"writers' exit codes {codes}" if any(codes) else 0)
"""


def test_concurrent_saves_from_processes(tmp_path):
    net, ckpt = tmp_path / "net.json", tmp_path / "model.npz"
    child = subprocess.Popen([sys.executable, "-c", _WRITERS, str(net), str(ckpt), "4"],
                             cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    reader = None
    try:
        if not select.select([child.stdout], [], [], CHILD_LIMIT)[0]:
            pytest.fail(f"the writers' child hung (killed after {CHILD_LIMIT} s)")
        # the child's own texts: a graph's JSON in this worker may differ from a fresh
        # process's (state earlier tests left), which made every read look torn
        written = json.loads(child.stdout.readline())
        texts = set(written)
        net.write_text(written[0], encoding="utf-8")
        reader = _Reader(net, texts)
        ready = child.stdout.readline()
        reader.start()
        _, err = child.communicate("go\n", timeout=CHILD_LIMIT)
    finally:
        child.kill()
        if reader is not None:
            reader.stop.set()
            if reader.is_alive():
                reader.join()
    assert ready == "ready\n" and child.returncode == 0, err[-4000:]
    assert reader.bad == [] and reader.reads > 0
    assert net.read_text(encoding="utf-8") in texts
    w = serialization.read_npz(ckpt)["w"]
    k = int(w[0])
    np.testing.assert_array_equal(w, np.full(1000 * (k + 1), k, np.int32))
    assert _temp_files(tmp_path) == []


def test_a_failed_write_leaves_the_target_and_no_temporary_file_and_modes_follow_umask(tmp_path):
    path = tmp_path / "state.bin"
    atomic_file.write_bytes(path, b"old")
    with pytest.raises(RuntimeError, match="midway"):
        with atomic_file.atomic_write(path) as f:
            f.write(b"new, partly")
            raise RuntimeError("midway")
    assert path.read_bytes() == b"old" and _temp_files(tmp_path) == []
    atomic_file.write_text(path, "new")
    assert path.read_text(encoding="utf-8") == "new"
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # as open() makes it, not 0o600
    with pytest.raises(ValueError, match="mode"):
        with atomic_file.atomic_write(path, "a"):
            pass
