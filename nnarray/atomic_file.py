"""Atomic file writes: every file nnarray writes (graphs, ONNX models, checkpoints, solver
states, the OpenCL kernel cache) goes through ``atomic_write``.

The data goes to a temporary file in the target's folder with a name unique to the
writer, ``.tmp-<target>.<pid>@<host>.<random><ext>``; it is flushed and ``fsync``-ed,
then ``os.replace``-d over the target, and the folder is ``fsync``-ed. Readers see the
old file or the new one, never a torn mix, and concurrent writers of one path (threads,
processes, MPI ranks) do not trip over each other's temporary files: the last rename
wins. A writer killed before its rename leaves its temporary file behind; the next write
of the same target removes such orphans (``remove_orphans``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import time
from collections.abc import Iterator
from typing import IO, Any

#: A temporary file not written for this long belongs to no running write.
STALE_SECONDS = 600
_HOST = socket.gethostname()


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb",
                 encoding: str | None = None) -> Iterator[IO[Any]]:
    """A file object (``mode`` ``"wb"`` or ``"w"``) whose contents replace ``path``
    atomically when the block ends without an exception; on an exception the target is
    left as it was and the temporary file is removed."""
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_write: mode must be 'wb' or 'w', got {mode!r}")
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    remove_orphans(path)
    fd, tmp = _create(os.path.join(folder, f"{_prefix(path)}{os.getpid()}@{_HOST}."),
                      _ext(path))
    try:
        with os.fdopen(fd, mode, encoding=encoding if "b" not in mode else None) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _sync_folder(folder)


def _create(head: str, ext: str) -> tuple[int, str]:
    """A new file ``<head><random><ext>`` opened for writing, with the permissions the
    umask gives (``tempfile.mkstemp`` would make it owner-only)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        name = f"{head}{secrets.token_hex(4)}{ext}"
        try:
            return os.open(name, flags, 0o666), name
        except FileExistsError:
            continue


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Replace ``path``'s contents with ``data`` atomically."""
    with atomic_write(path, "wb") as f:
        f.write(data)


def write_text(path: str | os.PathLike, text: str) -> None:
    """Replace ``path``'s contents with ``text`` (UTF-8) atomically."""
    with atomic_write(path, "w", encoding="utf-8") as f:
        f.write(text)


def _sync_folder(folder: str) -> None:
    """Make the rename durable (POSIX; a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _prefix(path: str) -> str:
    return f".tmp-{os.path.basename(path)}."


def _ext(path: str) -> str:
    return os.path.splitext(path)[1]


def remove_orphans(path: str | os.PathLike) -> list[str]:
    """Delete temporary files that killed writes of ``path`` left in its folder; return
    their paths. One is an orphan when its writer (pid on this host) is gone, or when it
    has not been written for ``STALE_SECONDS`` (a writer on another host, a reused pid);
    a concurrent write's file is neither. Nameless ``.tmp-XXXXXXXX<ext>`` files of older
    versions go by age alone."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    prefix, ext = _prefix(path), _ext(path)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    now = time.time()
    removed = []
    for name in names:
        owner = _owner(name, prefix, ext)
        if owner is None:
            continue
        full = os.path.join(folder, name)
        try:
            pid, _, host = owner.partition("@")
            if now - os.stat(full).st_mtime > STALE_SECONDS or (
                    host == _HOST and pid.isdigit() and not _alive(int(pid))):
                os.unlink(full)
                removed.append(full)
        except OSError:
            pass  # gone already (another write cleaned it) or not ours to remove
    return removed


def _owner(name: str, prefix: str, ext: str) -> str | None:
    """``"<pid>@<host>"`` of a temporary file of the target, ``""`` for an older
    version's nameless one, ``None`` for any other file."""
    if not name.startswith(".tmp-") or not name.endswith(ext):
        return None
    if name.startswith(prefix):
        return name[len(prefix):len(name) - len(ext)].rpartition(".")[0]
    if len(name) == len(".tmp-XXXXXXXX") + len(ext):
        return ""
    return None


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
