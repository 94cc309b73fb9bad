"""``nna.autocast``: the op table tested op by op (which dtype each runs in), the context's
thread-local nesting, gradients in each forward's dtype, static graphs recording the
casts, and a model step against ``torch.autocast("cpu", torch.bfloat16)``."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from helpers import device_params

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, nn
from nnarray.ops.autocast import FLOAT32, LOW, POLICY

BF = nna.bfloat16
RNG = np.random.default_rng(0)


def arr(shape, dtype=np.float32, positive=False):
    v = RNG.standard_normal(shape).astype(np.float32)
    return nna.array((np.abs(v) + 0.5 if positive else v).astype(dtype))


#: One call per POLICY entry: the maker of the inputs (``arr``: NdArrays, or ``leaf``:
#: Variables) and their dtype given, the op run through its ``F`` function.
CALLS = {
    "matmul": lambda m, d: F.matmul(m((3, 4), d), m((4, 2), d)),
    "affine": lambda m, d: F.affine(m((3, 4), d), m((4, 2), d), m((2,), d)),
    "conv2d": lambda m, d: F.conv2d(m((1, 2, 5, 5), d), m((3, 2, 3, 3), d), m((3,), d)),
    "exp": lambda m, d: F.exp(m((4,), d)),
    "expm1": lambda m, d: F.expm1(m((4,), d)),
    "log": lambda m, d: F.log(m((4,), d, True)),
    "log1p": lambda m, d: F.log1p(m((4,), d, True)),
    "log2": lambda m, d: F.log2(m((4,), d, True)),
    "log10": lambda m, d: F.log10(m((4,), d, True)),
    "pow": lambda m, d: m((4,), d, True) ** 1.5,
    "sinh": lambda m, d: F.sinh(m((4,), d)),
    "cosh": lambda m, d: F.cosh(m((4,), d)),
    "tan": lambda m, d: F.tan(m((4,), d)),
    "acos": lambda m, d: F.acos(m((4,), d) * 0.1),
    "asin": lambda m, d: F.asin(m((4,), d) * 0.1),
    "softmax": lambda m, d: F.softmax(m((3, 5), d)),
    "log_softmax": lambda m, d: F.log_softmax(m((3, 5), d)),
    "softmax_cross_entropy": lambda m, d: F.softmax_cross_entropy(m((3, 5), d),
                                                               nna.array(np.array([0, 4, 2]))),
    "mean_squared_error": lambda m, d: F.mean_squared_error(m((3, 5), d), m((3, 5), d)),
    "layer_norm": lambda m, d: F.layer_norm(m((3, 5), d), (5,)),
    "batch_normalization": lambda m, d: F.batch_normalization(
        m((4, 3), d), nna.ones((1, 3)), nna.zeros((1, 3)), nna.zeros((1, 3)),
        nna.ones((1, 3))),
    "sum": lambda m, d: F.sum(m((3, 5), d), axis=1),
    "mean": lambda m, d: F.mean(m((3, 5), d)),
    "prod": lambda m, d: F.prod(m((3, 5), d), axis=0),
    "cumulative_sum": lambda m, d: F.cumulative_sum(m((3, 5), d), axis=1),
    "cumulative_prod": lambda m, d: F.cumulative_prod(m((3, 5), d), axis=1),
}


def test_every_policy_entry_is_tested():
    assert set(CALLS) == set(POLICY)


LOWS = {"bfloat16": BF, "float16": np.dtype(np.float16)}
#: The ops checked with both 16-bit dtypes and as static graphs on compiling backends (a
#: LOW and a FLOAT32 rule; test_low_precision checks their kernels in both by value).
BOTH_ON_DEVICE = ("matmul", "sum")


def on_backends(rows: list, makers: tuple = ()) -> list:
    """``(backend, *row, low[, maker])`` parameters (the ``backend`` fixture indirect):
    on numpy every row with both 16-bit dtypes under every maker. The table's dtype is
    chosen in Python before any kernel runs, and this test checks only dtypes, so a
    compiling backend runs a covering subset whose kernels other tests check by value:
    every op (and form) in bfloat16 on NdArrays and Variables (test_bfloat16 and
    test_low_precision run each op's bfloat16 kernels against float32), and the ops of
    ``BOTH_ON_DEVICE`` in float16 too and as static graphs; a static graph under autocast
    fusing its casts runs in ``test_static_graph_folds_the_casts_into_fused_kernels``.
    The full product compiled each op's float16 kernels and a fused cast-and-op program
    per op and dtype (cold compiles) for checks numpy makes."""
    width = len(rows[0])  # the case's low dtype follows the row, its maker that

    def on_device(case: tuple) -> bool:
        return case[0] in BOTH_ON_DEVICE or (case[width] == BF and case[-1] != "static")

    cases = [(*row, low, *m) for row in rows for low in LOWS.values()
             for m in ([(k,) for k in makers] or [()])]
    return device_params(cases, on_device, lambda c: "-".join(map(str, c)))


def test_the_device_subset_covers_each_op_dtype_and_maker():
    got = {(p.values[1], p.values[-2], p.values[-1]) for p in
           on_backends([(op,) for op in sorted(POLICY)], tuple(MAKERS)) if p.values[0] != "numpy"}
    assert {op for op, _, _ in got} == set(POLICY)
    assert {(low, m) for _, low, m in got} == {(low, m) for low in LOWS.values() for m in MAKERS}
    assert {op for op, low, m in got if low == BF and m != "static"} == set(POLICY)


@pytest.mark.parametrize(("backend", "op", "low"), on_backends([(op,) for op in sorted(POLICY)]),
                         indirect=["backend"])
def test_each_op_runs_in_the_table_dtype(backend, op, low):
    rule = POLICY[op]
    given = np.float32 if rule == LOW else low  # inputs the rule must change
    with nna.autocast(dtype=low):
        out = CALLS[op](arr, given)
    assert out.dtype == (low if rule == LOW else np.float32), (op, out.dtype)
    # and outside autocast the same call keeps its inputs' dtype
    assert CALLS[op](arr, given).dtype == np.dtype(given)


def leaf(shape, dtype=np.float32, positive=False):
    """A Variable (``need_grad``) holding what ``arr`` would."""
    return grad.Variable.from_ndarray(arr(shape, dtype, positive), True)


#: The other forms of the table's ops: Python operators, methods and the array-API
#: namespace's functions, each taking the input maker and dtype as ``CALLS`` does.
FORMS = {
    "matmul": [lambda m, d: m((3, 4), d) @ m((4, 2), d),
               lambda m, d: nna.matmul(m((3, 4), d), m((4, 2), d))],
    "pow": [lambda m, d: m((4,), d, True) ** 1.5,
            lambda m, d: 1.5 ** m((4,), d, True),
            lambda m, d: m((4,), d, True) ** m((4,), d),
            lambda m, d: nna.pow(m((4,), d, True), 2.0)],
    "exp": [lambda m, d: nna.exp(m((4,), d))],
    "log": [lambda m, d: nna.log(m((4,), d, True))],
    "sum": [lambda m, d: m((3, 5), d).sum(),
            lambda m, d: m((3, 5), d).sum(axis=0),
            lambda m, d: nna.sum(m((3, 5), d), axis=1)],
    "mean": [lambda m, d: m((3, 5), d).mean(),
             lambda m, d: nna.mean(m((3, 5), d), axis=0)],
    "prod": [lambda m, d: m((3, 5), d).prod(),
             lambda m, d: nna.prod(m((3, 5), d), axis=1)],
    "cumulative_sum": [lambda m, d: nna.cumulative_sum(m((3, 5), d), axis=1)],
    "cumulative_prod": [lambda m, d: nna.cumulative_prod(m((3, 5), d), axis=1)],
}
FORM_CASES = [(op, k) for op in sorted(FORMS) for k in range(len(FORMS[op]))]
MAKERS = ["ndarray", "variable", "static"]


def _run(call, maker, d):
    """``call`` on NdArrays, on Variables under ``auto_forward`` or on a static graph."""
    if maker == "ndarray":
        return call(arr, d)
    if maker == "variable":
        with grad.auto_forward():
            return call(leaf, d)
    y = call(leaf, d)  # recorded, then run: the recorded dtype is the one computed
    y.forward()
    assert y.d.dtype == y.dtype
    return y


def _check_form(call, op, maker, low):
    rule = POLICY[op]
    given = np.float32 if rule == LOW else low
    with nna.autocast(dtype=low):
        out = _run(call, maker, given)
    assert out.dtype == (low if rule == LOW else np.float32), (op, maker, out.dtype)
    assert _run(call, maker, given).dtype == np.dtype(given), (op, maker)


@pytest.mark.parametrize(("backend", "op", "low", "maker"),
                         on_backends([(op,) for op in sorted(POLICY)], MAKERS[1:]),
                         indirect=["backend"])
def test_each_op_runs_in_the_table_dtype_on_variables(backend, op, low, maker):
    """The whole table again on Variables, define-by-run and static."""
    _check_form(CALLS[op], op, maker, low)


@pytest.mark.parametrize(("backend", "op", "k", "low", "maker"),
                         on_backends(FORM_CASES, MAKERS), indirect=["backend"])
def test_operator_and_method_forms_follow_the_table(backend, op, k, low, maker):
    """``v ** p``, ``p ** v``, ``a @ b``, ``a.sum()``, ``nna.prod(a)``, ... run where
    the table says, as the ``F`` calls do (``v ** p`` on a Variable used to stay 16-bit,
    and ``a.sum()`` cast its float32 sum back to the input's dtype)."""
    _check_form(FORMS[op][k], op, maker, low)


def test_variable_pow_computes_in_float32_and_its_gradient_returns_in_bfloat16(backend):
    x = leaf((6,), BF, True)
    with grad.auto_forward(), nna.autocast(dtype=BF):
        y = x ** 1.5
        y.backward(nna.ones((6,), np.float32))
    xf = x.d.astype(np.float32)
    np.testing.assert_allclose(y.d, xf ** 1.5, rtol=1e-6)  # float32 pow of the bf16 input
    assert x.grad.dtype == BF
    np.testing.assert_allclose(x.g.astype(np.float32), 1.5 * xf ** 0.5, rtol=2 ** -7)


def test_other_ops_follow_promotion_and_float64_stays(backend):
    with nna.autocast():
        a, b = arr((4,), BF), arr((4,))
        assert (a + a).dtype == BF and F.tanh(a).dtype == BF
        assert (a + b).dtype == np.float32  # torch's "promote" list
        assert F.exp(arr((4,), np.float64)).dtype == np.float64
        assert F.matmul(arr((2, 2), np.int32), arr((2, 2), np.int32)).dtype == np.int32


def test_policy_prints_the_one_table():
    text = nna.autocast.policy()
    for op, rule in POLICY.items():
        line = next(x for x in text.splitlines() if x.split()[0] == op)
        assert ("float32" in line) == (rule == FLOAT32)


def test_context_is_thread_local_nests_and_restores():
    seen = {}

    def other():
        seen["other"] = F.matmul(arr((2, 2)), arr((2, 2))).dtype

    with nna.autocast(dtype=np.float16):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert nna.autocast.current() == np.float16
        with nna.autocast(enabled=False):
            assert F.matmul(arr((2, 2)), arr((2, 2))).dtype == np.float32
            with nna.autocast(dtype=BF):
                assert F.matmul(arr((2, 2)), arr((2, 2))).dtype == BF
        with pytest.raises(RuntimeError), nna.autocast(dtype=BF):
            raise RuntimeError("inside")
        assert F.matmul(arr((2, 2)), arr((2, 2))).dtype == np.float16
    assert seen["other"] == np.float32
    assert nna.autocast.current() is None
    assert F.matmul(arr((2, 2)), arr((2, 2))).dtype == np.float32


def test_dtype_is_checked():
    with pytest.raises(nna.DTypeError, match="bfloat16 or float16"):
        nna.autocast(dtype=np.float32)


def _model():
    nna.seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))


