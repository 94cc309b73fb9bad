"""Checkpoint files after faults: killed saves leave no orphans behind for good, and a
file that is not an ``.npz`` archive is a ``CheckpointError`` naming it."""

from __future__ import annotations

import io
import os
import re
import socket
import struct
import subprocess
import sys
import time
import zipfile

import forked
import numpy as np
import pytest
from helpers import CHILD_LIMIT, peak_rss

from nnarray import atomic_file, nn
from nnarray.nn import serialization

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
        r = forked.run(_KILLED_SAVE, str(path), timeout=CHILD_LIMIT)
        assert r.returncode == -9, r.stderr
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
    # a live writer for the whole test (killed below), however slowly the machine runs it
    sleeper = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({CHILD_LIMIT})"])
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


# -- hostile archives: refused from their headers, before their data is read ------------
_LOAD = "from nnarray import nn; nn.Linear(3, 2).load(path)"
_BIG = 2**26  # float32 elements: a 256 MiB entry that deflates to about 256 KiB
_PEAK_MB = 300  # the interpreter with nnarray is about 40 MiB; reading an entry is +512


def _npy(a: np.ndarray) -> bytes:
    f = io.BytesIO()
    np.save(f, a)
    return f.getvalue()


def _header(n: int) -> bytes:
    f = io.BytesIO()
    np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False,
                                             "shape": (n,)})
    return f.getvalue()


def _member(z: zipfile.ZipFile, name: str, head: bytes, zeros: int, fill: bytes = b"\0"):
    """A deflated member: ``head``, then ``zeros`` bytes of ``fill``, written in chunks."""
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    with z.open(info, "w", force_zip64=True) as f:
        f.write(head)
        chunk = fill * (1 << 22)
        for at in range(0, zeros, len(chunk)):
            f.write(chunk[:zeros - at])


def _linear_archive(path, method=zipfile.ZIP_STORED, **bad) -> None:
    """The checkpoint of ``nn.Linear(3, 2)`` (``W``, ``b``), plus the members ``bad``
    gives as ``name: (head, zeros[, fill])``; a bad ``W`` replaces the real one."""
    with zipfile.ZipFile(path, "w", method) as z:
        if "W" not in bad:
            z.writestr("W.npy", _npy(np.ones((3, 2), np.float32)))
        z.writestr("b.npy", _npy(np.ones(2, np.float32)))
        for name, spec in bad.items():
            _member(z, f"{name}.npy", *spec)


@pytest.mark.parametrize("case, bad, match", [
    ("unexpected", {"evil": (_header(_BIG), 4 * _BIG)}, r"unexpected entries \['evil'\]"),
    ("bigger", {"W": (_header(_BIG), 4 * _BIG)}, r"'W' has shape \(67108864,\), expected"),
    ("header", {"c": (b"\x93NUMPY\x02\x00" + struct.pack("<I", 4 * _BIG), 4 * _BIG, b" ")},
     r"'c' declares a 268435456-byte \.npy header"),
])
def test_hostile_entry_is_refused_before_its_data_is_read(tmp_path, case, bad, match):
    path = tmp_path / f"{case}.npz"
    _linear_archive(path, **bad)
    assert os.path.getsize(path) < 2**20
    outcome, peak = peak_rss(_LOAD, path)
    assert outcome.startswith("CheckpointError") and re.search(match, outcome), outcome
    assert peak < _PEAK_MB, f"peak RSS {peak} MiB loading a {case} archive"


def _flip_method(path, method: int) -> None:
    """Rewrite every member's compression method, in local and central headers."""
    b = bytearray(path.read_bytes())
    for sig, at in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
        i = b.find(sig)
        while i >= 0:
            b[i + at:i + at + 2] = struct.pack("<H", method)
            i = b.find(sig, i + 4)
    path.write_bytes(bytes(b))


@pytest.mark.parametrize("stored, method", [(True, 1), (True, 8), (True, 99), (False, 0),
                                            (False, 12)])
def test_flipped_compression_field_is_a_checkpoint_error(backend, tmp_path, stored, method):
    path = tmp_path / "flipped.npz"
    _linear_archive(path, zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED)
    _flip_method(path, method)
    m = nn.Linear(3, 2)
    before = m.W.d.copy()
    with pytest.raises(nn.CheckpointError, match="flipped.npz"):
        m.load(path)
    np.testing.assert_array_equal(m.W.d, before)


@pytest.mark.parametrize("damage", ["crc", "size", "truncated", "object", "version",
                                    "header"])
def test_damaged_member_is_a_checkpoint_error(tmp_path, damage):
    path = tmp_path / "damaged.npz"
    w = np.ones((3, 2), np.float32)
    if damage == "object":
        w = np.array([None] * 6, object).reshape(3, 2)
    blob = _npy(w) if damage != "object" else np.lib.format.magic(1, 0) + _npy(w)[8:]
    if damage == "size":
        blob += b"\0\0\0\0"
    if damage == "truncated":
        blob = blob[:-4]
    if damage == "version":
        blob = blob[:6] + b"\x07\x00" + blob[8:]
    if damage == "header":  # the header's text zeroed: numpy's parser raises TokenError
        blob = blob[:10] + bytes(len(blob) - 10 - 24) + blob[-24:]
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("W.npy", blob)
        z.writestr("b.npy", _npy(np.ones(2, np.float32)))
    if damage == "crc":
        b = bytearray(path.read_bytes())
        b[b.index(b"\x00\x00\x80?")] ^= 1  # the first data byte of W
        path.write_bytes(bytes(b))
    with pytest.raises(nn.CheckpointError, match="damaged.npz"):
        nn.Linear(3, 2).load(path)


def test_reader_matches_numpy_on_what_numpy_writes(backend, tmp_path):
    rng = np.random.default_rng(0)
    arrays = {"f": np.asfortranarray(rng.standard_normal((3, 4))), "e": np.zeros((0, 2)),
              "big_endian": np.arange(5, dtype=">i4"), "s": np.array(2.5, np.float16),
              "flags": rng.random(7) < 0.5, "u": np.arange(6, dtype=np.uint16)}
    path = tmp_path / "c.npz"
    np.savez_compressed(path, **arrays)
    got = serialization.read_npz(path)
    with np.load(path) as want:
        assert list(got) == list(want.files)
        for k in want.files:
            assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape
            np.testing.assert_array_equal(got[k], want[k])
    assert got["f"].flags.f_contiguous
    m = nn.Linear(3, 2)
    m.W.d = rng.standard_normal((3, 2)).astype(np.float32)
    m.save(tmp_path / "m.npz")
    m2 = nn.Linear(3, 2)
    m2.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(m2.W.d, m.W.d)
