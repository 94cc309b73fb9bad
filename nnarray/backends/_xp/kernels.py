"""Kernels for any numpy-compatible array module (numpy on the host, CuPy on CUDA).

``register_xp_kernels(backend, xp, empty, big)`` registers one kernel per primitive op
of ``nnarray.ops``. Outputs are fresh C-contiguous arrays; results of ``big`` elements
or more are written into ``empty(...)`` buffers so a caching allocator can serve them.
The elementwise functions come from their declarations (``ops/ufuncs.py``, through
``elementwise.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np

from ...dtypes import promote
from ...registry import register_kernel
from .amp import register_xp_amp
from .complex import (
    register_xp_complex,
    standard_expm1,
    standard_log1p,
    standard_sign,
    standard_square,
    standard_tanh,
)
from .elementwise import functions, in_result_dtype
from .fft import register_xp_fft
from .linalg import register_xp_linalg
from .sorting import register_sorting_kernels
from .windows import MAX_INDEX, col2im_index, im2col_index


def register_xp_kernels(backend: str, xp: Any, empty: Callable, big: int,
                        current_device: Callable[[], Any] = lambda: None,
                        checked_linalg: Callable[[], AbstractContextManager] = nullcontext
                        ) -> None:
    """Register the primitive kernels of ``nnarray.ops`` for ``backend``.
    ``current_device()`` names the device arrays of ``xp`` are made on now (arrays cached
    between calls are kept per device); inside ``checked_linalg()`` the xp's ``linalg``
    raises ``LinAlgError`` for singular or non-positive-definite input, as numpy's does
    (CuPy checks only when asked)."""
    nd = xp.ndarray

    def reg(name: str) -> Callable:
        return register_kernel(name, backend)

    def fresh(r: Any) -> Any:
        return r if type(r) is nd else xp.asarray(r)

    def copy(view: Any) -> Any:
        if view.size < big:
            return view.copy()  # C order; cheaper than empty + copyto on small ones
        out = empty(view.shape, view.dtype)
        xp.copyto(out, view)
        return out

    register_sorting_kernels(backend, xp, fresh)
    register_xp_amp(backend, xp)

    def _none(v: Any) -> Any:
        """``v`` with no elements (a scalar as is): a ufunc on it gives the result dtype
        without computing (or warning about) anything."""
        return v.reshape(-1)[:0] if type(v) is nd else v

    def binary(name: str, uf: Any) -> None:
        def k(a, b, out=None):
            if out is None:
                if (a.size if type(a) is nd else 0) < big and \
                        (b.size if type(b) is nd else 0) < big:
                    r = uf(a, b)
                    return r if type(r) is nd else xp.asarray(r)
                out = empty(np.broadcast_shapes(np.shape(a), np.shape(b)),
                            uf(_none(a), _none(b)).dtype)  # bool for comparisons
            uf(a, b, out=out)
            return out
        k.small = (uf, big)  # type: ignore[attr-defined]  # see kernel.fast_runner
        reg(name)(k)

    def unary(name: str, uf: Any) -> None:
        def k(x, out=None):
            if out is None:
                if x.size < big:
                    r = uf(x)
                    return r if type(r) is nd else xp.asarray(r)
                out = empty(x.shape, uf(_none(x)).dtype)
            uf(x, out=out)
            return out
        k.small = (uf, big)  # type: ignore[attr-defined]  # see kernel.fast_runner
        reg(name)(k)

    binaries, unaries = functions(xp)
    unaries["tanh"] = standard_tanh(xp, unaries["tanh"])
    unaries["tan"] = standard_tanh(xp, unaries["tan"], tan=True)
    unaries["expm1"] = standard_expm1(xp, unaries["expm1"])
    for name, fix in (("sign", standard_sign), ("log1p", standard_log1p),
                      ("square", standard_square)):
        unaries[name] = fix(xp, unaries[name])
    for name, fn in binaries.items():
        binary(name, in_result_dtype(name, fn))
    for name, fn in unaries.items():
        unary(name, fn)

    def _relu(x, out=None):
        if x.dtype == np.bool_:
            return x.copy() if out is None else _assign(out, x)
        if out is None:
            return xp.maximum(x, x.dtype.type(0))
        return xp.maximum(x, x.dtype.type(0), out=out)

    def _sigmoid(x, out=None):
        if x.dtype.kind == "c":  # 1 / (1 + e^-z), as the row's complex C
            r = xp.reciprocal(xp.exp(-x) + x.dtype.type(1))
            return r if out is None else _assign(out, r)
        if x.dtype.kind != "f":
            x = x.astype(xp.exp(x.reshape(-1)[:0]).dtype)
        # the row's C expression: e / (1 + e) below 0, 1 / (1 + e) above, e = exp(-|x|)
        e = xp.exp(-xp.abs(x))
        num = xp.where(x < 0, e, x.dtype.type(1))
        xp.add(e, x.dtype.type(1), out=e)
        if out is None:
            return xp.divide(num, e, out=num)
        return xp.divide(num, e, out=out)

    unary("relu", _relu)
    unary("sigmoid", _sigmoid)

    def _assign(out, x):
        if x.dtype.kind == "c" and out.dtype.kind != "c":
            x = x.real  # a cast to a real dtype keeps the real part (numpy would warn)
        xp.copyto(out, x, casting="unsafe")
        return out

    @reg("leaky_relu")
    def leaky_relu(x, alpha):
        return fresh(xp.where(x > 0, x, x * alpha))

    @reg("clip")
    def clip(x, a_min, a_max):
        return fresh(xp.clip(x, a_min, a_max))

    @reg("cast")
    def cast(x, dtype, out=None):
        return _assign(empty(x.shape, dtype) if out is None else out, x)

    @reg("where")
    def where(c, x, y):
        # two Python scalars give nnarray's dtype (float32 for floats), not numpy's float64
        return fresh(xp.where(c, x, y).astype(promote("where", x, y), copy=False))

    # the array methods: numpy's module-level functions add a Python wrapper layer
    for name, meth in (("sum", nd.sum), ("prod", nd.prod), ("mean", nd.mean), ("max", nd.max),
                       ("min", nd.min)):
        def red(x, axis, keepdims, _m=meth):
            r = _m(x, axis=axis, keepdims=keepdims)
            return r if type(r) is nd else xp.asarray(r)
        reg(name)(red)

    @reg("take")
    def take(x, indices, axis):
        return copy(xp.take(x, indices, axis=axis))

    @reg("setitem")
    def setitem(value, key, view, out):
        if key is None:  # a region of ``out`` given by the view (offset, shape, strides)
            off, shape, strides = view
            it = out.itemsize
            xp.lib.stride_tricks.as_strided(out.reshape(-1)[off:], shape,
                                            tuple(s * it for s in strides))[...] = value
            return out
        out[key] = value  # basic indices only (checked by the core): a view, then a copy
        return out

    @reg("scatter")
    def scatter(indices, value, out):
        # in place on any layout; where an index repeats numpy keeps the last write,
        # CuPy (like OpenCL) an unspecified one
        xp.put(out, indices, value)
        return out

    @reg("gather")
    def gather(x, indices):
        return copy(x[indices])

    @reg("scatter_add")
    def scatter_add(values, indices, size):
        out = xp.zeros((size,), values.dtype)
        xp.add.at(out, indices, values)  # repeated indices accumulate
        return out

    def cumulative(name: str, fn: Any) -> None:
        @reg(name)
        def k(x, axis):
            d = x.dtype
            d = np.int64 if d.kind in "bi" else np.uint64 if d.kind == "u" else d
            r = fn(x, axis=axis, dtype=d)  # CuPy's is strided along a leading axis
            return r if type(r) is nd and r.flags.c_contiguous else xp.ascontiguousarray(r)

    cumulative("cumulative_sum", xp.cumsum)
    cumulative("cumulative_prod", xp.cumprod)

    for name, fn in (("argmax", xp.argmax), ("argmin", xp.argmin)):
        def arg(x, axis, keepdims, _fn=fn):
            r = _fn(x, axis=axis)
            if keepdims:
                r = xp.reshape(r, (1,) * x.ndim if axis is None else
                               x.shape[:axis] + (1,) + x.shape[axis + 1:])
            return copy(xp.asarray(r).astype(np.int64, copy=False))
        reg(name)(arg)

    @reg("reshape")
    def reshape(x, shape):
        return copy(x.reshape(shape))

    # an input no one reads afterwards (generated backward code): a view is a fresh result
    reshape.move = lambda x, shape: x.reshape(shape)  # type: ignore[attr-defined]

    @reg("transpose")
    def transpose(x, axes):
        return copy(x.transpose(axes))

    @reg("broadcast_to")
    def broadcast_to(x, shape):
        out = empty(shape, x.dtype)
        xp.copyto(out, x)  # broadcasts x itself
        return out

    @reg("concatenate")
    def concatenate(*xs, axis, dtype):
        return fresh(xp.concatenate([x.astype(dtype, copy=False) for x in xs], axis=axis))

    @reg("slice")
    def slice_(x, start, step, count, shape):
        idx = []
        for s, st, n in zip(start, step, count):
            stop = s + st * (n - 1) + (1 if st > 0 else -1)
            idx.append(slice(s, s, 1) if n == 0 else slice(s, None if stop < 0 else stop, st))
        out = empty(shape, x.dtype)
        xp.copyto(out.reshape(count), x[tuple(idx)])
        return out

    @reg("matmul")
    def matmul(a, b, transpose_a=False, transpose_b=False):
        # a transposed view goes to BLAS as it is (a flag, not a copy)
        r = xp.matmul(a.swapaxes(-1, -2) if transpose_a else a,
                      b.swapaxes(-1, -2) if transpose_b else b)
        return r if type(r) is nd else xp.asarray(r)

    def _buffer(x):
        """A buffer like ``x`` from ``empty`` where it is big, else ``None`` (the
        ufunc's own). The allocator's: numpy's big temporaries, freed and made again
        per call, were fresh pages each time (glibc gives the top of its heap back), and
        each call paid their page faults."""
        return empty(x.shape, x.dtype) if x.size >= big else None

    def _shifted(x, axis):
        """``x`` minus its maximum along ``axis``, in a new buffer."""
        return xp.subtract(x, x.max(axis=axis, keepdims=True), out=_buffer(x))

    def _log_softmax(x, axis):
        if not x.size:  # an empty array has no maximum to subtract (nor rows)
            return x.copy()
        z = _shifted(x, axis)
        z -= xp.log(xp.exp(z, out=_buffer(z)).sum(axis=axis, keepdims=True))
        return z

    @reg("softmax")
    def softmax(x, axis):
        if not x.size:
            return x.copy()
        e = _shifted(x, axis)
        xp.exp(e, out=e)
        e /= e.sum(axis=axis, keepdims=True)
        return e

    reg("log_softmax")(lambda x, axis: fresh(_log_softmax(x, axis)))

    @reg("softmax_cross_entropy")
    def softmax_cross_entropy(x, t, axis):
        ls = _log_softmax(x, axis)
        if ls.ndim == 2 and axis == 1:  # (batch, classes): indexing, cheaper than take_along
            return -ls[xp.arange(ls.shape[0]), t]
        picked = xp.take_along_axis(ls, xp.expand_dims(t.astype(np.int64), axis), axis=axis)
        return fresh(-xp.squeeze(picked, axis=axis))

    @reg("sgd_update")
    def sgd_update(ws, gs, lr):
        dt = step = None
        for w, g in zip(ws, gs):
            if w.dtype is not dt:  # the rate in the parameters' dtype, made once per dtype
                dt, step = w.dtype, w.dtype.type(lr)
            w -= step * g

    @reg("mean_squared_error")
    def mean_squared_error(x, t):
        # three array-module calls instead of the composite's three dispatched ops
        d = xp.subtract(x, t)
        if type(d) is not nd:  # 0-d operands give a scalar
            d = xp.asarray(d)
        xp.multiply(d, d, out=d)
        acc = np.float32 if d.dtype == np.float16 else None  # as numpy's mean accumulates
        return xp.asarray(d.sum(dtype=acc) / d.size, dtype=d.dtype)

    @reg("one_hot")
    def one_hot(t, num_classes, axis, dtype):
        shape = [1] * (t.ndim + 1)
        shape[axis] = num_classes
        classes = xp.arange(num_classes).reshape(shape)
        return fresh((xp.expand_dims(t, axis) == classes).astype(dtype))

    def _windows(kernel, stride, dilation, oh, ow):
        (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
        for i in range(kh):
            for j in range(kw):
                yield i, j, (slice(i * dh, i * dh + sh * (oh - 1) + 1, sh),
                             slice(j * dw, j * dw + sw * (ow - 1) + 1, sw))

    def _out_hw(h, w, kernel, stride, pad, dilation):
        return tuple((s + 2 * p - d * (k - 1) - 1) // st + 1
                     for s, k, st, p, d in zip((h, w), kernel, stride, pad, dilation))

    def _tiles(kernel, stride, pad, dilation):
        """Windows that tile the image (pooling's stride == kernel, no padding): im2col
        and col2im are then one permuting copy each, instead of a loop over offsets."""
        return tuple(stride) == tuple(kernel) and not any(pad) and tuple(dilation) == (1, 1)

    indices: dict = {}  # the windows' cached gather indices, as arrays of xp, per device

    def _index(fn, *geometry):
        key = (fn, current_device(), geometry)
        r = indices.get(key, key)
        if r is key:
            r = fn(*geometry)
            if r is not None:
                r = (xp.asarray(r[0]), r[1]) if type(r) is tuple else xp.asarray(r)
            if len(indices) >= 256:
                indices.clear()
            indices[key] = r
        return r

    def _gathered(n, per_image):
        """Whether a batch of ``n`` images runs as one take of ``per_image`` outputs
        each (small batches: see ``windows``)."""
        return per_image <= MAX_INDEX and n * per_image < big

    def _with_value(flat, value):
        """``(n, m)`` with a column of ``value`` after it: what padding reads."""
        n, m = flat.shape
        e = empty((n, m + 1), flat.dtype)
        e[:, :m] = flat
        e[:, m] = value
        return e

    @reg("im2col")
    def im2col(x, kernel, stride, pad, dilation, pad_value):
        n, c, h, w = x.shape
        oh, ow = _out_hw(h, w, kernel, stride, pad, dilation)
        (kh, kw), ph, pw = kernel, *pad
        if _gathered(n, c * kh * kw * oh * ow):
            idx = _index(im2col_index, c, h, w, kernel, stride, pad, dilation, oh, ow)
            flat = x.reshape(n, c * h * w)
            if ph or pw:
                flat = _with_value(flat, pad_value)
            return xp.take(flat, idx, axis=1).reshape(n, c * kh * kw, oh * ow)
        if _tiles(kernel, stride, pad, dilation):
            t = x[:, :, :oh * kh, :ow * kw].reshape(n, c, oh, kh, ow, kw)
            cols = empty((n, c, kh, kw, oh, ow), x.dtype)
            xp.copyto(cols, t.transpose(0, 1, 3, 5, 2, 4))
            return cols.reshape(n, c * kh * kw, oh * ow)
        if ph or pw:
            xp_ = xp.full((n, c, h + 2 * ph, w + 2 * pw), pad_value, dtype=x.dtype)
            xp_[:, :, ph:ph + h, pw:pw + w] = x
            x = xp_
        cols = empty((n, c, kernel[0], kernel[1], oh, ow), x.dtype)
        for i, j, (si, sj) in _windows(kernel, stride, dilation, oh, ow):
            cols[:, :, i, j] = x[:, :, si, sj]
        return cols.reshape(n, c * kernel[0] * kernel[1], oh * ow)

    @reg("col2im")
    def col2im(cols, size, kernel, stride, pad, dilation):
        c, h, w = size
        n = cols.shape[0]
        oh, ow = _out_hw(h, w, kernel, stride, pad, dilation)
        (kh, kw), ph, pw = kernel, *pad
        inv = _index(col2im_index, c, h, w, kernel, stride, pad, dilation, oh, ow) \
            if _gathered(n, c * h * w) else None
        if inv is not None:  # windows never overlap: each pixel is copied back
            flat = cols.reshape(n, cols.shape[1] * cols.shape[2])
            if inv[1]:  # some pixels are in no window: they read a zero
                flat = _with_value(flat, 0)
            return xp.take(flat, inv[0], axis=1).reshape(n, c, h, w)
        if _tiles(kernel, stride, pad, dilation):  # each pixel in one window at most
            t = cols.reshape(n, c, kh, kw, oh, ow).transpose(0, 1, 4, 2, 5, 3)
            if (oh * kh, ow * kw) == (h, w):
                img = empty((n, c, h, w), cols.dtype)
                xp.copyto(img.reshape(n, c, oh, kh, ow, kw), t)
                return img
            img = xp.zeros((n, c, h, w), dtype=cols.dtype)
            img[:, :, :oh * kh, :ow * kw] = t.reshape(n, c, oh * kh, ow * kw)
            return img
        img = xp.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=cols.dtype)
        c6 = cols.reshape(n, c, kernel[0], kernel[1], oh, ow)
        for i, j, (si, sj) in _windows(kernel, stride, dilation, oh, ow):
            img[:, :, si, sj] += c6[:, :, i, j]
        return copy(img[:, :, ph:ph + h, pw:pw + w])

    register_xp_linalg(backend, xp, checked_linalg)
    register_xp_complex(backend, xp)
    register_xp_fft(backend, xp)
