"""Kernel: one op's implementation resolved for one context, and the one way to run it.

The registry hands out a ``Kernel`` per (context, op). Every dispatch site (eager ops,
operators, in-place updates, the graph executor and the generated backward code) runs
kernels through it, so that reading inputs on the right device, counting fallbacks,
wrapping or adopting outputs with the op's inferred ``(shape, dtype)`` and the
``NNARRAY_DEBUG`` output check happen in one place.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import views
from .device import Device
from .errors import OutOfMemoryError
from .memory import naming, retry_kernel
from .ndarray import NdArray
from .views import View

#: Check every kernel's output against the inferred shape and dtype (tests enable it).
DEBUG = os.environ.get("NNARRAY_DEBUG", "") not in ("", "0")

Meta = tuple[tuple[int, ...], np.dtype]

#: ``{(op, from_backend, to_backend): count}`` of runs that fell back.
fallback_counts: dict[tuple[str, str, str], int] = {}

#: ``[((op, device key), [count])]``: every Kernel's launch counter since
#: ``reset_kernel_stats``. A launch (every run of a plain kernel: eager calls, ``fast``,
#: in-place updates, schedule steps, generated code) adds one to its kernel's cell
#: (``Kernel.tally``; a list cell costs half a dict update on the hot path); the totals
#: are summed when read. A composite's ops count as their own kernels.
tallies: list[tuple[tuple[str, str], list[int]]] = []


def kernel_stats() -> dict:
    """``{"count": n, "by_op": {op: n}, "by_device": {device key: n}}``: kernel launches
    since the last ``reset_kernel_stats()`` (as ``transfer_stats`` counts copies)."""
    by_op: dict[str, int] = {}
    by_dev: dict[str, int] = {}
    total = 0
    for (op, dev), (n,) in tallies:
        if n:
            by_op[op] = by_op.get(op, 0) + n
            by_dev[dev] = by_dev.get(dev, 0) + n
            total += n
    return {"count": total, "by_op": by_op, "by_device": by_dev}


def reset_kernel_stats() -> None:
    """Start counting kernel launches from zero."""
    for _, cell in tallies:
        cell[0] = 0

_wrap = NdArray._wrap
_natives = NdArray.natives


class Kernel:
    """``fn`` running ``op`` on ``device``.

    ``fallback`` is ``(op, context backend, kernel backend)`` when the context's backend
    has no kernel and another one's runs instead (counted on every run), else ``None``.
    A ``composite`` kernel is written with ``F`` on NdArrays (no device of its own).
    ``plain`` (neither) kernels take native arrays and may be called directly.
    ``fast(a, b, meta)`` is the one specialised fast path (ops with one or two operands
    and one output, such as ``F.add`` and ``F.sin``; a plain kernel runs inline, others
    through ``run``): ``a`` an NdArray, ``b`` an NdArray, a scalar, or ``None`` for a
    one-operand op.
    """

    __slots__ = ("op", "fn", "device", "fallback", "composite", "plain", "fast", "valid",
                 "tally")

    def __init__(self, op: str, fn: Callable, device: Device, fallback: Any = None,
                 composite: bool = False) -> None:
        self.op = op
        self.fn = fn if composite else device.bind(fn)  # e.g. a CUDA GPU's device scope
        fn = self.fn
        self.device = device
        self.fallback = fallback
        self.composite = composite
        self.plain = fallback is None and not composite
        self.valid = True  # False once the registry's kernels change (callers re-resolve)
        self.tally = [0]  # launches since reset_kernel_stats (``tallies``)
        tallies.append(((op, device.key), self.tally))
        self.fast = fast_runner(op, fn, device, NdArray, self.check if DEBUG else None,
                                self.tally) \
            if self.plain else \
            lambda a, b, meta: self.run((a,) if b is None else (a, b), {}, (meta,))

    def run(self, inputs: Sequence, attrs: dict, metas: tuple = (),
            into: Sequence | None = None, out: Any = None, mode: str = "rw") -> Any:
        """Run on NdArray (or scalar) inputs; the one runner of eager calls, opaque
        schedule steps and in-place writes. Where the results go:

        - by default, new NdArrays with the op's inferred ``metas``, or adopted by the
          NdArrays of ``into`` (``None`` entries make new ones); one output is returned
          bare, several as a tuple;
        - ``out`` an NdArray: the kernel takes ``out=`` and writes ``out``'s storage
          (accessed for ``mode``: ``'rw'`` for in-place updates, ``'w'`` to overwrite;
          views and other threads handled); ``out`` is returned;
        - ``out`` a list of NdArrays: the kernel ``fn(targets, inputs, **attrs)`` updates
          their native copies in place from the inputs' (e.g. fused solver updates).

        An allocation that fails raises ``OutOfMemoryError`` naming the op."""
        if self.composite:
            if out is not None:
                raise TypeError(f"{self.op}: a composite kernel writes no target")
            return self.fn(*inputs, **attrs)
        if self.fallback is not None:
            fallback_counts[self.fallback] = fallback_counts.get(self.fallback, 0) + 1
        self.tally[0] += 1
        if out is not None:
            if type(out) is NdArray:
                return self._write(out, inputs, attrs, mode)
            return self._update(out, inputs, attrs)
        dev = self.device
        try:  # reading a lazy fill allocates: its out-of-memory error names the op too
            if len(inputs) == 1:  # most ops: no list to build (a comprehension is a call)
                x = inputs[0]
                args: Any = (x.native(dev) if type(x) is NdArray else x,)
            else:
                args = [x.native(dev) if type(x) is NdArray else x for x in inputs]
            res = self.fn(*args, **attrs) if attrs else self.fn(*args)
        except OutOfMemoryError as e:
            raise naming(self.op, e) from e
        except MemoryError as e:  # the array library's own (CuPy's OutOfMemoryError)
            res = retry_run(self.op, self.fn, dev, NdArray, metas[0], e, inputs, attrs)
        if len(metas) == 1:
            if DEBUG:
                self.check(res, metas[0])
            if not into or into[0] is None:
                return _wrap(res, dev, metas[0])
            into[0].adopt(dev, res)
            return into[0]
        return tuple([self.emit(o, m, into[i] if into else None)
                      for i, (o, m) in enumerate(zip(res, metas))])

    def _write(self, target: NdArray, inputs: Sequence, attrs: dict, mode: str) -> NdArray:
        """``run(out=target)``: the kernel writes ``target``'s copy through ``out=``."""
        dev = self.device
        k = views.stripe(target)
        # inputs of other roots are read first: a lock holder takes no other root's lock
        xs = [x.native(dev) if type(x) is NdArray and views.stripe(x) != k else x
              for x in inputs]
        with views.LOCKS[k]:  # the target's copy-in to its copy-out, across threads
            shared = target._fill.__class__ is View
            for i, x in enumerate(inputs):
                if type(x) is NdArray:
                    if x._fill.__class__ is View:
                        shared = True
                    if xs[i] is x:  # the target's root (or its lock's): read under the lock
                        xs[i] = x.native(dev)
            if shared:  # a view written (where its root is), or read while writing its root
                views.run_into(target, dev, mode,
                               lambda o: self.fn(*xs, out=o, **attrs), inputs)
            else:
                self.fn(*xs, out=target.native(dev, mode), **attrs)
        return target

    def _update(self, targets: Sequence[NdArray], inputs: Sequence[NdArray],
                attrs: dict) -> None:
        """``run(out=[targets])``: the kernel updates the targets' copies in place."""
        dev = self.device
        xs = _natives(inputs, dev)  # read first: a lock holder takes no other root's lock
        with views.locked(targets):  # the targets' copy-in to copy-out, across threads
            for t in targets:
                if t._fill.__class__ is View:  # views: written where their roots are
                    views.run_inplace(targets, dev, lambda outs: self.fn(outs, xs, **attrs))
                    return
            self.fn(_natives(targets, dev, "rw"), xs, **attrs)

    def callee(self, in_metas: Sequence, attrs: dict, out_meta: Meta) -> tuple[Callable, bool]:
        """What generated code calls for this kernel on inputs of exactly ``in_metas``
        (``(shape, dtype)`` per array input, ``None`` for a scalar) with ``attrs``, and
        whether it still takes the attrs. A plain kernel may offer
        ``fn.specialize(in_metas, attrs)``: a callable of the inputs alone, equivalent for
        those metas and attrs (its checks and branches decided once); one naming
        ``fn.small`` gets its ufunc where every array is smaller than its limit."""
        fn = self.fn
        spec = getattr(fn, "specialize", None)
        if spec is not None:
            got = spec(in_metas, attrs)
            if got is not None:
                return got, False
        small = getattr(fn, "small", None)
        if small is None or attrs or not out_meta[0]:
            return fn, bool(attrs)
        uf, limit = small
        sizes = [math.prod(out_meta[0])] + [math.prod(m[0]) for m in in_metas if m]
        return (uf, False) if max(sizes) < limit else (fn, False)

    def emit(self, out: Any, meta: Meta, into: NdArray | None = None) -> NdArray:
        """``out`` (a fresh native array of the device) as an NdArray: adopted by
        ``into`` when given, else wrapped in a new one."""
        if DEBUG:
            self.check(out, meta)
        if into is None:
            return _wrap(out, self.device, meta)
        into.adopt(self.device, out)
        return into

    def check(self, out: Any, meta: Meta) -> None:
        """The debug check: ``out`` has the inferred shape and dtype, C-contiguous."""
        shape, dtype = meta
        if tuple(out.shape) != shape or np.dtype(out.dtype) != dtype:
            raise AssertionError(f"kernel {self.op!r} on {self.device.key} returned "
                                 f"{tuple(out.shape)} {out.dtype}, the spec says {shape} {dtype}")
        flags = getattr(out, "flags", None)
        if flags is not None and not flags.c_contiguous:
            raise AssertionError(f"kernel {self.op!r} on {self.device.key} returned a "
                                 "non-C-contiguous array")

    def __repr__(self) -> str:
        how = " composite" if self.composite else \
            f" fallback from {self.fallback[1]}" if self.fallback else ""
        return f"<Kernel {self.op} on {self.device.key}{how}>"


