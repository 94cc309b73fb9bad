"""nnarray.grad beyond single functions: Variables, modes, the engine's bookkeeping,
PythonFunction, version checks, memory, gradcheck and DOT output."""

from __future__ import annotations

import gc
import threading
import tracemalloc
import weakref

import numpy as np
import pytest
from conftest import tol

import nnarray as nna
import nnarray.functions as F
from nnarray import grad
from nnarray.grad import GraphError, PythonFunction, Variable


@pytest.fixture
def unfused():
    """Schedules built without fusion (the tests below pin the unfused steps)."""
    with grad.fusion_enabled(False):
        yield


def _v(shape, need_grad=False, seed=0, dtype=np.float64):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return Variable.from_numpy_array(a, need_grad=need_grad)


# -- Variable -------------------------------------------------------------------------------
def test_variable_basics() -> None:
    v = Variable((2, 3), need_grad=True)
    assert (v.shape, v.dtype, v.ndim, v.size, v.need_grad, v.parent) == \
        ((2, 3), np.float32, 2, 6, True, None)
    np.testing.assert_array_equal(v.d, 0)
    v.d = np.arange(6).reshape(2, 3)
    v.g = 1.0
    assert isinstance(v.data, nna.NdArray) and isinstance(v.grad, nna.NdArray)
    np.testing.assert_array_equal(v.data.numpy(), np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(v.g, 1.0)
    w = Variable.from_numpy_array(np.arange(4, dtype=np.int32))
    assert w.dtype == np.int32 and not w.need_grad
    u = v.unlinked()
    assert u.parent is None and u.data is v.data and u.need_grad
    with pytest.raises(nna.ShapeError):
        v.data = nna.NdArray((3, 2))


def test_operators_and_constants(backend: str) -> None:
    a, b = _v((2, 3), seed=1), _v((3,), seed=2)
    an, bn = a.d.copy(), b.d.copy()
    c = nna.NdArray.from_numpy_array(np.full((2, 3), 0.5))
    with grad.auto_forward():
        cases = {
            "add": (a + b, an + bn), "radd": (1.0 + a, 1.0 + an), "sub": (a - c, an - 0.5),
            "rsub": (2 - a, 2 - an), "mul": (a * 3.0, an * 3.0), "rmul": (np.float64(2) * a,
                                                                         2 * an),
            "div": (a / 2.0, an / 2.0), "rtruediv": (1.0 / (a * a + 1), 1.0 / (an * an + 1)),
            "pow": ((a * a) ** 0.5, np.abs(an)), "neg": (-a, -an), "abs": (abs(a), np.abs(an)),
            "matmul": (a @ _v((3, 2), seed=3), an @ _v((3, 2), seed=3).d),
            "numpy_left": (np.ones((2, 3)) + a, 1 + an), "getitem": (a[1, ::-1], an[1, ::-1]),
            "T": (a.T, an.T), "sum": (a.sum(axis=0), an.sum(axis=0)),
            "lt": (a < b, an < bn), "ge": (a >= 0.0, an >= 0), "eq": (a == a, an == an),
        }
    for name, (got, want) in cases.items():
        assert isinstance(got, Variable), name
        np.testing.assert_allclose(got.d, want, err_msg=name, **tol(np.float64))


def test_inplace_operators() -> None:
    x = _v((2, 2), need_grad=True, seed=4)
    x0 = x.d.copy()
    with grad.no_grad():
        y = x
        y += 1.0  # under no_grad: written into x's data
    assert y is x
    np.testing.assert_allclose(x.d, x0 + 1)
    z = x
    z *= 2.0  # otherwise: recorded out of place, the name is rebound
    assert z is not x and z.parent is not None
    z.forward()
    np.testing.assert_allclose(z.d, (x0 + 1) * 2)
    z.backward(np.ones((2, 2)))
    np.testing.assert_allclose(x.g, 2.0)


def test_static_build_errors_and_lazy_compute() -> None:
    a, b = Variable((2, 3)), Variable((4,))
    with pytest.raises(nna.ShapeError, match="add"):
        a + b  # noqa: B018  (inference raises at build time)
    a.d = 1.0
    y = F.exp(a)
    assert y.shape == (2, 3) and y.parent.name == "exp"
    y.forward()
    np.testing.assert_allclose(y.d, np.e, rtol=1e-6)
    a.d = 0.0
    y.forward()  # the static graph is replayed on new data
    np.testing.assert_allclose(y.d, 1.0)


def test_unrun_static_value_raises_naming_forward(backend: str) -> None:
    """Reading ``.d`` of a static output before its graph ran (or after
    ``forward(clear_buffer=True)`` freed it) raises, naming the call to make."""
    a = _v((2, 3), seed=3)
    y = F.exp(a)
    h = y * 2.0
    z = F.sum(h + 1.0)
    for v in (y, z):
        with pytest.raises(GraphError, match=r"has not run.*forward\(\).*auto_forward"):
            v.d  # noqa: B018
    z.forward(clear_buffer=True)
    np.testing.assert_allclose(z.d, np.sum(2 * np.exp(a.d) + 1), rtol=1e-6)
    with pytest.raises(GraphError, match="mul"):
        h.d  # noqa: B018  (freed by clear_buffer)
    with grad.auto_forward():
        np.testing.assert_allclose(F.exp(a).d, np.exp(a.d), rtol=1e-6)
    assert Variable((2,)).d.shape == (2,)  # a leaf reads its (zero) data as before


_VALUE_READS = {
    "float": float, "int": int, "item": lambda v: v.item(), "bool": bool,
    "format": lambda v: f"{v:.4f}", "round": lambda v: round(v, 3),
    "tolist": lambda v: v.tolist(), "np.asarray": lambda v: np.asarray(v)[()],
    "data.numpy": lambda v: v.data.numpy()[()], "d": lambda v: v.d[()],
}


@pytest.mark.parametrize("read", sorted(_VALUE_READS))
def test_every_value_read_of_an_unrun_output_raises(backend: str, read: str) -> None:
    """Issue 42: ``float(loss)``, ``loss.item()``, ``f"{loss:.4f}"``, ``np.asarray``,
    ``loss.data.numpy()``, ``bool(loss < 1)`` read 0 before ``forward()``; every read
    now raises the ``GraphError`` ``.d`` raises, ``repr`` shows the shape, and after
    ``forward()`` each read gives numpy's (nothing was allocated as zeros)."""
    fn = _VALUE_READS[read]
    a = Variable.from_numpy_array(np.array([[0.5, 1, 1.5], [2, -1, 0.25]], np.float32))
    loss = F.sum(a * a) * 0.5  # exact in float32 whatever the summation order
    small = loss < 1  # a comparison node: bool() of it must not read False
    for v in (loss, small):
        with pytest.raises(GraphError, match=r"has not run.*forward\(\).*auto_forward"):
            fn(v)
        assert repr(v).startswith("Variable(shape=()")
    small.forward()
    want = np.float32(0.5) * np.sum(a.d * a.d)
    assert want > 1
    ref = {"d": lambda x: x[()], "data.numpy": lambda x: x[()],
           "round": lambda x: round(x[()], 3)}.get(read, fn)
    assert fn(loss) == ref(np.asarray(want))
    if read != "round":  # numpy's bool has no round()
        assert fn(small) == ref(np.asarray(want < 1))


def test_unrun_buffers_still_allocate_for_the_forward() -> None:
    """What writes an output before its graph runs keeps working: ``.d = v`` and
    ``unlinked()`` (nnabla's pattern: the unlinked leaf sees the later forward)."""
    a = _v((3,), seed=5)
    y = F.exp(a)
    u = y.unlinked()
    z = F.sum(u * 2.0)
    y.forward()
    z.forward()
    np.testing.assert_allclose(z.d, 2 * np.sum(np.exp(a.d)), rtol=1e-6)
    w = a + 1.0
    w.d = 7.0
    np.testing.assert_array_equal(w.d, 7.0)


def test_forward_clear_buffer_frees_unneeded_intermediates() -> None:
    x = _v((3, 3), need_grad=True)
    h1 = x + 1.0  # add retains nothing: freed once its consumer ran
    h2 = F.exp(h1)  # exp retains its output: kept for the backward
    y = F.sum(h2 * 2.0)
    y.forward(clear_buffer=True)
    assert h1._data is None
    y.backward(clear_buffer=True)
    np.testing.assert_allclose(x.g, 2 * np.exp(x.d + 1))


def test_need_grad_flags_and_blocking() -> None:
    x, w = _v((2, 3), seed=1), _v((3, 2), need_grad=True, seed=2)
    h = x @ w
    assert h.need_grad and not (x @ x.T).need_grad
    y = F.sum(h * h)
    y.forward()
    w.need_grad = False  # frozen after building: nothing flows
    y.backward()
    np.testing.assert_array_equal(w.g, 0)
    w.need_grad = True
    h.need_grad = False  # an intermediate can block propagation too
    y.backward()
    np.testing.assert_array_equal(w.g, 0)
    h.need_grad = True
    y.backward()
    np.testing.assert_allclose(w.g, x.d.T @ (2 * (x.d @ w.d)))


def test_shared_subexpression_accumulates() -> None:
    x = _v((4,), need_grad=True)
    h = F.tanh(x)
    y = F.sum(h * x + h)  # h feeds two functions: its gradient is written, then added
    y.forward()
    y.backward()
    t = np.tanh(x.d)
    np.testing.assert_allclose(x.g, (1 - t * t) * (x.d + 1) + t, **tol(np.float64))
    np.testing.assert_allclose(h.g, x.d + 1, **tol(np.float64))


def test_modes_are_thread_local() -> None:
    seen = {}

    def other():
        seen["auto"] = grad.is_auto_forward()

    with grad.auto_forward():
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert grad.is_auto_forward()
    assert seen["auto"] is False and not grad.is_auto_forward()


# -- PythonFunction ---------------------------------------------------------------------------
def _write(var_grad: nna.NdArray, g: nna.NdArray, accum: bool) -> None:
    if accum:
        var_grad += g
    else:
        var_grad.copy_from(g)


class Scale(PythonFunction):
    def __init__(self, s: float) -> None:
        super().__init__()
        self.s = s

    def setup_impl(self, inputs, outputs):
        outputs[0].reset_shape(inputs[0].shape, True)

    def forward_impl(self, inputs, outputs):
        outputs[0].data.copy_from(F.mul(inputs[0].data, self.s))  # on the current context

    def backward_impl(self, inputs, outputs, propagate_down, accum):
        if propagate_down[0]:
            _write(inputs[0].grad, outputs[0].grad * self.s, accum[0])


class GradReverse(PythonFunction):
    name = "GradReverse"

    def setup_impl(self, inputs, outputs):
        outputs[0].reset_shape(inputs[0].shape, True)

    def forward_impl(self, inputs, outputs):
        outputs[0].d = inputs[0].d  # through the host views

    def backward_impl(self, inputs, outputs, propagate_down, accum):
        if propagate_down[0]:
            g = -outputs[0].g
            inputs[0].g = inputs[0].g + g if accum[0] else g


class RandomBackward(PythonFunction):
    """a + 2b forward; backward writes fixed random arrays (ra, rb) times sum(gy)."""

    def __init__(self, shape):
        super().__init__()
        rng = np.random.default_rng(5)
        self.ra, self.rb = rng.standard_normal(shape), rng.standard_normal(shape)
        self.calls = []

    def min_outputs(self):
        return 1

    def setup_impl(self, inputs, outputs):
        assert inputs[0].shape == inputs[1].shape
        outputs[0].reset_shape(inputs[0].shape, True)

    def forward_impl(self, inputs, outputs):
        outputs[0].d = inputs[0].d + 2 * inputs[1].d

    def backward_impl(self, inputs, outputs, propagate_down, accum):
        self.calls.append((list(propagate_down), list(accum)))
        s = outputs[0].g.sum()
        for x, r, pd, acc in zip(inputs, (self.ra, self.rb), propagate_down, accum):
            if pd:
                x.g = (x.g if acc else 0) + r * s


@pytest.mark.parametrize("auto", [False, True])
def test_python_functions(backend: str, auto: bool) -> None:
    x, w = _v((2, 3), need_grad=True, seed=1), _v((2, 3), need_grad=True, seed=2)
    with grad.auto_forward(auto):
        y = F.sum(GradReverse()(Scale(3.0)(x)) * w)
    if not auto:
        y.forward()
    np.testing.assert_allclose(y.d, 3 * np.sum(x.d * w.d), **tol(np.float64))
    x.g = 1.0
    y.backward()
    np.testing.assert_allclose(x.g, 1 - 3 * w.d, **tol(np.float64))  # scaled, reversed
    np.testing.assert_allclose(w.g, 3 * x.d, **tol(np.float64))


@pytest.mark.parametrize("auto", [False, True])
def test_python_function_propagate_down_and_accum(backend: str, auto: bool) -> None:
    a, b = _v((3,), need_grad=True, seed=1), _v((3,), need_grad=False, seed=2)
    f = RandomBackward((3,))
    pre_a, pre_b = np.full(3, 0.5), np.full(3, -7.0)
    a.g, b.g = pre_a, pre_b
    with grad.auto_forward(auto):
        y = f(a, b)
    if not auto:
        y.forward()
    np.testing.assert_allclose(y.d, a.d + 2 * b.d)
    y.backward(np.full(3, 2.0))
    np.testing.assert_allclose(a.g, pre_a + 6 * f.ra)  # leaf: accumulated
    np.testing.assert_array_equal(b.g, pre_b)  # need_grad=False: untouched
    assert f.calls[-1][0] == [True, False]
    # An intermediate input, used twice: first written (accum=False) and then added.
    with grad.auto_forward(auto):
        m = a * 1.0
        y = f(m, m)
    if not auto:
        y.forward()
    a.grad.zero()
    m.g = np.full(3, np.nan)
    y.backward(np.ones(3))
    np.testing.assert_allclose(m.g, 3 * (f.ra + f.rb))
    np.testing.assert_allclose(a.g, 3 * (f.ra + f.rb))


def test_python_function_on_ndarrays(backend: str) -> None:
    x = nna.NdArray.from_numpy_array(np.arange(4.0))
    y = Scale(2.5)(x)
    assert isinstance(y, nna.NdArray)
    np.testing.assert_allclose(y.numpy(), np.arange(4.0) * 2.5)


# -- version counters ----------------------------------------------------------------------------
def test_modified_saved_input_raises_naming_the_function() -> None:
    x, w = _v((2, 2), seed=1), _v((2, 2), need_grad=True, seed=2)
    y = F.sum(F.mul(x, w))
    y.forward()
    print(x.d, w.d)  # reading .d is not a modification
    y.backward()
    x.data += 1.0  # in place, after the forward pass
    with pytest.raises(GraphError, match="mul.*modified in place"):
        y.backward()
    y.forward()  # a new forward pass saves the new data
    y.backward()


def test_modified_saved_output_raises_in_auto_forward() -> None:
    x = _v((3,), need_grad=True)
    with grad.auto_forward():
        h = F.exp(x)  # exp keeps its output for the backward
        y = F.sum(h)
    h.d = np.zeros(3)
    with pytest.raises(GraphError, match="exp"):
        y.backward()


def test_modifying_unretained_data_is_fine() -> None:
    x = _v((3,), need_grad=True)
    with grad.auto_forward():
        h = x + 5.0  # add retains nothing; relu retains its output, not h
        y = F.sum(F.relu(h))
    h.d = np.zeros(3)
    y.backward()
    np.testing.assert_allclose(x.g, 1.0)


# -- memory ----------------------------------------------------------------------------------------
def test_no_grad_loop_memory_is_flat() -> None:
    x = _v((8, 8), need_grad=True, seed=1)
    w = _v((8, 8), need_grad=True, seed=2)

    def run(n):
        with grad.no_grad():
            for _ in range(n):
                y = F.sum(F.relu(x @ w) * 0.5)
        return y

    run(200)
    gc.collect()
    tracemalloc.start()
    try:
        run(200)
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        y = run(2_000)  # grows by 32 bytes (as 10,000 did): 1.6 bytes a step allowed
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert y.parent is None and not y.need_grad
    assert after - before < 3_200, f"traced memory grew by {after - before} bytes"


def test_define_by_run_graph_is_freed_with_its_output() -> None:
    x = _v((4, 5), need_grad=True, seed=1)
    w = _v((5, 3), need_grad=True, seed=2)
    for _ in range(3):
        with grad.auto_forward():
            h = F.tanh(x @ w)
            y = F.mean(h * h)
        y.backward()
        refs = [weakref.ref(y.parent), weakref.ref(h), weakref.ref(h.parent)]
        del h, y
        assert all(r() is None for r in refs)  # by reference counting: no cycles
    assert x.g.shape == (4, 5)


def _live_ndarrays() -> tuple[int, int]:
    """How many NdArrays are alive, and their bytes."""
    gc.collect()
    arrs = [o for o in gc.get_objects() if type(o) is nna.NdArray]
    return len(arrs), sum(int(np.prod(a.shape)) * a.dtype.itemsize for a in arrs)


@pytest.mark.parametrize("retain", [False, True], ids=["freed", "retain_graph"])
def test_kept_define_by_run_losses_keep_memory_bounded(backend: str, retain: bool) -> None:
    """Keeping 500 losses of a small MLP after backward keeps only the losses: the
    graph's saved data and inputs are freed (as torch does); with ``retain_graph=True``
    every batch stays alive through its graph. (8 bytes and 2 arrays a loss, at 500
    losses as at 2,000.)"""
    rng = np.random.default_rng(0)
    w1 = Variable.from_numpy_array(rng.standard_normal((32, 16)).astype(np.float32), True)
    w2 = Variable.from_numpy_array(rng.standard_normal((16, 1)).astype(np.float32), True)
    batches = [rng.standard_normal((8, 32)).astype(np.float32) for _ in range(4)]
    losses, n = [], 500 if not retain else 200
    for i in range(n):
        if i == 20:
            count0, bytes0 = _live_ndarrays()
        with grad.auto_forward():
            y = F.relu(Variable.from_numpy_array(batches[i % 4]) @ w1) @ w2
            loss = F.mean(y * y)
        loss.backward(retain_graph=retain)
        losses.append(loss)
    count, nbytes = _live_ndarrays()
    per_loss = (nbytes - bytes0) / (n - 20)
    if retain:
        assert per_loss > 8 * 32 * 4  # each kept loss holds its batch at least
    else:
        assert per_loss <= 16 and count - count0 <= 2 * (n - 20), (count - count0, per_loss)
    want = np.mean(np.square(np.maximum(batches[(n - 1) % 4] @ w1.d, 0) @ w2.d))
    np.testing.assert_allclose(float(losses[-1].d), want, rtol=1e-4)


def test_second_backward_needs_retain_graph_on_define_by_run(backend: str) -> None:
    """A define-by-run graph's second backward raises naming ``retain_graph=True``; with
    it, gradients accumulate twice; a held intermediate keeps its value; a static graph
    keeps its saved data without asking."""
    x = _v((3, 4), need_grad=True, seed=1, dtype=np.float32)
    with grad.auto_forward():
        h = F.exp(x)
        y = F.sum(h * 2.0)
    y.backward()
    np.testing.assert_allclose(h.d, np.exp(x.d), rtol=1e-6)  # held by us: still there
    with pytest.raises(GraphError, match=r"freed by an earlier backward.*retain_graph=True"):
        y.backward()
    with pytest.raises(GraphError, match="retain_graph=True"):
        with grad.auto_forward():
            F.sum(h * 3.0).backward()  # through exp, freed
    with pytest.raises(GraphError, match="Graph: .*freed"):
        grad.Graph(y)
    for auto in (True, False):
        x.grad.zero()
        with grad.auto_forward(auto):
            y = F.sum(F.exp(x) * 2.0)
        if not auto:
            y.forward()
        y.backward(retain_graph=auto)
        y.backward()  # retained (or static)
        np.testing.assert_allclose(x.g, 4 * np.exp(x.d), rtol=1e-5)


def test_static_graph_is_freed_with_its_output() -> None:
    x = _v((3,), need_grad=True)
    y = F.sum(F.exp(x) * x)
    y.forward()
    y.backward()
    r = weakref.ref(y.parent)
    del y
    assert r() is None


# -- gradcheck and DOT -----------------------------------------------------------------------------
def test_gradcheck(backend: str) -> None:
    x = _v((2, 3), need_grad=True, seed=1)
    w = _v((3, 2), need_grad=True, seed=2)
    assert grad.gradcheck(lambda a, b: F.softmax(F.tanh(a @ b)), [x, w], eps=1e-5)

    class Wrong(Scale):
        def backward_impl(self, inputs, outputs, propagate_down, accum):
            _write(inputs[0].grad, outputs[0].grad * (self.s + 1.0), accum[0])

    with pytest.raises(AssertionError, match="element"):
        grad.gradcheck(lambda a: Wrong(2.0)(a), [x])


def test_to_dot() -> None:
    x, w = Variable((2, 3)), Variable((3, 4), need_grad=True)
    y = F.relu(x @ w)
    dot = grad.to_dot(y)
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    for word in ("matmul", "relu", "(2, 3)", "need_grad", "->"):
        assert word in dot


# -- static replay ------------------------------------------------------------------------------
def test_static_replay_tracks_new_data(backend: str) -> None:
    """A static graph replayed many times: the traced backward (and its cached work on
    constant inputs, e.g. the transpose of x in x @ W) follows every change of data."""
    rng = np.random.default_rng(0)
    x = Variable.from_numpy_array(rng.standard_normal((4, 5)).astype(np.float32))
    w = Variable.from_numpy_array(rng.standard_normal((5, 3)).astype(np.float32), True)
    b = Variable.from_numpy_array(np.zeros(3, np.float32), True)
    loss = F.mean_squared_error(F.relu(x @ w + b), nna.zeros((4, 3)))
    for it in range(4):
        if it == 2:
            x.d = rng.standard_normal((4, 5))  # new batch: cached work is redone
        loss.forward()
        w.grad.zero()
        b.grad.zero()
        loss.backward()
        h = x.d @ w.d + b.d
        gh = 2 * np.maximum(h, 0) / h.size * (h > 0)
        np.testing.assert_allclose(w.g, x.d.T @ gh, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b.g, gh.sum(0), rtol=1e-5, atol=1e-6)
        with grad.no_grad():
            w -= w.grad * 0.1  # an update between iterations
            assert isinstance(w, Variable)


def test_static_replay_with_custom_and_composite_steps(backend: str) -> None:
    """Graphs whose backward has steps that are not plain kernels (a PythonFunction, batch
    normalization) replay step by step, with the same results."""
    x = _v((4, 3), need_grad=True, seed=1)
    g, bt = _v((3,), need_grad=True, seed=2), _v((3,), need_grad=True, seed=3)
    rm, rv = nna.zeros((3,), np.float64), nna.ones((3,), np.float64)
    y = F.sum(Scale(2.0)(F.batch_normalization(x, g, bt, rm, rv, axes=(1,))) * x)
    grads = []
    for _ in range(2):
        y.forward()
        for v in (x, g, bt):
            v.grad.zero()
        y.backward()
        grads.append([v.g.copy() for v in (x, g, bt)])
    with grad.auto_forward():
        y2 = F.sum(Scale(2.0)(F.batch_normalization(x, g, bt, rm, rv, axes=(1,))) * x)
    for v in (x, g, bt):
        v.grad.zero()
    y2.backward()
    ref = _bn_scale_reference_grads(*(v.d for v in (x, g, bt)))
    for a, b, c, r in zip(grads[0], grads[1], (x.g, g.g, bt.g), ref):
        np.testing.assert_allclose(a, r, rtol=1e-6, atol=1e-7)  # static, against numpy
        np.testing.assert_allclose(b, a, **tol(np.float64))      # the replay repeats it
        np.testing.assert_allclose(c, r, rtol=1e-6, atol=1e-7)  # define-by-run


def _bn_scale_reference_grads(x, g, bt, eps=1e-5, h=1e-6):
    """Central differences of sum(2 * batchnorm(x) * x) in numpy float64 (batch
    statistics over axis 0): a reference independent of nnarray's backward rules."""
    def f(x, g, bt):
        mu, var = x.mean(0), x.var(0)
        return float(np.sum(2.0 * ((x - mu) / np.sqrt(var + eps) * g + bt) * x))

    args = [a.astype(np.float64).copy() for a in (x, g, bt)]
    out = []
    for i, a in enumerate(args):
        grad_a = np.zeros_like(a)
        for j in range(a.size):
            hi = [b.copy() for b in args]
            lo = [b.copy() for b in args]
            hi[i].reshape(-1)[j] += h
            lo[i].reshape(-1)[j] -= h
            grad_a.reshape(-1)[j] = (f(*hi) - f(*lo)) / (2 * h)
        out.append(grad_a)
    return out


def test_define_by_run_binary_ops(backend: str) -> None:
    """Two-operand ops on Variables under ``auto_forward`` (operators, ``F``, a Python
    scalar on either side) record nodes of the ranks and ``need_grad`` the graph
    implies, and gradients flow through them."""
    rng = np.random.default_rng(1)
    an, bn = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    a = Variable.from_numpy_array(an, need_grad=True)
    b = Variable.from_numpy_array(bn, need_grad=True)
    c = Variable.from_numpy_array(bn)  # no gradient
    with grad.auto_forward():
        for _ in range(2):  # the second round reads the meta cache the first filled
            y = a * b
            z = F.mul(y, b)
            w = a - c
            k = c - c
            s = 2.0 - z * 3.0
    assert z.parent.rank == 1 and y.parent.rank == 0 and z.name == z.parent.label
    assert w.need_grad and not k.need_grad and k.parent is None
    assert [r() for r in z.parent.outputs] == [z]
    np.testing.assert_allclose(z.d, an * bn * bn, **tol(np.float64))
    np.testing.assert_allclose(s.d, 2.0 - 3.0 * an * bn * bn, **tol(np.float64))
    z.backward(np.ones((2, 3)))
    np.testing.assert_allclose(a.g, bn * bn, **tol(np.float64))
    np.testing.assert_allclose(b.g, 2 * an * bn, **tol(np.float64))


def test_generated_backward_reuses_dead_temporaries(backend: str, unfused) -> None:
    """The generated backward code writes an elementwise step's result into an operand
    no later step reads (tanh's ``1 - y*y``), and the gradients stay right, replay after
    replay, with the inputs changed in between."""
    from nnarray import grad
    rng = np.random.default_rng(3)
    xn = rng.standard_normal((4, 5))
    x = Variable.from_numpy_array(xn, need_grad=True)
    y = F.sum(F.tanh(F.tanh(x) * 2.0))
    for it in range(3):
        xn = rng.standard_normal((4, 5))
        x.d = xn
        x.grad.zero()
        y.forward()
        y.backward()
        t1 = np.tanh(xn)
        t2 = np.tanh(2 * t1)
        np.testing.assert_allclose(x.g, (1 - t2 ** 2) * 2 * (1 - t1 ** 2), **tol(np.float64))
    gen = grad.schedule_of(y, backward=True).program
    assert gen is not None and "out=t" in gen.source


def test_static_forward_is_one_generated_program(backend: str) -> None:
    """A static graph of plain kernels runs its forward as one generated function: every
    intermediate's data is current after each run, and what backward retains is still
    checked for in-place changes."""
    from nnarray import grad
    rng = np.random.default_rng(4)
    x = Variable.from_numpy_array(rng.standard_normal((3, 4)))
    w = Variable.from_numpy_array(rng.standard_normal((4, 2)), need_grad=True)
    h = F.tanh(x @ w + 1.0)
    y = F.sum(h * h)
    for _ in range(2):
        x.d = xn = rng.standard_normal((3, 4))
        y.forward()
        hn = np.tanh(xn @ w.d + 1.0)
        np.testing.assert_allclose(h.d, hn, **tol(np.float64))
        np.testing.assert_allclose(y.d, (hn * hn).sum(), **tol(np.float64))
    assert grad.schedule_of(y).program is not None
    w.grad.zero()
    y.backward()
    np.testing.assert_allclose(w.g, xn.T @ (2 * hn * (1 - hn * hn)), **tol(np.float64))
    y.forward()
    h.data.fill(0.5)  # tanh's retained output, changed after the forward pass
    with pytest.raises(GraphError, match="modified in place"):
        y.backward()


def test_define_by_run_loop_reuses_traced_backward(backend: str) -> None:
    """The same graph built every iteration (new data, new leaves for inputs, the same
    parameters) is traced once and replayed; other graphs interleaved stay correct."""
    rng = np.random.default_rng(0)
    w = Variable.from_numpy_array(rng.standard_normal((5, 3)), need_grad=True)
    b = Variable.from_numpy_array(rng.standard_normal((3,)), need_grad=True)
    for it in range(6):
        n = 4 if it % 3 else 2  # a second graph signature, interleaved
        xn = rng.standard_normal((n, 5))
        x = Variable.from_numpy_array(xn)
        w.grad.zero()
        b.grad.zero()
        with grad.auto_forward():
            h = F.tanh(x @ w + b)
            loss = F.mean(h * h)
        loss.backward()
        t = np.tanh(xn @ w.d + b.d)
        gh = 2 * t / t.size * (1 - t * t)
        np.testing.assert_allclose(w.g, xn.T @ gh, **tol(np.float64))
        np.testing.assert_allclose(b.g, gh.sum(0), **tol(np.float64))
        np.testing.assert_allclose(h.g, 2 * t / t.size, **tol(np.float64))
        with grad.no_grad():
            w -= w.grad * 0.5


def test_backward_default_seeds_ones_for_any_shape():
    """nnabla's rule (the seeds depend on it): ``backward()`` seeds ones whatever the
    output's shape; with no need_grad leaf behind the output it runs nothing."""
    x = grad.Variable.from_numpy_array(np.ones((2, 3), np.float32), need_grad=True)
    c = grad.Variable.from_numpy_array(np.ones((2, 3), np.float32))
    with grad.auto_forward():
        y = x * 2.0
        s = F.sum(y)
        k = F.sum(c * 2.0)
    k.backward()  # no need_grad leaf behind k: nothing runs, as nnabla (torch raises)
    c.backward(1)
    assert not c.g.any() and not x.g.any()  # nothing ran
    y.backward(retain_graph=True)  # implied ones on a (2, 3) output, as nnabla
    np.testing.assert_array_equal(x.g, np.full((2, 3), 2.0))
    s.backward()
    np.testing.assert_array_equal(x.g, np.full((2, 3), 4.0))
    with grad.auto_forward():
        z = x * 3.0
    z.g = np.arange(6, dtype=np.float32).reshape(2, 3)
    z.backward(None)  # None: the output's own .g
    np.testing.assert_array_equal(x.g, 4.0 + 3.0 * np.arange(6).reshape(2, 3))
