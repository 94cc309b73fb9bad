"""The OpenCL backend: discovery, availability reasons, transfers, the on-disk program
cache, dtype support and kernels' corner cases (broadcasting, strides, chunked
reductions, random streams). Skips with the reason where OpenCL is unavailable."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from conftest import check_no_fallback, needs
from helpers import CHILD_LIMIT, rotation

import nnarray as nna
import nnarray.functions as F
from nnarray.backends import opencl

REASON = opencl.why_unavailable()


@pytest.fixture(autouse=True)
def _opencl():
    needs("opencl")  # skips with the reason, or fails where NNARRAY_REQUIRE_BACKENDS says


def _run(code: str, **env: str) -> str:
    """Run ``code`` in a fresh interpreter with extra environment; return its stdout."""
    e = dict(os.environ, **env)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e,
                       timeout=CHILD_LIMIT)
    assert r.returncode == 0, r.stderr
    return r.stdout


def on_cl(*arrays):
    return [nna.NdArray.from_numpy_array(np.asarray(a)) for a in arrays]


@pytest.fixture
def cl(request):
    with nna.context_scope("opencl"):
        yield nna.backends.get_device("opencl", 0)
    check_no_fallback(request.node)


# -- discovery and availability -----------------------------------------------------------
def test_devices_are_listed_and_described():
    assert opencl.device_count() >= 1
    names = dict(nna.backends.available())["opencl"]
    assert names[0].startswith("opencl:0 (")
    dev = nna.backends.get_device("opencl", 0)
    assert dev.cl_device.name.strip() in dev.describe()


def test_why_unavailable_is_cached_and_none_here():
    assert opencl.why_unavailable() is None
    assert opencl.why_unavailable() is opencl.why_unavailable()


def test_device_beyond_count_is_unavailable():
    with pytest.raises(nna.BackendUnavailableError, match="no such device"):
        with nna.context_scope(f"opencl:{opencl.device_count()}"):
            pass


def test_reason_without_pyopencl():
    code = ("import sys; sys.modules['pyopencl'] = None\n"
            "import nnarray as nna\n"
            "print(nna.backends.why_unavailable('opencl'))\n"
            "print('opencl' in dict(nna.backends.available()))")
    assert _run(code).split("\n")[:2] == ["pyopencl not installed", "False"]


def test_device_selection_by_name_and_no_match(monkeypatch):
    """``NNARRAY_OPENCL_DEVICES`` as discovery reads it (``Discovery``: what a new
    process's ``opencl.why_unavailable()`` and ``device_count()`` report)."""
    from nnarray.backends.opencl import device as cldev
    name = nna.backends.get_device("opencl", 0).cl_device.name.strip()
    monkeypatch.setenv("NNARRAY_OPENCL_DEVICES", name[:6].lower())
    found = cldev.Discovery()
    assert found.reason is None and len(found.devices) >= 1
    monkeypatch.setenv("NNARRAY_OPENCL_DEVICES", "no-such-device-xyz")
    found = cldev.Discovery()
    assert found.reason.startswith("NNARRAY_OPENCL_DEVICES=no-such-device-xyz matches none of:")
    assert found.devices == []


def test_unusable_devices_are_skipped_with_a_reason(monkeypatch):
    """A device failing the probe is left out and listed with its reason (forced here:
    a machine with only good devices would check nothing)."""
    from nnarray.backends.opencl import device as cldev
    real = cldev._probe
    monkeypatch.setattr(cldev, "_probe", lambda d: ("probe kernel computed 0.0 instead of "
                                                    "2.0", None) if d == bad else real(d))
    bad = opencl._found().devices[-1][0]
    found = cldev.Discovery()
    assert bad not in [d for d, _ in found.devices]
    assert [s.split(": ", 1)[1] for s in found.skipped] == [
        "probe kernel computed 0.0 instead of 2.0"]
    assert bad.name.strip() in found.skipped[0]
    if len(found.devices) == 0:
        assert found.reason.startswith("no usable OpenCL device: ")
    else:
        assert found.reason is None
    for line in opencl.skipped_devices():  # this machine's real ones
        assert ": " in line  # "platform / device: reason"


# -- transfers ------------------------------------------------------------------------------
def test_transfers_are_counted_by_route(cl):
    a = nna.NdArray.from_numpy_array(np.arange(6, dtype=np.float32))
    nna.reset_transfer_stats()
    b = a * 2  # host -> opencl once
    assert nna.transfer_stats()["by_route"] == {("numpy:0", "opencl:0"): (1, 24)}
    np.testing.assert_array_equal(b.get_data("r", "numpy"), np.arange(6) * 2)  # one copy
    s = nna.transfer_stats()
    assert s["count"] == 2 and s["by_route"][("opencl:0", "numpy:0")] == (1, 24)
    c = b + a  # both current on the device now: nothing moves
    assert nna.transfer_stats()["count"] == 2
    assert c.head == "opencl:0"


def test_strict_transfers_refuse_implicit_copies(cl):
    a = nna.NdArray.from_numpy_array(np.ones(3, np.float32))
    with nna.strict_transfers(), pytest.raises(nna.TransferError):
        F.add(a, a)


def test_lazy_fill_materializes_on_device_without_transfer(cl):
    a = nna.NdArray((2, 3), np.int64)
    a.fill(2**62 + 1)
    nna.reset_transfer_stats()
    b = a + 0
    assert nna.transfer_stats()["count"] == 0
    assert b.data[1, 2] == 2**62 + 1


# -- the program cache ----------------------------------------------------------------------
_CACHED_RUN = ("import numpy as np, nnarray as nna, nnarray.functions as F, json\n"
               "from nnarray.backends import opencl\n"
               "with nna.context_scope('opencl'):\n"
               "    x = nna.NdArray.from_numpy_array(np.arange(12, dtype=np.float32)"
               ".reshape(4, 3))\n"
               "    y = F.sum(F.exp(x) * 0.5 + x[:, ::-2].reshape(8, 1)[:4], axis=1)\n"
               "    v = y.data.tolist()\n"
               "print(json.dumps([opencl.build_stats(), v]))")


@pytest.fixture(scope="module")
def first_run(tmp_path_factory) -> tuple[Any, dict, list]:
    """A first process's program cache (its directory, to copy), build stats and result:
    one child for the tests below, which each start from a copy."""
    cache = tmp_path_factory.mktemp("first_run")
    first, want = json.loads(_run(_CACHED_RUN, NNARRAY_OPENCL_CACHE_DIR=str(cache)))
    return cache, first, want


def _copy(src, dst) -> None:
    shutil.copytree(src, dst, dirs_exist_ok=True)


def test_second_process_loads_programs_instead_of_compiling(tmp_path, first_run):
    cache, first, v1 = first_run
    _copy(cache, tmp_path)
    env = {"NNARRAY_OPENCL_CACHE_DIR": str(tmp_path)}
    second, v2 = json.loads(_run(_CACHED_RUN, **env))
    assert first["compiled"] >= 4 and first["loaded"] == 0
    assert second == {"compiled": 0, "loaded": first["compiled"]}
    assert v1 == v2


def _damage(path, how: str, rng) -> None:
    data = bytearray(path.read_bytes())
    if how == "half":
        data = data[:len(data) // 2]
    else:  # eight random bit flips anywhere in the entry, header included
        for i in rng.integers(0, len(data) * 8, 8):
            data[i // 8] ^= 1 << (i % 8)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["half", "flips"])
def test_damaged_cache_entries_are_deleted_and_rebuilt(tmp_path, how, first_run):
    cache, first, want = first_run
    _copy(cache, tmp_path)
    env = {"NNARRAY_OPENCL_CACHE_DIR": str(tmp_path), "NNARRAY_DEBUG": "1"}
    entries = sorted(tmp_path.rglob("*.bin"))  # the devices' probe kernels too
    assert len(entries) >= first["compiled"] >= 2
    rng = np.random.default_rng(0)
    for p in entries:
        _damage(p, how, rng)
    r = subprocess.run([sys.executable, "-c", _CACHED_RUN], capture_output=True, text=True,
                       env=dict(os.environ, **env), timeout=CHILD_LIMIT)
    assert r.returncode == 0, r.stderr  # pocl crashed on these binaries before the check
    stats, got = json.loads(r.stdout)
    assert got == want and stats == {"compiled": first["compiled"], "loaded": 0}
    bad = [ln for ln in r.stderr.splitlines() if "OpenCL cache entry" in ln]
    assert len(bad) == len(entries) and all("deleted, rebuilding" in ln for ln in bad)
    third, _ = json.loads(_run(_CACHED_RUN, **env))  # the rebuilt entries are intact
    assert third == {"compiled": 0, "loaded": first["compiled"]}
    assert not [n for n in os.listdir(entries[0].parent) if n.startswith(".tmp-")]


def test_programs_are_built_once_per_process(cl):
    a, = on_cl(np.ones((5, 7), np.float32))
    F.tanh(a)
    before = opencl.build_stats()
    for _ in range(3):
        F.tanh(a)
    F.tanh(on_cl(np.ones((2, 2), np.float32))[0])  # another shape, same contiguous kernel
    assert opencl.build_stats() == before


@pytest.mark.parametrize("shape, axis", [((1000,), None), ((64, 300), 1), ((300, 64), 0),
                                         ((7, 5, 9), (0, 2))])
def test_a_mean_reuses_the_sum_of_its_layout(cl, shape, axis):
    """A float mean is a sum times 1/R: after the sum of a layout, the mean of it builds
    no program (the sum multiplies by 1, which is exact)."""
    h = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    a, = on_cl(h)
    s = F.sum(a, axis=axis)
    before = opencl.build_stats()
    m = F.mean(a, axis=axis)
    assert opencl.build_stats() == before
    np.testing.assert_allclose(s.data, h.sum(axis=axis, dtype=np.float64), rtol=1e-5)
    np.testing.assert_allclose(m.data, h.mean(axis=axis, dtype=np.float64), rtol=1e-5)


# -- dtypes -----------------------------------------------------------------------------------
def test_fp64_flag_matches_the_device(cl):
    assert cl.fp64 == ("cl_khr_fp64" in cl.cl_device.extensions)


@pytest.mark.skipif(REASON is None and not nna.backends.get_device("opencl").fp64,
                    reason="device has no fp64")
def test_float64_computes_in_double(cl):
    x = np.array([1e-300, 1.0 + 1e-15, 3.0])
    a, = on_cl(x)
    r = F.sqrt(a * a)
    assert r.dtype == np.float64
    np.testing.assert_array_equal(r.data, np.sqrt(x * x))


def test_float64_on_a_device_without_fp64_names_the_device(cl):
    cl.fp64 = False
    try:
        a, = on_cl(np.ones((3, 1, 7), np.float64))
        with pytest.raises(nna.DTypeError, match="opencl:0.*cl_khr_fp64"):
            F.exp(a)
    finally:
        cl.fp64 = "cl_khr_fp64" in cl.cl_device.extensions


def test_float16_is_stored_as_half_and_computed_in_float(cl):
    x = np.linspace(-3, 3, 11).astype(np.float16)
    a, = on_cl(x)
    np.testing.assert_array_equal((a * 1.5).data, x * np.float16(1.5))
    np.testing.assert_allclose(F.exp(a).data, np.exp(x), rtol=1e-3)
    np.testing.assert_allclose(F.sum(a).data, x.astype(np.float32).sum(), atol=1e-2)
    assert int(F.argmax(a).data) == 10


def test_int_pow_and_true_division(cl):
    a, b = on_cl(np.array([2, -3, 5, 0], np.int32), np.array([3, 3, 0, 2], np.int64))
    r = a ** b
    assert r.dtype == np.int64
    np.testing.assert_array_equal(r.data, [8, -27, 1, 0])
    np.testing.assert_array_equal((a / 2).data, np.array([2, -3, 5, 0]) / 2)


# -- random -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_random_is_deterministic_per_seed_and_position(cl, dtype):
    a = F.rand((1001,), low=-2, high=3, seed=2**63 - 5, dtype=dtype).data
    b = F.rand((1001,), low=-2, high=3, seed=2**63 - 5, dtype=dtype).data
    np.testing.assert_array_equal(a, b)
    prefix = F.rand((7,), low=-2, high=3, seed=2**63 - 5, dtype=dtype).data
    np.testing.assert_array_equal(prefix, a[:7])  # position, not launch geometry
    assert not np.array_equal(a, F.rand((1001,), low=-2, high=3, seed=1, dtype=dtype).data)
    assert a.min() >= -2 and a.max() <= 3 and a.dtype == dtype
    z = F.randn((20000,), mu=1.0, sigma=2.0, seed=7, dtype=dtype).data.astype(np.float64)
    assert abs(z.mean() - 1.0) < 0.05 and abs(z.std() - 2.0) < 0.05
    np.testing.assert_array_equal(z, F.randn((20000,), mu=1.0, sigma=2.0, seed=7,
                                             dtype=dtype).data.astype(np.float64))


def test_uniform_is_uniform(cl):
    u = F.rand((100000,), seed=3).data
    hist, _ = np.histogram(u, bins=10, range=(0, 1))
    assert np.all(np.abs(hist - 10000) < 500)


# -- broadcasting, strides, padding ---------------------------------------------------------
def test_broadcast_patterns_match_numpy(cl):
    """Each pattern with every other function in turn (``rotation``: a program per
    function and pattern), so each function runs three patterns or more."""
    rng = np.random.default_rng(0)
    shapes = [((4, 1, 3), (5, 1)), ((), (2, 3)), ((1,), (3, 1, 2)), ((2, 0, 3), (1, 3)),
              ((3, 1, 4, 1), (1, 2, 1, 5)), ((1, 1), (1, 1))]
    for k, (sa, sb) in enumerate(shapes):
        x, y = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb)
        a, b = on_cl(x, y)
        fns = [(F.add, np.add), (F.maximum, np.maximum), (F.less, np.less)]
        for f, g in rotation("opencl", k, fns):
            r = f(a, b)
            assert r.shape == g(x, y).shape and r.dtype == g(x, y).dtype
            np.testing.assert_allclose(r.data, g(x, y), rtol=1e-6)



ROW_LAUNCHES = [
    ((8, 512), (512,)), ((8, 512), (8, 1)), ((6, 16, 8, 8), (1, 16, 1, 1)),  # whole rows
    ((40, 1000), (1000,)), ((40, 1000), (40, 1)),  # split: 768 + 192 unchecked + checked
    ((400, 100), (1, 100)), ((3, 400, 100), (3, 1, 1)),  # split without the middle part
    ((70, 100), (100,)),  # checked rows (too small to split)
    ((256, 4, 16), (256, 1, 16)), ((50, 4, 20), (50, 1, 20)),  # rows of the last two dims
    ((500, 4, 20), (1, 4, 1)), ((10, 8), (8,)), ((3, 5, 7), (5, 1)),  # (whole, checked,
    ((4096, 3, 3), (4096, 1, 3))]  # split, one row, 1-D walks with a constant size)


@pytest.mark.parametrize("sa,sb", ROW_LAUNCHES)
def test_row_launches_match_numpy(cl, sa, sb):
    """The 2-D row launches (``elementwise.source``): unchecked where the work-group
    width divides the rows, split into unchecked and checked launches where it does not,
    constant inner strides of 0 and 1, rows of the last two dimensions where the last is
    short; into a new array and in place (``out=``). Each launch shape is a program per
    expression: every shape runs ``sub`` both ways and in place, and ``less`` (a bool
    result) or an int32 operand in turn."""
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)
    a, b = on_cl(x, y)
    np.testing.assert_array_equal(F.sub(a, b).data, x - y)
    np.testing.assert_array_equal(F.sub(b, a).data, y - x)
    odd = ROW_LAUNCHES.index((sa, sb)) % 2
    if not odd:
        np.testing.assert_array_equal(F.less(a, b).data, x < y)
    a -= b
    np.testing.assert_array_equal(a.data, x - y)
    if odd:
        i, = on_cl(np.arange(int(np.prod(sb)), dtype=np.int32).reshape(sb))
        np.testing.assert_array_equal(F.add(a, i).data, (x - y) + np.arange(i.size).reshape(sb))

def test_inplace_with_broadcast_operand_and_scalar(cl):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a, b = on_cl(x, np.array([1, 2, 3, 4], np.float64))
    a += b  # float64 result stored in float32 (same_kind)
    a *= 0.5
    np.testing.assert_array_equal(a.data, ((x + [1, 2, 3, 4]) * 0.5).astype(np.float32))


def test_contiguous_kernels_leave_neighbouring_buffers_alone(cl):
    a, b = on_cl(np.ones(5, np.float32), np.full(300, 7, np.float32))
    for _ in range(3):
        a = a * 2
    np.testing.assert_array_equal(b.data, 7)
    np.testing.assert_array_equal(a.data, 8)


def test_slices_with_negative_steps_and_transposes(cl):
    x = np.arange(2 * 3 * 5 * 4, dtype=np.int64).reshape(2, 3, 5, 4)
    a, = on_cl(x)
    np.testing.assert_array_equal(a[::-1, 1:, ::-2, 3].data, x[::-1, 1:, ::-2, 3])
    np.testing.assert_array_equal(a[:, :0].data, x[:, :0])
    t = F.transpose(a, (2, 0, 3, 1))
    np.testing.assert_array_equal(F.reshape(t, (-1, 6)).data, x.transpose(2, 0, 3, 1)
                                  .reshape(-1, 6))
    np.testing.assert_array_equal(F.broadcast_to(a[:, :1, :1], (3, 2, 3, 5, 4)).data,
                                  np.broadcast_to(x[:, :1, :1], (3, 2, 3, 5, 4)))
    c = F.concatenate([a, F.cast(a, np.int32)[:, :2]], axis=1)
    np.testing.assert_array_equal(c.data, np.concatenate([x, x[:, :2]], axis=1))


def test_long_reductions_take_the_chunked_path(cl):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 200001)).astype(np.float32)
    x[1, 123456] = 50.0
    x[2, 7] = x[2, 150000] = 60.0  # a tie: the first index wins
    a, = on_cl(x)
    np.testing.assert_allclose(F.sum(a, axis=1).data, x.sum(axis=1, dtype=np.float64),
                               rtol=1e-5)
    np.testing.assert_allclose(F.mean(a).data, x.mean(dtype=np.float64), rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_array_equal(F.argmax(a, axis=1).data, [x[0].argmax(), 123456, 7])
    np.testing.assert_array_equal(F.max(a, axis=(0, 1)).data, 60.0)
    y = x.copy()
    y[0, 199999] = np.nan
    b, = on_cl(y)
    assert int(F.argmax(b).data) == 199999
    assert np.isnan(F.max(b, axis=1).data[0])


def test_reduction_over_separated_axes(cl):
    x = np.arange(2 * 3 * 4 * 5, dtype=np.int32).reshape(2, 3, 4, 5)
    a, = on_cl(x)
    r = F.sum(a, axis=(0, 2), keepdims=True)
    assert r.dtype == np.int64
    np.testing.assert_array_equal(r.data, x.sum(axis=(0, 2), keepdims=True))
    np.testing.assert_array_equal(F.min(a, axis=(1, 3)).data, x.min(axis=(1, 3)))
    np.testing.assert_allclose(F.mean(a, axis=(0, 1, 3)).data, x.mean(axis=(0, 1, 3)))


def test_matmul_batch_broadcast_that_needs_materializing(cl):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 1, 4, 3)).astype(np.float32)
    y = rng.standard_normal((1, 3, 3, 5)).astype(np.float32)
    a, b = on_cl(x, y)
    np.testing.assert_allclose(F.matmul(a, b).data, x @ y, rtol=1e-5, atol=1e-5)
    i, j = on_cl(np.arange(6, dtype=np.int32).reshape(2, 3), np.arange(3, dtype=np.int64))
    np.testing.assert_array_equal(F.matmul(i, j).data, np.arange(6).reshape(2, 3) @ np.arange(3))
    h, = on_cl(x.astype(np.float16))
    r = F.matmul(h, b)
    assert r.dtype == np.float32
    np.testing.assert_allclose(r.data, x.astype(np.float16).astype(np.float32) @ y, rtol=1e-4)



