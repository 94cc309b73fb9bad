"""The schedule: the one list of steps every graph run executes.

A static graph's forward pass (``Variable.forward()``, a bound Graph's ``Executor``) and a
traced backward program (``program.py``; static graphs, define-by-run graphs replayed,
executors) compile to a ``Schedule`` for a context: one ``Step`` per kernel launch (the
node, its resolved ``Kernel``, its input slots, its output slot, what backward retains,
what is freed after it), the frees from the one last-use pass (``planner.py``), run once
after every rewriting pass (``plan_frees``). A step
whose node is not a plain one-output kernel call (a composite or fallback kernel, several
outputs, a Python function) is opaque: it runs its node.

One interpreter (``Schedule.run``: a compiled closure per step) and one code generator
(``generate``: straight-line Python over native arrays, ``t3 = k3(x0, t2)`` per step,
where every step is a plain kernel call on one device) run the list. The list is plain
data until it is first run, so a pass may rewrite it before (fusion: a run of elementwise
steps replaced by one step). ``describe()`` prints it.

Slots are graph values: the Variables (and constant NdArrays, scalars) the steps read and
write. A forward step stores its result in its output Variable's NdArray and keeps what
the node's backward rule retains; a backward step's result stays a local of the
generated code (an elementwise step may write it into an operand read for the last time,
a ``move`` kernel takes its input's buffer over) and the gradients are delivered at the
end.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..kernel import DEBUG
from ..ndarray import NdArray
from ..registry import dispatch
from .planner import last_readers, program_releases, releases
from .variable import Variable

_wrap = NdArray._wrap

#: Rewriting passes, run in order on every schedule built (``forward``, ``backward``)
#: before it first runs: ``pass_(schedule)`` may replace ``schedule.steps`` (a module
#: above this one appends itself, as fusion does; see ``Step`` for what a step holds).
passes: list[Callable[[Any], None]] = []


class Step:
    """One kernel launch (or one opaque node run) of a schedule.

    ``node``: what it runs; ``kernel``: the node's ``Kernel`` for the schedule's context
    (``None``: opaque, ``node.run(ctx, save)``); ``inputs``: the slots read (Variables,
    constant NdArrays, scalars); ``outs``: weak references to the output Variables (a
    kernel of several outputs returns a tuple); ``metas``: their ``(shape, dtype)``;
    ``retain``: ``(inputs, outputs)`` indices the backward rule keeps (``None``: nothing
    is saved); ``free``: what is released after it (Variables whose data is dropped, node
    indices whose saved data is); ``invariant``: replay skips it while its inputs are
    unchanged.

    A pass may replace steps (fusion: a run of elementwise steps by one step of a
    ``fused_elementwise`` node, several outputs where values are read outside the run).
    A new step is built from its node (``Step(node, dispatch(op, ctx), save, free)``):
    the interpreter runs a one-output plain kernel itself (``kernel.fn`` on the inputs'
    native arrays with ``attrs``, the result adopted with ``kernel.emit``, one added to
    ``kernel.tally``) and any other step through ``node.run``; the code generator calls
    ``kernel.callee(in_metas, attrs, metas[0])``, unpacks several results, and reads
    ``node.function.elementwise`` (may it write into a dead operand)."""

    __slots__ = ("node", "kernel", "inputs", "attrs", "outs", "metas", "retain", "free",
                 "invariant")

    def __init__(self, node: Any, kernel: Any, save: bool, free: list | None = None) -> None:
        self.node = node
        self.kernel = kernel
        self.inputs = tuple(node.inputs)
        self.attrs = getattr(node, "attrs", None)
        self.metas = tuple(getattr(node, "out_metas", ()))  # a Python function's: none
        self.outs = tuple(node.outputs) if self.metas else ()
        rule = node.function.backward if save and kernel is not None else None
        self.retain = (tuple(rule.retained_inputs(node.attrs)), tuple(rule.outputs)) \
            if rule is not None else None
        self.free = [] if free is None else free
        self.invariant = False

    @property
    def out(self) -> Any:
        """The weak reference to the one output (``None`` unless there is one)."""
        return self.outs[0] if len(self.outs) == 1 else None

    @property
    def meta(self) -> Any:
        """The one output's ``(shape, dtype)`` (``None`` unless there is one)."""
        return self.metas[0] if len(self.metas) == 1 else None

    @property
    def op(self) -> str:
        """The op's (or Python function's) name; ``backward_impl`` for a Python
        function's backward step."""
        return getattr(self.node, "name", "backward_impl")


