"""bfloat16 (``nna.bfloat16``, ml_dtypes' numpy dtype) on every backend: each op against
float32 computed on the bfloat16-rounded inputs and rounded once (error bound: one
bfloat16 rounding of the result, 2^-8 relative, plus float32 noise), reductions
accumulating in float32, promotion, gradients, checkpoints, the counted upcast path and
the typed errors where an op has no bfloat16 code."""

from __future__ import annotations

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, nn, solvers
from nnarray.ops import elementwise as ew

BF = nna.bfloat16
RNG = np.random.default_rng(0)
X4 = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)
W4 = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
M2 = RNG.standard_normal((5, 7)).astype(np.float32)
M3 = RNG.standard_normal((7, 4)).astype(np.float32)
POS = np.abs(M2) + 0.5
LABELS = np.array([1, 0, 6, 3, 2])

CASES = {
    "add": lambda a: a["m2"] + a["pos"],
    "mul_scalar": lambda a: a["m2"] * 2.5,
    "div": lambda a: a["m2"] / a["pos"],
    "exp": lambda a: F.exp(a["m2"]),
    "log": lambda a: F.log(a["pos"]),
    "tanh": lambda a: F.tanh(a["m2"]),
    "sigmoid": lambda a: F.sigmoid(a["m2"]),
    "pow": lambda a: a["pos"] ** 1.5,
    "gelu": lambda a: F.gelu(a["m2"]),
    "relu": lambda a: F.relu(a["m2"]),
    "where": lambda a: F.where(a["m2"] > 0, a["m2"], a["m2"] * 0.1),
    "clip": lambda a: F.clip(a["m2"], -0.5, 0.5),
    "maximum": lambda a: F.maximum(a["m2"], a["pos"] - 1.0),
    "matmul": lambda a: a["m2"] @ a["m3"],
    "affine": lambda a: F.affine(a["m2"], a["m3"]),
    "matmul_batched": lambda a: F.matmul(a["x4"], F.transpose(a["x4"], (0, 1, 3, 2))),
    "einsum": lambda a: nna.einsum("ij,jk->ik", a["m2"], a["m3"]),
    "conv2d": lambda a: F.conv2d(a["x4"], a["w4"], pad=1),
    "max_pooling": lambda a: F.max_pooling(a["x4"], 2),
    "average_pooling": lambda a: F.average_pooling(a["x4"], 2),
    "sum": lambda a: F.sum(a["m2"], axis=1),
    "mean": lambda a: F.mean(a["m2"], axis=0),
    "max": lambda a: F.max(a["m2"], axis=1),
    "prod": lambda a: nna.prod(a["m2"], axis=1),
    "cumulative_sum": lambda a: nna.cumulative_sum(a["m2"], axis=1),
    "var": lambda a: nna.var(a["m2"], axis=1),
    "softmax": lambda a: F.softmax(a["m2"]),
    "log_softmax": lambda a: F.log_softmax(a["m2"]),
    "softmax_cross_entropy": lambda a: F.softmax_cross_entropy(a["m2"], nna.array(LABELS)),
    "mean_squared_error": lambda a: F.mean_squared_error(a["m2"], a["pos"]),
    "layer_norm": lambda a: F.layer_norm(a["m2"], (7,)),
    "attention": lambda a: F.scaled_dot_product_attention(a["x4"], a["x4"], a["x4"]),
    "transpose": lambda a: F.transpose(a["m2"]),
    "concatenate": lambda a: F.concatenate([a["m2"], a["pos"]], axis=1),
    "basic_index": lambda a: a["m2"][1:4, ::2],
    "take": lambda a: a["m2"][nna.array(np.array([0, 4]))],
    "mask": lambda a: a["m2"][a["m2"] > 0],
    "sort": lambda a: nna.sort(a["m2"], axis=1),
    "embedding": lambda a: F.embedding(nna.array(np.array([0, 2, 4])), a["m2"]),
}

#: Composed of several ops, each rounding its result to bfloat16.
COMPOSED = {"attention", "layer_norm"}


def _inputs(dtype) -> dict:
    return {k: nna.array(v.astype(BF).astype(dtype)) for k, v in
            {"x4": X4, "w4": W4, "m2": M2, "m3": M3, "pos": POS}.items()}


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_matches_float32_rounded_once(backend, case):
    fn = CASES[case]
    with nna.context_scope("numpy"):
        ref = fn(_inputs(np.float32)).numpy()  # float32 on the same (rounded) inputs
    got = fn(_inputs(BF))
    assert got.dtype == BF
    g = got.numpy().astype(np.float32)
    want = ref.astype(BF).astype(np.float32)  # rounded once
    if case in COMPOSED:  # each step rounds to bfloat16 (as torch's, outside autocast)
        np.testing.assert_allclose(g, want, rtol=2.0 ** -5,
                                   atol=2.0 ** -6 * np.abs(want).max())
        return
    # one bfloat16 rounding each side, and float32 noise of the reference
    np.testing.assert_allclose(g, want, rtol=2.0 ** -7, atol=1e-5)


