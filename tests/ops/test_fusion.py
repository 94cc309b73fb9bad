"""Fusion: the ``fused_elementwise`` op against the unfused ops, and the grouping pass.

Every row with a C expression runs inside a fused program (applied to inputs of two
dtypes and shapes, then scaled by a constant and added to the other input), compared
with the same instructions run one op at a time on numpy. The rows share a few programs,
one kernel each, so OpenCL compiles little on a cold cache.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import tol
from helpers import chain, fused_rows, row_program, special_program

import nnarray as nna
from nnarray.errors import DTypeError, ShapeError
from nnarray.grad import fusion_pass
from nnarray.grad.fusion_pass import Const, Step
from nnarray.ops import fused
from nnarray.ops.elementwise import cast
from nnarray.ops.elementwise import ops as row_ops
from nnarray.ops.fused import Builder, Instr, Program, const, fused_elementwise

F32, F64, I32, I64 = (np.dtype(d) for d in (np.float32, np.float64, np.int32, np.int64))


def unfused(p: Program, xs: list) -> list:
    """``p``'s outputs computed one op at a time (the reference)."""
    vals: list = list(xs)
    for i in p.instrs:
        a = [vals[r] for r in i.args]
        if i.op == fused.CONST:
            vals.append(fused.const_value(i))
        elif i.op == fused.CAST:
            vals.append(cast(a[0], dtype=i.attr))
        elif i.op == fused.BROADCAST:
            vals.append(nna.broadcast_to(a[0], i.attr))
        elif i.op == fused.WHERE:
            vals.append(nna.where(*a))
        elif i.op in fused.REDUCTIONS:
            vals.append(fused.REDUCTIONS[i.op](a[0], axis=i.attr[0], keepdims=i.attr[1]))
        else:
            vals.append(row_ops[i.op](*a))
    return [vals[r] for r in p.outputs]


def _inputs(integral: bool) -> list[np.ndarray]:
    g = np.random.default_rng(0)
    if integral:  # shift counts in range, no zero divisors
        signs = g.choice([-1, 1], (3, 4))
        return [(g.integers(1, 20, (3, 4)) * signs).astype(I32),
                g.integers(1, 5, (4,)).astype(I64),
                g.integers(1, 5, (3, 1)).astype(I32)]
    return [g.uniform(0.1, 0.9, (3, 4)).astype(F32), g.uniform(0.1, 0.9, (4,)).astype(F64),
            g.uniform(1.5, 3.0, (3, 1)).astype(F32)]


def _compare(got, want, backend: str) -> None:
    got, want = np.asarray(got.numpy()), np.asarray(want.numpy())
    assert got.dtype == want.dtype and got.shape == want.shape
    if backend == "numpy":  # the same kernels, op by op: bit for bit
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, **tol(F32 if want.dtype.kind == "f" else I32))


@pytest.mark.parametrize("integral", [False, True], ids=["float", "integer"])
def test_every_row_fused_equals_unfused(backend, integral):
    rows = fused_rows(integral)
    p = row_program(rows, integral)
    host = _inputs(integral)
    with nna.context_scope("numpy"):
        want = unfused(p, [nna.asarray(h) for h in host])
    got = fused_elementwise(*[nna.asarray(h) for h in host], program=p)
    assert len(got) == len(rows) + 1  # the last: where
    for row, g, w in zip([*rows, "where"], got, want):
        try:
            _compare(g, w, backend)
        except AssertionError as e:
            raise AssertionError(f"row {getattr(row, 'name', row)}: {e}") from None


@pytest.mark.filterwarnings("ignore:invalid value")  # numpy's 0 * inf
def test_chain_contiguous_cast_and_special_constants(backend):
    """All inputs of the program's shape (OpenCL's contiguous kernel), a cast output,
    infinite and NaN constants, NaN and infinite inputs."""
    p = special_program()
    h = np.linspace(-3, 3, 1000, dtype=F32).reshape(10, 100)
    h[0, :4] = [np.nan, np.inf, -np.inf, 0.0]
    with nna.context_scope("numpy"):
        want = unfused(p, [nna.asarray(h)])
    got = fused_elementwise(nna.asarray(h), program=p)
    for g, w in zip(got, want):
        _compare(g, w, backend)
    assert got[1].dtype == F64 and got[4].dtype == I64


