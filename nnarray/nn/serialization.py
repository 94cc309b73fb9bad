"""Checkpoint files: ``.npz`` archives written atomically and read back with validation."""

from __future__ import annotations

import os
import socket
import tempfile
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import npz
from .npz import CheckpointError

#: A temporary file not written for this long belongs to no running save.
STALE_SECONDS = 600
_HOST = socket.gethostname()


def save_npz(path: str | os.PathLike, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays`` to ``path`` atomically: a temporary file in the same folder,
    flushed to disk, then ``os.replace``-d over the target (no torn checkpoints).

    The temporary file is named ``.tmp-<target>.<pid>@<host>.<random>.npz``; a save
    killed before the replace leaves it behind, and a later save of the same target
    removes such orphans (``remove_orphans``)."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    remove_orphans(path)
    fd, tmp = tempfile.mkstemp(prefix=f"{_tmp_prefix(path)}{os.getpid()}@{_HOST}.",
                               suffix=".npz", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **dict(arrays))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _tmp_prefix(path: str) -> str:
    return f".tmp-{os.path.basename(path)}."


def remove_orphans(path: str | os.PathLike) -> list[str]:
    """Delete temporary files that killed saves of ``path`` left in its folder; return
    their paths. One is an orphan when its writer (pid on this host) is gone, or when it
    has not been written for ``STALE_SECONDS`` (a writer on another host, a reused pid);
    a concurrent save's file is neither. Nameless ``.tmp-XXXXXXXX.npz`` files of older
    versions go by age alone."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    prefix = _tmp_prefix(path)
    now = time.time()
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        if not name.endswith(".npz") or not name.startswith(".tmp-"):
            continue
        if name.startswith(prefix):
            owner = name[len(prefix):-4].rpartition(".")[0]  # "<pid>@<host>"
        elif len(name) == len(".tmp-XXXXXXXX.npz"):
            owner = ""  # an older version's nameless file
        else:
            continue
        full = os.path.join(folder, name)
        try:
            age = now - os.stat(full).st_mtime
            pid, _, host = owner.partition("@")
            if age > STALE_SECONDS or (host == _HOST and pid.isdigit()
                                       and not _alive(int(pid))):
                os.unlink(full)
                removed.append(full)
        except OSError:
            pass  # gone already (another save cleaned it) or not ours to remove
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def read_npz(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Every entry of the archive at ``path`` (``CheckpointError`` if corrupt, or not an
    ``.npz`` archive: a ``.npy`` file, say)."""
    return npz.read(os.fspath(path))


def check_entries(path: str | os.PathLike, found: Mapping[str, tuple[tuple[int, ...], Any]],
                  expected: Mapping[str, tuple[tuple[int, ...], Any]]) -> None:
    """Raise ``CheckpointError`` naming every missing, extra, mis-shaped or mis-typed
    entry; ``found`` and ``expected`` are ``{name: (shape, dtype)}``."""
    problems = []
    missing = [k for k in expected if k not in found]
    extra = [k for k in found if k not in expected]
    if missing:
        problems.append(f"missing entries {missing}")
    if extra:
        problems.append(f"unexpected entries {extra}")
    for k, (shape, dtype) in expected.items():
        if k not in found:
            continue
        got_shape, got_dtype = found[k]
        if tuple(got_shape) != tuple(shape):
            problems.append(f"entry {k!r} has shape {tuple(got_shape)}, expected {tuple(shape)}")
        elif np.dtype(got_dtype) != np.dtype(dtype):
            problems.append(f"entry {k!r} has dtype {np.dtype(got_dtype)}, expected "
                            f"{np.dtype(dtype)}")
    if problems:
        raise CheckpointError(f"checkpoint {os.fspath(path)!r} does not match: "
                              + "; ".join(problems))


def load_checked(path: str | os.PathLike,
                 expected: Mapping[str, tuple[tuple[int, ...], Any]]) -> dict[str, np.ndarray]:
    """Read ``path`` and check it holds exactly ``expected`` ``{name: (shape, dtype)}``:
    names, shapes and dtypes come from the archive's headers and are checked before any
    data is read, so a hostile file costs no more memory than the arrays expected."""
    return npz.read(os.fspath(path),
                    lambda entries: check_entries(path, npz.summary(entries), expected))
