"""Built OpenCL programs, cached in-process and on disk, and kernel launching.

Compiling a program on pocl costs 0.3-1.5 s, so every program is built once per process
(keyed by source and options) and its device binary is kept on disk: a later process
loads the binary instead of compiling. The on-disk cache is our own (not pyopencl's) so
that ``stats`` can say exactly what happened: ``compiled`` counts source compiles,
``loaded`` binary loads. Directory: ``$NNARRAY_OPENCL_CACHE_DIR``, else
``$XDG_CACHE_HOME/nnarray/opencl`` (``~/.cache/...``); set the variable to ``off`` to
disable it. Entries are written atomically (``nnarray.atomic_file``) and carry the key
they were built from, their length and a checksum: a torn or altered entry, on which pocl
would crash, is deleted and rebuilt (one stderr line under ``NNARRAY_DEBUG``).

Compiling is quiet: a first compile on a device prints one progress line to stderr (once
per device and process; on pocl a first test run compiles for minutes), and builds pass
``-w`` and filter pyopencl's ``CompilerWarning`` so that harmless compiler notes (pocl's
"AVX vector ... changes the ABI" for ``float16`` vectors) stay out of the terminal. With
``NNARRAY_DEBUG`` set, build logs are shown as the compiler wrote them.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
import sys
import threading
import warnings
from typing import Any

import numpy as np
import pyopencl as cl

from ...atomic_file import write_bytes
from ...errors import OutOfMemoryError
from ...memory import address_space_left, release_all
from .queues import HEADROOM, _locks

#: Work-group size of every 1-D launch: fixed, because pocl compiles a work-group
#: function per distinct local size (a compile each) and a size it picks varies with n.
LOCAL = 256

_enqueue = cl.enqueue_nd_range_kernel

#: Devices (by identity) whose first compile this process has announced.
_announced: set[str] = set()


def _debug() -> bool:
    return os.environ.get("NNARRAY_DEBUG", "") not in ("", "0")


def _announce(identity: str, device: cl.Device) -> None:
    """One stderr line per device and process before its first compile from source."""
    if identity in _announced:
        return
    _announced.add(identity)
    where = cache_dir()
    later = f"cached in {where} for later runs" if where else "disk cache off"
    print(f"nnarray: compiling OpenCL kernels for {device.name.strip()} "
          f"({device.platform.name.strip()}; {later})...", file=sys.stderr, flush=True)


def _build(prg: cl.Program, options: str, **kw: Any) -> cl.Program:
    """``prg.build``: quiet (``-w``, no ``CompilerWarning``) unless ``NNARRAY_DEBUG``."""
    if _debug():
        return prg.build(options, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        return prg.build(f"{options} -w".strip(), **kw)


def cache_dir() -> str | None:
    """The on-disk binary cache directory, or ``None`` when disabled."""
    d = os.environ.get("NNARRAY_OPENCL_CACHE_DIR")
    if d is not None:
        return None if d.lower() in ("", "off", "0", "none") else d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "nnarray", "opencl")


class ProgramCache:
    """Programs of one context/device: ``build(source, options)`` and ``kernel(...)``."""

    def __init__(self, context: cl.Context, device: cl.Device) -> None:
        self.context = context
        self.device = device
        self._programs: dict[tuple[str, str], cl.Program] = {}
        self._lock = threading.Lock()  # one compile at a time (threads share the cache)
        self._kernels: dict[tuple[str, str, str], cl.Kernel] = {}
        self._identity = "|".join((device.platform.name, device.platform.version, device.name,
                                   device.version, device.driver_version, cl.VERSION_TEXT))
        #: ``compiled``: programs compiled from source; ``loaded``: from the disk cache.
        self.stats = {"compiled": 0, "loaded": 0}

    def build(self, source: str, options: str = "") -> cl.Program:
        """The built program for ``source`` (cached in-process and on disk)."""
        key = (source, options)
        prg = self._programs.get(key)
        if prg is None:
            with self._lock:
                prg = self._programs.get(key)
                if prg is None:
                    prg = self._programs[key] = self._load_or_compile(source, options)
        return prg

    def kernel(self, source: str, name: str, options: str = "") -> cl.Kernel:
        """Kernel ``name`` of the program ``source`` (one object per kernel, reused)."""
        key = (source, name, options)
        k = self._kernels.get(key)
        if k is None:
            k = self._kernels[key] = cl.Kernel(self.build(source, options), name)
        return k

    def _key(self, source: str, options: str) -> bytes:
        """What the binary is built from: the device, compiler, options and source."""
        return hashlib.sha256(f"{self._identity}\0{options}\0{source}".encode()).digest()

    def _load_or_compile(self, source: str, options: str) -> cl.Program:
        _check_room()
        key = self._key(source, options)
        path = _entry_path(key)
        binary = _load(path, key) if path is not None else None
        if binary is not None:
            try:
                prg = _build(cl.Program(self.context, [self.device], [binary]), options)
                self.stats["loaded"] += 1
                return prg
            except cl.Error as e:  # intact but rejected (a driver change): compile again
                _discard(path, f"the driver rejected it ({type(e).__name__})")
        _announce(self._identity, self.device)
        prg = _build(cl.Program(self.context, source), options, cache_dir=False)
        self.stats["compiled"] += 1
        if path is not None:
            _store(path, key, prg.get_info(cl.program_info.BINARIES)[0])
        return prg


def _check_room() -> None:
    """``OutOfMemoryError`` unless a build has ``HEADROOM`` bytes of address space (after
    releasing the pools' caches): pocl's compiler crashes where its allocations fail."""
    if address_space_left() >= HEADROOM:
        return
    release_all()
    left = address_space_left()
    if left < HEADROOM:
        raise OutOfMemoryError(f"building an OpenCL program needs about {HEADROOM} bytes of "
                               f"address space; {max(int(left), 0)} are left under the "
                               f"process's limit (RLIMIT_AS)")


# -- cache entries ------------------------------------------------------------------------
# An entry is a header, ``_MAGIC``, the key (sha256 of what built it), the binary's length
# and its sha256, then the binary. A torn or altered entry fails the check and is deleted
# and rebuilt: pocl crashes on a truncated binary rather than rejecting it.
_MAGIC = b"NNACLBIN\x01"
_HEADER = struct.Struct(f"<{len(_MAGIC)}s32sQ32s")
#: Entries of this format are ``<key hex>.v2.bin``: older versions' raw ``.bin`` files are
#: neither read nor overwritten (both versions may share one cache directory).
_SUFFIX = ".v2.bin"


def _entry_path(key: bytes) -> str | None:
    d = cache_dir()
    if d is None:
        return None
    h = key.hex()
    return os.path.join(d, h[:2], h + _SUFFIX)


def _load(path: str, key: bytes) -> bytes | None:
    """The binary of the entry at ``path`` if it is intact and built from ``key``;
    ``None`` if there is none; a bad entry is deleted (see ``_discard``)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        _discard(path, f"unreadable ({e})")
        return None
    why = _check(data, key)
    if why is not None:
        _discard(path, why)
        return None
    return data[_HEADER.size:]


def _check(data: bytes, key: bytes) -> str | None:
    """Why ``data`` is not an intact entry for ``key`` (``None`` when it is)."""
    if len(data) < _HEADER.size:
        return f"{len(data)} bytes, shorter than its header"
    magic, got_key, n, digest = _HEADER.unpack_from(data)
    if magic != _MAGIC:
        return "not an entry of this version"
    if got_key != key:
        return "built from another source or device"
    if n != len(data) - _HEADER.size:
        return f"binary of {len(data) - _HEADER.size} bytes, expected {n}"
    if hashlib.sha256(memoryview(data)[_HEADER.size:]).digest() != digest:
        return "checksum mismatch"
    return None


def _discard(path: str, why: str) -> None:
    """Delete a bad entry (it is rebuilt), saying so under ``NNARRAY_DEBUG``."""
    if _debug():
        print(f"nnarray: OpenCL cache entry {path} is bad ({why}); deleted, rebuilding",
              file=sys.stderr, flush=True)
    with contextlib.suppress(OSError):
        os.unlink(path)


def _store(path: str, key: bytes, binary: bytes) -> None:
    """Write the entry atomically (concurrent processes may write the same one)."""
    header = _HEADER.pack(_MAGIC, key, len(binary), hashlib.sha256(binary).digest())
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_bytes(path, header + binary)
    except OSError:
        pass  # a read-only or full cache directory only costs compile time


#: ``id()`` of the kernels whose scalar argument types ``typed`` has declared (kernels
#: live as long as their ``ProgramCache``, i.e. the process).
_typed: set[int] = set()


def typed(kernel: cl.Kernel, args: Any) -> cl.Kernel:
    """``kernel``, its scalar argument types declared from ``args`` on first use (the numpy
    scalars' dtypes; every other argument a buffer). pyopencl sets a numpy scalar on a kernel
    without declared types through a generic path, per scalar (most of a small ``sum``'s
    time); declared, the whole ``set_args`` is one packed call.
    Every launch of one kernel passes the same scalar types (its C signature fixes them)."""
    if id(kernel) not in _typed:
        kernel.set_scalar_arg_dtypes([a.dtype if isinstance(a, np.generic) else None
                                      for a in args])
        _typed.add(id(kernel))
    return kernel


def launch(queue: cl.CommandQueue, kernel: cl.Kernel, n: int, args: Any) -> None:
    """Run ``kernel`` on ``ceil(n / LOCAL) * LOCAL`` work-items (kernels guard ``n`` or
    rely on padded buffers), under the queue's device lock (see ``device.py``)."""
    if id(kernel) not in _typed:
        typed(kernel, args)
    with _locks[id(queue)]:
        kernel.set_args(*args)
        _enqueue(queue, kernel, (-(-n // LOCAL) * LOCAL,), (LOCAL,))
