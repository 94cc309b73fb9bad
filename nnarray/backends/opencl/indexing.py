"""Index arithmetic for kernels over strided (broadcast, transposed, sliced) operands.

pyopencl's own elementwise kernels ignore strides and cannot broadcast, so every kernel
here walks a C-ordered iteration space and computes each operand's element offset from
per-dimension strides (in elements; 0 broadcasts, negative walks backwards). Dimensions
are coalesced first, which turns most broadcasts into rank 1 or 2 loops.
"""

from __future__ import annotations

import numpy as np


def c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a C-contiguous array."""
    out = []
    n = 1
    for s in reversed(shape):
        out.append(n)
        n *= s
    return tuple(reversed(out))


def broadcast_strides(shape: tuple[int, ...], to: tuple[int, ...]) -> tuple[int, ...]:
    """Strides that read a C-contiguous ``shape`` array as if broadcast to ``to``."""
    st = c_strides(shape)
    lead = len(to) - len(shape)
    return (0,) * lead + tuple(0 if s == 1 and t != 1 else x
                               for s, t, x in zip(shape, to[lead:], st))


def coalesce(shape: tuple[int, ...], strides: list[tuple[int, ...]]
             ) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """Drop size-1 dimensions and merge neighbours that every operand walks as one."""
    dims = [i for i, s in enumerate(shape) if s != 1]
    out_shape: list[int] = []
    out_st: list[list[int]] = [[] for _ in strides]
    for i in dims:
        if out_shape and all(st[-1] == s[i] * shape[i] for st, s in zip(out_st, strides)):
            out_shape[-1] *= shape[i]
            for st, s in zip(out_st, strides):
                st[-1] = s[i]
        else:
            out_shape.append(shape[i])
            for st, s in zip(out_st, strides):
                st.append(s[i])
    return tuple(out_shape), [tuple(s) for s in out_st]


def offsets_code(rank: int, n_operands: int, idx: str = "int", var: str = "i",
                 inner: str | None = None, inner_steps: list[int] | None = None,
                 last_size: int | None = None) -> str:
    """C statements turning the linear index ``var`` into offsets ``o0..`` of each operand;
    with ``inner``, that variable indexes the innermost dimension and ``var`` the rest (a
    2-D launch: no division for the innermost offset). ``inner_steps``: the operands'
    innermost strides, where known when the source is made: a stride of 0 or 1 is then
    written as a constant, so the compiler sees a broadcast or contiguous load (pocl
    gathers otherwise).
    ``last_size``: the innermost dimension's size as a constant, so that its division and
    remainder compile to multiplications and shifts, which vectorize; with ``inner``,
    that variable then indexes the last two dimensions (rows of short innermost ones).

    Kernel parameters it expects: sizes ``d1..d{rank-1}`` and strides ``s{k}_{dim}``.
    """
    ops = range(n_operands)
    last = rank - 1

    def first(k: int) -> str:
        if inner is None:
            return "0"
        step = None if inner_steps is None else inner_steps[k]
        return {0: "0", 1: inner}.get(step, f"{inner} * s{k}_{last}")  # type: ignore[arg-type]
    lines = [f"{idx} r = {var};"] + [f"{idx} o{k} = {first(k)};" for k in ops]
    top = last if inner is None else last - 1
    if inner is not None and last_size:  # ``inner`` spans the last two dimensions
        lines = [f"{idx} r = {var};"] + [
            f"{idx} o{k} = ({inner} / {last_size}) * s{k}_{last - 1} + ({inner} % {last_size})"
            f" * s{k}_{last};" for k in ops]
        top = last - 2
    for d in range(top, 0, -1):
        size = str(last_size) if last_size and d == last and inner is None else f"d{d}"
        lines.append(f"{{ const {idx} c = r % {size}; r /= {size};")
        lines.extend(f"  o{k} += c * s{k}_{d};" for k in ops)
        lines.append("}")
    lines.extend(f"o{k} += r * s{k}_0;" for k in ops)
    return "\n    ".join(lines)


def index_params(rank: int, n_operands: int, idx: str = "int") -> str:
    """Parameter list matching ``offsets_code``."""
    ps = [f"const {idx} d{d}" for d in range(1, rank)]
    ps += [f"const {idx} s{k}_{d}" for k in range(n_operands) for d in range(rank)]
    return ", ".join(ps)


def index_args(shape: tuple[int, ...], strides: list[tuple[int, ...]], idx: str) -> list:
    """Argument values for ``index_params`` (numpy scalars of the index type)."""
    t = np.int32 if idx == "int" else np.int64
    return [t(s) for s in shape[1:]] + [t(x) for st in strides for x in st]


def span(shape: tuple[int, ...], strides: list[tuple[int, ...]], base: int = 0) -> int:
    """The largest absolute element offset the walk can reach (chooses the index type)."""
    m = abs(base)
    for st in strides:
        m = max(m, abs(base) + sum(abs(x) * (s - 1) for x, s in zip(st, shape)))
    total = 1
    for s in shape:
        total *= s
    return max(m, total)
