"""Straight-line code for static graphs: their forward pass and traced backward
programs (the fastest path).

When every step is a plain kernel call (resolved for the context, one output, no
fallback, one device), the pass becomes one generated Python function over native
arrays: ``t3 = k3(i0, t2)`` per step, the intermediates passed on as locals. A step's
shapes and attributes are fixed, so it calls what ``Kernel.callee`` picks for them: the
kernel's specialisation (``fn.specialize``: numpy's matmul or reduce itself), its ufunc
for small inputs (``fn.small``), or the kernel.

Forward (``generate_forward``): each result is adopted by its variable's NdArray, and
what the node's backward rule retains is kept with its versions, as ``Node.retain``
does, written out per node.

Backward (``generate``): a ``del`` after each temporary's last use frees buffers as soon
as their last reader ran. A temporary read for the last time gives its buffer to the
step reading it: an elementwise op writes its result there (``out=``), a kernel with a
``move`` variant (reshape: a view) takes it over (fresh buffers of image-sized arrays
cost page faults). The program reads the saved forward data from the graph's nodes and
the output gradients from its arguments, and delivers the gradients itself: a leaf's
lazily zero ``.grad`` adopts a fresh result as is.
"""

from __future__ import annotations

from typing import Any

from ..kernel import DEBUG
from ..ndarray import NdArray
from .planner import last_readers
from .variable import Variable

_wrap = NdArray._wrap


class Fused:
    """A generated backward program (its Python ``source`` kept for reading):
    ``fn(nodes, seed, more_seeds, clear_buffer)`` reads the forward data it needs from
    ``nodes`` (the graph's forward order), runs the steps and delivers the gradients."""

    __slots__ = ("fn", "source")

    def __init__(self, fn: Any, source: str) -> None:
        self.fn, self.source = fn, source


def _deliver(v: Any, x: Any, dev: Any, meta: tuple) -> None:
    """Leaf ``v`` receives the gradient ``x``, a fresh native array referenced nowhere
    else: a lazily zero ``.grad`` adopts it, anything else goes through ``_accumulate``."""
    gl = v._grad
    if gl is not None and gl.reads_as_zero():
        gl.adopt(dev, x)
    else:
        v._accumulate(_wrap(x, dev, meta), False)


def generate(prog: Any, skip: set, ctx: Any) -> Fused | None:
    """``Fused`` for the steps of ``prog`` (minus the indices in ``skip``, whose outputs
    are read as inputs), checking the saved data first; ``None`` when a step is not a
    plain kernel call."""
    steps = prog.steps
    results = {id(o[2]) for o in prog.leaves} | {id(o[2]) for o in prog.inter}
    ns: dict[str, Any] = {"_wrap": _wrap, "_deliver": _deliver}
    names: dict[int, str] = {}  # id(variable or array) -> local name of its native array
    produced: dict[int, Variable] = {}
    head: list[str] = []  # reading the inputs
    body: list[str] = []
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
    last = last_readers([st for _, st in live], [s for s, _ in live])
    sources = _sources(prog)
    for s, st in live:
        out = st.outputs[0]()
        if out is None:
            return None
        k = kernels[s]
        dead = [a for a in st.inputs if last.get(id(a)) == s and id(a) in produced and
                id(a) not in results and sum(b is a for b in st.inputs) == 1]
        move = getattr(k.fn, "move", None)
        if move is not None and dead and dead[0] is st.inputs[0]:
            callee, with_attrs = move, bool(st.attrs)  # takes over its input's buffer
        else:
            callee, with_attrs = _callee(k, st)
        ns[f"k{s}"] = callee
        args = []
        for j, a in enumerate(st.inputs):
            if isinstance(a, (Variable, NdArray)):
                name = names.get(id(a))
                if name is None:
                    name = names[id(a)] = f"i{len(names)}"
                    head.append(f"    {name} = {_nd(a, sources, ns, name)}.native(_dev)")
                args.append(name)
            else:
                ns[f"c{s}_{j}"] = a
                args.append(f"c{s}_{j}")
        if with_attrs:
            ns[f"a{s}"] = st.attrs
            args.append(f"**a{s}")
        call = f"k{s}({', '.join(args)})"
        into = [a for a in dead if (a.shape, a.dtype) == st.out_metas[0]] \
            if st.function.elementwise and _takes_out(k, callee) \
            else []
        if into:  # the result overwrites an operand read for the last time
            call = f"k{s}({', '.join(args + [f'out={names[id(into[0])]}'])})"
        t = names[id(out)] = f"t{s}"
        produced[id(out)] = out
        body.append(f"    {t} = {call}")
        if DEBUG:
            ns[f"chk{s}"], ns[f"m{s}"] = kernels[s].check, st.out_metas[0]
            body.append(f"    chk{s}({t}, m{s})")
        dead = [names[i] for i, v in last.items() if v == s and i in produced and
                i not in results]
        if dead:
            body.append(f"    del {', '.join(dead)}")
    ns["_dev"] = dev
    src = "def program(nodes, seed, more_seeds, clear_buffer):\n" + \
        "\n".join(_checks(prog, ns) + head + body + _delivery(prog, produced, names, sources, ns) or
                  ["    pass"]) + "\n"
    exec(compile(src, "<nnarray backward program>", "exec"), ns)  # noqa: S102
    return Fused(ns.pop("program"), src)  # no function <-> globals cycle


def _checks(prog: Any, ns: dict) -> list[str]:
    """Code checking the saved data of the nodes ``prog`` reads before anything runs
    (``Node.check``)."""
    return [f"    nodes[{k}].check()" for k in prog.checks]


