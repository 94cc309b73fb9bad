"""Views: NdArrays that share another array's storage (basic indexing, reshape, transpose).

A view holds no copies of its own: its ``_fill`` slot holds a ``View`` naming the root
array (never itself a view) and the view's element offset and element strides into the
root's C-contiguous layout. Every access goes through the root, so device copies,
staleness, transfers and the version counter are the root's:

- a read syncs the root's copy on the device and hands kernels a C-contiguous array:
  an alias of the region where the view is contiguous and the backend can alias it
  (numpy, CuPy; OpenCL where the view starts at element 0), else a gathered copy;
- a write accesses the root ``'rw'`` (every other copy of the root becomes stale, its
  version is bumped) and lands in the region: through an alias, or a C-contiguous
  temporary written back with one strided copy (``run_into``, ``write``, ``fill``).

``version`` of a view is its root's: a write through a view to data saved for a backward
pass raises there, and so does a write to the root through any other view.

Threads: a root's lock (``locked``) is held from a write's copy-in (the root accessed
``'rw'`` on the writer's device, other devices' copies made stale) to its copy-out (the
kernel queued, a temporary scattered back), and by every sync of a copy, so two threads
writing disjoint regions through views from different devices never lose a write (one
would otherwise sync the root before the other's kernel wrote it, then make it stale).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import BackendError

_new = object.__new__
_as_strided = np.lib.stride_tricks.as_strided
_PROBE = np.zeros(1, np.uint8)
_PROBE_AT = _PROBE.__array_interface__["data"][0]


class View:
    """Where a view's elements are: ``base`` (the root array), ``offset`` and ``strides``
    in elements of the root's C-contiguous layout, and whether they are C-contiguous."""

    __slots__ = ("base", "offset", "strides", "contiguous", "last")

    def __init__(self, base: Any, offset: int, strides: tuple[int, ...],
                 contiguous: bool) -> None:
        self.base = base
        self.offset = offset
        self.strides = strides
        self.contiguous = contiguous
        #: ``(device, root copy, alias)`` of the latest aliased read: while that copy is
        #: the root's current one there, the alias is still valid (same memory). It keeps
        #: that copy alive until the view is read again or dropped.
        self.last: Any = None


#: Re-entrant locks striped by root: a root's is ``LOCKS[stripe(root)]``.
LOCKS = tuple(threading.RLock() for _ in range(64))


def stripe(a: Any) -> int:
    """Which of the locks is ``a``'s root's (``a`` a root or a view)."""
    f = a._fill
    return (id(f.base if f.__class__ is View else a) >> 4) & 63


def root_lock(a: Any) -> Any:
    """The lock of ``a``'s root: held by syncs of its copies and by writes to it. A
    holder takes no other root's lock (a writer reads its inputs of other roots before
    taking its target's), so threads never wait on each other in a cycle."""
    return LOCKS[stripe(a)]


class locked:
    """``with locked(targets):`` hold the root locks of every array of ``targets``
    (taken in one order, so two writers of several roots never wait on each other)."""

    __slots__ = ("held",)

    def __init__(self, targets: Any) -> None:
        self.held = sorted({stripe(a) for a in targets})

    def __enter__(self) -> None:
        for k in self.held:
            LOCKS[k].acquire()

    def __exit__(self, *exc: Any) -> None:
        for k in reversed(self.held):
            LOCKS[k].release()


def c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a C-contiguous array of ``shape``."""
    out, n = [], 1
    for s in reversed(shape):
        out.append(n)
        n *= s
    return tuple(reversed(out))


def of(a: Any) -> View | None:
    """``a``'s ``View`` if ``a`` is a view, else ``None``."""
    f = a._fill
    return f if f.__class__ is View else None


def layout(a: Any) -> tuple[Any, int, tuple[int, ...]]:
    """``(root, offset, strides)`` of ``a`` (a root: itself, 0, C strides)."""
    v = of(a)
    if v is None:
        return a, 0, c_strides(a.shape)
    return v.base, v.offset, v.strides


