"""Node: one recorded function application (nnabla's CgFunction, Chainer's FunctionNode).

A node references its graph inputs strongly (``args``: Variables, or NdArray/scalar
constants) and its outputs weakly, so that dropping the last reference to a result frees
the graph behind it. It is also the context its op's backward rule sees: ``inputs`` /
``outputs`` hold only the data the rule retains, ``attrs``, ``need`` and ``in_meta``.
"""

from __future__ import annotations

from typing import Any

from ..errors import GraphError
from ..ndarray import NdArray


class Node:
    """A function application in the graph; the backward rule's context."""

    __slots__ = ("op", "args", "attrs", "metas", "outs", "rank", "inputs", "outputs",
                 "versions", "need", "dynamic", "_in_meta", "_kern", "__weakref__")

    def __init__(self, op: Any, args: tuple, attrs: dict, metas: tuple, rank: int) -> None:
        self.op = op
        self.args = args
        self.attrs = attrs
        self.metas = metas
        self.outs: tuple = ()
        self.rank = rank
        self.inputs: Any = None
        self.outputs: Any = None
        self.versions: Any = None
        self.need: tuple = ()
        self.dynamic = False  # recorded under auto_forward (backward runs the rules eagerly)
        self._in_meta: Any = None
        self._kern: Any = None

    @property
    def name(self) -> str:
        """The function's name (the op's, or the PythonFunction's)."""
        return self.op.name

    @property
    def in_meta(self) -> tuple:
        """``(shape, dtype)`` of every input (``((), None)`` for a scalar)."""
        m = self._in_meta
        if m is None:
            m = self._in_meta = tuple((getattr(a, "shape", ()), getattr(a, "dtype", None))
                                      for a in self.args)
        return m

    def output_variables(self) -> list:
        """The outputs still alive."""
        return [v for v in (r() for r in self.outs) if v is not None]

    def save(self, datas: Any, outs: tuple) -> None:
        """Keep what the backward rule retains, with the versions to check."""
        rule = self.op.backward
        if rule is None:
            self.inputs = self.outputs = self.versions = ()
            return
        ri = rule.inputs if type(rule.inputs) is tuple else rule.retained_inputs(self.attrs)
        self.retain(datas, outs, ri, rule.outputs)

    def retain(self, datas: Any, outs: Any, ri: tuple, ro: tuple) -> None:
        """Keep inputs ``ri`` and outputs ``ro`` with their versions (checked later)."""
        vers = []
        if ri:
            ins = [None] * len(datas)
            for i in ri:
                d = ins[i] = datas[i]
                if type(d) is NdArray:
                    vers.append((i, d, d.version))
            self.inputs = ins
        else:
            self.inputs = ()
        if ro:
            o = [None] * len(outs)
            for j in ro:
                d = o[j] = outs[j]
                vers.append((-1 - j, d, d.version))
            self.outputs = o
        else:
            self.outputs = ()
        self.versions = vers

    def checked_rule(self) -> Any:
        """The op's backward rule, after checking the retained data is unmodified."""
        rule = self.op.backward
        if rule is None:
            raise GraphError(f"{self.name}: no backward rule is declared for this op")
        self.check()
        return rule

    def check(self) -> None:
        """Raise ``GraphError`` if retained data changed since the forward pass."""
        vs = self.versions
        if vs is None:
            raise GraphError(f"{self.name}: backward before forward (call forward() on the "
                             "graph's output first), or after clear_buffer freed its data")
        for i, d, v in vs:
            if d.version != v:
                what = f"input {i}" if i >= 0 else f"output {-1 - i}"
                raise GraphError(
                    f"{self.name}: {what} (shape {d.shape}), saved for the backward pass, was "
                    f"modified in place after the forward pass (version {v} -> {d.version}); "
                    "run forward() again or modify a copy")

    def release(self) -> None:
        """Drop the retained data (clear_buffer)."""
        self.inputs = self.outputs = self.versions = None

    def __repr__(self) -> str:
        return f"<Node {self.name} rank={self.rank}>"
