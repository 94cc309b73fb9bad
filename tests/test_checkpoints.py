"""Checkpoint files after faults: killed saves leave no orphans behind for good, and a
file that is not an ``.npz`` archive is a ``CheckpointError`` naming it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from nnarray import atomic_file, nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A child that dies by SIGKILL in the middle of writing its checkpoint.
_KILLED_SAVE = r"""
import os, signal, sys
import numpy as np
from nnarray import atomic_file, nn

def die(f, **arrays):
    f.write(b"PK partial")
    f.flush()
    os.kill(os.getpid(), signal.SIGKILL)

np.savez = die
nn.Linear(3, 2).save(sys.argv[1])
"""


def _tmp_files(folder) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.startswith(".tmp-"))


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_killed_saves_leave_orphans_the_next_save_removes(tmp_path):
    path = tmp_path / "model.npz"
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", _KILLED_SAVE, str(path)], cwd=ROOT,
                           capture_output=True, timeout=120)
        assert r.returncode == -9, r.stderr.decode()
    # the second killed save already removed the first one's orphan; its own is left
    assert len(_tmp_files(tmp_path)) == 1 and not path.exists()
    m = nn.Linear(3, 2)
    m.save(path)
    assert _tmp_files(tmp_path) == []
    m2 = nn.Linear(3, 2)
    m2.load(path)
    np.testing.assert_array_equal(m2.W.d, m.W.d)


def test_orphan_cleanup_spares_concurrent_saves_and_other_targets(tmp_path):
    path = tmp_path / "model.npz"
    host = socket.gethostname()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        files = {
            "live": f".tmp-model.npz.{sleeper.pid}@{host}.abcd1234.npz",  # a save running now
            "dead": f".tmp-model.npz.{dead.pid}@{host}.abcd1234.npz",  # its writer is gone
            "other-host": f".tmp-model.npz.{dead.pid}@not-{host}.abcd1234.npz",  # recent
            "other-target": f".tmp-other.npz.{dead.pid}@{host}.abcd1234.npz",
            "old-live": f".tmp-model.npz.{sleeper.pid}@{host}.zzzz1234.npz",
            "legacy-old": ".tmp-k2j4h5g6.npz",  # an older version's nameless orphan
            "legacy-new": ".tmp-q1w2e3r4.npz",
        }
        for name in files.values():
            (tmp_path / name).write_bytes(b"partial")
        stale = time.time() - atomic_file.STALE_SECONDS - 60
        for k in ("old-live", "legacy-old"):
            os.utime(tmp_path / files[k], (stale, stale))
        nn.Linear(3, 2).save(path)
        left = set(_tmp_files(tmp_path))
        assert left == {files[k] for k in ("live", "other-host", "other-target",
                                           "legacy-new")}
    finally:
        sleeper.kill()
        sleeper.wait()


def test_loading_a_npy_file_is_a_checkpoint_error(tmp_path):
    path = tmp_path / "weights.npy"
    np.save(path, np.zeros(3, np.float32))
    with pytest.raises(nn.CheckpointError, match=r"weights\.npy.*not an \.npz"):
        nn.Linear(3, 2).load(path)
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(nn.CheckpointError, match=r"notes\.txt"):
        nn.Linear(3, 2).load(text)
