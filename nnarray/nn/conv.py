"""``Conv2d``: a 2-D convolution layer over NCHW inputs."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import functions as F
from . import initializers as I
from .module import Module
from .parameter import parameter


def _pair(v: int | tuple[int, int]) -> tuple[int, int]:
    return (int(v), int(v)) if isinstance(v, (int, np.integer)) else (int(v[0]), int(v[1]))


def _padding(pad: Any, padding: Any, kernel: tuple[int, int],
             stride: tuple[int, int]) -> tuple[int, int]:
    """The ``(ph, pw)`` of nnabla's ``pad`` or torch's ``padding`` (one of them)."""
    if pad is not None and padding is not None:
        raise ValueError(f"Conv2d: give pad={pad!r} or padding={padding!r} (torch's name), "
                         "not both")
    p = padding if pad is None else pad
    if p is None or p == "valid":
        return (0, 0)
    if p == "same":
        if stride != (1, 1) or kernel[0] % 2 == 0 or kernel[1] % 2 == 0:
            raise ValueError(f"Conv2d: padding='same' needs stride 1 and an odd kernel "
                             f"(symmetric padding), got stride {stride}, kernel {kernel}")
        return (kernel[0] // 2, kernel[1] // 2)
    if isinstance(p, str):
        raise ValueError(f"Conv2d: padding must be an int, a pair, 'valid' or 'same', got {p!r}")
    return _pair(p)


class Conv2d(Module):
    """``F.conv2d(x, W, b, stride, pad)`` with ``W`` of shape ``(out, in, kh, kw)`` and
    ``b`` of shape ``(out,)``; defaults: He normal weights, zero bias. ``padding`` is
    torch's name for ``pad`` (also ``"valid"``, and ``"same"`` for stride 1 and odd
    kernels); giving both is a ``ValueError``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int, int],
                 stride: int | tuple[int, int] = 1, pad: int | tuple[int, int] | None = None,
                 bias: bool = True, w_init: I.Initializer | None = None,
                 b_init: I.Initializer | None = None,
                 rng: np.random.Generator | None = None, *,
                 padding: int | tuple[int, int] | str | None = None) -> None:
        kh, kw = _pair(kernel_size)
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size, self.stride = (kh, kw), _pair(stride)
        self.pad = _padding(pad, padding, self.kernel_size, self.stride)
        shape = (self.out_channels, self.in_channels, kh, kw)
        fan_in, fan_out = self.in_channels * kh * kw, self.out_channels * kh * kw
        self.W = parameter((w_init or I.he_normal)(shape, fan_in, fan_out, rng))
        self.b = (parameter((b_init or I.zeros)(self.out_channels, fan_in, fan_out, rng))
                  if bias else None)

    def forward(self, x: Any) -> Any:
        return F.conv2d(x, self.W, self.b, stride=self.stride, pad=self.pad)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, pad={self.pad}")