class Schedule:
    """The steps of one graph run under one context: ``kind`` ``"forward"`` (results
    stored in the output Variables, ``save``: what backward retains is kept) or
    ``"backward"`` (a traced program: ``prog``, gradients delivered at the end)."""

    __slots__ = ("kind", "ctx", "steps", "save", "prog", "root", "outputs", "releasable",
                 "fused", "recompute", "_closures", "_program", "_done", "__weakref__")

    def __init__(self, kind: str, ctx: Any, steps: list, save: bool = False,
                 prog: Any = None, root: Any = None) -> None:
        self.kind, self.ctx, self.steps, self.save, self.prog = kind, ctx, steps, save, prog
        #: A weak reference to the Variable the generated function gets as ``root`` (the
        #: graph's output: referenced by the code, it would keep its graph alive).
        self.root = root
        #: The ids of the Variables a forward must write whatever reads them (the graph's
        #: outputs; the fusion pass also writes those the user holds).
        self.outputs: tuple = ()
        #: What a forward frees after its last reader (``planner.forward_releasable``;
        #: ``None``: nothing). A backward frees its temporaries (``plan_frees``).
        self.releasable: Any = None
        #: ``fusion_adapter.mode()`` when it was built (``grad.fusion_enabled``; set by its
        #: builder): whether it fused, what it left to backward to recompute.
        self.fused: Any = False
        #: A forward's ``recompute_pass.RecomputeRecord``: what it leaves to backward to
        #: compute again rather than saving it (set by the fusion pass; ``None``: nothing).
        self.recompute: Any = None
        self._closures: Any = None
        self._program: Any = None
        self._done = False

    # -- compiling ------------------------------------------------------------------------
    @property
    def closures(self) -> list:
        """One zero-argument callable per step (the interpreter's)."""
        if self._closures is None:
            self._closures = [_closure(st, self.ctx, self.save) for st in self.steps]
        return self._closures

    @property
    def program(self) -> Any:
        """The generated function (``Generated``), or ``None`` when a step is not a plain
        kernel call on the schedule's one device."""
        if not self._done:
            self._program = generate(self)
            self._done = True
        return self._program

    def rewrite(self, pass_: Callable[[Schedule], None]) -> None:
        """Apply ``pass_`` (which may replace ``steps``) and forget what was compiled."""
        pass_(self)
        self._closures = self._program = None
        self._done = False

    # -- running --------------------------------------------------------------------------
    def run(self, root: Any = None, nodes: Any = None, clear_buffer: bool = False,
            interpret: bool = False) -> None:
        """A forward schedule's run: the generated function unless ``interpret`` or there
        is none, else the steps one at a time, each followed by its frees."""
        gen = None if interpret else self.program
        if gen is not None:
            gen.fn(root, nodes, None, (), clear_buffer)
            return
        for st, step in zip(self.steps, self.closures):
            step()
            _free(st.free, nodes, clear_buffer)

    def replay(self, nodes: list, seed: NdArray, clear_buffer: bool,
               more_seeds: Any = ()) -> None:
        """A backward schedule's run on the graph whose forward order is ``nodes``: check
        its saved data, run the steps, deliver the gradients (``more_seeds``: the output
        gradients of a program traced from several roots, after the first)."""
        prog = self.prog
        gen = self.program
        if gen is not None and not prog.inv_steps:
            gen.fn(None, nodes, seed, more_seeds, clear_buffer)  # checks, reads saved data
        else:
            for k in prog.checks:
                nodes[k].check()
            _bind(prog, nodes, seed, more_seeds)
            try:
                self._interpret(nodes, gen, seed, more_seeds, clear_buffer)
            finally:
                _unbind(prog)
        if clear_buffer:
            for k in prog.checks:
                nodes[k].release()

    def _interpret(self, nodes: list, gen: Any, seed: NdArray, more_seeds: Any,
                   clear_buffer: bool) -> None:
        """The steps one closure at a time (the invariant ones only when their inputs
        changed), then the generated function over the rest if there is one, else the
        gradients' delivery."""
        prog = self.prog
        skip = _skipped(prog) if prog.inv_steps else ()
        steps = self.closures
        if gen is not None:
            for st, step in zip(self.steps, steps):
                if st.invariant and id(st.out()) not in skip:
                    step()
            gen.fn(None, nodes, seed, more_seeds, clear_buffer)
            return
        for st, step in zip(self.steps, steps):
            if not st.invariant or id(st.out()) not in skip:
                step()
            _free(st.free, nodes, clear_buffer)
        for k, i, gv, shared in prog.leaves:
            nodes[k].inputs[i]._accumulate(gv._data, shared)
        for k, i, gv in prog.inter:
            nodes[k].inputs[i]._grad = None if clear_buffer else gv._data
        for _, _, gv in prog.inter:
            gv._data = None
        for _, _, gv, _ in prog.leaves:
            gv._data = None

    # -- reading ----------------------------------------------------------------------------
    def describe(self) -> str:
        """The steps as text: one line per step (its op, output and input slots, what it
        retains and frees), then whether it runs as generated code."""
        names: dict[int, str] = {}

        def name(a: Any) -> str:
            if not isinstance(a, (Variable, NdArray)):
                return repr(a)
            got = names.get(id(a))
            if got is None:
                got = names[id(a)] = f"{'c' if type(a) is NdArray else 'v'}{len(names)}"
            return got

        lines = [f"{self.kind} schedule on {self.ctx.key}: {len(self.steps)} steps"]
        for s, st in enumerate(self.steps):
            outs = ", ".join(name(v) for v in _outputs_of(st.node)) or "-"
            shape = f" {st.meta[0]} {st.meta[1]}" if st.meta is not None else \
                " " + ", ".join(f"{m[0]} {m[1]}" for m in st.metas) if st.metas else ""
            line = f"  {s:3d} {st.op:<16} {outs}{shape} <- " + \
                ", ".join(name(a) for a in st.inputs)
            if st.kernel is None:
                line += "  [opaque]"
            if st.retain and (st.retain[0] or st.retain[1]):
                line += f"  retain in{list(st.retain[0])} out{list(st.retain[1])}"
            freed = [name(a) if not isinstance(a, int) else f"node{a}" for a in st.free]
            if freed:
                line += f"  free {', '.join(freed)}"
            if st.invariant:
                line += "  [invariant]"
            members = getattr(st.node, "members", None)
            if members:
                line += "  fuses " + " ".join(m[0].name for m in members)
            lines.append(line)
        if self.recompute is not None:
            lines.append(f"not saved: {self.recompute}")
        gen = self.program
        lines.append("generated: " + ("yes" if gen is not None else "no (interpreted)"))
        return "\n".join(lines)

    def sources(self) -> str:
        """Each fused step's program and the kernel source generated for its device."""
        out = []
        for s, st in enumerate(self.steps):
            node = st.node
            if getattr(node, "members", None):
                out.append(f"-- step {s}: fused_elementwise of {len(node.members)} steps\n"
                           f"{node.program}\n{node.source()}")
        return "\n".join(out)

    def __repr__(self) -> str:
        return f"<Schedule {self.kind} {len(self.steps)} steps on {self.ctx.key}>"