#: Rows a compiling backend runs one by one in bfloat16 (a program each): those with
#: bfloat16 code of their own (nextafter's step; floor_divide and remainder's divmod, left
#: unfused) and one of each kernel the renderer wraps around a row's float32 expression
#: (unary and binary to bfloat16, binary and unary to bool; exp and add are programs
#: test_op_matches_float32_rounded_once builds too). Every row runs there in one graph
#: too (below).
EAGER_ON_DEVICE = {"nextafter", "floor_divide", "remainder", "exp", "add", "less", "isnan"}


def _rows() -> list:
    """``(name, function, bfloat16 arguments, reference)`` for every elementwise row but
    the bitwise ones: the reference is numpy's float32 result rounded once to bfloat16
    (bool results as they are; nextafter one bfloat16 step)."""
    x = np.linspace(-1.9, 2.0, 64).astype(BF)
    y = np.linspace(1.5, -1.5, 64).astype(BF)
    out = []
    for name, fn in sorted(ew.functions.items()):
        if name.startswith("bitwise"):
            continue
        args = (x, y) if name in ew.BINARY else (x,)
        with nna.context_scope("numpy"):
            ref = fn(*[nna.array(a.astype(np.float32)) for a in args]).numpy()
        if name == "nextafter":  # one bfloat16 step, not a float32 one rounded back
            ref = np.nextafter(x, y)
        elif ref.dtype == np.float32:
            ref = ref.astype(BF)
        out.append((name, fn, args, ref))
    return out


def _check_row(name: str, got: np.ndarray, ref: np.ndarray) -> None:
    if ref.dtype == BF:
        assert got.dtype == BF, name
    assert got.dtype == ref.dtype, name
    same = (got == ref) | (np.isnan(got.astype(np.float32)) & np.isnan(ref.astype(np.float32)))
    assert same.all(), (name, got[~same], ref[~same])


def test_every_elementwise_row_is_float32_rounded_once(backend):
    """Each row in bfloat16 is its float32 result rounded once, bit for bit: one by one
    (numpy: every row; a compiling backend: ``EAGER_ON_DEVICE``, where each row is a
    program of its own) and, on a compiling backend, every row at once as one graph's
    outputs (fused: the same float32 expression, rounded once at the store)."""
    rows = _rows()
    checked = set()
    for name, fn, args, ref in rows:
        if backend == "numpy" or name in EAGER_ON_DEVICE:
            _check_row(name, fn(*[nna.array(a) for a in args]).numpy(), ref)
            checked.add(name)
    if backend != "numpy":
        xs = {id(a): grad.Variable.from_numpy_array(a) for r in rows for a in r[2]}
        ex = grad.Graph([fn(*[xs[id(a)] for a in args]) for _, fn, args, _ in rows]).bind(
            backend)
        for (name, _, _, ref), got in zip(rows, ex.forward()):
            _check_row(name, got.numpy(), ref)
            checked.add(name)
        if backend.split(":")[0] in grad.fusion_pass.FUSING_BACKENDS:  # few programs
            ops = [st.op for st in ex.schedule().steps]
            # nextafter steps by bfloat16's ulp: not computed in float32 (``Hints.narrow``)
            assert set(ops) == {"fused_elementwise", "floor_divide", "remainder",
                                "nextafter"}, ops
            assert ops.count("fused_elementwise") <= 4, ops
    assert len(checked) == len(rows) > 50


def test_sum_of_a_million_ones_accumulates_in_float32(backend):
    ones = nna.ones((10 ** 6,), BF)
    total = F.sum(ones)
    assert total.dtype == BF
    assert float(total) == float(np.float32(1e6).astype(BF))  # 999424: 1e6 in bfloat16
    assert float(F.mean(ones)) == 1.0


PROMOTIONS = [(np.float16, np.float32), (np.float32, np.float32), (np.float64, np.float64),
              (np.int8, BF)]


@pytest.mark.parametrize("other, want", PROMOTIONS)
def test_promotion(backend, other, want):
    """The result dtypes (chosen in Python, before any kernel): every pair both ways on
    numpy; a compiling backend, where each mixed kernel is a program, runs ``a + b`` for
    every other pair and ``b * a`` for the rest (both operand orders, each dtype once)."""
    a, b = nna.ones((3,), BF), nna.ones((3,), other)
    both = backend == "numpy"
    if both or PROMOTIONS.index((other, want)) % 2 == 0:
        assert (a + b).dtype == want
    if both or PROMOTIONS.index((other, want)) % 2 == 1:
        assert (b * a).dtype == want
    assert (a * 0.5).dtype == BF  # Python scalars do not upcast


@pytest.mark.parametrize("src", [np.float32, np.float64, np.float16, np.int32, np.bool_])
def test_casts_round_to_nearest_even(backend, src):
    vals = np.array([0, 1, -2.5, 3.0078125, 1.00390625, 1.01171875, 65504, 7], np.float64)
    if src == np.bool_:
        vals = vals != 0
    x = nna.array(vals.astype(src))
    got = x.astype(BF)
    np.testing.assert_array_equal(got.numpy().view(np.uint16),
                                  vals.astype(src).astype(BF).view(np.uint16))
    back = got.astype(src)
    np.testing.assert_array_equal(back.numpy(), vals.astype(src).astype(BF).astype(src))


