"""Straight-line code for a traced backward program (the static graphs' fastest path).

When every step of a program is a plain kernel call (resolved for the context, one
output, no fallback), the program becomes one generated Python function over native
arrays: ``t3 = k3(i0, t2)`` per step, a ``del`` after each temporary's last use (so
buffers are freed as soon as their last reader ran), no NdArray wrapping in between.
A temporary read for the last time gives its buffer to the step reading it: an
elementwise op writes its result there (``out=``), a kernel with a ``move`` variant
(reshape: a view) takes it over (fresh buffers of image-sized arrays cost page faults).
Inputs (bound forward data, the seed, constants) are read from their NdArrays when it
is called; the results (the gradients it delivers) are wrapped as NdArrays.
"""

from __future__ import annotations

import math
from typing import Any

from ..kernel import DEBUG
from ..ndarray import NdArray
from .variable import Variable

_wrap = NdArray._wrap


class Fused:
    """A generated function (its Python ``source`` kept for reading) with the variables
    it reads and writes."""

    __slots__ = ("fn", "inputs", "results", "dev", "source")

    def __init__(self, fn: Any, inputs: list, results: list, dev: Any, source: str) -> None:
        self.fn, self.inputs, self.results, self.dev = fn, inputs, results, dev
        self.source = source

    def __call__(self) -> None:
        dev = self.dev
        xs = []
        for v in self.inputs:
            d = v if type(v) is NdArray else v._data if v._data is not None else v.data
            xs.append(d.native(dev))
        out = self.fn(*xs)
        for v, r in zip(self.results, out):
            v._data = _wrap(r, dev, (v.shape, v.dtype))


def generate(steps: list, skip: set, results: set, ctx: Any) -> Fused | None:
    """``Fused`` for ``steps`` (minus the indices in ``skip``, whose outputs are read as
    inputs), returning the variables whose ids are in ``results``; ``None`` when a step
    is not a plain kernel call."""
    ns: dict[str, Any] = {}
    names: dict[int, str] = {}  # id(variable or array) -> local name
    inputs: list = []
    produced: dict[int, Variable] = {}
    body: list[str] = []
    last: dict[int, int] = {}
    dev = None
    live = [(s, st) for s, st in enumerate(steps) if s not in skip]
    kernels = {}
    for s, st in live:
        if not st.fusable or len(st.out_metas) != 1:
            return None
        k = kernels[s] = st.kernel_for(ctx)
        if not k.plain or (dev is not None and k.device is not dev):
            return None
        dev = k.device
        for a in st.inputs:
            last[id(a)] = s
    for s, st in live:
        ns[f"k{s}"] = _callee(kernels[s], st)
        args = []
        for j, a in enumerate(st.inputs):
            if isinstance(a, (Variable, NdArray)):
                name = names.get(id(a))
                if name is None:
                    name = names[id(a)] = f"i{len(inputs)}"
                    inputs.append(a)
                args.append(name)
            else:
                ns[f"c{s}_{j}"] = a
                args.append(f"c{s}_{j}")
        if st.attrs:
            ns[f"a{s}"] = st.attrs
            args.append(f"**a{s}")
        out = st.outputs[0]()
        if out is None:
            return None
        dead = [a for a in st.inputs if last.get(id(a)) == s and id(a) in produced and
                id(a) not in results and sum(b is a for b in st.inputs) == 1]
        call = f"k{s}({', '.join(args)})"
        move = getattr(kernels[s].fn, "move", None)
        if move is not None and dead and dead[0] is st.inputs[0]:
            ns[f"k{s}"] = move  # the kernel's variant taking over its first input's buffer
        else:
            into = [a for a in dead if (a.shape, a.dtype) == st.out_metas[0]] \
                if st.function.elementwise else []
            if into:  # the result overwrites an operand read for the last time
                call = f"k{s}({', '.join(args + [f'out={names[id(into[0])]}'])})"
        t = names[id(out)] = f"t{s}"
        produced[id(out)] = out
        body.append(f"    {t} = {call}")
        if DEBUG:
            ns[f"chk{s}"], ns[f"m{s}"] = kernels[s].check, st.out_metas[0]
            body.append(f"    chk{s}({t}, m{s})")
        dead = [names[k] for k, v in last.items() if v == s and k in produced and
                k not in results]
        if dead:
            body.append(f"    del {', '.join(dead)}")
    outs = [v for k, v in produced.items() if k in results]
    ns["_dev"] = dev
    params = ", ".join(f"i{j}" for j in range(len(inputs)))
    ret = "".join(f"{names[id(v)]}, " for v in outs)
    src = f"def program({params}):\n" + "\n".join(body or ["    pass"]) + \
        f"\n    return ({ret})\n"
    exec(compile(src, "<nnarray backward program>", "exec"), ns)  # noqa: S102
    return Fused(ns.pop("program"), inputs, outs, dev, src)  # no function <-> globals cycle