@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True)])
def test_matmul_repeats_reuse_the_call_and_stay_right(cl, ta, tb):
    """The second and later calls with the same operand shapes, dtypes and flags reuse the
    first call's GEMM arguments (``matmul.py``): new data each time, other dtypes of the
    same shapes (float64, float16, mixed) still take their own path."""
    rng = np.random.default_rng(3)
    sa, sb = (7, 5) if ta else (5, 7), (3, 7) if tb else (7, 3)
    for dt_a, dt_b in [(np.float32, np.float32)] * 3 + [(np.float64, np.float64),
                                                        (np.float16, np.float32),
                                                        (np.float32, np.float64)]:
        if np.float64 in (dt_a, dt_b) and not cl.fp64:
            continue
        x, y = rng.standard_normal(sa).astype(dt_a), rng.standard_normal(sb).astype(dt_b)
        a, b = on_cl(x, y)
        got = F.matmul(a, b, transpose_a=ta, transpose_b=tb)
        want = (x.T if ta else x).astype(np.float64) @ (y.T if tb else y).astype(np.float64)
        assert got.dtype == np.result_type(dt_a, dt_b) if np.float16 not in (dt_a, dt_b) \
            else got.dtype == np.float32
        np.testing.assert_allclose(got.data, want, rtol=1e-3 if np.float16 in (dt_a, dt_b)
                                   else 1e-5, atol=1e-3)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy: the mean of nothing