# -- the fast path and the out-of-memory retry ------------------------------------------
def fast_runner(op: str, fn: Any, dev: Device, cls: type, check: Any = None,
                tally: list | None = None) -> Any:
    """``fast(a, b, meta)``: the one- and two-operand fast path of a plain kernel ``fn``
    of ``op`` on ``dev`` (``a`` an array of ``cls`` of the result's shape; ``b`` another
    (broadcast with it), a scalar, or ``None`` for a one-operand op; one output of
    ``meta``). It reads the copies (``synced.py``'s ``_copies``) directly: F.add on tiny
    arrays is all dispatch, and these few lines are most of it. A kernel may name in ``fn.small``
    a ``(ufunc, limit)`` that computes the result of fewer than ``limit`` elements (not
    0-D) directly, skipping its own allocation policy (one Python call less). Each run
    adds one to ``tally[0]`` (the kernel's launch counter, ``Kernel.tally``)."""
    uf, limit = getattr(fn, "small", (None, 0))
    if tally is None:
        tally = [0]

    def fast(a: Any, b: Any, meta: tuple) -> Any:
        tally[0] += 1
        try:
            x = a._copies.get(dev)
            if x is None:
                x = a._sync(dev, False)
            if type(b) is cls:
                y = b._copies.get(dev)
                if y is None:
                    y = b._sync(dev, False)
                r = uf(x, y) if limit and x.size < limit and meta[0] else fn(x, y)
            elif b is None:
                r = uf(x) if limit and x.size < limit and meta[0] else fn(x)
            else:
                r = uf(x, b) if limit and x.size < limit and meta[0] else fn(x, b)
        except OutOfMemoryError as e:
            raise naming(op, e) from e
        except MemoryError as e:  # the array library's own (CuPy's OutOfMemoryError)
            r = retry_run(op, fn, dev, cls, meta, e, (a,) if b is None else (a, b))
        if check is not None:
            check(r, meta)
        return wrap(r, dev, meta)
    wrap = cls._wrap
    return fast


def retry_run(op: str, fn: Any, dev: Device, cls: type, meta: tuple, e: MemoryError,
              inputs: tuple | list, attrs: dict | None = None) -> Any:
    """``fn`` run once more on ``inputs`` (arrays of ``cls`` read on ``dev``) after the
    array library ran out of memory (``retry_kernel``). Its own function: a closure over
    a kernel runner's arguments makes them cells there, read indirectly on every call
    (100 ns of a 1.3 us tiny add on numpy)."""
    def again() -> Any:
        xs = [x.native(dev) if type(x) is cls else x for x in inputs]
        return fn(*xs, **attrs) if attrs else fn(*xs)
    return retry_kernel(op, dev.key, meta, e, again)

