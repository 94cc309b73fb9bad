"""Kernels of ``ops.complex`` on OpenCL: one generated map each over ``float2``/``double2``
(``.x`` real, ``.y`` imaginary; see ``cltypes``)."""

from __future__ import annotations

import numpy as np

from ...dtypes import complex_of, real_of
from ...registry import register_kernel
from .cltypes import cltype
from .complex_math import helpers
from .device import device_of
from .elementwise import plan

#: name -> C expression of ``v0`` (the complex operand), of the result's compute type.
_PARTS = {
    "real": "v0.x",
    "imag": "v0.y",
    "conj": "(({c})(v0.x, -v0.y))",
    "angle": "r_atan2_{c}(v0.y, v0.x)",
    "complex_abs": "c_abs_{c}(v0)",
}


def part(name: str, x):
    """``real``/``imag``/``conj``/``angle``/``complex_abs`` of complex ``x``."""
    dev = device_of(x)
    key = (name, x.dtype, x.shape)
    p = dev.plans.get(key)
    if p is None:
        t = cltype(x.dtype)
        out = x.dtype if name == "conj" else real_of(x.dtype)
        p = dev.plans[key] = plan(dev, name, _PARTS[name].format(c=t.calc), (x,), [t], x.shape,
                                  out, helpers(t))
    return p.run(dev, (x,))


for _n in _PARTS:
    register_kernel(_n, "opencl")(lambda x, _n=_n: part(_n, x))


@register_kernel("make_complex", "opencl")
def make_complex(re, im):
    dev = device_of(re)
    key = ("make_complex", re.dtype, re.shape)
    p = dev.plans.get(key)
    if p is None:
        t, out = cltype(re.dtype), np.dtype(complex_of(re.dtype))
        p = dev.plans[key] = plan(dev, "make_complex", f"(({cltype(out).calc})(v0, v1))",
                                  (re, im), [t, t], re.shape, out)
    return p.run(dev, (re, im))