def test_broadcast_over_long_rows(backend):
    """A row vector and a column over rows of 300 (OpenCL's 2-D launch)."""
    b = Builder(3)
    h = b.call("relu", b.call("add", 0, 1))
    p = b.program([h, b.call("add", b.call("mul", h, b.const(2)), 2)])
    g = np.random.default_rng(2)
    host = [g.normal(size=(5, 300)).astype(F32), g.normal(size=(300,)).astype(F32),
            g.normal(size=(5, 1)).astype(F32)]
    with nna.context_scope("numpy"):
        want = unfused(p, [nna.asarray(v) for v in host])
    got = fused_elementwise(*[nna.asarray(v) for v in host], program=p)
    for gv, w in zip(got, want):
        _compare(gv, w, backend)


@pytest.mark.parametrize("op, attr, second", [
    ("sum", ((0, 1), False), (40, 70)),  # all inputs of the program's shape: one pass
    ("mean", ((1,), True), (40, 70)),
    ("max", ((0,), False), (70,)),  # a broadcast input: the program, then the reduction
])
def test_reduction_ends_a_program(backend, op, attr, second):
    """``r(x - y) ** 2`` with another output: the reduced value and ``exp(0.01 x)``."""
    b = Builder(2)
    d = b.call("sub", 0, 1)
    e = b.call("exp", b.call("mul", 0, b.const(0.01)))
    p = b.program([e, b.call(op, b.call("mul", d, d), attr=attr)])
    g = np.random.default_rng(3)
    host = [g.normal(size=(40, 70)).astype(F32), g.normal(size=second).astype(F32)]
    with nna.context_scope("numpy"):
        want = unfused(p, [nna.asarray(h) for h in host])
    got = fused_elementwise(*[nna.asarray(h) for h in host], program=p)
    assert [v.shape for v in got] == [v.shape for v in want]
    for gv, w in zip(got, want):
        _compare(gv, w, backend)


LOW16 = [np.dtype(np.float16), nna.bfloat16]


def _low_program(low: np.dtype) -> Program:
    """Over a 16-bit ``x0`` (10, 100) and ``x1`` (100,): the chain ``t`` (16-bit), its
    cast to float32 ``f``, ``h = cast(3 f, low)`` (a rounding inside) and ``h + x1``."""
    b = Builder(2)
    t = b.call("add", b.call("mul", b.call("tanh", b.call("add", b.call("mul", 0, b.const(0.5)),
                                                          b.const(0.1))),
                             b.call("sigmoid", 0)), b.call("mul", 0, 1))
    f = b.call("cast", t, attr="float32")
    h = b.call("cast", b.call("mul", f, b.const(3.0)), attr=low.name)
    return b.program([t, f, b.call("add", h, 1)])


def _rounded_once(p: Program, host: list, dtypes: list) -> list:
    """``p`` computed on the float32 values of ``host`` op by op on numpy, each output
    rounded once to its dtype in ``dtypes`` (the reference of a 16-bit program)."""
    with nna.context_scope("numpy"):
        got = unfused(p, [nna.asarray(h.astype(F32) if h.dtype in LOW16 else h) for h in host])
    return [g.numpy().astype(d) for g, d in zip(got, dtypes)]


def _within_one_ulp(got, want) -> None:
    """``got`` equals ``want`` (16-bit) or is its neighbour: float32 math functions of
    two backends differ by a few float32 ulps, which can cross a 16-bit rounding boundary.
    Other values: as ``_compare``."""
    got = np.asarray(got.numpy())
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype not in LOW16:
        np.testing.assert_allclose(got, want, **tol(F32 if want.dtype.kind == "f" else I32))
        return
    eps = float(nna.finfo(want.dtype).eps)
    tiny = float(nna.finfo(want.dtype).smallest_normal)
    np.testing.assert_allclose(got.astype(F32), want.astype(F32), rtol=eps, atol=tiny)


