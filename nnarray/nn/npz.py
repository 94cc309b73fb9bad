"""Reading ``.npz`` archives that may be hostile.

Names come from the zip central directory and shapes and dtypes from each ``.npy``
header before any array data is read, so a file can be refused (wrong entries, a header
or a size out of bounds, a compression method numpy never writes) at the cost of a few
hundred bytes; the data then decompresses straight into an array of the size the
headers declared and agree on, never more.
"""

from __future__ import annotations

import io
import math
import os
import struct
import tokenize
import zipfile
import zlib
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from .. import dtypes
from ..errors import NnarrayError

#: The largest ``.npy`` header read (numpy's own bound; real ones are ~128 bytes).
MAX_HEADER = 10000
_MAGIC = b"\x93NUMPY"
_CHUNK = 1 << 20
_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)  # what np.savez(_compressed) writes
_BROKEN = (zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError, ValueError,
           OSError, EOFError, KeyError, struct.error)



class CheckpointError(NnarrayError, ValueError):
    """A checkpoint that cannot be loaded: unreadable, or with missing, extra,
    mis-shaped or mis-typed entries."""


#: The ``.npy`` descr numpy gives a bfloat16 array (``|V2``): read back as bfloat16.
_BF16_BITS = np.dtype("V2")

def fail(path: str, why: str) -> CheckpointError:
    return CheckpointError(f"checkpoint {path!r} {why}")


class Entry(NamedTuple):
    """One archive member's ``.npy`` header: what it declares, nothing read yet."""

    info: zipfile.ZipInfo
    shape: tuple[int, ...]
    dtype: np.dtype
    fortran: bool
    nbytes: int


def headers(z: zipfile.ZipFile, path: str) -> dict[str, Entry]:
    """``{name: Entry}`` for every member of ``z``, from its headers alone."""
    out: dict[str, Entry] = {}
    for info in z.infolist():
        name = info.filename[:-4] if info.filename.endswith(".npy") else None
        if name is None or name in out:
            raise fail(path, f"entry {info.filename!r} is not a unique '<name>.npy' member")
        if info.compress_type not in _METHODS or info.flag_bits & 1:
            raise fail(path, f"entry {name!r} uses zip compression method "
                             f"{info.compress_type}{' (encrypted)' if info.flag_bits & 1 else ''}"
                             "; checkpoints are stored or deflated")
        out[name] = _header(z, info, name, path)
    return out


def _header(z: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, path: str) -> Entry:
    with z.open(info) as f:
        head = f.read(8)
        if len(head) < 8 or head[:6] != _MAGIC:
            raise fail(path, f"entry {name!r} is not a .npy array")
        version = (head[6], head[7])
        if version not in ((1, 0), (2, 0)):
            raise fail(path, f"entry {name!r} has .npy format version {version}")
        size_field = f.read(2 if version == (1, 0) else 4)
        hlen = int.from_bytes(size_field, "little")
        if len(size_field) not in (2, 4) or hlen > MAX_HEADER:
            raise fail(path, f"entry {name!r} declares a {hlen}-byte .npy header "
                             f"(at most {MAX_HEADER})")
        text = f.read(hlen)
    if len(text) != hlen:
        raise fail(path, f"entry {name!r} has a truncated .npy header")
    reader = (np.lib.format.read_array_header_1_0 if version == (1, 0)
              else np.lib.format.read_array_header_2_0)
    try:
        shape, fortran, dtype = reader(io.BytesIO(size_field + text),
                                       max_header_size=MAX_HEADER)
    except (ValueError, SyntaxError, tokenize.TokenError) as e:  # numpy parses it as Python
        raise fail(path, f"entry {name!r} has a corrupt .npy header {text[:200]!r} "
                         f"(member at byte {info.header_offset}: {e})") from None
    if dtype == _BF16_BITS:  # what numpy writes for ml_dtypes' bfloat16 (no type code)
        dtype = dtypes.bfloat16  # imports ml_dtypes
    elif dtype.kind not in "biufc":
        raise fail(path, f"entry {name!r} has dtype {dtype}; checkpoints hold numbers")
    nbytes = math.prod(shape) * dtype.itemsize
    data_at = 8 + len(size_field) + hlen
    if info.file_size != data_at + nbytes:  # also bounds what decompression may make
        raise fail(path, f"entry {name!r} declares shape {shape} {dtype} ({nbytes} bytes) "
                         f"but its archive member holds {info.file_size - data_at} bytes "
                         "of data")
    return Entry(info, tuple(shape), dtype, bool(fortran), nbytes)


def read_entry(z: zipfile.ZipFile, e: Entry) -> np.ndarray:
    """The array of entry ``e``: its data read in chunks into an array of its size (the
    zip reader stops at the member's declared size and checks its CRC there)."""
    buf = np.empty(e.nbytes, np.uint8)
    view = memoryview(buf)
    with z.open(e.info) as f:
        f.read(e.info.file_size - e.nbytes)  # the header, already parsed
        pos = 0
        while pos < e.nbytes:
            n = f.readinto(view[pos:pos + _CHUNK])
            if not n:
                raise EOFError(f"entry ends after {pos} of {e.nbytes} data bytes")
            pos += n
        f.read(1)  # at the end: the CRC check
    return buf.view(e.dtype).reshape(e.shape, order="F" if e.fortran else "C")


def read(path: str,
         check: Callable[[dict[str, Entry]], None] | None = None) -> dict[str, np.ndarray]:
    """Every array of the archive at ``path``: ``check`` (which raises to refuse) sees
    the headers first; a broken archive raises ``CheckpointError`` saying why."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"checkpoint {path!r} does not exist")
    try:
        with zipfile.ZipFile(path) as z:
            entries = headers(z, path)
            if check is not None:
                check(entries)
            return {k: read_entry(z, e) for k, e in entries.items()}
    except CheckpointError:
        raise
    except _BROKEN as e:
        raise fail(path, _why(path, e)) from e


def _why(path: str, e: BaseException) -> str:
    try:
        with open(path, "rb") as f:
            if f.read(6) == _MAGIC:
                return "is not an .npz archive (a single .npy array)"
    except OSError:
        pass
    return f"is corrupt or not an .npz file: {type(e).__name__}: {e}"


def summary(entries: Mapping[str, Entry]) -> dict[str, tuple[tuple[int, ...], Any]]:
    """``{name: (shape, dtype)}`` of the headers."""
    return {k: (e.shape, e.dtype) for k, e in entries.items()}
