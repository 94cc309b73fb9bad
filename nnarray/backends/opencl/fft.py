"""Kernels of ``ops.fft`` on OpenCL: our own Stockham FFT (no library).

A 1-D transform of length ``n`` along one axis runs on the array viewed as
``(outer, n, inner)``, batched over ``outer * inner``:

- ``n`` a product of 2, 3, 4, 5 and 7 (10^6 = 4^3 5^6 included): Stockham autosort passes
  (radix 4 and 2 written out, 3/5/7 a small DFT each), ping-ponging between two buffers;
  twiddles come from a table of ``exp(+-2 pi i t / n)`` kept on the device per size; the
  last pass applies the norm's scale.
- other ``n``: Bluestein's algorithm: the chirp-multiplied input padded to a power of two
  ``M >= 2n - 1`` (contiguous rows), a forward transform, a product with the transform of
  the chirp (computed once per ``(n, direction, dtype)`` and kept on the device), an inverse
  transform, and the chirp again (angles from ``k*k mod 2n`` in integers: exact for any n).

An n-D transform is one 1-D transform per axis. ``fft_r2c`` of an even length along the
array's last axis reads the real rows as complex pairs, transforms those (half the length)
and untangles the bins in one twiddle pass; other cases transform the input made complex
and cut it to ``n // 2 + 1`` bins; then the other axes are transformed (on half the
data). ``fft_c2r`` transforms the other axes, then, for an even length along the last
axis, packs the bins into a half-length complex input in one twiddle pass and reads its
inverse transform as the real result; other cases extend the axis by Hermitian symmetry,
transform it and keep the real part. Not done: radices past 7 without Bluestein.
"""

from __future__ import annotations

import numpy as np

from ...dtypes import complex_of, real_of
from ...ops.fft import scale as _scale
from ...registry import register_kernel
from .cltypes import cltype, header
from .complex import part
from .device import device_of
from .elementwise import cast
from .programs import launch