def _sources(prog: Any) -> dict[int, str]:
    """Where the program's free variables come from when it runs: a bound proxy from its
    node's saved data, a seed from the arguments."""
    src = {id(prog.seed): "seed"}
    for j, v in enumerate(prog.more_seeds):
        src[id(v)] = f"more_seeds[{j}]"
    for v, k, i in prog.binds:
        src[id(v)] = f"nodes[{k}].saved_inputs[{i}]" if i >= 0 else \
            f"nodes[{k}].saved_outputs[{-1 - i}]"
    return src


def _nd(a: Any, sources: dict, ns: dict, name: str) -> str:
    """An expression for the NdArray of the program's free variable or constant ``a``."""
    got = sources.get(id(a))
    if got is not None:
        return got
    ns[f"V{name}"] = a  # a constant NdArray, or an invariant step's output variable
    return f"V{name}" if type(a) is NdArray else f"V{name}.data"


def _delivery(prog: Any, produced: dict, names: dict, sources: dict, ns: dict) -> list:
    """Code handing the gradients to their variables: an intermediate's ``.grad`` is set
    (cleared with ``clear_buffer``), a leaf's accumulates (``Variable._accumulate``); a
    fresh result delivered once is handed over as is, others are wrapped once and shared."""
    code: list[str] = []
    wrapped: dict[int, str] = {}

    def nd(gv: Variable) -> str:
        r = wrapped.get(id(gv))
        if r is None:
            r = wrapped[id(gv)] = f"g{len(wrapped)}"
            if id(gv) in produced:
                ns[f"m{r}"] = (gv.shape, gv.dtype)
                code.append(f"    {r} = _wrap({names[id(gv)]}, _dev, m{r})")
            else:
                code.append(f"    {r} = {_nd(gv, sources, ns, r)}")
        return r

    for k, i, gv, shared in prog.leaves:
        if not shared and id(gv) in produced:
            ns[f"m{names[id(gv)]}"] = (gv.shape, gv.dtype)
            code.append(f"    _deliver(nodes[{k}].inputs[{i}], {names[id(gv)]}, _dev, "
                        f"m{names[id(gv)]})")
        else:
            code.append(f"    nodes[{k}].inputs[{i}]._accumulate({nd(gv)}, {shared})")
    if prog.inter:
        grads = [nd(gv) for _, _, gv in prog.inter]
        code.append("    if not clear_buffer:")
        for (k, i, _), g in zip(prog.inter, grads):
            code.append(f"        nodes[{k}].inputs[{i}]._grad = {g}")
        code.append("    else:")
        for k, i, _ in prog.inter:
            code.append(f"        nodes[{k}].inputs[{i}]._grad = None")
    for r in wrapped.values():
        if f"V{r}" in ns and type(ns[f"V{r}"]) is not NdArray:
            code.append(f"    V{r}._data = None")  # an invariant step's output, given away
    return code


def generate_forward(order: list, ctx: Any, save: bool = True,
                     release: list | None = None) -> Any:
    """A generated function ``program(root)`` running the static graph ``order`` (whose
    last node produces ``root``) as the compiled steps do, one kernel call per node with
    the intermediates passed on as native arrays; ``None`` when a node is not a plain
    one-output kernel call on one device. ``save``: keep what backward needs (as
    ``forward_step(ctx, save)``); ``release``: per node, the variables whose data is
    dropped after it ran (an executor's memory plan)."""
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
        ns[f"k{s}"], with_attrs = _callee(k, n)
        if with_attrs:
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
        if save:
            body += _retain(f"N{s}", n, datas, o, ns, s)
        for j, r in enumerate(release[s] if release else ()):
            ns[f"R{s}_{j}"] = r  # its data and its buffer go now, as in the steps
            body += [f"    R{s}_{j}._data = None", f"    del {', '.join(names[id(r)])}"]
    ns["_dev"] = dev
    src = "def program(root):\n" + "\n".join(body) + "\n"
    exec(compile(src, "<nnarray forward program>", "exec"), ns)  # noqa: S102
    return ns.pop("program")  # no function <-> globals cycle: the graph is freed with it


def _retain(node: str, n: Any, datas: list, out: str, ns: dict, s: int) -> list[str]:
    """Code keeping what ``n``'s backward rule retains, with the versions to check
    (``Node.retain``; ``datas``: the names of its inputs' NdArrays, or of scalar
    constants)."""
    rule = n.function.backward
    ri = rule.retained_inputs(n.attrs) if rule is not None else ()
    ro = tuple(rule.outputs) if rule is not None else ()
    if not ri and not ro:
        return [f"    {node}.saved_inputs = {node}.saved_outputs = {node}.versions = ()"]
    ns[f"ri{s}"], ns[f"ro{s}"] = ri, ro
    return [f"    {node}.retain(({', '.join(datas)},), ({out},), ri{s}, ro{s})"]


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


def _takes_out(k: Any, callee: Any) -> bool:
    """Whether ``callee`` (what ``_callee`` chose for kernel ``k``) takes ``out=``: the
    kernel and its ufunc do, a specialisation need not."""
    return callee is k.fn or callee is getattr(k.fn, "small", (None,))[0]


def _callee(k: Any, st: Any) -> tuple[Any, bool]:
    """What a generated call of step ``st`` runs (``Kernel.callee`` for its fixed input
    metas and attributes), and whether the call passes the attributes."""
    metas = [(a.shape, a.dtype) if isinstance(a, (Variable, NdArray)) else None
             for a in st.inputs]
    return k.callee(metas, st.attrs, st.out_metas[0])
