"""The default float dtype (``set_default_dtype``, ``NNARRAY_DEFAULT_FLOAT``), the standard's
default device (``set_default_device``, ``NNARRAY_DEFAULT_DEVICE``: where new arrays are
made, ops following their inputs) beside nnabla's default context, and the inspection
object per revision of the standard (issue 43 items 3, 5, 6)."""

from __future__ import annotations

import contextvars
import threading

import forked
import numpy as np
import pytest
from helpers import child_env

import nnarray as nna


@pytest.fixture
def float64_default():
    nna.set_default_dtype(nna.float64)
    yield
    nna.set_default_dtype(nna.float32)


@pytest.fixture
def default_device():
    yield nna.set_default_device
    nna.set_default_device(None)


def unscoped(fn, *args):
    """``fn(*args)`` outside the ``backend`` fixture's scope, as in a fresh thread."""
    return contextvars.Context().run(fn, *args)


CREATE = {
    "zeros": lambda: nna.zeros(3), "ones": lambda: nna.ones(3), "empty": lambda: nna.empty(3),
    "full": lambda: nna.full(3, 0.5), "asarray(float)": lambda: nna.asarray(1.5),
    "asarray(list)": lambda: nna.asarray([1.5, 2.0]), "arange": lambda: nna.arange(0.5, 3),
    "linspace": lambda: nna.linspace(0, 1, 5), "eye": lambda: nna.eye(3),
    "NdArray": lambda: nna.NdArray((2,)), "array(list)": lambda: nna.array([1.5]),
    "fftfreq": lambda: nna.fft.fftfreq(4), "x * 0.5 scalars": lambda: nna.asarray(2.0) * 0.5,
}


@pytest.mark.parametrize("make", list(CREATE))
def test_set_default_dtype_float64_makes_float64(backend, float64_default, make):
    a = CREATE[make]()
    assert a.dtype == np.float64
    assert nna.asarray(1j).dtype == np.complex128
    assert nna.get_default_dtype() == np.float64
    info = nna.__array_namespace_info__().default_dtypes()
    assert info["real floating"] == np.float64 and info["complex floating"] == np.complex128
    np.testing.assert_array_equal(nna.asarray([0.1, 0.2]).numpy(), [0.1, 0.2])  # not rounded


def test_the_default_dtype_is_float32_and_other_dtypes_are_refused():
    assert nna.zeros(2).dtype == np.float32 and nna.get_default_dtype() == np.float32
    for bad in (nna.int32, nna.complex64, "float16"):
        with pytest.raises(nna.DTypeError, match="set_default_dtype.*float32 or float64"):
            nna.set_default_dtype(bad)
    assert nna.get_default_dtype() == np.float32


def test_set_default_dtype_is_seen_whole_by_every_thread():
    """Threads switching the default while others read it never see a float64 real
    default beside a complex64 one (the pair is replaced in one assignment)."""
    mixed = []
    stop = threading.Event()

    def read():
        info = nna.__array_namespace_info__()
        while not stop.is_set():
            d = info.default_dtypes()
            if (d["real floating"] == np.float64) != (d["complex floating"] == np.complex128):
                mixed.append(d)

    def switch():
        for i in range(2000):
            nna.set_default_dtype(nna.float64 if i % 2 else nna.float32)

    readers = [threading.Thread(target=read) for _ in range(2)]
    writers = [threading.Thread(target=switch) for _ in range(2)]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    nna.set_default_dtype(nna.float32)
    assert not mixed


def _child(code: str, **env: str) -> str:
    r = forked.run(code, env=child_env(**env))
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_nnarray_default_float_environment():
    code = ("import nnarray as nna; print(nna.zeros(1).dtype, nna.asarray(0.5).dtype, "
            "nna.__array_namespace_info__().default_dtypes()['real floating'])")
    assert _child(code, NNARRAY_DEFAULT_FLOAT="float64") == "float64 float64 float64"
    r = forked.run("import nnarray", env=child_env(NNARRAY_DEFAULT_FLOAT="int8"))
    assert r.returncode != 0 and "NNARRAY_DEFAULT_FLOAT='int8'" in r.stderr


# -- the default device ----------------------------------------------------------------
def test_set_default_device_places_new_arrays_and_ops_follow_their_inputs(
        backend, default_device):
    key = f"{backend}:0"

    def run():
        default_device(backend)
        made = {k: CREATE[k]() for k in ("zeros", "asarray(list)", "arange", "eye")}
        h = nna.asarray(np.ones(3, np.float32), device="numpy")
        nna.reset_transfer_stats()
        y = h * 2 + 1  # an op on host inputs stays on the host
        return made, y, nna.transfer_stats()["count"], nna.__array_namespace_info__()

    made, y, n, info = unscoped(run)
    for k, a in made.items():
        assert a.device.key == key, k
    assert y.device.key == "numpy:0" and n == 0
    np.testing.assert_array_equal(y.numpy(), [3, 3, 3])
    assert str(info.default_device()) == key
    with nna.context_scope("numpy"):  # a scope still decides
        assert nna.zeros(2).device.key == "numpy:0"


def test_the_default_context_still_decides_where_ops_run(backend, default_device):
    """nnabla's rule stays: under ``set_default_context`` an op on host arrays runs on the
    context's device (the host array uploaded, counted)."""
    if backend == "numpy":
        pytest.skip("needs a device besides the host")
    code = ("import numpy as np, nnarray as nna\n"
            f"nna.set_default_context('{backend}')\n"
            "h = nna.asarray(np.ones(3, np.float32), device='numpy')\n"
            "print((h * 2).device.key)\n")
    assert _child(code) == f"{backend}:0"


def test_nnarray_default_device_environment(backend):
    code = ("import numpy as np, nnarray as nna\n"
            "h = nna.asarray(np.ones(3, np.float32), device='numpy')\n"
            "print(nna.zeros(2).device.key, nna.asarray([1.0]).device.key, (h + 1).device.key)")
    assert _child(code, NNARRAY_DEFAULT_DEVICE=backend) == \
        f"{backend}:0 {backend}:0 numpy:0"


def test_set_default_device_validates(default_device):
    with pytest.raises(nna.BackendError):
        default_device("nosuchbackend")
    assert nna.zeros(1).device.key == nna.get_current_context().key


# -- the inspection object per revision --------------------------------------------------
def test_capabilities_follow_the_api_version():
    """'max dimensions' was added in 2024.12; the namespace is 2023.12 by default."""
    assert nna.__array_api_version__ == "2023.12"
    assert set(nna.__array_namespace_info__().capabilities()) == {
        "boolean indexing", "data-dependent shapes"}
    caps = nna.__array_namespace_info__(api_version="2024.12").capabilities()
    assert caps["max dimensions"] is None and caps["boolean indexing"] is True
