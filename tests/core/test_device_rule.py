"""The one rule for where work runs (API.md §7, docs/api.md *Devices*): an array's device
is where it was made or last written; reads never change it; with no context chosen an op
runs on its inputs' device; inside a scope on the scope's; creation functions use the
default device; a graph's backward runs where its forward ran."""

from __future__ import annotations

import contextvars
import os

import forked
import numpy as np
import pytest
from helpers import child_env

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, nn, solvers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def unscoped(fn, *args):
    """``fn(*args)`` with no context chosen: outside the ``backend`` fixture's scope (and
    outside ``strict_transfers``), as in a fresh thread."""
    return contextvars.Context().run(fn, *args)


def _second_device(backend: str) -> str | None:
    for name, devs in nna.backends.available():
        if name == backend and len(devs) > 1:
            return f"{backend}:1"
    return None


READS = {
    "np.asarray": np.asarray,
    "repr": repr,
    "print": str,
    "numpy()": lambda x: x.numpy(),
    "float()": lambda x: float(x[0, 0]),
    "item()": lambda x: x[1, 2].item(),
    "to_device(numpy)": lambda x: x.to_device("numpy"),
    # numpy imports host capsules only: device="cpu" asks the producer for one
    "np.from_dlpack": lambda x: np.from_dlpack(x, device="cpu"),
    "get_data(r, numpy)": lambda x: x.get_data("r", "numpy"),
}


@pytest.mark.parametrize("read", list(READS))
def test_a_read_never_moves_later_work(backend, read):
    xn = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = nna.asarray(xn)  # made in the backend's scope: its device
    key = f"{backend}:0"

    def after_read():
        READS[read](x)
        nna.reset_transfer_stats()
        y, s = x * 2, nna.sum(x)
        return y, s, nna.transfer_stats()["count"]

    y, s, n = unscoped(after_read)
    assert x.device.key == y.device.key == s.device.key == key
    assert x.head == key and n == 0
    assert x.__dlpack_device__()[1] == 0
    np.testing.assert_array_equal(y.numpy(), xn * 2)
    assert s.item() == xn.sum()


@pytest.mark.allow_fallback("svd runs on the host on OpenCL: the read under test")
def test_a_host_fallback_never_moves_later_work(backend):
    x = nna.asarray(np.eye(3, dtype=np.float32) * 2)
    nna.linalg.svdvals(x)
    assert unscoped(lambda: (x + 1).device.key) == x.device.key == f"{backend}:0"


def test_dlpack_device_names_the_array_device(backend):
    x = nna.asarray([1.0, 2.0])
    kind = {"numpy": 1, "cuda": 2, "opencl": 4}[backend]
    assert x.__dlpack_device__() == (kind, 0)
    got = np.from_dlpack(x) if backend != "cuda" else None
    if got is not None:
        np.testing.assert_array_equal(got, [1.0, 2.0])
    assert x.__dlpack_device__() == (kind, 0) and x.head == f"{backend}:0"


def test_no_scope_runs_on_the_inputs_device_and_scalars_never_pull_back(backend):
    x = nna.asarray(np.ones((2, 3), np.float32))
    h0 = nna.asarray(np.float32(3), device="numpy")  # a 0-d host array
    hz = nna.zeros((2, 3), device="numpy")  # a lazy host fill

    def ops():
        nna.reset_transfer_stats()
        out = {"scalar": x * 2.0, "0-d host": x * h0, "lazy host": x + hz}
        return out, nna.transfer_stats()["count"]

    out, n = unscoped(ops)
    for name, y in out.items():
        assert y.device.key == f"{backend}:0", name
    assert n == (0 if backend == "numpy" else 1)  # the 0-d array's value, moved once
    np.testing.assert_array_equal(out["0-d host"].numpy(), np.full((2, 3), 3))


def test_a_host_array_and_a_device_array_run_on_the_device(backend):
    """The non-host device wins (API.md §7; issue 42 item 3): the host operand is uploaded
    once, counted, and stays on the host; ``strict_transfers()`` refuses the upload."""
    x = nna.asarray(np.ones((2, 3), np.float32))
    h = nna.asarray(np.full((2, 3), 2, np.float32), device="numpy")

    def op():
        nna.reset_transfer_stats()
        y = x + h
        z = x * h  # h's device copy is current now: no second upload
        return y, z, nna.transfer_stats()["count"]

    y, z, n = unscoped(op)
    assert y.device.key == z.device.key == x.device.key == f"{backend}:0"
    assert h.device.key == "numpy:0"
    assert n == (0 if backend == "numpy" else 1)  # h uploaded once, counted
    np.testing.assert_array_equal(y.numpy(), np.full((2, 3), 3))
    np.testing.assert_array_equal(z.numpy(), np.full((2, 3), 2))
    if backend != "numpy":
        h2 = nna.asarray(np.ones((2, 3), np.float32), device="numpy")

        def strict():
            with nna.strict_transfers():
                return x + h2
        with pytest.raises(nna.TransferError):
            unscoped(strict)


