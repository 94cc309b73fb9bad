"""One NVIDIA GPU, through CuPy.

Every allocation and copy runs inside ``cupy.cuda.Device(device_id)``, so it lands on
this device whatever CuPy's current device is. Device memory comes from CuPy's
per-device memory pool. Host copies of 1 MiB or more land in pinned (page-locked)
buffers from CuPy's pinned pool: the device-to-host copy runs at full bus speed and a
later host-to-device copy of the same buffer does too. Peer copies between GPUs use
``cudaMemcpyPeer`` (peer access is enabled once per pair where the hardware allows).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...device import Device

#: Host buffers of at least this many bytes are pinned.
PINNED_MIN_BYTES = 1 << 20


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

    # -- allocation ------------------------------------------------------------------
    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        with self.scope:
            return self._cp.empty(shape, dtype)

    def full(self, shape: tuple[int, ...], dtype: np.dtype, value: Any) -> Any:
        with self.scope:
            return self._cp.full(shape, value, dtype)

    def memory_stats(self) -> dict[str, int]:
        """CuPy's pool: ``in_use`` is its used bytes; ``peak`` is the most seen at the
        allocations made through this device and at these queries (kernels allocating
        through CuPy directly are seen at the next query)."""
        used = self.pool.used_bytes()
        self._peak = max(getattr(self, "_peak", 0), used)
        return {"in_use": used, "peak": self._peak}

    def reset_peak_memory(self) -> None:
        self._peak = self.pool.used_bytes()

    def empty_cache(self) -> None:
        with self.scope:
            self.pool.free_all_blocks()

    # -- transfers -------------------------------------------------------------------
    def from_host(self, a: np.ndarray, out: Any = None) -> Any:
        with self.scope:
            if out is None:
                out = self._cp.empty(a.shape, a.dtype)
            if a.size:
                out.set(a)
            return out

    def to_host(self, x: Any, out: np.ndarray | None = None) -> np.ndarray:
        with self.scope:
            if out is None:
                out = self.host_buffer(x.shape, x.dtype)
            if x.size:
                x.get(out=out)
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
        with self.scope:
            if out is None:
                out = self._cp.empty(x.shape, x.dtype)
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

    # -- the rest ----------------------------------------------------------------------
    def import_dlpack(self, obj: Any) -> Any:
        with self.scope:
            x = self._cp.from_dlpack(obj)
            return x if x.flags.c_contiguous else self._cp.ascontiguousarray(x)

    def synchronize(self) -> None:
        self.scope.synchronize()

    def describe(self) -> str:
        p = self._rt.getDeviceProperties(self.device_id)
        name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
        rt = self._rt.runtimeGetVersion()
        return (f"{self.key} ({name}, compute {p['major']}.{p['minor']}, "
                f"{p['totalGlobalMem'] / 2**30:.0f} GiB, CuPy {self._cp.__version__}, "
                f"CUDA {rt // 1000}.{rt % 1000 // 10})")