@pytest.mark.parametrize("shape,axis", [((64, 100), (0,)), ((3, 70000), (1,)),
                                        ((5, 6, 7), (0, 2)), ((4, 0), (1,))])
def test_reductions_replay_their_first_call(cl, shape, axis):
    """Later reductions of the same op, shape, dtype and axes replay the first call's
    recorded launches (``reduction._Plan``), temporaries of the chunked paths included:
    every call must see its own data."""
    rng = np.random.default_rng(4)
    for _ in range(3):
        x = rng.standard_normal(shape).astype(np.float32)
        a, = on_cl(x)
        np.testing.assert_allclose(F.sum(a, axis=axis).data, x.sum(axis=axis, dtype=np.float64),
                                   rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(F.mean(a, axis=axis, keepdims=True).data,
                                   x.mean(axis=axis, keepdims=True, dtype=np.float64),
                                   rtol=1e-5, atol=1e-5)
        if len(axis) == 1 and x.size:
            np.testing.assert_array_equal(F.argmax(a, axis=axis[0]).data,
                                          x.argmax(axis=axis[0]))


def test_fused_reduction_replays_with_each_calls_inputs(cl):
    """A fused program ending in a sum runs as one reduction kernel reading the program's
    inputs (``reduction.Load``); its recorded launches are replayed with each call's own
    input buffers."""
    from nnarray.ops.fused import Builder, fused_elementwise
    b = Builder(2)
    d = b.call("sub", 0, 1)
    p = b.program([b.call("exp", b.call("mul", 0, b.const(0.01))),
                   b.call("sum", b.call("mul", d, d), attr=((0, 1), False))])
    for seed in range(3):
        g = np.random.default_rng(seed)
        x, y = (g.normal(size=(40, 70)).astype(np.float32) for _ in range(2))
        e, r = fused_elementwise(*on_cl(x, y), program=p)
        np.testing.assert_allclose(e.data, np.exp(0.01 * x), rtol=1e-5)
        np.testing.assert_allclose(r.data, ((x - y).astype(np.float64) ** 2).sum(), rtol=1e-5)

_POSITIONS = """
import numpy as np
import nnarray as nna
from nnarray.ops.sorting import positions
nna.set_default_context("opencl")
many = nna.asarray(np.ones(1 << 20, bool))
few = nna.asarray(np.array([0, 1, 0, 1], bool))
print(positions(many, count=1).numpy().tolist(), positions(few, count=4).numpy().tolist())
"""


def test_positions_stays_inside_its_count():
    # a graph node keeps the count it was recorded with; a mask of another count must
    # neither write past the output nor show stale memory (in a child: a crash fails)
    assert _run(_POSITIONS).split() == ["[0]", "[1,", "3,", "0,", "0]"]


def test_plans_sharing_a_kernel_set_their_own_constants():
    """Broadcast plans of one kernel source (the same rank and inner size, other row
    counts; a scalar operand) set their index constants only when another plan set its
    own since: alternating them must still give each its own result."""
    from nnarray.backends.opencl import elementwise as ew
    rng = np.random.default_rng(3)
    cases = [(rng.random((r, 10), dtype=np.float32), rng.random(10, dtype=np.float32))
             for r in (64, 32, 48)]
    with nna.context_scope("opencl:0"):
        arrays = [on_cl(x, b) for x, b in cases]
        for _ in range(3):
            for (x, b), (xn, bn) in zip(arrays, cases):
                np.testing.assert_allclose(F.add(x, b).numpy(), xn + bn, rtol=1e-6)
                np.testing.assert_allclose((x * 3.0).numpy(), xn * 3, rtol=1e-6)
                np.testing.assert_allclose(F.sub(b, x).numpy(), bn - xn, rtol=1e-6)
        dev = nna.backends.get_device("opencl", 0)
        plans = [dev.plans[("add", np.dtype(np.float32), x.shape, np.dtype(np.float32),
                            (10,), None)] for x, _ in cases]
    assert len({id(p.kernel) for p in plans}) == 1  # one kernel object, three plans
    assert ew._owner[id(plans[0].kernel)] is plans[-1]