@pytest.mark.parametrize("low", LOW16, ids=str)
def test_16bit_program_computes_in_float32_rounds_once(backend, low):
    """float16 and bfloat16 inputs are read as float32, the body computes in float32
    (no rounding between the ops, as unfused 16-bit ops round after each) and each
    16-bit value is rounded once: where it is returned and where it is cast to. numpy
    runs the same float32 kernels: bit for bit; OpenCL: within one 16-bit ulp."""
    p = _low_program(low)
    g = np.random.default_rng(4)
    host = [g.uniform(-3, 3, (10, 100)).astype(low), g.uniform(-2, 2, (100,)).astype(low)]
    want = _rounded_once(p, host, [low, F32, low])
    got = fused_elementwise(*[nna.asarray(h) for h in host], program=p)
    assert [v.dtype for v in got] == [low, F32, low]
    for gv, w in zip(got, want):
        if backend == "numpy":
            np.testing.assert_array_equal(gv.numpy(), w)
        else:
            _within_one_ulp(gv, w)
    per_op = unfused(p, [nna.asarray(h) for h in host])[0].numpy()  # rounding each op
    assert not np.array_equal(per_op, want[0])  # the program shows the difference


@pytest.mark.parametrize("low", LOW16, ids=str)
def test_16bit_cast_read_further_rounds_in_registers(backend, low):
    """``p = x * y`` of 16-bit values is exact in float32 and rounded only where stored;
    ``cast(cast(p, float32), low)`` read by a later instruction is rounded in the kernel:
    ``d = cast(that, float32) - p`` is the rounding error, exactly, on every backend."""
    b = Builder(2)
    p = b.call("mul", 0, 1)
    wide = b.call("cast", p, attr="float32")
    d = b.call("sub", b.call("cast", b.call("cast", wide, attr=low.name), attr="float32"), wide)
    prog = b.program([p, d])
    g = np.random.default_rng(7)
    host = [g.uniform(-4, 4, (1000,)).astype(low) for _ in range(2)]
    exact = host[0].astype(F32) * host[1].astype(F32)
    want = [exact.astype(low), exact.astype(low).astype(F32) - exact]
    assert np.count_nonzero(want[1]) > 500
    got = fused_elementwise(*[nna.asarray(h) for h in host], program=prog)
    for gv, w in zip(got, want):
        np.testing.assert_array_equal(gv.numpy(), w)


@pytest.mark.parametrize("low", LOW16, ids=str)
def test_every_row_on_16bit_inputs_computes_in_float32(backend, low):
    """Every fused row on 16-bit ``x`` and the third input beside a float64 ``y`` (the
    program of ``test_every_row_fused_equals_unfused``): a 16-bit result is the float32
    op's rounded once, a float64 one the float64 op's on the exact 16-bit values."""
    rows = fused_rows(False)
    p = row_program(rows, False)
    host = [h.astype(low) if h.dtype == F32 else h for h in _inputs(False)]
    got = fused_elementwise(*[nna.asarray(h) for h in host], program=p)
    want = _rounded_once(p, host, [g.dtype for g in got])
    for row, gv, w in zip([*rows, "where"], got, want):
        try:
            if backend == "numpy":
                np.testing.assert_array_equal(gv.numpy(), w)
            else:
                _within_one_ulp(gv, w)
        except AssertionError as e:
            raise AssertionError(f"row {getattr(row, 'name', row)}: {e}") from None


