"""``einsum`` with numpy's subscripts, contracted on the operands' device.

Each operand first loses its repeated labels (diagonals, through a mask) and the labels
nobody else needs (sums). Operands are then contracted left to right: shared labels
still needed later are batch dimensions of one ``matmul``, the others its inner
dimension. Everything is an ``F`` op, so the result is differentiable and runs where
the operands are.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np

from . import functions as F

_LABELS = frozenset(string.ascii_letters)


def _parse(subscripts: str, ndims: list[int]) -> tuple[list[list[str]], list[str]]:
    """Each operand's labels and the output's, with ``...`` spelled out as digits."""
    s = subscripts.replace(" ", "")
    ins, arrow, out = s.partition("->")
    terms = ins.split(",")
    if len(terms) != len(ndims):
        raise ValueError(f"einsum: {len(terms)} operand subscripts for {len(ndims)} operands "
                         f"in {subscripts!r}")
    ell = 0
    labels = []
    for t, nd in zip(terms, ndims):
        if t.count("...") > 1 or set(t.replace("...", "")) - _LABELS:
            raise ValueError(f"einsum: invalid subscripts {t!r} in {subscripts!r}")
        body = t.replace("...", "")
        if "..." in t:
            k = nd - len(body)
            if k < 0:
                raise ValueError(f"einsum: subscripts {t!r} name more axes than the operand's "
                                 f"{nd}")
            ell = max(ell, k)
            head, _, tail = t.partition("...")
            labels.append(list(head) + [str(ell - k + i) for i in range(k)] + list(tail))
        else:
            if len(body) != nd:
                raise ValueError(f"einsum: subscripts {t!r} for an operand of {nd} dimensions")
            labels.append(list(body))
    dots = [str(i) for i in range(ell)]
    if arrow:
        if set(out.replace("...", "")) - _LABELS or len(set(out.replace("...", ""))) != \
                len(out.replace("...", "")):
            raise ValueError(f"einsum: invalid output subscripts {out!r}")
        head, has, tail = out.partition("...")
        result = list(head) + (dots if has else []) + list(tail)
        seen = {c for ls in labels for c in ls}
        missing = [c for c in result if c not in seen]
        if missing:
            raise ValueError(f"einsum: output labels {missing} appear in no operand")
    else:
        counts: dict[str, int] = {}
        for ls in labels:
            for c in ls:
                counts[c] = counts.get(c, 0) + 1
        result = dots + sorted(c for c, n in counts.items() if n == 1 and c not in dots)
    return labels, result


def _sizes(labels: list[list[str]], shapes: list[tuple]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for ls, sh in zip(labels, shapes):
        for c, n in zip(ls, sh):
            m = sizes.get(c, 1)
            if n != 1 and m != 1 and n != m:
                raise ValueError(f"einsum: label {c!r} has sizes {m} and {n} "
                                 f"(shapes {shapes})")
            sizes[c] = max(m, n) if n != 1 else m
    return sizes


def _diagonal(x: Any, ls: list[str]) -> tuple[Any, list[str]]:
    """``x`` with each repeated label reduced to its diagonal."""
    while len(set(ls)) < len(ls):
        c = next(c for c in ls if ls.count(c) > 1)
        i = ls.index(c)
        j = ls.index(c, i + 1)
        n = x.shape[i]
        shape = [1] * x.ndim
        shape[i] = shape[j] = n
        mask = np.eye(n, dtype=bool).reshape(shape)
        x = F.sum(F.where(_on(mask, x), x, 0), j)
        ls = ls[:j] + ls[j + 1:]
    return x, ls


def _on(host: np.ndarray, like: Any) -> Any:
    """A small host-made constant on ``like``'s device (one explicit transfer)."""
    from .ndarray import NdArray
    a = NdArray.from_numpy_array(host)
    dev = getattr(like, "device", None)
    return a.to_device(dev) if dev is not None and dev != a.device else a


def _sum_out(x: Any, ls: list[str], keep: set[str]) -> tuple[Any, list[str]]:
    axes = tuple(i for i, c in enumerate(ls) if c not in keep)
    if axes:
        x = F.sum(x, axes)
        ls = [c for c in ls if c in keep]
    return x, ls


def _arrange(x: Any, ls: list[str], order: list[str], sizes: dict[str, int]) -> Any:
    """``x`` transposed to ``order`` and broadcast to the full label sizes."""
    perm = tuple(ls.index(c) for c in order)
    if perm != tuple(range(len(perm))):
        x = F.transpose(x, perm)
    full = tuple(sizes[c] for c in order)
    return x if tuple(x.shape) == full else F.broadcast_to(x, full)


def _contract(a: Any, la: list[str], b: Any, lb: list[str], keep: set[str],
              sizes: dict[str, int]) -> tuple[Any, list[str]]:
    shared = [c for c in la if c in lb]
    batch = [c for c in shared if c in keep]
    inner = [c for c in shared if c not in keep]
    fa = [c for c in la if c not in shared]
    fb = [c for c in lb if c not in shared]
    n = {k: int(np.prod([sizes[c] for c in v], dtype=np.int64))
         for k, v in (("b", batch), ("i", inner), ("a", fa), ("c", fb))}
    a = F.reshape(_arrange(a, la, batch + fa + inner, sizes), (n["b"], n["a"], n["i"]))
    b = F.reshape(_arrange(b, lb, batch + inner + fb, sizes), (n["b"], n["i"], n["c"]))
    y = F.matmul(a, b)
    out = batch + fa + fb
    return F.reshape(y, tuple(sizes[c] for c in out)), out


def einsum(subscripts: str, /, *operands: Any) -> Any:
    """numpy's ``einsum`` (explicit ``->`` or implicit output, ``...``, repeated labels
    for diagonals and traces), built from ``transpose``, ``sum`` and ``matmul``."""
    if not isinstance(subscripts, str):
        raise TypeError("einsum: the first argument must be the subscripts string")
    if not operands:
        raise ValueError("einsum: at least one operand is required")
    labels, result = _parse(subscripts, [x.ndim for x in operands])
    sizes = _sizes(labels, [tuple(x.shape) for x in operands])
    xs = []
    for k, (x, ls) in enumerate(zip(operands, labels)):
        x, ls = _diagonal(x, ls)
        others = {c for j, o in enumerate(labels) if j != k for c in o}
        x, ls = _sum_out(x, ls, set(result) | others)
        xs.append((x, ls))
    y, ly = xs[0]
    for k in range(1, len(xs)):
        later = {c for _, o in xs[k + 1:] for c in o}
        y, ly = _contract(y, ly, xs[k][0], xs[k][1], set(result) | later, sizes)
    y, ly = _sum_out(y, ly, set(result))
    y = _arrange(y, ly, result, sizes)
    return F.cast(y, y.dtype) if y is operands[0] else y  # a new array, as numpy's