_SRC = """{hdr}
typedef {r} R; typedef {r}2 C;
inline C cmul(C a, C b) {{ return (C)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }}
inline C twiddle(long k, long m, R sign) {{  // exp(sign * 2 pi i k / m)
  R c, s = sincos(sign * (R)(2 * M_PI) * (R)k / (R)m, &c); return (C)(c, s);
}}

__kernel void scaled(__global const C* x, __global C* y, const long total, const R scale) {{
  const long g = get_global_id(0);
  if (g < total) y[g] = x[g] * scale;
}}

// One Stockham pass of radix 2 or 4 over rows (outer, n, inner): q = n / radix work
// items per row; ns: the length of the sub-transforms done so far.
__kernel void pass2(__global const C* src, __global C* dst, const long n, const long inner,
                    const long ns, const long total, const R scale, __global const C* tw) {{
  const long g = get_global_id(0);
  if (g >= total) return;
  const long q = n / 2, j = g % q, b = g / q, o = b / inner, i = b - o * inner;
  const long base = o * n * inner + i;
  const long k = j % ns;
  C v0 = src[base + j * inner], v1 = src[base + (j + q) * inner];
  v1 = cmul(v1, tw[k * (q / ns)]);
  const long d = (j / ns) * ns * 2 + k;
  dst[base + d * inner] = (v0 + v1) * scale;
  dst[base + (d + ns) * inner] = (v0 - v1) * scale;
}}

__kernel void pass4(__global const C* src, __global C* dst, const long n, const long inner,
                    const long ns, const long total, const R scale, __global const C* tw) {{
  const long g = get_global_id(0);
  if (g >= total) return;
  const long q = n / 4, j = g % q, b = g / q, o = b / inner, i = b - o * inner;
  const long base = o * n * inner + i;
  const long k = j % ns;
  C v0 = src[base + j * inner], v1 = src[base + (j + q) * inner];
  C v2 = src[base + (j + 2 * q) * inner], v3 = src[base + (j + 3 * q) * inner];
  if (ns > 1) {{
    const long st = k * (q / ns);
    v1 = cmul(v1, tw[st]); v2 = cmul(v2, tw[2 * st]); v3 = cmul(v3, tw[3 * st]);
  }}
  const C a0 = v0 + v2, a1 = v0 - v2, a2 = v1 + v3, d13 = v1 - v3;
  const C iq = tw[q];  // sign * i
  const C a3 = (C)(-iq.y * d13.y, iq.y * d13.x);  // sign * i * (v1 - v3)
  const long d = (j / ns) * ns * 4 + k;
  dst[base + d * inner] = (a0 + a2) * scale;
  dst[base + (d + ns) * inner] = (a1 + a3) * scale;
  dst[base + (d + 2 * ns) * inner] = (a0 - a2) * scale;
  dst[base + (d + 3 * ns) * inner] = (a1 - a3) * scale;
}}

// A radix-RADIX pass (3, 5, 7): the twiddles and the small DFT's roots from the table.
__kernel void passr(__global const C* src, __global C* dst, const long n, const long inner,
                    const long ns, const long total, const R scale, __global const C* tw) {{
  const long g = get_global_id(0);
  if (g >= total) return;
  const long q = n / RADIX, j = g % q, b = g / q, o = b / inner, i = b - o * inner;
  const long base = o * n * inner + i;
  const long k = j % ns, st = k * (q / ns);
  C v[RADIX];
  for (int r = 0; r < RADIX; ++r) {{
    const C u = src[base + (j + r * q) * inner];
    v[r] = r ? cmul(u, tw[r * st]) : u;
  }}
  const long d = (j / ns) * ns * RADIX + k;
  for (int t = 0; t < RADIX; ++t) {{
    C acc = v[0];
    for (int r = 1; r < RADIX; ++r) acc += cmul(v[r], tw[((r * t) % RADIX) * q]);
    dst[base + (d + t * ns) * inner] = acc * scale;
  }}
}}

// Bluestein: a[b, k] = x[b, k] * w_k (k < n), 0 up to m; rows of x are (outer, n, inner).
__kernel void chirp_in(__global const C* x, __global C* a, const long n, const long inner,
                       const long m, const long total, const R sign) {{
  const long g = get_global_id(0);
  if (g >= total) return;
  const long k = g % m, b = g / m, o = b / inner, i = b - o * inner;
  a[g] = k < n ? cmul(x[o * n * inner + i + k * inner], twiddle((k * k) % (2 * n), 2 * n, sign))
               : (C)(0, 0);
}}

__kernel void pointwise(__global C* a, __global const C* f, const long m, const long total) {{
  const long g = get_global_id(0);
  if (g >= total) return;
  a[g] = cmul(a[g], f[g % m]);
}}

// y[b, k] = w_k * c[b, k] * scale for k < n, written to rows (outer, n, inner).
__kernel void chirp_out(__global const C* c, __global C* y, const long n, const long inner,
                        const long m, const long total, const R sign, const R scale) {{
  const long g = get_global_id(0);
  if (g >= total) return;
  const long k = g % n, b = g / n, o = b / inner, i = b - o * inner;
  y[o * n * inner + i + k * inner] =
      cmul(c[b * m + k], twiddle((k * k) % (2 * n), 2 * n, sign)) * scale;
}}

// rfft of rows of n = 2h reals from the length-h transform z of their pairs (x[2k] +
// i x[2k+1]): X[k] = E + w^k O, E = (z[k] + conj z[h-k]) / 2, O = (z[k] - conj z[h-k]) / 2i.
__kernel void r2c_post(__global const C* z, __global C* out, const long h, const long total,
                       const R scale, __global const C* tw) {{
  const long g = get_global_id(0);
  if (g >= total) return;
  const long k = g % (h + 1), row = g / (h + 1);
  const C a = z[row * h + (k == h ? 0 : k)], c = z[row * h + (k == 0 ? 0 : h - k)];
  const C b = (C)(c.x, -c.y);
  const C e = (a + b) * (R)0.5, d = (a - b) * (R)0.5;
  const C o = (C)(d.y, -d.x);  // d / i
  out[g] = (e + cmul(tw[k], o)) * scale;
}}

// irfft of rows of n = 2h reals as a length-h inverse transform: from the h + 1 Hermitian
// bins X (imaginary parts of bins 0 and h ignored), Z[k] = E + i O with E = X[k] + conj
// X[h-k] (twice the even samples' transform), O = (X[k] - conj X[h-k]) w^-k (the odd
// ones'); the inverse transform of Z holds x[2j] + i x[2j+1].
__kernel void c2r_pre(__global const C* x, __global C* z, const long h, const long total,
                      const R scale, __global const C* tw) {{
  const long g = get_global_id(0);
  if (g >= total) return;
  const long k = g % h, row = g / h;
  C a = x[row * (h + 1) + k], b = x[row * (h + 1) + h - k];
  if (k == 0) {{ a.y = 0; b.y = 0; }}
  const C bc = (C)(b.x, -b.y);
  const C e = a + bc, d = cmul(a - bc, tw[k]);
  z[g] = (C)(e.x - d.y, e.y + d.x) * scale;
}}

// out (outer, lo, inner) from x (outer, li, inner): a prefix copy when herm is 0, else the
// Hermitian extension out[k] = conj(x[lo - k]) past the li given bins.
__kernel void extend(__global const C* x, __global C* out, const long li, const long lo,
                     const long inner, const long total, const int herm) {{
  const long g = get_global_id(0);
  if (g >= total) return;
  const long i = g % inner, t = g / inner, k = t % lo, o = t / lo;
  if (k < li) out[g] = x[(o * li + k) * inner + i];
  else {{ const C v = x[(o * li + (lo - k)) * inner + i]; out[g] = (C)(v.x, -v.y); }}
}}
"""