def test_non_finite_values_survive_the_store(backend):
    vals = np.array([np.inf, -np.inf, np.nan, 3.4e38, 1e-40], np.float32)
    got = nna.array(vals).astype(BF).numpy()
    want = vals.astype(BF)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~np.isnan(want)], want[~np.isnan(want)])


def test_mlp_gradients_match_float32_and_train_with_master_weights(backend, tmp_path):
    def run(dtype, master=None):
        nna.seed(0)
        m = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 3))
        if dtype == BF:
            m.bfloat16()
        x = nna.array(np.random.default_rng(1).standard_normal((6, 4)).astype(BF)
                      .astype(dtype))
        t = nna.array(np.array([0, 1, 2, 1, 0, 2]))
        opt = solvers.Adam(m.parameters(), lr=1e-2, master_dtype=master)
        losses = []
        with grad.auto_forward():
            for _ in range(20):
                opt.zero_grad()
                loss = F.mean(F.softmax_cross_entropy(m(x), t))
                loss.backward()
                if not losses:
                    first = {k: v.g.astype(np.float32) for k, v in m.parameters().items()}
                opt.step()
                losses.append(float(loss))
        return m, first, losses, opt

    m32, g32, l32, _ = run(np.float32)
    m16, g16, l16, opt = run(BF, np.float32)
    for k in g32:
        assert m16.parameters()[k].grad.dtype == BF
        np.testing.assert_allclose(g16[k], g32[k], rtol=0.1, atol=0.02)
    assert l16[-1] < 0.8 * l16[0]
    np.testing.assert_allclose(l16, l32, rtol=0.05, atol=0.02)
    assert opt.states["0.W"]["master_weight"].dtype == np.float32
    m16.save(tmp_path / "m.npz")  # bfloat16 entries are written and read back as bfloat16
    other = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 3)).bfloat16()
    other.load(tmp_path / "m.npz")
    for k, v in other.parameters().items():
        assert v.dtype == BF
        np.testing.assert_array_equal(v.d.view(np.uint16), m16.parameters()[k].d.view(np.uint16))
    opt.save_states(tmp_path / "s.npz")
    opt.load_states(tmp_path / "s.npz")


def test_upcast_path_is_counted_not_silent():
    nna.reset_upcast_stats()
    with nna.context_scope("numpy"):
        a = nna.ones((4, 4), BF)
        F.sum(a @ a)
    stats = nna.upcast_stats()
    assert stats[("matmul", "numpy", "bfloat16")] == 1
    assert stats[("sum", "numpy", "bfloat16")] == 1


def test_float16_matmul_on_the_host_runs_through_float32():
    a = RNG.standard_normal((64, 300)).astype(np.float16)
    b = RNG.standard_normal((300, 32)).astype(np.float16)
    with nna.context_scope("numpy"):
        got = (nna.array(a) @ nna.array(b)).numpy()
    assert got.dtype == np.float16
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32),
                               rtol=2.0 ** -10, atol=1e-3)


def test_bitwise_ops_refuse_bfloat16_with_typed_errors(backend):
    x = nna.ones((4,), BF)
    for fn in (F.bitwise_and, F.bitwise_or, F.bitwise_xor):
        with pytest.raises(nna.DTypeError, match="bfloat16"):
            fn(x, x)


def test_module_bfloat16_casts_parameters(backend):
    m = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm(3)).bfloat16()
    assert {v.dtype for v in m.parameters().values()} == {BF}
    assert {a.dtype for a in m.state().values()} <= {np.dtype(np.float32)}


def test_static_graph_fused_forward_and_backward(backend):
    xs = np.linspace(-3, 3, 4099).astype(BF)
    x = grad.Variable.from_numpy_array(xs, need_grad=True)
    y = F.tanh(0.5 * x + 0.1) * F.sigmoid(x) + x * x  # static: the schedule fuses it
    s = F.sum(y)
    s.forward()
    s.backward()
    v = xs.astype(np.float64)
    th, sg = np.tanh(0.5 * v + 0.1), 1 / (1 + np.exp(-v))
    want_y = th * sg + v * v
    want_g = 0.5 * (1 - th * th) * sg + th * sg * (1 - sg) + 2 * v
    assert y.d.dtype == BF and x.g.dtype == BF
    # each intermediate rounds to bfloat16: a few 2^-8 relative steps of the largest terms
    scale = np.abs(want_y).max()
    np.testing.assert_allclose(y.d.astype(np.float64), want_y, atol=0.02 * scale, rtol=0)
    np.testing.assert_allclose(x.g.astype(np.float64), want_g, atol=0.02 * np.abs(want_g).max(),
                               rtol=0)
    assert abs(float(s.d) - want_y.sum()) < 0.01 * np.abs(want_y).sum()
