"""Parts of complex numbers: ``real``, ``imag``, ``conj``, ``angle``, ``complex_abs`` and
``make_complex`` (the inverse of the first two).

Kernel contract (native arrays in, a new C-contiguous native array out):
``real(x)``/``imag(x)``/``complex_abs(x)``/``angle(x)`` of a complex ``x`` give its real
dtype; ``conj(x)`` keeps it; ``make_complex(re, im)`` of two real arrays of one shape and
dtype gives the complex dtype of that precision.

Gradients follow PyTorch's convention: for a real loss ``L`` the gradient of a complex
``z = a + ib`` is ``dL/da + i dL/db`` (the conjugate Wirtinger derivative, times 2).
"""

from __future__ import annotations

from typing import Any

from .. import dtypes, late
from ..errors import DTypeError, ShapeError
from .common import require_array
from .op import Op


def _require_complex(op: str, x) -> None:
    require_array(op, "x", x)
    if x.dtype not in dtypes.COMPLEX:
        raise DTypeError(f"{op}: argument 'x' must be complex64 or complex128, got {x.dtype} "
                         f"(shape {x.shape})")


def _infer_part(name: str, keep: bool = False):
    def infer(inputs, attrs):
        (x,) = inputs
        _require_complex(name, x)
        return ((x.shape, x.dtype if keep else dtypes.real_of(x.dtype)),)
    return infer


def _infer_make(inputs, attrs):
    re, im = inputs
    require_array("make_complex", "re", re)
    require_array("make_complex", "im", im)
    if re.shape != im.shape or re.dtype != im.dtype or re.dtype not in dtypes.FLOATS:
        raise ShapeError(f"make_complex: 're' and 'im' must be real floating arrays of one "
                         f"shape and dtype, got {re.shape} {re.dtype} and {im.shape} {im.dtype}")
    return ((re.shape, dtypes.complex_of(re.dtype)),)


real = Op("real", _infer_part("real"))
imag = Op("imag", _infer_part("imag"))
conj = Op("conj", _infer_part("conj", keep=True))
angle = Op("angle", _infer_part("angle"))
complex_abs = Op("complex_abs", _infer_part("complex_abs"))
make_complex = Op("make_complex", _infer_make)

#: The op of each name, for the backends' registrations and tests.
OPS = {op.name: op for op in (real, imag, conj, angle, complex_abs, make_complex)}


# -- backward rules -------------------------------------------------------------------
F: Any = late.bind(__name__, "F", "nnarray.functions")  # the layer above, bound late
from .backward import backward as _backward  # noqa: E402


def _zeros_like(g):
    return F.mul(g, 0.0)


@_backward(real)
def _real_grad(c, g):
    return (make_complex(g, _zeros_like(g)),)


@_backward(imag)
def _imag_grad(c, g):
    return (make_complex(_zeros_like(g), g),)


@_backward(conj)
def _conj_grad(c, g):
    return (conj(g),)


@_backward(make_complex)
def _make_grad(c, g):
    return (real(g) if c.need[0] else None, imag(g) if c.need[1] else None)


def _parts_over(x, power: int):
    """``(a / r**power, b / r**power, r == 0)`` of ``x = a + ib`` (0 where ``r`` is 0)."""
    a, b, r = real(x), imag(x), complex_abs(x)
    zero = F.equal(r, 0)
    d = F.where(zero, F.add(r, 1), r)
    if power == 2:
        d = F.mul(d, d)
    return F.where(zero, 0.0, F.div(a, d)), F.where(zero, 0.0, F.div(b, d))


@_backward(complex_abs, inputs=(0,))
def _abs_grad(c, g):
    """``g * z / |z|`` (PyTorch's ``g * sgn(z)``; 0 at 0)."""
    ca, sb = _parts_over(c.inputs[0], 1)
    return (make_complex(F.mul(g, ca), F.mul(g, sb)),)


@_backward(angle, inputs=(0,))
def _angle_grad(c, g):
    """``g * i z / |z|^2``, as PyTorch (0 at 0)."""
    a, b = _parts_over(c.inputs[0], 2)
    return (make_complex(F.neg(F.mul(g, b)), F.mul(g, a)),)