def _outputs_of(n: Any) -> list:
    return [v for v in (r() for r in getattr(n, "outputs", ())) if v is not None]


def _free(free: list, nodes: Any, clear_buffer: bool) -> None:
    for a in free:
        if type(a) is int:
            if clear_buffer:
                nodes[a].release()
        else:
            a._data = None


# -- building ---------------------------------------------------------------------------------
def _plain(n: Any, ctx: Any) -> Any:
    """The node's Kernel when it runs as one plain kernel call (one output, or a tuple of
    several), else ``None`` (an opaque step)."""
    if not n.fusable:
        return None
    k = dispatch(n.function, ctx)
    return k if k.plain else None


def forward(order: list, ctx: Any, save: bool = True, releasable: Any = None,
            root: Any = None, outputs: Any = ()) -> Schedule:
    """The schedule of a static graph's forward ``order`` under ``ctx`` (``save``: keep
    what backward needs; ``releasable``: which values are freed after their last reader,
    ``planner.forward_releasable``; ``root``: a weak reference to the output passed to
    ``run``; ``outputs``: the graph's output Variables, always written)."""
    s = Schedule("forward", ctx, [Step(n, _plain(n, ctx), save) for n in order], save,
                 root=root)
    s.releasable = releasable
    s.outputs = tuple(id(v) for v in outputs)
    return _passed(s)