@pytest.mark.parametrize("low", LOW16, ids=str)
def test_16bit_reduction_ends_a_program(backend, low):
    """``sum((x - y) ** 2)`` of 16-bit values beside ``exp(0.01 x)``: the operand rounded
    to 16 bits (as the unfused reduction reads it), summed accumulating in float32, the
    sum rounded once (one pass on OpenCL: every input of the program's shape); within
    one 16-bit ulp of float64's sum of the rounded operand."""
    b = Builder(2)
    d = b.call("sub", 0, 1)
    e = b.call("exp", b.call("mul", 0, b.const(0.01)))
    p = b.program([e, b.call("sum", b.call("mul", d, d), attr=((0, 1), False))])
    g = np.random.default_rng(5)
    host = [g.normal(size=(40, 70)).astype(low) for _ in range(2)]
    x, y = (h.astype(np.float64) for h in host)
    operand = ((x - y) ** 2).astype(F32).astype(low).astype(np.float64)
    want = [np.exp(0.01 * x).astype(F32).astype(low), np.asarray(operand.sum()).astype(low)]
    got = fused_elementwise(*[nna.asarray(h) for h in host], program=p)
    for gv, w in zip(got, want):
        _within_one_ulp(gv, w)


def test_numpy_reuses_buffers():
    """The chain's seven intermediates take two buffers (and the output its own)."""
    from nnarray.backends.numpy.fused import _plan
    b = Builder(1)
    p = b.program([chain(b, 0)])
    steps, _ = _plan(p, (fused.Meta((8,), F32),))
    computed = [s for s in steps if s[0] != fused.CONST]
    fresh = [s for s in computed if s[4] is None]
    assert len(computed) == 7 and len(fresh) == 3


def test_opencl_source_is_readable():
    nna.backends.ensure_loaded("opencl") if nna.backends.why_unavailable("opencl") is None \
        else pytest.skip("no OpenCL")
    from nnarray.backends.opencl.fused import source
    b = Builder(2)
    p = b.program([b.call("mul", chain(b, 0), 1)])
    src = source(p, (((3, 4), F32), ((4,), F64)))
    assert "const float t4 = tanh((t3));  // tanh(t3)" in src
    assert "const double t9 = ((double)(t8)) * (x1);  // mul(t8, x1)" in src
    assert src.count("out0[i] = t9;") == 1 and "out1" not in src


@pytest.mark.parametrize("program, inputs, error, match", [
    (Program(1, (Instr("mul", (0, 5)),), (1,)), [(3,)], ValueError, "references"),
    (Program(1, (Instr("nope", (0,)),), (1,)), [(3,)], ValueError, "no elementwise"),
    (Program(1, (Instr("exp", (0, 0)),), (1,)), [(3,)], ValueError, "takes 1"),
    (Program(2, (Instr("add", (0, 1)),), (2,)), [(3,), (4,)], ShapeError,
     r"instruction t0 \(add\(x0, x1\)\).*\(3,\).*\(4,\)"),
    (Program(1, (Instr("bitwise_and", (0, 0)),), (1,)), [(3,)], DTypeError, "bitwise_and"),
    (Program(2, (Instr("exp", (1,)),), (2,)), [(2, 3), (3,)], ShapeError,
     r"output t0 has shape \(3,\).*\(2, 3\)"),
    (Program(1, (const(1.0), Instr("exp", (1,))), (2,)), [(3,)], TypeError, "array value"),
    (Program(1, (Instr("exp", (0,)),), (0,)), [(3,)], ValueError, "output reference 0"),
    (Program(1, (Instr("broadcast_to", (0,), (2,)),), (1,)), [(3,)], ShapeError,
     "cannot broadcast"),
    (Program(1, (Instr("sum", (0,), ((0,), False)), Instr("exp", (1,))), (2,)), [(3,)],
     ValueError, "reduction must be the last"),
    (Program(1, (Instr("sum", (0,), ((-1,), False)),), (1,)), [(3,)], ValueError,
     r"normalized axes.*\(0,\)"),
    (Program(2, (Instr("sum", (0,), ((0,), False)),), (2,)), [(3,), (2, 3)], ShapeError,
     r"reduction's operand has shape \(3,\), not the program's shape \(2, 3\)"),
])
def test_bad_programs_raise_typed_errors(backend, program, inputs, error, match):
    xs = [nna.zeros(s, dtype=np.float32) for s in inputs]
    with pytest.raises(error, match=match):
        fused_elementwise(*xs, program=program)