def _probe(shape: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    """A numpy array of ``shape`` whose byte strides are ``strides`` (one byte per
    element, never read): numpy's own indexing and reshape rules applied to it give a
    view's layout."""
    return _as_strided(_PROBE, shape, strides)


def derive(a: Any, fn: Callable[[np.ndarray], np.ndarray]) -> Any:
    """The view of ``a`` that numpy's ``fn`` (basic indexing, transpose, a no-copy
    reshape) makes of an array laid out as ``a``; ``fn`` raises numpy's errors."""
    root, off, st = layout(a)
    p = fn(_probe(a.shape, st))
    d = p.__array_interface__["data"][0] - _PROBE_AT
    return make(root, off + d, tuple(p.shape), tuple(p.strides), a.dtype)


def make(root: Any, offset: int, shape: tuple[int, ...], strides: tuple[int, ...],
         dtype: np.dtype) -> Any:
    """A new view of ``root`` (a root array) with ``shape`` at ``offset``/``strides``."""
    n = 1
    for s in shape:
        n *= s
    if n and not 0 <= offset < root.size:  # never let a kernel reach outside the root
        raise IndexError(f"view: offset {offset} is outside the array of shape {root.shape}")
    contiguous = n <= 1 or all(s == c for s, c, d in zip(strides, c_strides(shape), shape)
                               if d != 1)
    if contiguous:
        strides = c_strides(shape)
    a = _new(type(root))
    a._shape, a._dtype = shape, dtype
    a._copies = {}  # always empty: every access misses and goes to the root (read/access)
    a._stale = None
    a._head = root._head
    a._fill = View(root, offset, strides, contiguous)
    a._version = 0  # unused: ``version`` reads the root's
    a._snap = None
    return a


# -- access (called by SyncedArray for views) ---------------------------------------------
def _root(a: Any, dev: Any, mode: str, explicit: bool = False) -> tuple[View, Any]:
    """``(a's View, the root's native on dev for mode)``; a write is ``'rw'`` on the root
    (the rest of it stays as it is). The view's ``_head`` follows the root's."""
    v = a._fill
    root = v.base
    x = root.native(dev, "r" if mode == "r" else "rw", explicit)
    a._head = root._head
    return v, x


def read(a: Any, dev: Any, explicit: bool) -> Any:
    """A C-contiguous native array on ``dev`` with the view's current values."""
    v = a._fill
    last = v.last
    if last is not None and last[0] is dev and v.base.current_copy(dev) is last[1]:
        a._head = v.base._head
        return last[2]
    v, x = _root(a, dev, "r", explicit)
    if v.contiguous:
        y = dev.alias(x, v.offset, a.shape, False)
        if y is not None:
            v.last = (dev, x, y)
            return y
    return dev.gather(x, v.offset, a.shape, v.strides)


def access(a: Any, dev: Any, mode: str, explicit: bool) -> Any:
    """A native array on ``dev`` aliasing the view's elements, for writing through
    (``get_data('w')``, ``.data``): strided where the view is."""
    if mode not in ("w", "rw"):
        raise ValueError(f"get_data: mode must be 'r', 'w' or 'rw', got {mode!r}")
    v, x = _root(a, dev, mode, explicit)
    y = dev.alias(x, v.offset, a.shape, True) if v.contiguous else \
        dev.strided(x, v.offset, a.shape, v.strides)
    if y is None:
        raise BackendError(
            f"view of shape {a.shape}: {dev.key} has no writable native array for a view "
            f"{'at an offset' if v.contiguous else 'with strides'} (of an array of shape "
            f"{v.base.shape}); write through NdArray operations (x[...] = v, x += v, "
            "copy_from) or use a copy")
    return y


def _target(a: Any, dev: Any, mode: str, apart: bool = False) -> tuple[Any, Any]:
    """``(out, root copy)`` for a kernel writing the view ``a`` on ``dev``: ``out`` is a
    C-contiguous alias of its elements (root copy ``None``), or (where there is none, or
    ``apart`` asks for one) a temporary (for ``'rw'`` holding the view's values) to
    scatter back into the root copy afterwards (``_back``)."""
    v, x = _root(a, dev, mode)
    if v.contiguous and not apart:
        y = dev.alias(x, v.offset, a.shape, True)
        if y is not None:
            return y, None
    t = dev.gather(x, v.offset, a.shape, v.strides) if mode == "rw" else \
        dev.empty(a.shape, a.dtype)
    return t, x


def _back(a: Any, dev: Any, t: Any, x: Any) -> None:
    if x is not None:
        v = a._fill
        dev.scatter(x, v.offset, a.shape, v.strides, t)


def run_into(a: Any, dev: Any, mode: str, run: Callable[[Any], Any],
             inputs: Any = ()) -> None:
    """Run ``run(out)`` (a kernel writing ``out``, C-contiguous, reading ``inputs``) so
    that it writes ``a``, a view or a root with views among ``inputs``: through an alias
    where there is one, else into a temporary written back (for ``'rw'`` it starts with
    ``a``'s values). Where an input is another view of ``a``'s root (it may alias
    elements the kernel writes, ``a[1:] += a[:-1]``, ``a += a[0]``), the kernel always
    writes a temporary, so it reads every input as it was before the op."""
    f = a._fill
    root = f.base if f.__class__ is View else a
    apart = False
    for x in inputs:
        g = getattr(x, "_fill", None)
        if x is not a and (x is root or g.__class__ is View and g.base is root):
            apart = True
    if root is a:  # a root target (called only with views among the inputs)
        if not apart:
            run(a.native(dev, mode))
            return
        t = dev.gather(a.native(dev), 0, a.shape, c_strides(a.shape)) if mode == "rw" \
            else dev.empty(a.shape, a.dtype)
        run(t)
        a.adopt(dev, t)
        return
    t, x = _target(a, dev, mode, apart)
    run(t)
    _back(a, dev, t, x)


def run_inplace(targets: Any, dev: Any, run: Callable[[list], Any]) -> None:
    """Run ``run(outs)`` (a kernel updating every native of ``outs`` in place) where some
    of ``targets`` are views, as ``run_into`` does for each."""
    outs, backs = [], []
    for a in targets:
        if a._fill.__class__ is View:
            t, x = _target(a, dev, "rw")
            backs.append((a, t, x))
        else:
            t = a.native(dev, "rw")
        outs.append(t)
    run(outs)
    for a, t, x in backs:
        _back(a, dev, t, x)


def write(a: Any, dev: Any, x: Any) -> None:
    """Copy ``x`` (a native array of the view's shape on ``dev``) into the view."""
    with root_lock(a):
        v, r = _root(a, dev, "w")
        dev.scatter(r, v.offset, a.shape, v.strides, x)


def fill(a: Any, value: Any) -> None:
    """Set every element of the view to ``value`` where the root is."""
    from .discovery import host_device
    v = a._fill
    root = v.base
    if v.contiguous and not v.offset and a.size == root.size:  # all of it: a lazy fill
        root._set_fill(value)
        return
    dev = root._head if root._head is not None else host_device()
    write(a, dev, dev.full(a.shape, a.dtype, value))


# -- the view-making operations -------------------------------------------------------------
def getitem(a: Any, key: Any) -> Any:
    """``a[key]`` for a basic key (ints, slices, ``...``, ``None``, 0-D integer NdArrays)
    as a view (numpy's rules and errors)."""
    k = key if isinstance(key, tuple) else (key,)
    k = tuple(_basic(i, key, a.shape) for i in k)
    if not any(i is Ellipsis for i in k):
        k = k + (Ellipsis,)  # a 0-D view, not a scalar, where every axis gets an int
    try:
        return derive(a, lambda p: p[k])
    except IndexError as e:
        raise IndexError(f"getitem: {e} (index {key!r}, shape {a.shape})") from None


def region(a: Any, key: Any) -> tuple[Any, tuple]:
    """``(root, (offset, shape, strides))`` of ``a[key]`` (a basic key) in ``a``'s root:
    where a ``setitem`` kernel given ``key=None`` writes."""
    w = getitem(a, key)
    v = w._fill
    return v.base, (v.offset, w.shape, v.strides)


def _basic(i: Any, key: Any, shape: tuple[int, ...]) -> Any:
    if i is None or i is Ellipsis or isinstance(i, slice):
        return i
    if isinstance(i, (bool, np.bool_)):
        raise IndexError(f"getitem: a bool is not a basic index ({key!r}, shape {shape})")
    try:
        import operator
        return operator.index(i)  # ints, numpy ints, 0-D integer NdArrays (one host read)
    except TypeError:
        raise IndexError(f"getitem: only integers, slices, ..., None and integer or "
                         f"boolean arrays are valid indices, got {type(i).__name__} in "
                         f"{key!r} (shape {shape})") from None


#: numpy >= 2.1: ``reshape(copy=False)`` refuses to copy
_RESHAPE_COPY = np.lib.NumpyVersion(np.__version__) >= "2.1.0"


def reshape(a: Any, shape: tuple[int, ...]) -> Any | None:
    """``a`` reshaped to ``shape`` (already checked) as a view, or ``None`` where numpy
    would copy (the layout does not allow it)."""
    def fn(p: np.ndarray) -> np.ndarray:
        if _RESHAPE_COPY:  # raises ValueError where a copy would be needed
            return np.reshape(p, shape, copy=False)
        q = p.view()  # numpy 2.0 (setting ``shape`` is deprecated from 2.5)
        q.shape = shape  # raises AttributeError where a copy would be needed
        return q
    try:
        return derive(a, fn)
    except (AttributeError, ValueError):
        return None


def transpose(a: Any, axes: tuple[int, ...]) -> Any:
    """``a`` with its axes permuted (``axes`` already checked) as a view."""
    return derive(a, lambda p: p.transpose(axes))