def backward(prog: Any, ctx: Any) -> Schedule:
    """The schedule of a traced backward program under ``ctx``."""
    inv = {s for s, _, _ in prog.inv_steps}
    steps = []
    for s, st in enumerate(prog.steps):
        step = Step(st, _plain(st, ctx), False)
        step.invariant = s in inv
        steps.append(step)
    return _passed(Schedule("backward", ctx, steps, False, prog))


def _passed(s: Schedule) -> Schedule:
    for p in passes:
        p(s)
    plan_frees(s)
    return s


def plan_frees(s: Schedule) -> None:
    """The one last-use pass, on the final steps: a forward frees what ``releasable``
    allows after its last reader; a backward its temporaries (not the gradients it
    delivers) and the saved data bound to them."""
    if s.kind == "backward":
        prog = s.prog
        results = {id(o[2]) for o in prog.leaves} | {id(o[2]) for o in prog.inter}
        frees = program_releases(s.steps, prog.binds, results)
    elif s.releasable is not None:
        frees = releases(s.steps, s.releasable)
    else:
        return
    for st, free in zip(s.steps, frees):
        st.free = free


# -- the interpreter --------------------------------------------------------------------------
def _closure(st: Step, ctx: Any, save: bool) -> Any:
    """A zero-argument callable running step ``st``: the kernel called on its inputs'
    current native copies, with no validation (shapes and dtypes were inferred when the
    graph was built), the result adopted by the output variable's NdArray and, for a
    forward step that saves, what the backward rule retains kept with its version."""
    n, k = st.node, st.kernel
    if k is None or len(st.metas) != 1:
        return lambda: n.run(ctx, save)
    fn, dev, emit, tally = k.fn, k.device, k.emit, k.tally
    args, attrs, meta, ref = st.inputs, st.attrs, st.meta, st.out
    keep = st.retain is not None
    ri, ro = st.retain if keep else ((), ())

    def finish(r: Any, ds: tuple) -> None:
        tally[0] += 1
        v = ref()
        nd = emit(r, meta, v._data if v is not None else None)
        if v is not None:
            v._data = nd
        if keep:
            n.retain(ds, (nd,), ri, ro)
        elif save:
            n.saved_inputs = n.saved_outputs = n.versions = ()

    kinds = tuple(1 if isinstance(a, Variable) else 2 if type(a) is NdArray else 0
                  for a in args)
    if kinds == (1, 1):
        a, b = args

        def step2() -> None:
            da, db = a._data, b._data
            if da is None:
                da = a.data
            if db is None:
                db = b.data
            finish(fn(da.native(dev), db.native(dev), **attrs), (da, db))
        return step2
    if kinds == (1,) or kinds == (1, 0):
        a = args[0]
        rest = args[1:]

        def step1() -> None:
            da = a._data
            if da is None:
                da = a.data
            finish(fn(da.native(dev), *rest, **attrs), (da, *rest))
        return step1

    def step() -> None:
        ds = [x if c == 0 or c == 2 else x.data for x, c in zip(args, kinds)]
        xs = [d if c == 0 else d.native(dev) for d, c in zip(ds, kinds)]
        finish(fn(*xs, **attrs), tuple(ds))
    return step