X = RNG.standard_normal((8, 6)).astype(np.float32)
T = np.array([0, 1, 2, 3, 3, 2, 1, 0])


def test_step_matches_torch_autocast_and_gradients_keep_their_dtypes(backend):
    m = _model()
    with grad.auto_forward():
        with nna.autocast(dtype=BF):
            logits = m(nna.array(X))
            loss = F.mean(F.softmax_cross_entropy(logits, nna.array(T)))
            loss.backward()  # inside the block: each gradient in its forward's dtype
    assert logits.dtype == BF and loss.dtype == np.float32
    params = m.parameters()
    assert {v.grad.dtype for v in params.values()} == {np.dtype(np.float32)}

    torch = pytest.importorskip("torch")  # the oracle (the README's test extras lack it)
    tm = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    with torch.no_grad():
        for i, j in ((0, 0), (2, 2)):
            tm[j].weight.copy_(torch.tensor(params[f"{i}.W"].d.T))
            tm[j].bias.copy_(torch.tensor(params[f"{i}.b"].d))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        tl = torch.nn.functional.cross_entropy(tm(torch.tensor(X)), torch.tensor(T))
    tl.backward()
    assert abs(float(loss.d) - tl.item()) < 2e-2 * max(1.0, abs(tl.item()))
    for i, j in ((0, 0), (2, 2)):
        np.testing.assert_allclose(params[f"{i}.W"].g, tm[j].weight.grad.numpy().T,
                                   rtol=5e-2, atol=1e-2)
        np.testing.assert_allclose(params[f"{i}.b"].g, tm[j].bias.grad.numpy(),
                                   rtol=5e-2, atol=1e-2)


