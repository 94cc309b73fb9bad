"""OpenCL devices: discovery across platforms, one context + queue + memory pool each.

``opencl:N`` numbers the usable devices of every platform in platform order. A device is
usable when it compiles a probe kernel: a driver can list a device it cannot compile for
(pocl's LLVM 14 build rejects CPUs newer than LLVM knows with "unknown target CPU"), and
such a device is skipped with its reason. ``NNARRAY_OPENCL_DEVICES`` chooses and orders
devices: a comma-separated list of indices into all listed devices, or case-insensitive
substrings of "platform name / device name" (``NNARRAY_OPENCL_DEVICES=basic,pthread``).

One queue per device serves every thread: each enqueue (kernel arguments + launch,
copies, fills, pool allocations, ``finish``) runs under the device's ``lock``. pocl's
basic driver from the PyPI wheel (3.0) deadlocks when two threads enqueue on one queue
(one thread blocks in ``clEnqueueNDRangeKernel`` holding the GIL while another waits in a
blocking copy), and a shared ``cl.Kernel`` must not have its arguments set by one thread
while another launches it. The lock is cheap per launch; per-thread queues would
cost a thread-local lookup per launch plus cross-queue events for every array passed
between threads, and still need the kernel-argument lock.

Buffers are padded to a multiple of ``LOCAL`` elements (bytes beyond the array's own
belong to it), so contiguous elementwise kernels run on whole work-groups without a
bounds check: the check stops pocl vectorizing and halves their throughput.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from ...device import Device
from ...errors import DTypeError, InvalidValueError
from ...memory import address_space_left, cache_limit, out_of_memory, release_all
from .hugepages import MIN_BYTES, advise
from .queues import HEADROOM, _by_queue, _locks, device_of  # noqa: F401 (kernels' import)

#: Allocations of this many bytes or more first check the pool's cache bound.
_BIG = 1 << 20
#: Allocated bytes (pool hits included) between two measurements of the memory left.
_RECHECK = 256 << 20

_PROBE = "__kernel void probe(__global float* x) { x[get_global_id(0)] *= 2.0f; }"


class OpenCLDevice(Device):
    """One OpenCL device with its context, in-order queue, memory pool and programs."""

    backend = "opencl"
    dlpack_kind = 4  # kDLOpenCL: named by __dlpack_device__; pyopencl exports no buffers

    def __init__(self, device_id: int, cl_device: Any, context: Any = None) -> None:
        import pyopencl as cl
        import pyopencl.array as cla
        import pyopencl.tools as clt

        from .programs import LOCAL, ProgramCache

        super().__init__(device_id)
        self.cl_device = cl_device
        self.context = context if context is not None else cl.Context([cl_device])
        self.queue = cl.CommandQueue(self.context, cl_device)
        #: Held around every enqueue on ``queue`` (see the module doc); re-entrant.
        self.lock = threading.RLock()
        self.acquire, self.release = self.lock.acquire, self.lock.release
        self.pool = clt.MemoryPool(clt.ImmediateAllocator(self.queue))
        self.programs = ProgramCache(self.context, cl_device)
        self.fp64 = "cl_khr_fp64" in cl_device.extensions
        #: Per-device caches of launch plans, keyed by each kernel module.
        self.plans: dict[Any, Any] = {}
        self._array = cla.Array
        self._alloc = self.pool.allocate
        #: Bytes of freed blocks the pool may hold (``memory.cache_limit()``); beyond it,
        #: checked at big allocations and at ``synchronize()``, it releases them all.
        self.max_cached = cache_limit()
        self.max_alloc = cl_device.max_mem_alloc_size
        self.global_mem = cl_device.global_mem_size
        #: Its buffers are host memory, under the process's address-space limit.
        self.host_memory = bool(cl_device.type & cl.device_type.CPU)
        self._room: float = 0  # bytes to allocate before measuring again (``_make_room``)
        self._pad = LOCAL
        self.peak = 0  # the pool's most active bytes since the last reset_peak_memory
        self._layouts: dict[tuple, tuple] = {}
        self._copy = cl.enqueue_copy
        self._err: Any = None  # kernels' out-of-range reports: (flag, value, bound) int64
        self._err_ops: set[str] = set()  # ops launched with ``_err`` since the last check
        _by_queue[id(self.queue)] = self
        _locks[id(self.queue)] = self.lock

    # -- allocation -------------------------------------------------------------------
    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """A C-contiguous ``pyopencl.array.Array`` from the pool, padded (see module doc)."""
        with self.lock:  # a pool miss enqueues on the queue (ImmediateAllocator)
            return self.empty_locked(shape, dtype)

    def empty_locked(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """``empty`` for a caller that holds ``lock``."""
        lay = self._layouts.get((shape, dtype))
        if lay is None:
            lay = self.layout(shape, dtype)
        return self.new_locked(lay)

    def new_locked(self, layout: tuple) -> Any:
        """A new array of ``layout`` (``layout()``: kernels' launch plans keep theirs), for
        a caller that holds ``lock``. The array is an instance of the layout's subclass of
        ``pyopencl.array.Array`` whose class attributes are every attribute but
        ``base_data`` and ``events`` (see ``layout``)."""
        cls, nbytes = layout
        if nbytes >= _BIG:
            data = self._alloc_big(cls.shape, cls.dtype, nbytes)
        else:
            if nbytes > self._room:
                self._make_room(cls.shape, cls.dtype, nbytes)
            self._room -= nbytes
            try:
                data = self._alloc(nbytes)
            except Exception as e:  # pyopencl's errors; retried once after releasing caches
                data = self._alloc_again(cls.shape, cls.dtype, nbytes, e)
        used = self.pool.active_bytes
        if used > self.peak:
            self.peak = used
        x = _new(cls)
        x.base_data = data
        x.events = []
        return x

    def _alloc_big(self, shape: tuple[int, ...], dtype: np.dtype, nbytes: int) -> Any:
        """``empty_locked``'s pool block of ``_BIG`` bytes or more: the pool's cache
        trimmed first, and a new block of a CPU device advised to use huge pages
        (``hugepages.py``)."""
        self._trim()
        if nbytes > self._room:
            self._make_room(shape, dtype, nbytes)
        self._room -= nbytes
        held = self.pool.managed_bytes
        try:
            data = self._alloc(nbytes)
        except Exception as e:  # pyopencl's errors; retried once after releasing caches
            data = self._alloc_again(shape, dtype, nbytes, e)
        if self.host_memory and nbytes >= MIN_BYTES and self.pool.managed_bytes > held:
            advise(self.queue, data)
        return data

    def _make_room(self, shape: tuple[int, ...], dtype: np.dtype, nbytes: int) -> None:
        """Raise ``OutOfMemoryError`` unless a new block of ``nbytes`` fits in the device's
        memory and, for a CPU device, under the process's address-space limit (measured
        again after releasing every pool's cache). pocl allocates lazily and a failed
        malloc crashes it at the next launch (SIGSEGV), so the check comes first; it is
        measured every ``_RECHECK`` allocated bytes, or when a block exceeds what is left."""
        if nbytes > self.max_alloc:
            self._too_big(shape, dtype, nbytes)
        need = self.pool.alloc_size(self.pool.bin_number(nbytes))
        left = self._left()
        if need > left:
            release_all()
            left = self._left()
            if need > left:
                raise out_of_memory(self.key, shape, dtype, nbytes,
                                    f"{max(int(left), 0)} bytes left within the device's "
                                    f"memory and the process's address-space limit")
        self._room = min(left, max(_RECHECK, need))

    def _left(self) -> float:
        """Bytes a new block may take now (see ``_make_room``)."""
        left = self.global_mem - self.pool.managed_bytes
        if self.host_memory:
            left = min(left, address_space_left() - HEADROOM)
        return left

    def _too_big(self, shape: tuple[int, ...], dtype: np.dtype, nbytes: int) -> None:
        raise out_of_memory(self.key, shape, dtype, nbytes, f"more than the device's "
                            f"largest buffer, {self.max_alloc} bytes") from None

    def _alloc_again(self, shape: tuple[int, ...], dtype: np.dtype, nbytes: int,
                     first: Exception) -> Any:
        if nbytes > self.max_alloc:
            self._too_big(shape, dtype, nbytes)
        release_all()
        try:
            return self._alloc(nbytes)
        except Exception as e:
            raise out_of_memory(self.key, shape, dtype, nbytes, e) from first

    # -- the pool's cache -----------------------------------------------------------------
    def _trim(self) -> None:
        """Release the pool's free blocks when they exceed ``max_cached`` bytes."""
        pool = self.pool  # every synchronize() asks: one read when the pool is small
        if pool.managed_bytes > self.max_cached and pool.held_blocks and \
                pool.managed_bytes - pool.active_bytes > self.max_cached:
            pool.free_held()

    def memory_stats(self) -> dict[str, int]:
        used = self.pool.active_bytes
        self.peak = max(self.peak, used)
        return {"in_use": used, "peak": self.peak}

    def reset_peak_memory(self) -> None:
        self.peak = self.pool.active_bytes

    def empty_cache(self) -> None:
        with self.lock:
            self.pool.free_held()

    @property
    def held_bytes(self) -> int:
        """Bytes of free blocks the pool holds (with the rounding of blocks in use)."""
        return self.pool.managed_bytes - self.pool.active_bytes if self.pool.held_blocks else 0

    def layout(self, shape: tuple[int, ...], dtype: Any) -> tuple:
        """(array class, padded bytes) of C-contiguous arrays of ``shape`` and ``dtype``
        here, made once per layout. The class subclasses ``pyopencl.array.Array`` (every
        pyopencl routine takes its arrays) and holds as class attributes the attributes
        that pyopencl's constructor gave one array of this layout, all but ``base_data``
        and ``events``, whatever its version sets; ``new_locked`` sets only those two.
        Made and freed, such an array costs less than one with its own copy of the
        attributes or pyopencl's ``_fast`` constructor (and far less than its checked
        path): on a tiny op the array is a visible part of the launch."""
        dt = np.dtype(dtype)
        lay = self._layouts.get((shape, dt))
        if lay is not None:
            return lay
        size, strides = _layout(shape, dt.itemsize)
        x = self._array(None, shape, dt, allocator=self.pool, data=_NO_BUFFER,
                        strides=strides, _fast=True, _size=size, _context=self.context,
                        _queue=self.queue)
        fields = dict(x.__dict__)
        del fields["base_data"], fields["events"]
        fields["__module__"] = self._array.__module__
        cls = type(self._array.__name__, (self._array,), fields)
        lay = self._layouts[(shape, dt)] = self._layouts[(shape, dtype)] = (
            cls, -(-max(size, 1) // self._pad) * self._pad * dt.itemsize)
        return lay

    def full(self, shape: tuple[int, ...], dtype: np.dtype, value: Any) -> Any:
        import pyopencl as cl
        x = self.empty(shape, dtype)
        if x.size:
            pattern = np.array(value).astype(x.dtype)  # exact, int64 included
            with self.lock:
                cl.enqueue_fill_buffer(self.queue, x.base_data, pattern, 0, x.nbytes)
        return x

    # -- copies -------------------------------------------------------------------------
    def from_host(self, a: np.ndarray, out: Any = None) -> Any:
        if out is None:
            out = self.empty(a.shape, a.dtype)
        if a.size:
            # Blocking: the host array may be written as soon as this returns.
            a = np.ascontiguousarray(a)
            with self.lock:
                self._copy(self.queue, out.base_data, a, is_blocking=True)
        return out

    def to_host(self, x: Any, out: np.ndarray | None = None) -> np.ndarray:
        if out is None:
            out = np.empty(x.shape, x.dtype)
        if x.size:
            with self.lock:
                self._copy(self.queue, out, x.base_data, is_blocking=True)
                if self._err_ops:
                    self._check_errors()
        return out

    def can_copy_from(self, src: Device) -> bool:
        """Direct copies exist within one OpenCL context only."""
        return isinstance(src, OpenCLDevice) and src.context == self.context

    def copy_from(self, src: Device, x: Any, out: Any = None) -> Any:
        """Device-to-device copy within one context, finished when it returns: ``x``'s
        buffer is ``src``'s, whose queue orders nothing with this one. A pending copy read
        it after its owner freed it and ``src``'s pool gave it to a new array, written on
        ``src``'s queue (pocl's pthread driver runs queues concurrently): it copied
        another array's data."""
        if out is None:
            out = self.empty(x.shape, x.dtype)
        if x.size:
            src.synchronize()
            with self.lock:
                self._copy(self.queue, out.base_data, x.base_data,
                           byte_count=x.nbytes).wait()
        return out

    # -- views (offsets and strides in elements; see nnarray.views) -------------------------
    def reshaped(self, x: Any, shape: tuple[int, ...]) -> Any:
        """``x``'s buffer under ``shape`` (of its size: the same padded bytes), an array of
        that layout's class (``layout``)."""
        if x.offset:
            return x.reshape(shape)
        cls, _ = self.layout(tuple(shape), x.dtype)
        y = _new(cls)
        y.base_data = x.base_data
        y.events = list(x.events)
        return y

    def alias(self, x: Any, offset: int, shape: tuple[int, ...], write: bool) -> Any:
        """For reading only, and only from element 0: the root's buffer under the view's
        shape. Kernels read and write whole padded work-groups and take no offset, so an
        offset or a write needs a gathered copy (``gather``/``scatter``)."""
        if write or offset or x.offset:
            return None
        size, strides = _layout(shape, x.dtype.itemsize)
        return self._array(None, shape, x.dtype, allocator=self.pool, data=x.base_data,
                           strides=strides, _fast=True, _size=size, _context=self.context,
                           _queue=self.queue)

    def gather(self, x: Any, offset: int, shape: tuple[int, ...],
               strides: tuple[int, ...]) -> Any:
        from .shape import gather
        return gather(x, offset + x.offset // x.dtype.itemsize, strides, shape)

    def scatter(self, x: Any, offset: int, shape: tuple[int, ...], strides: tuple[int, ...],
                src: Any) -> None:
        from .indexing import c_strides
        from .shape import copy
        copy(self, src, 0, c_strides(shape), x, offset + x.offset // x.dtype.itemsize,
             strides, shape)

    def synchronize(self) -> None:
        self.acquire()  # rather than ``with``: a benchmark step synchronizes every call
        try:
            self.queue.finish()
            if self.pool.managed_bytes > self.max_cached:  # ``_trim``'s first test inline
                self._trim()
            if self._err_ops:
                self._check_errors()
        finally:
            self.release()

    # -- device-side checks ---------------------------------------------------------------
    def error_buffer(self, op: str) -> Any:
        """A buffer of three int64 where ``op``'s kernel reports a bad value (flag, value,
        bound): checked, and raised as ``InvalidValueError`` naming ``op``, at the next
        ``synchronize()`` or read to the host (like CUDA's device asserts)."""
        import pyopencl as cl
        if self._err is None:
            self._err = cl.Buffer(self.context, cl.mem_flags.READ_WRITE
                                  | cl.mem_flags.COPY_HOST_PTR, hostbuf=np.zeros(3, np.int64))
        self._err_ops.add(op)
        return self._err

    def _check_errors(self) -> None:
        """Read and reset the error buffer (caller holds ``lock``)."""
        got = np.empty(3, np.int64)
        self._copy(self.queue, got, self._err, is_blocking=True)
        ops, self._err_ops = self._err_ops, set()
        if got[0]:
            self._copy(self.queue, self._err, np.zeros(3, np.int64), is_blocking=True)
            raise InvalidValueError(
                f"{' or '.join(sorted(ops))}: label {got[1]} is out of range for {got[2]} "
                f"classes (0..{got[2] - 1}); found on {self.key} by a kernel and reported at "
                f"this synchronization")

    # -- facts --------------------------------------------------------------------------
    def check_dtype(self, dtype: np.dtype, op: str) -> None:
        """``DTypeError`` when kernels of ``dtype`` cannot run here (float64 without fp64)."""
        if np.dtype(dtype) in _DOUBLE and not self.fp64:
            raise DTypeError(f"{op}: {np.dtype(dtype)} is not supported on {self.key} "
                             f"({self.cl_device.name}: no cl_khr_fp64)")

    def describe(self) -> str:
        d = self.cl_device
        return (f"{self.key} ({d.name.strip()} on {d.platform.name.strip()}, "
                f"{d.version.split('HSTR')[0].strip()}, fp64 {'yes' if self.fp64 else 'no'})")


_new = object.__new__
#: The ``data`` of the array that ``_layout`` copies its attributes from (allocates nothing).
_NO_BUFFER = object()


_DOUBLE = (np.dtype(np.float64), np.dtype(np.complex128))


def _layout(shape: tuple[int, ...], itemsize: int) -> tuple[int, tuple[int, ...]]:
    size = 1
    strides = []
    for s in reversed(shape):
        strides.append(size * itemsize)
        size *= s
    return size, tuple(reversed(strides))


# -- discovery --------------------------------------------------------------------------
class Discovery:
    """The usable devices (with their probe contexts) and why the others are not."""

    def __init__(self) -> None:
        self.devices: list[tuple[Any, Any]] = []  # (cl.Device, cl.Context)
        self.skipped: list[str] = []
        self.reason: str | None = None
        try:
            self._discover()
        except Exception as e:  # a driver can fail in any way; never raise from here
            self.devices = []
            self.reason = f"OpenCL initialization failed: {type(e).__name__}: {e}"

    def _discover(self) -> None:
        # pocl's pthread CPU driver pays far more per launch + finish than its basic
        # driver on a small machine, which matches pthread's SGEMM and elementwise speed
        # there (benchmarks/README.md). Unless the user chose
        # (POCL_DEVICES set), pocl lists both: basic first (opencl:0), pthread second.
        os.environ.setdefault("POCL_DEVICES", "basic pthread")
        try:
            import pyopencl as cl
        except ImportError:
            self.reason = "pyopencl not installed"
            return
        try:
            platforms = cl.get_platforms()
        except cl.Error as e:
            self.reason = f"no OpenCL platform found ({e})"
            return
        if not platforms:
            self.reason = "no OpenCL platform found"
            return
        listed = [(p, d) for p in platforms for d in _devices_of(p)]
        if not listed:
            self.reason = "no OpenCL device found on platforms " + ", ".join(
                p.name.strip() for p in platforms)
            return
        chosen = _choose(listed, os.environ.get("NNARRAY_OPENCL_DEVICES", ""))
        if not chosen:
            self.reason = ("NNARRAY_OPENCL_DEVICES=" + os.environ["NNARRAY_OPENCL_DEVICES"]
                           + " matches none of: " + "; ".join(_label(p, d) for p, d in listed))
            return
        for p, d in chosen:
            why, ctx = _probe(d)
            if why is None:
                self.devices.append((d, ctx))
            else:
                self.skipped.append(f"{_label(p, d)}: {why}")
        if not self.devices:
            self.reason = "no usable OpenCL device: " + "; ".join(self.skipped)


def _devices_of(platform: Any) -> list[Any]:
    import pyopencl as cl
    try:
        return platform.get_devices()
    except cl.Error:
        return []


def _label(platform: Any, device: Any) -> str:
    return f"{platform.name.strip()} / {device.name.strip()}"


def _choose(listed: list[tuple[Any, Any]], spec: str) -> list[tuple[Any, Any]]:
    """Apply ``NNARRAY_OPENCL_DEVICES`` (indices or name substrings, in order)."""
    spec = spec.strip()
    if not spec:
        return listed
    chosen: list[tuple[Any, Any]] = []
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        if item.isdigit():
            hits = [listed[int(item)]] if int(item) < len(listed) else []
        else:
            hits = [pd for pd in listed if item.lower() in _label(*pd).lower()]
        chosen.extend(pd for pd in hits if pd not in chosen)
    return chosen


def _probe(device: Any) -> tuple[str | None, Any]:
    """``(None, context)`` when ``device`` builds and runs a kernel, else ``(reason, None)``."""
    import pyopencl as cl

    from .programs import ProgramCache
    try:
        ctx = cl.Context([device])
        k = ProgramCache(ctx, device).kernel(_PROBE, "probe")
        q = cl.CommandQueue(ctx, device)
        buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4)
        cl.enqueue_copy(q, buf, np.ones(1, np.float32), is_blocking=True)
        k(q, (1,), None, buf)
        got = np.empty(1, np.float32)
        cl.enqueue_copy(q, got, buf, is_blocking=True)
        if got[0] != 2.0:
            return f"probe kernel computed {got[0]} instead of 2.0", None
        return None, ctx
    except Exception as e:
        lines = [ln.strip() for ln in str(e).splitlines() if "error" in ln.lower()]
        return "cannot compile kernels: " + (lines[-1] if lines else str(e).strip()[:200]), None