def _skipped(prog: Any) -> set:
    """The outputs (by id) of invariant steps whose inputs are unchanged since the last
    replay (by value, not position: a pass may have rewritten the step list)."""
    changed = set()
    for j, v in enumerate(prog.inv_proxies):
        d, last = v._data, prog.inv_last[j]
        if last is None or last[0] is not d or last[1] != d.version:
            changed.add(id(v))
            prog.inv_last[j] = (d, d.version)
    return {id(out) for _, out, d in prog.inv_steps
            if out._data is not None and not (d & changed)}


def _bind(prog: Any, nodes: list, seed: NdArray, more_seeds: Any) -> None:
    """Point the program's proxies at the saved forward data and the output gradients."""
    for v, k, i in prog.binds:
        n = nodes[k]
        v._data = n.saved_inputs[i] if i >= 0 else n.saved_outputs[-1 - i]
    prog.seed._data = seed
    for sv, g in zip(prog.more_seeds, more_seeds):
        sv._data = g


def _unbind(prog: Any) -> None:
    for v, _, _ in prog.binds:
        v._data = None
    prog.seed._data = None
    for sv in prog.more_seeds:
        sv._data = None


# -- the code generator -------------------------------------------------------------------
class Generated:
    """A schedule as one generated function (its Python ``source`` kept for reading):
    ``fn(root, nodes, seed, more_seeds, clear_buffer)``. A forward schedule's reads its
    leaves and writes every result to its Variable (``root``: the last step's output);
    a backward schedule's reads the saved forward data from ``nodes`` (the graph's
    forward order), runs the steps that are not invariant and delivers the gradients."""

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


def generate(sched: Schedule) -> Generated | None:
    """``Generated`` for ``sched`` when every step it runs is a plain kernel call on one
    device, else ``None``. Each step calls what ``Kernel.callee`` picks for its fixed
    shapes and attributes; forward results are adopted by their Variables' NdArrays with
    what backward retains kept (``Node.retain``); backward results stay locals, ``del``ed
    after their last reader, an elementwise step writing into an operand read for the last
    time (``out=``)."""
    fwd = sched.kind == "forward"
    live = [(s, st) for s, st in enumerate(sched.steps) if not st.invariant]
    dev = None
    for _, st in live:
        k = st.kernel
        if k is None or (dev is not None and k.device is not dev) or \
                (len(st.outs) == 1 and st.outs[0]() is None):
            return None
        dev = k.device
    if fwd and not live:
        return None
    g = _Gen(sched, live, dev)
    return g.build()


