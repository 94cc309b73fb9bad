"""Kernels shared by the backends whose arrays follow numpy's API (numpy and CuPy).

Not a backend itself (the leading underscore keeps discovery away): the numpy and cuda
backends call ``register_xp_kernels`` with their array module and allocator.
"""

from .kernels import register_xp_kernels

__all__ = ["register_xp_kernels"]
