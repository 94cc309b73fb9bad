"""The table of every CUDA C program the backend compiles, importable without CuPy.

Raw sources (``raw.Source``, run by ``cupy.RawKernel``) and CuPy kernel bodies
(``Elementwise``, run by ``cupy.ElementwiseKernel``) record themselves here when their
module is imported; ``programs.load()`` imports every module that defines one (this
module imports none of them, so each can import it). The NVRTC test
compiles each entry in every specialisation the backend can produce, so a new kernel
declared this way is covered without editing the test.
"""

from __future__ import annotations

from typing import Any, NamedTuple

#: Every ``raw.Source`` made (filled as the modules defining them are imported).
SOURCES: list = []
#: Every ``Elementwise`` body declared.
ELEMENTWISE: list[Elementwise] = []


class Elementwise(NamedTuple):
    """The arguments of one ``cupy.ElementwiseKernel``, and the dtypes the backend calls
    it with (every input array has that dtype; the body is compiled for each)."""

    in_params: str
    out_params: str
    operation: str
    name: str
    dtypes: tuple[str, ...]
    preamble: str = ""
    options: tuple[str, ...] = ()

    def declare(self) -> Elementwise:
        """Record this body in ``ELEMENTWISE``; returns it."""
        ELEMENTWISE.append(self)
        return self

    def build(self, xp: Any) -> Any:
        """The ``xp.ElementwiseKernel`` (``xp``: CuPy)."""
        return xp.ElementwiseKernel(self.in_params, self.out_params, self.operation,
                                    self.name, preamble=self.preamble, options=self.options)

