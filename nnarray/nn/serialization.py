"""Checkpoint files: ``.npz`` archives written atomically and read back with validation."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..atomic_file import atomic_write
from . import npz
from .npz import CheckpointError


def save_npz(path: str | os.PathLike, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays`` to ``path`` atomically (``nnarray.atomic_file``: no torn
    checkpoints, concurrent saves of one path do not collide, and a later save removes
    the temporary files of killed ones)."""
    with atomic_write(path) as f:
        np.savez(f, **dict(arrays))


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