def test_bad_attrs_raise():
    x = nna.zeros((3,), dtype=np.float32)
    with pytest.raises(TypeError, match="Program"):
        fused_elementwise(x, program=("mul",))
    with pytest.raises(TypeError, match="constant"):
        const("0.5")


# -- the grouping pass ---------------------------------------------------------------
def _steps(device: str, with_backward: bool) -> list[Step]:
    """The chain (and its backward, seeded by ``g``), written as a schedule would."""
    m = ((64, 32), F32)
    rows: list[tuple] = [
        ("mul", ("x", Const(0.5)), "a"), ("add", ("a", Const(0.1)), "b"), ("tanh", ("b",), "t"),
        ("sigmoid", ("x",), "s"), ("mul", ("t", "s"), "p"), ("mul", ("x", "x"), "q"),
        ("add", ("p", "q"), "y")]
    if with_backward:
        rows += [
            ("mul", ("g", "s"), "dt"), ("mul", ("g", "t"), "ds"),
            ("mul", ("x", Const(2.0)), "x2"), ("mul", ("g", "x2"), "dxq"),
            ("mul", ("t", "t"), "tt"), ("sub", (Const(1.0), "tt"), "u"),
            ("mul", ("dt", "u"), "db"), ("mul", ("db", Const(0.5)), "dxa"),
            ("sub", (Const(1.0), "s"), "v"), ("mul", ("s", "v"), "w"),
            ("mul", ("ds", "w"), "dxs"), ("add", ("dxq", "dxa"), "d1"),
            ("add", ("d1", "dxs"), "dx")]
    return [Step(op, ins, (out,), tuple(None if isinstance(v, Const) else m for v in ins),
                 (m,), device) for op, ins, out in rows]


def _run_groups(steps, groups, env):
    """Run ``steps`` with each group's steps replaced by its fused op (numpy)."""
    at = {g.position: g for g in groups}
    skip = {j for g in groups for j in g.steps}
    for k, s in enumerate(steps):
        if k in at:
            g = at[k]
            outs = fused_elementwise(*[env[v] for v in g.inputs], program=g.program)
            env.update(zip(g.outputs, outs if len(g.outputs) > 1 else (outs,)))
        elif k not in skip:
            args = [a.value if isinstance(a, Const) else env[a] for a in s.inputs]
            env[s.outputs[0]] = row_ops[s.op](*args)
    return env


def test_pass_groups_forward_and_backward():
    steps = _steps("opencl:1", True)
    # separately: the forward keeps what backward reads (t, s), backward gives dx
    fwd, bwd = steps[:7], steps[7:]
    (gf,) = fusion_pass.groups(fwd, {"y", "t", "s"})
    assert gf.steps == tuple(range(7)) and gf.inputs == ("x",) and gf.position == 6
    assert gf.outputs == ("t", "s", "y")
    assert len([i for i in gf.program.instrs if i.op == fused.CONST]) == 2
    (gb,) = fusion_pass.groups(bwd, {"dx"})
    assert set(gb.inputs) == {"g", "s", "t", "x"} and gb.outputs == ("dx",)
    # together: one group, nothing written but y and dx (t and s recomputed in registers)
    (g,) = fusion_pass.groups(steps, {"y", "dx"})
    assert g.steps == tuple(range(len(steps))) and g.outputs == ("y", "dx")
    assert set(g.inputs) == {"x", "g"}


def test_pass_groups_compute_the_same_values():
    steps = _steps("opencl:0", True)
    h = np.random.default_rng(1).normal(size=(64, 32)).astype(F32)
    with nna.context_scope("numpy"):
        env = {"x": nna.asarray(h), "g": nna.ones((64, 32), dtype=np.float32)}
        want = _run_groups(steps, [], dict(env))
        groups = fusion_pass.groups(steps, {"y", "dx"})
        got = _run_groups(steps, groups, dict(env))
    for v in ("y", "dx"):
        np.testing.assert_allclose(got[v].numpy(), want[v].numpy(), rtol=1e-6)
    xh = h.astype(np.float64)
    sig = 1 / (1 + np.exp(-xh))
    t = np.tanh(0.5 * xh + 0.1)
    dx = 2 * xh + 0.5 * (1 - t * t) * sig + t * sig * (1 - sig)
    np.testing.assert_allclose(got["dx"].numpy(), dx, rtol=1e-4, atol=1e-5)