_L = np.int64


def _kernel(dev, dtype: np.dtype, name: str, radix: int = 3):
    r = cltype(real_of(dtype))
    return dev.programs.kernel(f"#define RADIX {radix}\n" + _SRC.format(hdr=header(r), r=r.calc),
                               name)


def factors(n: int) -> list[int] | None:
    """``n`` as a product of the pass radices (one radix 2 at most), else ``None``."""
    out = []
    for r in (4, 3, 5, 7):
        while n % r == 0:
            out.append(r)
            n //= r
    if n == 2:
        out.insert(0, 2)
        n = 1
    return out if n == 1 else None


def _table(dev, n: int, dtype: np.dtype, sign: float):
    """``exp(sign * 2 pi i t / n)`` for ``t < n`` on the device (cached per device)."""
    cache = dev.__dict__.setdefault("_fft_tables", {})
    key = (n, np.dtype(dtype).str, sign)
    t = cache.get(key)
    if t is None:
        t = cache[key] = dev.from_host(
            np.exp(sign * 2j * np.pi * np.arange(n) / n).astype(dtype))
    return t


def _rows(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
    return outer, shape[axis], inner


def _passes(dev, src, s1, s2, n: int, radices: list[int], inner: int, batch: int,
            sign: float, scale: float):
    """The transform of ``src``'s rows, ``n`` the product of ``radices``: Stockham passes
    from ``src`` into ``s1``, then back and forth between ``s1`` and ``s2`` (``src`` may be
    ``s2``). Returns the buffer holding the result."""
    R = np.dtype(real_of(src.dtype)).type
    if not radices:  # n == 1
        launch(dev.queue, _kernel(dev, src.dtype, "scaled"), src.size,
               [src.base_data, s1.base_data, _L(src.size), R(scale)])
        return s1
    tw = _table(dev, n, src.dtype, sign)
    cur, dst, ns = src, s1, 1
    for p, radix in enumerate(radices):
        total = batch * (n // radix)
        # RADIX only shapes ``passr``: pass2/pass4 come from the default program, not a
        # copy of the whole source compiled again per radix
        knl = _kernel(dev, src.dtype, "passr", radix) if radix not in (2, 4) else \
            _kernel(dev, src.dtype, f"pass{radix}")
        launch(dev.queue, knl, total,
               [cur.base_data, dst.base_data, _L(n), _L(inner), _L(ns), _L(total),
                R(scale if p == len(radices) - 1 else 1.0), tw.base_data])
        cur, dst = dst, (s2 if dst is s1 else s1)
        ns *= radix
    return cur


def _chirp_spectrum(dev, n: int, m: int, dtype: np.dtype, sign: float):
    """The forward transform of the length-``m`` chirp ``conj(w)`` (cached per device)."""
    cache = dev.__dict__.setdefault("_fft_chirps", {})
    key = (n, m, np.dtype(dtype).str, sign)
    f = cache.get(key)
    if f is None:
        k = np.arange(n, dtype=np.int64)
        w = np.exp(-1j * sign * np.pi * ((k * k) % (2 * n)) / n)  # conj of the chirp
        b = np.zeros(m, np.complex128)
        b[:n] = w
        b[m - n + 1:] = w[1:][::-1]
        f = dev.from_host(np.fft.fft(b).astype(dtype))
        cache[key] = f
    return f


def _transform_axis(dev, x, axis: int, inverse: bool, norm: str):
    """The 1-D transform of complex ``x`` along ``axis``: a new array."""
    outer, n, inner = _rows(x.shape, axis)
    batch = outer * inner
    sign = 1.0 if inverse else -1.0
    scale = _scale(n, inverse, norm)
    if not x.size:
        return dev.empty(x.shape, x.dtype)
    radices = factors(n)
    if radices is not None:
        return _passes(dev, x, dev.empty(x.shape, x.dtype), dev.empty(x.shape, x.dtype), n,
                       radices, inner, batch, sign, scale)
    out = dev.empty(x.shape, x.dtype)
    m = 1 << (2 * n - 2).bit_length()
    R = np.dtype(real_of(x.dtype)).type
    a = dev.empty((batch, m), x.dtype)
    b = dev.empty((batch, m), x.dtype)
    total = batch * m
    launch(dev.queue, _kernel(dev, x.dtype, "chirp_in"), total,
           [x.base_data, a.base_data, _L(n), _L(inner), _L(m), _L(total), R(sign)])
    rm = factors(m)
    r = _passes(dev, a, b, a, m, rm, 1, batch, -1.0, 1.0)
    f = _chirp_spectrum(dev, n, m, x.dtype, sign)
    launch(dev.queue, _kernel(dev, x.dtype, "pointwise"), total,
           [r.base_data, f.base_data, _L(m), _L(total)])
    other = a if r is b else b
    r = _passes(dev, r, other, r, m, rm, 1, batch, 1.0, 1.0 / m)
    launch(dev.queue, _kernel(dev, x.dtype, "chirp_out"), batch * n,
           [r.base_data, out.base_data, _L(n), _L(inner), _L(m), _L(batch * n), R(sign),
            R(scale)])
    return out


def _extend(dev, x, axis: int, length: int, hermitian: bool):
    """``x`` cut to ``length`` along ``axis``, or extended there by Hermitian symmetry."""
    outer, li, inner = _rows(x.shape, axis)
    shape = x.shape[:axis] + (length,) + x.shape[axis + 1:]
    out = dev.empty(shape, x.dtype)
    total = outer * length * inner
    if total:
        launch(dev.queue, _kernel(dev, x.dtype, "extend"), total,
               [x.base_data, out.base_data, _L(li), _L(length), _L(inner), _L(total),
                np.int32(hermitian)])
    return out


@register_kernel("fft_c2c", "opencl")
def fft_c2c(x, axes, inverse, norm):
    dev = device_of(x)
    dev.check_dtype(x.dtype, "fft_c2c")
    for a in axes:
        x = _transform_axis(dev, x, a, inverse, norm)
    return x


@register_kernel("fft_r2c", "opencl")
def fft_r2c(x, axes, norm):
    dev = device_of(x)
    dev.check_dtype(x.dtype, "fft_r2c")
    n = x.shape[axes[-1]]
    if axes[-1] == x.ndim - 1 and n % 2 == 0 and x.dtype.itemsize >= 4 and not x.offset \
            and x.size:  # rows of contiguous pairs: the half-size transform
        y = _half_size(dev, x, n, _scale(n, False, norm))
    else:
        y = _transform_axis(dev, cast(x, complex_of(x.dtype)), axes[-1], False, norm)
        y = _extend(dev, y, axes[-1], n // 2 + 1, False)
    return fft_c2c(y, axes[:-1], False, norm) if len(axes) > 1 else y  # on half the bins


def _half_size(dev, x, n: int, scale: float):
    """``rfft`` along the last axis of a real ``x`` (``n`` even) as a length ``n / 2``
    complex transform of the same buffer read as complex pairs, then one twiddle pass."""
    import pyopencl.array as cla
    cd = np.dtype(complex_of(x.dtype))
    h = n // 2
    z = cla.Array(x.queue, x.shape[:-1] + (h,), cd, data=x.base_data)
    f = _transform_axis(dev, z, z.ndim - 1, False, "backward")
    out = dev.empty(x.shape[:-1] + (h + 1,), cd)
    R = np.dtype(real_of(cd)).type
    launch(dev.queue, _kernel(dev, cd, "r2c_post"), out.size,
           [f.base_data, out.base_data, _L(h), _L(out.size), R(scale),
            _table(dev, n, cd, -1.0).base_data])
    return out


@register_kernel("fft_c2r", "opencl")
def fft_c2r(x, axes, n, norm):
    dev = device_of(x)
    dev.check_dtype(x.dtype, "fft_c2r")
    for a in axes[:-1]:
        x = _transform_axis(dev, x, a, True, norm)
    if axes[-1] == x.ndim - 1 and n % 2 == 0 and not x.offset and x.size:
        return _half_size_inverse(dev, x, n, norm)
    full = _extend(dev, x, axes[-1], n, True)
    y = _transform_axis(dev, full, axes[-1], True, norm)
    return part("real", y)


def _half_size_inverse(dev, x, n: int, norm: str):
    """``irfft`` along the last axis (``n`` even) of the ``n // 2 + 1`` bins ``x``: one
    pass packs them into a length ``n / 2`` complex input, whose inverse transform, read
    as real pairs, is the result (no copy)."""
    import pyopencl.array as cla
    h = n // 2
    z = dev.empty(x.shape[:-1] + (h,), x.dtype)
    R = np.dtype(real_of(x.dtype)).type
    # the length-h transform scales by its own norm; this pass makes up the difference
    fix = _scale(n, True, norm) / _scale(h, True, norm)
    launch(dev.queue, _kernel(dev, x.dtype, "c2r_pre"), z.size,
           [x.base_data, z.base_data, _L(h), _L(z.size), R(fix),
            _table(dev, n, x.dtype, 1.0).base_data])
    f = _transform_axis(dev, z, z.ndim - 1, True, norm)
    return cla.Array(f.queue, x.shape[:-1] + (n,), real_of(x.dtype), data=f.base_data)
