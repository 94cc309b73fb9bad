"""One NVIDIA GPU, through CuPy.

Every allocation, copy, pool query and kernel (``bind``) runs inside
``cupy.cuda.Device(device_id)``, so it lands on this device whatever CuPy's current
device is. Device memory comes from CuPy's per-device memory pool; an allocation it
cannot serve releases every pool's cache and retries once, then raises nnarray's
``OutOfMemoryError``. Host copies of 1 MiB or more land in pinned (page-locked) buffers
from CuPy's pinned pool: the device-to-host copy runs at full bus speed and a later
host-to-device copy of the same buffer does too. That copy is asynchronous from pinned
memory, and the buffer stays the array's current host copy, so ``from_host`` waits for
it: a later in-place host write cannot change what the GPU is still reading. Peer
copies between GPUs use ``cudaMemcpyPeer`` (peer access is enabled once per pair where
the hardware allows). Kernels report bad values they find (labels or indices out of
range) in a small device buffer, raised at the next ``synchronize()`` or host read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ...device import Device
from ...dtypes import is_bfloat16
from ...errors import DTypeError, InvalidValueError
from ...memory import out_of_memory, release_all
from . import raw
from .scope import scoped

#: Host buffers of at least this many bytes are pinned.
PINNED_MIN_BYTES = 1 << 20

#: Raises ``err[0] = 1, err[1] = value, err[2] = bound, err[3] = code`` for an element of
#: ``t`` outside ``[lo, hi)`` (``code`` says which check: ``CudaDevice.check_range``).
CHECK_RANGE = raw.Source(r"""
extern "C" __global__ void nna_check_range(const long long* t, long long n, long long lo,
                                           long long hi, long long code, long long* err) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        long long v = t[i];
        if (v < lo || v >= hi) { err[1] = v; err[2] = hi; err[3] = code; err[0] = 1; }
    }
}
""", by="plain")


class CudaDevice(Device):
    backend = "cuda"
    dlpack_types = (2, 13)  # kDLCUDA, kDLCUDAManaged

    def __init__(self, device_id: int = 0) -> None:
        import cupy
        import cupyx
        super().__init__(device_id)
        self._cp = cupy
        self._empty_pinned = cupyx.empty_pinned
        self._rt = cupy.cuda.runtime
        self.scope = cupy.cuda.Device(device_id)
        self.pool = cupy.get_default_memory_pool()
        self._peers: set[int] = set()
        self._oom = cupy.cuda.memory.OutOfMemoryError
        self._pinned_type = cupy.cuda.PinnedMemoryPointer
        from .probe import device_count
        self._single = device_count() == 1
        self._err: Any = None
        self._checks: list[tuple[str, str]] = []  # (op, message) per check code
        self._pending = False

    def bind(self, fn: Callable) -> Callable:
        """``fn`` run inside this GPU's scope, its fast paths too (``scope.scoped``); on
        a machine with one GPU, ``fn`` itself."""
        if self._single:
            return fn
        return scoped(fn, functools.partial(self._cp.cuda.Device, self.device_id))

    # -- allocation ------------------------------------------------------------------
    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return self._alloc(self._cp.empty, shape, dtype)

    def full(self, shape: tuple[int, ...], dtype: np.dtype, value: Any) -> Any:
        return self._alloc(lambda s, d: self._cp.full(s, value, d), shape, dtype)

    def _alloc(self, make: Callable, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """``make(shape, dtype)`` here; CuPy's out-of-memory error releases every pool's
        cache and retries once, then becomes nnarray's ``OutOfMemoryError``. bfloat16
        is refused (``DTypeError``): CuPy has no bfloat16 arrays, and no
        ``__nv_bfloat16`` kernel path exists yet."""
        if is_bfloat16(dtype):
            raise DTypeError(f"{self.key}: dtype bfloat16 is not supported on CUDA yet (CuPy "
                             "has no bfloat16 arrays); use float16, or bfloat16 on numpy or "
                             "OpenCL")
        try:
            with self.scope:
                return make(shape, dtype)
        except self._oom:
            pass
        release_all()  # every device's pool, each in its own scope
        try:
            with self.scope:
                return make(shape, dtype)
        except self._oom as e:
            nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            raise out_of_memory(self.key, shape, dtype, nbytes, e) from None

    def memory_stats(self) -> dict[str, int]:
        """CuPy's pool: ``in_use`` is its used bytes; ``peak`` is the most seen at the
        allocations made through this device and at these queries (kernels allocating
        through CuPy directly are seen at the next query)."""
        with self.scope:  # the default pool answers for the current device
            used = self.pool.used_bytes()
        self._peak = max(getattr(self, "_peak", 0), used)
        return {"in_use": used, "peak": self._peak}

    def reset_peak_memory(self) -> None:
        with self.scope:
            self._peak = self.pool.used_bytes()

    def empty_cache(self) -> None:
        with self.scope:
            self.pool.free_all_blocks()

    # -- transfers -------------------------------------------------------------------
    def from_host(self, a: np.ndarray, out: Any = None) -> Any:
        if out is None:
            out = self.empty(a.shape, a.dtype)
        with self.scope:
            if a.size:
                out.set(a)
                if a.nbytes >= PINNED_MIN_BYTES and self.is_pinned(a):  # async: docstring
                    self._cp.cuda.get_current_stream().synchronize()
            return out

    def is_pinned(self, a: np.ndarray) -> bool:
        """Whether host array ``a`` lies in CuPy's pinned memory (``host_buffer``)."""
        while isinstance(a, np.ndarray):
            a = a.base
        return isinstance(a, self._pinned_type)

    def to_host(self, x: Any, out: np.ndarray | None = None) -> np.ndarray:
        with self.scope:
            if out is None:
                out = self.host_buffer(x.shape, x.dtype)
            if x.size:
                x.get(out=out)
        if self._pending:
            self._raise_reported()
        return out

    def host_buffer(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """A C-contiguous host array, pinned when it is large (plain if pinning fails)."""
        if np.dtype(dtype).itemsize * int(np.prod(shape, dtype=np.int64)) >= PINNED_MIN_BYTES:
            try:
                return self._empty_pinned(shape, dtype)
            except Exception:  # pinned memory exhausted: pageable still works
                pass
        return np.empty(shape, dtype)

    def can_copy_from(self, src: Device) -> bool:
        """GPU-to-GPU copies go peer to peer."""
        return src.backend == "cuda"

    def copy_from(self, src: Device, x: Any, out: Any = None) -> Any:
        """GPU-to-GPU copy (peer)."""
        if out is None:
            out = self.empty(x.shape, x.dtype)
        with self.scope:
            if x.nbytes:
                self._enable_peer(src.device_id)
                # Serialized with pending work on both devices (unlike a plain memcpy).
                self._rt.memcpyPeer(out.data.ptr, self.device_id, x.data.ptr,
                                    src.device_id, x.nbytes)
            return out

    def _enable_peer(self, peer: int) -> None:
        if peer in self._peers or peer == self.device_id:
            return
        self._peers.add(peer)
        try:
            if self._rt.deviceCanAccessPeer(self.device_id, peer):
                self._rt.deviceEnablePeerAccess(peer)
        except Exception:  # already enabled, or unsupported: memcpyPeer stages via host
            pass

    # -- views ---------------------------------------------------------------------------
    def strided(self, x: Any, offset: int, shape: tuple[int, ...],
                strides: tuple[int, ...]) -> Any:
        """A CuPy view of ``x``'s elements ``offset + i . strides``."""
        it = x.itemsize
        with self.scope:
            return self._cp.lib.stride_tricks.as_strided(
                x.reshape(-1)[offset:], shape, tuple(s * it for s in strides))

    def gather(self, x: Any, offset: int, shape: tuple[int, ...],
               strides: tuple[int, ...]) -> Any:
        with self.scope:
            return self.strided(x, offset, shape, strides).copy()

    def scatter(self, x: Any, offset: int, shape: tuple[int, ...], strides: tuple[int, ...],
                src: Any) -> None:
        if src.size:
            with self.scope:
                self.strided(x, offset, shape, strides)[...] = src

    # -- the rest ----------------------------------------------------------------------
    def import_dlpack(self, obj: Any) -> Any:
        with self.scope:
            x = self._cp.from_dlpack(obj)
            return x if x.flags.c_contiguous else self._cp.ascontiguousarray(x)

    def synchronize(self) -> None:
        self.scope.synchronize()
        if self._pending:
            self._raise_reported()

    # -- device-side checks ---------------------------------------------------------------
    def check_range(self, op: str, t: Any, lo: int, hi: int, message: str) -> None:
        """Queue a check that every element of the int64 array ``t`` (on this GPU) lies
        in ``[lo, hi)``; a bad one is raised as ``InvalidValueError`` naming ``op`` with
        ``message`` (formatted with ``value`` and ``bound``) at the next
        ``synchronize()`` or host read, like CUDA's device asserts (no wait here)."""
        if not t.size:
            return
        key = (op, message)
        if key not in self._checks:
            self._checks.append(key)
        with self.scope:
            if self._err is None:
                self._err = self._cp.zeros(4, np.int64)
            raw.launch(raw.kernel_plain(CHECK_RANGE, "nna_check_range"), t.size,
                       (t, raw.i64(t.size), raw.i64(lo), raw.i64(hi),
                        raw.i64(self._checks.index(key)), self._err))
        self._pending = True

    def _raise_reported(self) -> None:
        """Read the error buffer once (it is reset) and raise what a kernel reported."""
        self._pending = False
        with self.scope:
            got = self._err.get()
            if got[0]:
                self._err.fill(0)
        if got[0]:
            op, message = self._checks[int(got[3])]
            raise InvalidValueError(
                f"{op}: {message.format(value=int(got[1]), bound=int(got[2]))}; found on "
                f"{self.key} by a kernel and reported at this synchronization")

    def describe(self) -> str:
        p = self._rt.getDeviceProperties(self.device_id)
        name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
        rt = self._rt.runtimeGetVersion()
        return (f"{self.key} ({name}, compute {p['major']}.{p['minor']}, "
                f"{p['totalGlobalMem'] / 2**30:.0f} GiB, CuPy {self._cp.__version__}, "
                f"CUDA {rt // 1000}.{rt % 1000 // 10})")