def test_pass_reduction_ends_a_group_on_opencl():
    """A loss ``sum(chain(x))`` on OpenCL: one group ending in the sum, y never written;
    on CUDA the sum stays a step of its own."""
    m = ((64, 32), F32)
    total = Step("sum", ("y",), ("l",), (m,), (((), F32),), "opencl:1",
                 {"axis": (0, 1), "keepdims": False})
    after = Step("exp", ("x",), ("e",), (m,), (m,), "opencl:1")
    steps = _steps("opencl:1", False) + [total, after]
    (g,) = fusion_pass.groups(steps, {"l", "e"})
    assert g.steps == tuple(range(8)) and g.outputs == ("l",) and g.position == 7
    n = g.program.n_inputs + len(g.program.instrs)
    assert g.program.instrs[-1] == Instr("sum", (n - 2,), ((0, 1), False))  # of y
    cuda = [replace(s, device="cuda:0") for s in steps]
    assert [g.steps for g in fusion_pass.groups(cuda, {"l", "e"})] == [tuple(range(7))]
    h = np.random.default_rng(4).normal(size=(64, 32)).astype(F32)
    with nna.context_scope("numpy"):
        got = fused_elementwise(nna.asarray(h), program=g.program)
    x = h.astype(np.float64)
    want = (np.tanh(0.5 * x + 0.1) / (1 + np.exp(-x)) + x * x).sum()
    np.testing.assert_allclose(float(got.numpy()), want, rtol=1e-5)


def test_recompute_retained_values_in_backward():
    """The chain retains t, s and x for backward: t and s are recomputed from x, and the
    backward with those steps at its head is one group reading x and g only."""
    steps = _steps("opencl:1", True)
    fwd, bwd = steps[:7], steps[7:]
    r = fusion_pass.recompute(fwd, {"t", "s", "x"})
    assert r.values == {"t", "s"} and r.steps == (0, 1, 2, 3) and r.needs == {"x"}
    (g,) = fusion_pass.groups([fwd[j] for j in r.steps] + bwd, {"dx"})
    assert set(g.inputs) == {"x", "g"} and g.outputs == ("dx",)
    assert fusion_pass.recompute(fwd, {"t", "s", "x"}, max_steps=2).values == {"s"}
    # keeping more sources than values saved: nothing recomputed
    two = [Step("add", ("a", "b"), ("c",), (m := ((4,), F32), m), (m,), "opencl:1")]
    assert fusion_pass.recompute(two, {"c"}).values == frozenset()


def _graph_steps(y, device: str) -> list[Step]:
    """The nodes of a recorded graph behind ``y`` as the pass's steps (what the schedule
    hands it): values by id, scalars as ``Const``."""
    order, seen = [], set()

    def visit(n):
        if id(n) in seen:
            return
        seen.add(id(n))
        for a in n.inputs:
            if getattr(a, "parent", None) is not None:
                visit(a.parent)
        order.append(n)
    visit(y.parent)
    return [Step(n.function.name,
                 tuple(Const(a) if isinstance(a, (bool, int, float)) else id(a)
                       for a in n.inputs),
                 tuple(id(o) for o in n.output_variables()),
                 tuple(None if isinstance(a, (bool, int, float)) else (a.shape, a.dtype)
                       for a in n.inputs), n.out_metas, device, n.attrs) for n in order]