def generate_forward(order: list, ctx: Any) -> Any:
    """A generated function ``program(root)`` running the static graph ``order`` (whose
    last node produces ``root``) as the compiled steps do, one kernel call per node with
    the intermediates passed on as native arrays; ``None`` when a node is not a plain
    one-output kernel call on one device."""
    ns: dict[str, Any] = {"_wrap": _wrap}
    names: dict[int, tuple[str, str]] = {}  # id(variable or array) -> (NdArray, native)
    body: list[str] = []
    dev = None
    for s, n in enumerate(order):
        if not n.fusable or len(n.out_metas) != 1:
            return None
        k = n.kernel_for(ctx)
        if not k.plain or (dev is not None and k.device is not dev):
            return None
        dev = k.device
        out = n.outputs[0]()
        if out is None:
            return None
        args, datas = [], []
        for j, a in enumerate(n.inputs):
            if isinstance(a, (Variable, NdArray)):
                got = names.get(id(a))
                if got is None:
                    if type(a) is not NdArray and a._parent is not None:
                        return None  # produced outside the graph: the steps handle it
                    got = names[id(a)] = _read_input(a, len(names), ns, body)
                datas.append(got[0])
                args.append(got[1])
            else:
                ns[f"c{s}_{j}"] = a
                datas.append(f"c{s}_{j}")
                args.append(f"c{s}_{j}")
        ns[f"k{s}"] = _callee(k, n)
        if n.attrs:
            ns[f"a{s}"] = n.attrs
            args.append(f"**a{s}")
        t, o = f"t{s}", f"o{s}"
        v = "root" if s == len(order) - 1 else f"V{s}"
        if v != "root":
            ns[v] = out  # held by its readers' nodes anyway; the root is the argument
        ns[f"m{s}"], ns[f"N{s}"] = n.out_metas[0], n
        body.append(f"    {t} = k{s}({', '.join(args)})")
        if DEBUG:
            ns[f"chk{s}"] = k.check
            body.append(f"    chk{s}({t}, m{s})")
        body += [f"    {o} = {v}._data",
                 f"    if {o} is None:",
                 f"        {v}._data = {o} = _wrap({t}, _dev, m{s})",
                 "    else:",
                 f"        {o}.adopt(_dev, {t})"]
        names[id(out)] = (o, t)
        rule = n.function.backward
        if rule is None:
            body.append(f"    N{s}.saved_inputs = N{s}.saved_outputs = N{s}.versions = ()")
        else:
            ns[f"r{s}"] = (rule.retained_inputs(n.attrs), tuple(rule.outputs))
            body.append(f"    N{s}.retain(({''.join(d + ', ' for d in datas)}), ({o},), *r{s})")
    ns["_dev"] = dev
    src = "def program(root):\n" + "\n".join(body) + "\n"
    exec(compile(src, "<nnarray forward program>", "exec"), ns)  # noqa: S102
    return ns.pop("program")  # no function <-> globals cycle: the graph is freed with it


def _read_input(a: Any, j: int, ns: dict, body: list) -> tuple[str, str]:
    """Code reading graph input ``a`` (a leaf variable or a constant NdArray) when the
    program is called: the names of its NdArray and native array."""
    ns[f"L{j}"] = a
    if type(a) is NdArray:
        body.append(f"    x{j} = L{j}.native(_dev)")
        return f"L{j}", f"x{j}"
    body += [f"    d{j} = L{j}._data",
             f"    if d{j} is None:",
             f"        d{j} = L{j}.data",
             f"    x{j} = d{j}.native(_dev)"]
    return f"d{j}", f"x{j}"


def _callee(k: Any, st: Any) -> Any:
    """What a generated call of step ``st`` runs: the kernel, or the ufunc it names for
    small inputs (``fn.small``) where the step's fixed shapes are within its limit."""
    small = getattr(k.fn, "small", None)
    if small is None or st.attrs or not st.out_metas[0][0]:
        return k.fn
    uf, limit = small
    sizes = [math.prod(st.out_metas[0][0])] + \
        [math.prod(a.shape) for a in st.inputs if isinstance(a, (Variable, NdArray))]
    return uf if max(sizes) < limit else k.fn