def test_backward_inside_or_outside_the_block_agree(backend):
    grads = []
    for inside in (True, False):
        m = _model()
        with grad.auto_forward():
            with nna.autocast(dtype=BF):
                loss = F.mean(F.softmax_cross_entropy(m(nna.array(X)), nna.array(T)))
                if inside:
                    loss.backward()
            if not inside:
                loss.backward()
        grads.append({k: v.g.copy() for k, v in m.parameters().items()})
    for k in grads[0]:
        np.testing.assert_array_equal(grads[0][k], grads[1][k])


def test_static_graph_records_the_casts(backend):
    m = _model()
    x = grad.Variable.from_numpy_array(X)
    with nna.autocast(dtype=BF):
        y = m(x)  # static: recorded, not run
    assert y.dtype == BF
    y.forward()  # outside the block: the recorded casts still run
    with grad.auto_forward():
        want = m(nna.array(X).astype(BF).astype(np.float32))
    assert y.d.dtype == BF
    np.testing.assert_allclose(y.d.astype(np.float32), want.d, rtol=0.1, atol=0.05)


def _autocast_graph() -> tuple:
    """Under bfloat16 autocast, ``z = (exp(0.1 h) * 0.5 + h) @ w`` with ``h = x @ w``: between
    the products the chain casts ``h`` up (``exp`` runs in float32), computes in float32,
    and casts the result down for the second product. Returns ``(step, loss, x, w)``."""
    g = np.random.default_rng(6)
    x, w = (grad.Variable.from_numpy_array(g.standard_normal(s).astype(np.float32),
                                           need_grad=True) for s in ((64, 32), (32, 32)))
    with nna.autocast(dtype=BF):
        h = F.matmul(x, w)
        loss = F.sum(F.matmul(F.exp(h * 0.1) * 0.5 + h, w))

    def step() -> None:
        loss.forward()
        x.grad.zero()
        w.grad.zero()
        loss.backward()
    return step, loss, x, w