def test_pass_on_a_recorded_graph():
    """The chain recorded as a static graph: its nodes form one group whose program gives
    what the graph's forward gives."""
    import nnarray.functions as F
    from nnarray.grad import Variable
    h = np.random.default_rng(5).normal(size=(16, 8)).astype(F32)
    with nna.context_scope("numpy"):
        x = Variable.from_numpy_array(h, need_grad=True)
        y = F.tanh(0.5 * x + 0.1) * F.sigmoid(x) + x * x
        steps = _graph_steps(y, "opencl:1")
        (g,) = fusion_pass.groups(steps, {id(y)})
        assert len(g.steps) == len(steps) == 7 and g.inputs == (id(x),)
        y.forward()
        got = fused_elementwise(nna.asarray(h), program=g.program)
        np.testing.assert_array_equal(got.numpy(), y.d)


def test_pass_caps_the_kernel_buffers(monkeypatch):
    """70 sums of distinct inputs in a chain: no kernel takes more than MAX_BUFFERS."""
    m = ((8,), F32)
    steps = [Step("add", ("a0", "b0"), ("c0",), (m, m), (m,), "opencl:1")]
    steps += [Step("add", (f"c{k - 1}", f"b{k}"), (f"c{k}",), (m, m), (m,), "opencl:1")
              for k in range(1, 70)]
    gs = fusion_pass.groups(steps, {"c69"})
    assert len(gs) == 3 and all(len(g.inputs) + len(g.outputs) <= fusion_pass.MAX_BUFFERS
                                for g in gs)
    assert gs[0].outputs == (gs[1].inputs[0],)  # the first group's end feeds the second
    monkeypatch.setattr(fusion_pass, "MAX_BUFFERS", 1000)
    assert len(fusion_pass.groups(steps, {"c69"})) == 1


def test_pass_rules():
    steps = _steps("numpy", True)
    assert fusion_pass.groups(steps, {"y", "dx"}) == []  # numpy keeps its out= reuse
    steps = _steps("cuda:0", False)
    # a step outside that reads a group's value before its last step splits the group
    m = steps[0].metas[0]
    reader = Step("sum", ("a",), ("r",), (m,), (((), F32),), "cuda:0")
    split = steps[:2] + [reader] + steps[2:]
    gs = fusion_pass.groups(split, {"y", "r"})
    assert [g.steps for g in gs] == [(0, 1), (3, 4, 5, 6, 7)]
    assert gs[0].outputs == ("a", "b")  # a: read by the sum; b: by the later group
    # another device, another shape or a non-fusable dtype starts a new group
    other = [Step("exp", ("y",), ("e",), (m,), (m,), "opencl:0"),
             Step("exp", ("e",), ("e2",), (m,), (m,), "opencl:0")]
    gs = fusion_pass.groups(steps + other, {"y", "e2"})
    assert [g.steps for g in gs] == [tuple(range(7)), (7, 8)]
    for low in (np.float16, nna.bfloat16):  # loaded and stored as such, computed in float
        half = ((64, 32), np.dtype(low))
        assert fusion_pass.fusable(Step("exp", ("x",), ("h",), (half,), (half,), "opencl:1"))
        assert fusion_pass.fusable(Step("pow", ("x", Const(2)), ("h",), (half, None), (half,),
                                        "opencl:1"))
    c64 = ((64, 32), np.dtype(np.complex64))
    assert not fusion_pass.fusable(Step("exp", ("x",), ("h",), (c64,), (c64,), "cuda:0"))
    ipow = Step("pow", ("i", Const(2)), ("j",), (((3,), I64), None), (((3,), I64),), "cuda:0")
    assert not fusion_pass.fusable(ipow)
    assert fusion_pass.fusable(Step("cast", ("x",), ("c",), (m,), (((64, 32), F64),), "cuda:0",
                               {"dtype": F64}))
    bm = ((64, 32), np.dtype(np.bool_))
    assert fusion_pass.fusable(Step("where", ("c", "x", Const(0.0)), ("w",), (bm, m, None), (m,),
                               "opencl:1"))
    assert not fusion_pass.fusable(Step("where", (Const(True), "x", "y"), ("w",), (None, m, m),
                                   (m,), "opencl:1"))