def test_a_model_on_a_device_fed_host_batches_runs_there(backend):
    """``model.to(dev)`` fed host batches: forward, backward and the gradients stay on the
    model's device; each batch is uploaded once (issue 42 item 3)."""
    nna.seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model.to(f"{backend}:0")
    xb = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    tb = np.random.default_rng(1).standard_normal((5, 2)).astype(np.float32)

    def step():
        x = nna.asarray(xb, device="numpy")
        t = nna.asarray(tb, device="numpy")
        nna.reset_transfer_stats()
        nna.reset_kernel_stats()
        with grad.auto_forward():
            loss = F.mean_squared_error(model(x), t)
        loss.backward()
        return loss, nna.transfer_stats()["count"], nna.kernel_stats()["by_device"]

    loss, n, by_dev = unscoped(step)
    key = f"{backend}:0"
    assert loss.data.head == key
    assert set(by_dev) == {key}, by_dev
    for name, p in model.parameters().items():
        assert p.data.head == p.grad.head == key, name
    assert n == (0 if backend == "numpy" else 2)  # the batch and the targets, once each


def test_two_non_host_devices_raise_naming_both(backend):
    other = _second_device(backend)
    if backend == "numpy" or other is None:
        pytest.skip(f"needs two {backend} devices")
    a = nna.asarray(np.ones(3, np.float32))
    b = nna.asarray(np.ones(3, np.float32), device=other)
    with pytest.raises(nna.DeviceMismatchError, match=rf"add.*{backend}:0.*{other}"):
        unscoped(lambda: a + b)
    with pytest.raises(nna.DeviceMismatchError, match=f"{other}"):
        unscoped(lambda: nna.stack([a, b]))
    with nna.context_scope(other):  # a scope decides: a moves there, counted
        nna.reset_transfer_stats()
        y = a + b
    assert y.device.key == other and nna.transfer_stats()["count"] >= 1


def test_a_scope_runs_there_moving_inputs_with_counted_transfers(backend):
    x = nna.asarray(np.ones((2, 3), np.float32))
    nna.reset_transfer_stats()
    with nna.context_scope("numpy"):
        y = x * 2
    assert y.device.key == "numpy:0" and x.device.key == f"{backend}:0"
    assert nna.transfer_stats()["count"] == (0 if backend == "numpy" else 1)


def test_in_place_writes_stay_on_the_target_device(backend):
    x = nna.asarray(np.ones((2, 3), np.float32))
    h = nna.asarray(np.ones((2, 3), np.float32), device="numpy")

    def write():
        nonlocal x
        x += h
        x[0, 0] = 5.0
    unscoped(write)
    assert x.head == f"{backend}:0"
    np.testing.assert_array_equal(x.numpy(), [[5, 2, 2], [2, 2, 2]])


# -- creation functions --------------------------------------------------------------------
CREATE = {
    "asarray(list)": (lambda: nna.asarray([[1.0, 2.0], [3.0, 4.0]]),
                      np.array([[1, 2], [3, 4]], np.float32), 1),
    "asarray(float)": (lambda: nna.asarray(2.5), np.float32(2.5), 1),
    "asarray(ndarray)": (lambda: nna.asarray(np.arange(4)), np.arange(4), 1),
    "arange(int)": (lambda: nna.arange(2, 11, 3), np.arange(2, 11, 3), 0),
    "arange(float)": (lambda: nna.arange(0.5, 3, 0.25),
                      np.arange(0.5, 3, 0.25).astype(np.float32), 0),
    "linspace": (lambda: nna.linspace(-1, 2, 7), np.linspace(-1, 2, 7).astype(np.float32), 0),
    "linspace(endpoint=False)": (lambda: nna.linspace(0, 1, 5, endpoint=False),
                                 np.linspace(0, 1, 5, endpoint=False).astype(np.float32), 0),
    "eye": (lambda: nna.eye(3, 4, k=1, dtype=nna.int32), np.eye(3, 4, k=1, dtype=np.int32), 0),
    "eye(k<0)": (lambda: nna.eye(4, k=-2), np.eye(4, k=-2, dtype=np.float32), 0),
    "zeros": (lambda: nna.zeros((2, 2)), np.zeros((2, 2), np.float32), 0),
    "ones": (lambda: nna.ones(3, dtype=nna.int64), np.ones(3, np.int64), 0),
    "full": (lambda: nna.full((2,), 7.0), np.full(2, 7, np.float32), 0),
    "empty": (lambda: nna.empty((2,)), None, 0),
}


