"""Checkpoint files: ``.npz`` archives written atomically and read back with validation."""

from __future__ import annotations

import os
import zipfile
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..atomic_file import atomic_write
from ..errors import NnarrayError


class CheckpointError(NnarrayError, ValueError):
    """A checkpoint that cannot be loaded: unreadable, or with missing, extra,
    mis-shaped or mis-typed entries."""


def save_npz(path: str | os.PathLike, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays`` to ``path`` atomically (``nnarray.atomic_file``: no torn
    checkpoints, concurrent saves of one path do not collide, and a later save removes
    the temporary files of killed ones)."""
    with atomic_write(path) as f:
        np.savez(f, **dict(arrays))


def read_npz(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Every entry of the archive at ``path``, fully read (``CheckpointError`` if corrupt,
    or not an ``.npz`` archive: a ``.npy`` file, say)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"checkpoint {path!r} does not exist")
    try:
        z = np.load(path, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise CheckpointError(f"checkpoint {path!r} is not an .npz archive (np.load "
                                  f"read a single {type(z).__name__}, e.g. a .npy file)")
        with z:
            return {k: np.array(z[k]) for k in z.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as e:
        if isinstance(e, CheckpointError):
            raise
        raise CheckpointError(f"checkpoint {path!r} is corrupt or not an .npz file: "
                              f"{type(e).__name__}: {e}") from e


def check_entries(path: str | os.PathLike, found: Mapping[str, np.ndarray],
                  expected: Mapping[str, tuple[tuple[int, ...], np.dtype]]) -> None:
    """Raise ``CheckpointError`` naming every missing, extra, mis-shaped or mis-typed entry."""
    problems = []
    missing = [k for k in expected if k not in found]
    extra = [k for k in found if k not in expected]
    if missing:
        problems.append(f"missing entries {missing}")
    if extra:
        problems.append(f"unexpected entries {extra}")
    for k, (shape, dtype) in expected.items():
        a = found.get(k)
        if a is None:
            continue
        if a.shape != tuple(shape):
            problems.append(f"entry {k!r} has shape {a.shape}, expected {tuple(shape)}")
        elif a.dtype != np.dtype(dtype):
            problems.append(f"entry {k!r} has dtype {a.dtype}, expected {np.dtype(dtype)}")
    if problems:
        raise CheckpointError(f"checkpoint {os.fspath(path)!r} does not match: "
                              + "; ".join(problems))


def load_checked(path: str | os.PathLike,
                 expected: Mapping[str, tuple[tuple[int, ...], Any]]) -> dict[str, np.ndarray]:
    """Read ``path`` and check it holds exactly ``expected`` ``{name: (shape, dtype)}``."""
    found = read_npz(path)
    check_entries(path, found, expected)
    return found