class _Gen:
    """The state of one ``generate`` call."""

    def __init__(self, sched: Schedule, live: list, dev: Any) -> None:
        self.sched, self.live, self.dev = sched, live, dev
        self.fwd = sched.kind == "forward"
        self.ns: dict[str, Any] = {"_wrap": _wrap, "_deliver": _deliver, "_dev": dev}
        #: id(value) -> (NdArray expression or None, native local name)
        self.names: dict[int, tuple[Any, str]] = {}
        self.produced: dict[int, Variable] = {}
        self.body: list[str] = []
        prog = sched.prog
        self.results = set() if prog is None else \
            {id(o[2]) for o in prog.leaves} | {id(o[2]) for o in prog.inter}
        self.sources = _sources(prog) if prog is not None else {}

    def build(self) -> Generated | None:
        live, ns, body = self.live, self.ns, self.body
        last = last_readers([st for _, st in live], [s for s, _ in live])
        root = self.sched.root() if self.sched.root is not None else None
        for s, st in live:
            outs = [r() for r in st.outs]
            args, datas = [], []
            for i, a in enumerate(st.inputs):
                if isinstance(a, (Variable, NdArray)):
                    got = self.names.get(id(a))
                    if got is None:
                        if self.fwd and type(a) is not NdArray and a._parent is not None:
                            return None  # produced outside the graph: interpret
                        got = self._read(a)
                    datas.append(got[0])
                    args.append(got[1])
                else:
                    ns[f"c{s}_{i}"] = a
                    datas.append(f"c{s}_{i}")
                    args.append(f"c{s}_{i}")
            call = self._call(s, st, args, last)
            sfx = [""] if len(outs) == 1 else [f"_{j}" for j in range(len(outs))]
            body.append(f"    {', '.join(f't{s}{x}' for x in sfx)}{',' * (len(outs) > 1)}"
                        f" = {call}")
            ns[f"n{s}"] = st.kernel.tally
            body.append(f"    n{s}[0] += 1")
            for x, m in zip(sfx, st.metas):
                ns[f"m{s}{x}"] = m
                if DEBUG:
                    ns[f"chk{s}"] = st.kernel.check
                    body.append(f"    chk{s}(t{s}{x}, m{s}{x})")
            for out, x in zip(outs, sfx):
                if out is not None:
                    self.produced[id(out)] = out
                    self.names[id(out)] = (None, f"t{s}{x}")
            if self.fwd:
                self._store(s, st, outs, sfx, datas, root)
            dead = [self.names[i] for i, v in last.items() if v == s and i in self.produced
                    and i not in self.results]
            if dead:
                body.append(f"    del {', '.join(n for pair in dead for n in pair if n)}")
        head = _checks(self.sched.prog) if self.sched.prog is not None else []
        tail = self._delivery() if not self.fwd else []
        src = "def program(root, nodes, seed, more_seeds, clear_buffer):\n" + \
            "\n".join(head + body + tail or ["    pass"]) + "\n"
        exec(compile(src, f"<nnarray {self.sched.kind} schedule>", "exec"), ns)  # noqa: S102
        return Generated(ns.pop("program"), src)  # no function <-> globals cycle

    def _read(self, a: Any) -> tuple[str, str]:
        """Code reading the schedule's input ``a`` (a leaf or proxy Variable, a constant
        NdArray, an invariant step's output) when it first is: its NdArray and native
        locals."""
        j = len(self.names)
        got = self.sources.get(id(a))
        if got is not None:
            self.body.append(f"    d{j} = {got}")
        elif type(a) is NdArray:
            self.ns[f"L{j}"] = a
            self.body.append(f"    d{j} = L{j}")
        else:
            self.ns[f"L{j}"] = a
            self.body += [f"    d{j} = L{j}._data", f"    if d{j} is None:",
                          f"        d{j} = L{j}.data"]
        self.body.append(f"    x{j} = d{j}.native(_dev)")
        self.names[id(a)] = (f"d{j}", f"x{j}")
        return self.names[id(a)]

    def _call(self, s: int, st: Step, args: list, last: dict) -> str:
        """The call of step ``s``: its kernel's callee for the fixed metas (or its
        ``move`` variant taking a dead input's buffer over), an elementwise one writing
        into an operand read for the last time."""
        k, ns = st.kernel, self.ns
        dead = [] if self.fwd or st.meta is None else \
            [a for a in st.inputs if last.get(id(a)) == s and id(a) in self.produced and
             id(a) not in self.results and sum(b is a for b in st.inputs) == 1]
        move = getattr(k.fn, "move", None)
        if move is not None and dead and dead[0] is st.inputs[0]:
            callee, with_attrs = move, bool(st.attrs)
        else:
            metas = [(a.shape, a.dtype) if isinstance(a, (Variable, NdArray)) else None
                     for a in st.inputs]
            callee, with_attrs = k.callee(metas, st.attrs, st.metas[0])
        ns[f"k{s}"] = callee
        if with_attrs:
            ns[f"a{s}"] = st.attrs
            args = args + [f"**a{s}"]
        takes_out = callee is k.fn or callee is getattr(k.fn, "small", (None,))[0]
        into = [a for a in dead if (a.shape, a.dtype) == st.meta] \
            if st.node.function.elementwise and takes_out else []
        if into:
            args = args + [f"out={self.names[id(into[0])][1]}"]
        return f"k{s}({', '.join(args)})"

    def _store(self, s: int, st: Step, outs: list, sfx: list, datas: list, root: Any) -> None:
        """A forward step's results adopted by their Variables' NdArrays (an output no
        Variable holds any more is wrapped only where backward retains it), what the
        backward rule retains kept, the step's frees done."""
        ns, body = self.ns, self.body
        onames = []
        for j, (out, x) in enumerate(zip(outs, sfx)):
            t, o = f"t{s}{x}", f"o{s}{x}"
            if out is None:
                keep = st.retain is not None and j in st.retain[1]
                if keep:
                    body.append(f"    {o} = _wrap({t}, _dev, m{s}{x})")
                onames.append(o if keep else "None")
                continue
            v = "root" if out is root else f"V{s}{x}"
            if v != "root":
                ns[v] = out  # held by its readers' nodes anyway; the root is the argument
            body += [f"    {o} = {v}._data",
                     f"    if {o} is None:",
                     f"        {v}._data = {o} = _wrap({t}, _dev, m{s}{x})",
                     "    else:",
                     f"        {o}.adopt(_dev, {t})"]
            self.names[id(out)] = (o, t)
            onames.append(o)
        o = ", ".join(onames)
        node = f"N{s}"
        if st.retain is not None:
            ns[node] = st.node
            ri, ro = st.retain
            if ri or ro:
                ns[f"ri{s}"], ns[f"ro{s}"] = ri, ro
                body.append(f"    {node}.retain(({', '.join(datas)},), ({o},), ri{s}, ro{s})")
            else:
                body.append(f"    {node}.saved_inputs = {node}.saved_outputs = "
                            f"{node}.versions = ()")
        elif self.sched.save:
            ns[node] = st.node
            body.append(f"    {node}.saved_inputs = {node}.saved_outputs = {node}.versions = ()")
        for j, r in enumerate(st.free):
            ns[f"R{s}_{j}"] = r  # its data goes now (an executor's memory plan)
            body.append(f"    R{s}_{j}._data = None")

    def _delivery(self) -> list:
        """Code handing the gradients to their variables: an intermediate's ``.grad`` is
        set (cleared with ``clear_buffer``), a leaf's accumulates (``Variable._accumulate``);
        a fresh result delivered once is handed over as is, others are wrapped once and
        shared."""
        prog, ns, produced = self.sched.prog, self.ns, self.produced
        code: list[str] = []
        wrapped: dict[int, str] = {}

        def native(gv: Variable) -> str:
            return self.names[id(gv)][1]

        def nd(gv: Variable) -> str:
            r = wrapped.get(id(gv))
            if r is None:
                r = wrapped[id(gv)] = f"g{len(wrapped)}"
                if id(gv) in produced:
                    ns[f"m{r}"] = (gv.shape, gv.dtype)
                    code.append(f"    {r} = _wrap({native(gv)}, _dev, m{r})")
                else:
                    code.append(f"    {r} = {_expr(gv, self.sources, ns, r)}")
            return r

        for k, i, gv, shared in prog.leaves:
            if not shared and id(gv) in produced:
                ns[f"m{native(gv)}"] = (gv.shape, gv.dtype)
                code.append(f"    _deliver(nodes[{k}].inputs[{i}], {native(gv)}, _dev, "
                            f"m{native(gv)})")
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


def _checks(prog: Any) -> list[str]:
    """Code checking the saved data of the nodes ``prog`` reads before anything runs
    (``Node.check``)."""
    return [f"    nodes[{k}].check()" for k in prog.checks]


def _sources(prog: Any) -> dict[int, str]:
    """Where a program's free variables come from when it runs: a bound proxy from its
    node's saved data, a seed from the arguments."""
    src = {id(prog.seed): "seed"}
    for j, v in enumerate(prog.more_seeds):
        src[id(v)] = f"more_seeds[{j}]"
    for v, k, i in prog.binds:
        src[id(v)] = f"nodes[{k}].saved_inputs[{i}]" if i >= 0 else \
            f"nodes[{k}].saved_outputs[{-1 - i}]"
    return src


def _expr(a: Any, sources: dict, ns: dict, name: str) -> str:
    """An expression for the NdArray of a program's free variable or constant ``a``."""
    got = sources.get(id(a))
    if got is not None:
        return got
    ns[f"V{name}"] = a  # a constant NdArray, or an invariant step's output variable
    return f"V{name}" if type(a) is NdArray else f"V{name}.data"


__all__ = ["Generated", "Schedule", "Step"]
