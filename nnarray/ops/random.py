"""Random numbers on the current device, and dropout, from one counter-based stream.

Every backend draws with Philox-4x32-10 (``nnarray.philox``), so a seed gives the same
numbers on numpy, OpenCL and CUDA. Kernel contract: ``rand(shape, low, high, seed,
dtype)`` and ``randn(shape, mu, sigma, seed, dtype)`` follow ``philox``'s layout (the
element stream of ``seed``); ``dropout(x, p, seed) -> (y, mask)`` where ``mask`` holds
``0`` or ``1/(1-p)`` in ``x.dtype``, keeping the elements whose ``rand`` uniform is
``>= p`` (``seed=None``: draw one with ``next_seed()`` when it runs); a composition over
``rand`` serves every backend without the kernel.

The seeds of unseeded draws (``next_seed``) come from streams: the ``c``-th draw of a
thread after ``seed(n)`` uses ``philox.derive(n, c, lane, tag)``, where ``lane`` is 0 on
the main thread and a hash of the thread's name elsewhere, so each thread's sequence is
fixed whatever the interleaving.
"""

from __future__ import annotations

import hashlib
import math
import operator
import secrets
import threading
from typing import Any

import numpy as np

from .. import dtypes, philox
from ..errors import DTypeError, InvalidValueError
from ..ndarray import normalize_shape
from ..registry import register_composite
from . import elementwise as _ew
from .common import require_float
from .op import Op
from .surfaces import declare

OPS, INITIALIZERS, OWN = 1, 2, 3  # the tags of the streams (the counter's last word)


def thread_lane() -> int:
    """The calling thread's lane: 0 on the main thread, else 32 bits of a hash of its
    name (never 0)."""
    t = threading.current_thread()
    if t is threading.main_thread():
        return 0
    h = hashlib.blake2b(t.name.encode(), digest_size=4).digest()
    return int.from_bytes(h, "little") or 1


class Stream:
    """Seeds for successive draws: the ``c``-th is ``philox.derive(key, c, lane, tag)``,
    counting per thread (``per_thread``: each thread its own ``c`` and its lane) or per
    stream (lane 0, under a lock)."""

    def __init__(self, key: int, tag: int, per_thread: bool = True) -> None:
        self.tag, self.per_thread = tag, per_thread
        self._lock = threading.Lock()
        self._local = threading.local()
        self.reseed(key)

    def reseed(self, key: int) -> None:
        """Restart every thread's count at 0 under ``key``."""
        with self._lock:
            self.key, self.epoch, self.count = int(key) & philox.MASK64, object(), 0

    def next_seed(self) -> int:
        """The seed of this thread's (or this stream's) next draw."""
        if not self.per_thread:
            with self._lock:
                c, self.count = self.count, self.count + 1
            return philox.derive(self.key, c, 0, self.tag)
        loc, key, epoch = self._local, self.key, self.epoch
        if getattr(loc, "epoch", None) is not epoch:
            loc.epoch, loc.count, loc.lane = epoch, 0, thread_lane()
        c = loc.count
        loc.count += 1
        return philox.derive(key, c, loc.lane, self.tag)


class Generator:
    """The numpy ``Generator`` methods nnarray's host draws use, from Philox: each call
    takes the next seed of ``stream`` and draws that seed's numbers as the numpy backend's
    ``rand``/``randn`` would (float64 unless told)."""

    def __init__(self, stream: Stream | int | None = None) -> None:
        if not isinstance(stream, Stream):  # an own stream (None: seeded by nna.seed's)
            stream = Stream(next_seed() if stream is None else _check_seed("Generator", stream),
                            OWN, False)
        self.stream = stream

    @staticmethod
    def _shape(size: Any) -> tuple[int, ...]:
        return () if size is None else (size,) if isinstance(size, int) else tuple(size)

    def random(self, size: Any = None, dtype: Any = np.float64) -> np.ndarray:
        shape = self._shape(size)
        return philox.uniform(self.stream.next_seed(), math.prod(shape), dtype).reshape(shape)

    def standard_normal(self, size: Any = None, dtype: Any = np.float64) -> np.ndarray:
        shape = self._shape(size)
        return philox.normal(self.stream.next_seed(), math.prod(shape), dtype).reshape(shape)

    def uniform(self, low: float = 0.0, high: float = 1.0, size: Any = None) -> np.ndarray:
        """``u * (high - low) + low``: ``rand``'s formula."""
        return self.random(size) * (float(high) - float(low)) + float(low)

    def normal(self, loc: float = 0.0, scale: float = 1.0, size: Any = None) -> np.ndarray:
        """``z * scale + loc``: ``randn``'s formula."""
        return self.standard_normal(size) * float(scale) + float(loc)

    def permutation(self, n: int) -> np.ndarray:
        """A permutation of ``range(n)`` (``philox.permutation``)."""
        return philox.permutation(self.stream.next_seed(), int(n))


#: Unseeded random ops and ``DataLoader``'s default shuffling (unpredictable until seeded).
_ops = Stream(secrets.randbits(64), OPS)
#: The layers' initializers (``nn.initializers``), kept here so that ``seed`` reaches it
#: without importing the layers above; key 0 until seeded.
_initializers = Stream(0, INITIALIZERS)