@pytest.mark.parametrize("name", list(CREATE))
def test_creation_functions_use_the_scope_device(backend, name):
    make, want, transfers = CREATE[name]
    nna.reset_transfer_stats()
    a = make()
    n = nna.transfer_stats()["count"]
    assert a.device.key == f"{backend}:0"
    assert n == (0 if backend == "numpy" else transfers)  # arange/linspace/eye: made there
    assert unscoped(lambda: a.device.key) == f"{backend}:0"  # it stays reported there
    if name in ("zeros", "ones", "full", "empty"):
        assert a.devices == [] and a.lazy_fill is not None  # still lazy: nothing allocated
    if want is not None:
        np.testing.assert_array_equal(a.numpy(), want)
        assert a.dtype == want.dtype


def test_like_functions_and_device_override(backend):
    x = nna.asarray(np.ones((2, 3), np.float32), device="numpy")
    for f in (nna.zeros_like, nna.ones_like, nna.empty_like):
        assert f(x).device.key == "numpy:0"  # x's device, as the standard says
    assert nna.full_like(x, 2.0, device=backend).device.key == f"{backend}:0"
    for a in (nna.arange(3, device="numpy"), nna.linspace(0, 1, 3, device="numpy"),
              nna.eye(2, device="numpy"), nna.asarray([1.0], device="numpy"),
              nna.zeros(2, device="numpy")):
        assert a.device.key == "numpy:0"


def test_default_device_from_the_environment_and_set_default_context(backend):
    """``NNARRAY_CONTEXT`` and ``set_default_context`` (process-wide: a subprocess)."""
    code = (
        "import numpy as np, nnarray as nna\n"
        "made = [nna.asarray([1.0]), nna.asarray(2.0), nna.asarray(np.ones(2)), nna.arange(3),"
        " nna.linspace(0, 1, 3), nna.eye(2), nna.zeros(2), nna.ones_like(nna.zeros(2))]\n"
        "print(sorted({a.device.key for a in made}))\n"
        "nna.set_default_context('numpy')\n"
        "print(sorted({a.device.key for a in (nna.zeros(2), nna.arange(2))}))\n"
        f"nna.set_default_context('{backend}')\n"
        "print(sorted({a.device.key for a in (nna.zeros(2), nna.arange(2), nna.eye(1))}))\n")
    env = child_env(NNARRAY_CONTEXT=backend)
    out = forked.run(code, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("[")]
    assert lines == [f"['{backend}:0']", "['numpy:0']", f"['{backend}:0']"]


# -- backward where the forward ran ------------------------------------------------------
def _model_and_data(backend):
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Linear(4, 8), F.relu, nn.Linear(8, 2))
    opt = solvers.SGD(lr=0.1)
    opt.set_parameters(model.parameters())
    x = grad.Variable.from_numpy_array(rng.random((5, 4), dtype=np.float32))
    t = grad.Variable.from_numpy_array(rng.random((5, 2), dtype=np.float32))
    for v in (x, t):
        v.data.get_data("rw", backend)  # explicit: the batch lives on the device
    return model, opt, x, t


def test_backward_and_update_outside_the_scope_stay_on_the_device(backend):
    model, opt, x, t = _model_and_data(backend)

    def backward_and_update(loss):
        with nna.strict_transfers():
            loss.backward()
            opt.update()

    nna.reset_transfer_stats()
    for _ in range(3):
        with nna.strict_transfers(), grad.auto_forward():
            opt.zero_grad()
            loss = F.mean_squared_error(model(x), t)
        unscoped(backward_and_update, loss)
    assert nna.transfer_stats()["count"] == 0
    with grad.auto_forward():
        loss = F.mean_squared_error(model(x), t)
    assert np.isfinite(loss.d)  # a host read (explicit) that never moves the loss
    assert loss.data.head == f"{backend}:0"
    unscoped(backward_and_update, loss)
    for name, p in model.parameters().items():
        assert p.data.head == p.grad.head == f"{backend}:0", name


def test_backward_under_another_scope_runs_where_the_forward_ran(backend):
    model, opt, x, t = _model_and_data(backend)
    with grad.auto_forward():
        loss = F.mean_squared_error(model(x), t)
    other = "numpy" if backend != "numpy" else backend
    nna.reset_transfer_stats()
    with nna.context_scope(other), nna.strict_transfers():
        loss.backward()
    assert nna.transfer_stats()["count"] == 0
    for p in model.parameters().values():
        assert p.grad.head == f"{backend}:0"


def test_static_graph_backward_outside_the_scope(backend):
    model, _, x, t = _model_and_data(backend)
    loss = F.mean_squared_error(model(x), t)  # recorded, not run
    loss.forward()
    with nna.strict_transfers():
        unscoped(loss.backward)
    for p in model.parameters().values():
        assert p.grad.head == f"{backend}:0"
