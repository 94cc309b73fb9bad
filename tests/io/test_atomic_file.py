"""Atomic file writes (``nnarray.atomic_file``): concurrent writers of one path, threads
and processes, leave a whole file from one of them, never a torn one, and never fail."""

from __future__ import annotations

import os
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


_WRITER = r"""
import sys
import numpy as np
from nnarray.grad import Graph
from nnarray.nn import serialization
graph, net, ckpt, k = sys.argv[1:]
g = Graph.from_json(open(graph, encoding="utf-8").read())
for _ in range(15):
    g.save(net)
    serialization.save_npz(ckpt, {"w": np.full(1000 * (int(k) + 1), int(k), np.int32)})
"""


def test_concurrent_saves_from_processes(tmp_path):
    graphs = _graphs(4)
    texts = {g.to_json() for g in graphs}
    net, ckpt = tmp_path / "net.json", tmp_path / "model.npz"
    graphs[0].save(net)
    sources = []
    for k, g in enumerate(graphs):
        sources.append(tmp_path / f"src{k}.json")
        sources[-1].write_text(g.to_json(), encoding="utf-8")
    reader = _Reader(net, texts)
    reader.start()
    try:
        procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(src), str(net),
                                   str(ckpt), str(k)], cwd=ROOT, stderr=subprocess.PIPE,
                                  text=True) for k, src in enumerate(sources)]
        errs = [p.communicate(timeout=CHILD_LIMIT)[1] for p in procs]
    finally:
        reader.stop.set()
        reader.join()
    assert [p.returncode for p in procs] == [0] * len(procs), errs
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
