"""Pooling modules over ``(N, C, H, W)``: ``MaxPool2d``, ``AvgPool2d``."""

from __future__ import annotations

from typing import Any

from .. import functions as F
from .module import Module


class _Pool2d(Module):
    """``pad`` is nnabla's name (API.md), ``padding`` torch's; one of them (default 0)."""

    def __init__(self, kernel_size: Any, stride: Any = None, pad: Any = None, *,
                 padding: Any = None) -> None:
        if pad is not None and padding is not None:
            raise ValueError(f"{type(self).__name__}: give pad={pad!r} or padding={padding!r} "
                             "(torch's name), not both")
        p = padding if pad is None else pad
        self.kernel_size, self.stride, self.padding = kernel_size, stride, 0 if p is None else p

    @property
    def pad(self) -> Any:
        return self.padding

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2d(_Pool2d):
    """``F.max_pooling`` (stride defaults to the kernel size)."""

    def forward(self, x: Any) -> Any:
        return F.max_pooling(x, self.kernel_size, self.stride, self.padding)


class AvgPool2d(_Pool2d):
    """``F.average_pooling`` (padding counted as zeros, as torch's default)."""

    def forward(self, x: Any) -> Any:
        return F.average_pooling(x, self.kernel_size, self.stride, self.padding)