def seed(s: int) -> None:
    """Seed everything random in nnarray: the stream that picks a seed for every unseeded
    random op (and ``data.DataLoader`` shuffle), and the layers' initializers
    (``nn.initializers.seed``)."""
    s = _check_seed("seed", s)
    _ops.reseed(s)
    seed_initializers(s)


def seed_initializers(s: int) -> None:
    """Restart the initializers' stream under ``s``."""
    _initializers.reseed(_check_seed("seed", s))


def initializer_rng() -> Generator:
    """The initializers' default generator (draws from their stream)."""
    return Generator(_initializers)


def next_seed() -> int:
    """The seed of the calling thread's next unseeded draw."""
    return _ops.next_seed()


def _check_seed(name: str, s: Any) -> int:
    try:
        return operator.index(s)
    except TypeError:
        raise InvalidValueError(f"{name}: argument 'seed' must be an integer, got "
                                f"{type(s).__name__} {s!r}") from None


def _infer_random(name: str, params: tuple[str, str]):
    def infer(inputs, attrs):
        shape = attrs["shape"] = normalize_shape(attrs.get("shape"), name)
        d = attrs["dtype"] = dtypes.normalize(attrs.get("dtype", np.float32), name)
        if d not in dtypes.FLOATS:
            raise DTypeError(f"{name}: dtype must be floating point, got {d}")
        for p in params:
            attrs[p] = float(attrs[p])
            if not math.isfinite(attrs[p]):
                raise InvalidValueError(f"{name}: argument '{p}' must be finite, got "
                                        f"{attrs[p]}")
        a, b = (attrs[p] for p in params)
        if name == "randn" and b < 0:
            raise InvalidValueError(f"randn: argument 'sigma' must be >= 0, got {b}")
        if name == "rand" and a > b:
            raise InvalidValueError(f"rand: argument 'low' ({a}) must not exceed 'high' ({b})")
        attrs["seed"] = next_seed() if attrs.get("seed") is None else _check_seed(
            name, attrs["seed"])
        return ((shape, d),)
    return infer


rand_op = Op("rand", _infer_random("rand", ("low", "high")), differentiable=False)
randn_op = Op("randn", _infer_random("randn", ("mu", "sigma")), differentiable=False)


@declare(rand_op)
def rand(shape: Any, low: float = 0.0, high: float = 1.0, seed: int | None = None,
         dtype: Any = np.float32) -> Any:
    """Uniform ``[low, high)`` numbers on the current device."""
    return rand_op(shape=shape, low=low, high=high, seed=seed, dtype=dtype)


@declare(randn_op)
def randn(shape: Any, mu: float = 0.0, sigma: float = 1.0, seed: int | None = None,
          dtype: Any = np.float32) -> Any:
    """Normal ``(mu, sigma)`` numbers on the current device."""
    return randn_op(shape=shape, mu=mu, sigma=sigma, seed=seed, dtype=dtype)


def _infer_dropout(inputs, attrs):
    (x,) = inputs
    require_float("dropout", "x", x)
    p = attrs["p"] = float(attrs.get("p", 0.5))
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout: p must be in [0, 1), got {p}")
    if attrs.setdefault("seed", None) is not None:  # None: drawn when it runs (a static
        attrs["seed"] = _check_seed("dropout", attrs["seed"])  # graph re-draws each forward)
    return ((x.shape, x.dtype), (x.shape, x.dtype))


dropout_op = Op("dropout", _infer_dropout)


def _dropout_compose(x, p, seed):
    if seed is None:
        seed = next_seed()
    # p rounded to x's dtype first: every backend then compares the same two values,
    # whatever precision its comparison with a Python scalar uses
    threshold = float(np.dtype(x.dtype).type(p))
    keep = _ew.functions["greater_equal"](rand(x.shape, seed=seed, dtype=x.dtype), threshold)
    mask = _ew.cast(keep, dtype=x.dtype) * (1.0 / (1.0 - p))
    return x * mask, mask


register_composite("dropout", _dropout_compose)


def _onnx_dropout(ex: Any, n: Any, outs: list) -> None:
    """ONNX's ``Dropout`` (its bool mask cast to ``x``'s dtype, as the op's second output)."""
    from onnx import helper
    x = n.inputs[0]
    y, mask = ex.emit("Dropout", [ex.value(x), ex.const(n.attrs["p"], x.dtype, "ratio")],
                      [outs[0], ex.fresh("dropout_mask")])
    ex.emit("Cast", [mask], [outs[1]], to=helper.np_dtype_to_tensor_dtype(np.dtype(x.dtype)))


@declare(dropout_op, onnx=_onnx_dropout, macro=True)
def dropout(x: Any, p: float = 0.5, training: bool = True, seed: int | None = None) -> Any:
    """Inverted dropout: zero each element with probability ``p``, scale the rest by
    ``1/(1-p)``; the identity when not training or ``p == 0``."""
    if not training or p == 0:
        require_float("dropout", "x", x)
        return x
    return dropout_op(x, p=p, seed=seed)[0]


# -- backward rules -------------------------------------------------------------------
from .backward import backward as _backward  # noqa: E402

# The mask (second output) is not differentiable; x's gradient is g * mask.
_backward(dropout_op, outputs=(1,))(lambda c, g: (g * c.outputs[1],))