def _launches(step) -> int:
    step()
    nna.reset_kernel_stats()
    step()
    return nna.kernel_stats()["count"]


def test_static_graph_folds_the_casts_into_fused_kernels(backend):
    """The casts autocast inserts between float32 and bfloat16 inside an elementwise chain
    run in its fused kernel (OpenCL/CUDA): forward, the chain between the products
    (``h * 0.1``, the cast up, ``exp``, ``* 0.5``, ``+ h``, the cast down) is one launch;
    the whole step 17 launches where unfused it takes 30 (numpy fuses nothing). Values as
    the unfused graph's: the fused chain rounds to bfloat16 once (``h * 0.1`` is not
    rounded), within a few bfloat16 roundings (2^-6) of the largest value."""
    with grad.fusion_enabled(False):
        ustep, uloss, ux, uw = _autocast_graph()
        unfused = _launches(ustep)
    step, loss, x, w = _autocast_graph()
    fused = _launches(step)
    for got, want in ((loss.d, uloss.d), (x.g, ux.g), (w.g, uw.g)):
        got, want = (np.asarray(v, np.float32) for v in (got, want))
        np.testing.assert_allclose(got, want, rtol=0, atol=2.0 ** -6 * np.abs(want).max())
    ops = [s.op for s in grad.schedule_of(loss).steps]
    if backend.split(":")[0] not in grad.fusion_pass.FUSING_BACKENDS:
        assert fused == unfused and "fused_elementwise" not in ops
        return
    assert ops == ["cast", "cast", "matmul", "fused_elementwise", "cast", "matmul", "cast",
                   "sum"]  # the casts left: of w again (another shape), of the product
    (chain,) = [s for s in grad.schedule_of(loss).steps if s.op == "fused_elementwise"]
    text = str(chain.attrs["program"])
    assert "cast(" in text and "float32)" in text and "bfloat16)" in text
    if backend.split(":")[0] == "opencl":
        assert (fused, unfused) == (17, 30)
