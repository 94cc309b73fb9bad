"""The OpenCL batched GEMM (nnarray/backends/opencl/gemm.py) against numpy, on the first OpenCL
device that can build programs: every kernel kind (the register-blocked CPU kernel, the tiled
GPU kernel run here for correctness, the naive one), edges, tiny and MLP-sized shapes, k = 0,
broadcast batches, array offsets and float64."""

from __future__ import annotations

import numpy as np
import pytest

cl = pytest.importorskip("pyopencl")
cla = pytest.importorskip("pyopencl.array")

from nnarray.backends import opencl as ocl  # noqa: E402
from nnarray.backends.opencl import gemm as G  # noqa: E402


def _device_ids() -> list[int | None]:
    """nnarray's OpenCL devices (opencl:0 basic and opencl:1 pthread with pocl), or [None]."""
    return list(range(ocl.device_count())) or [None]


@pytest.fixture(scope="module", params=_device_ids(),
                ids=lambda i: "none" if i is None else f"opencl:{i}")
def env(request):
    """(context, queue, Gemm) on every OpenCL device nnarray uses."""
    if request.param is None:
        pytest.skip(ocl.why_unavailable() or "no OpenCL device")
    dev = ocl.get_device(request.param)
    return dev.context, cl.CommandQueue(dev.context, dev.cl_device), \
        G.Gemm(dev.context, dev.cl_device)


RNG = np.random.default_rng(1234)


def _check(env, batch, m, n, k, dtype=np.float32, a_bcast=False, b_bcast=False, params=None,
           offset=0, ta=False, tb=False):
    """Run ``gemm`` (``params`` forced) and compare with float64 numpy; ``ta`` passes A
    stored transposed, (batch, k, m), ``tb`` B as (batch, n, k) (the "nt" kernel)."""
    ctx, queue, gemm = env
    if dtype == np.float64 and not gemm.fp64:
        pytest.skip("device has no cl_khr_fp64")
    a = RNG.standard_normal((1 if a_bcast else batch, m, k)).astype(dtype)
    b = RNG.standard_normal((1 if b_bcast else batch, k, n)).astype(dtype)
    stored_a = np.ascontiguousarray(a.swapaxes(1, 2)) if ta else a
    stored_b = np.ascontiguousarray(b.swapaxes(1, 2)) if tb else b
    if offset:  # views starting `offset` matrices into bigger buffers
        pad = np.zeros((offset,) + stored_a.shape[1:], dtype)
        da = cla.to_device(queue, np.concatenate([pad, stored_a]))[offset:]
        pad = np.zeros((offset,) + stored_b.shape[1:], dtype)
        db = cla.to_device(queue, np.concatenate([pad, stored_b]))[offset:]
        dc = cla.zeros(queue, (offset + batch, m, n), dtype)[offset:]
        assert da.offset and db.offset and dc.offset
    else:
        da, db = cla.to_device(queue, stored_a), cla.to_device(queue, stored_b)
        dc = cla.empty(queue, (batch, m, n), dtype)
        dc.fill(np.nan)
    chooser = "nt_params" if tb else "params_for"
    if params is not None:  # force a kernel (built kernels stay cached on `gemm`)
        setattr(gemm, chooser, lambda *_: params)
        gemm._plans.clear()
    try:
        gemm(queue, da, db, dc, batch, m, n, k, 0 if a_bcast else m * k,
             0 if b_bcast else k * n, a_transposed=ta, b_transposed=tb)
    finally:
        if params is not None:
            delattr(gemm, chooser)
            gemm._plans.clear()
    got = dc.get()
    ref = np.broadcast_to(np.matmul(a.astype(np.float64), b.astype(np.float64)), (batch, m, n))
    rtol, scale = (1e-4, 1e-5) if dtype == np.float32 else (1e-10, 1e-13)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=scale * np.sqrt(max(k, 1)))


SHAPES = [  # (batch, m, n, k)
    (1, 1, 1, 1), (1, 2, 4, 3), (1, 3, 2, 5), (2, 1, 7, 9), (1, 9, 1, 33), (1, 5, 3, 100),
    (1, 7, 64, 16), (1, 8, 65, 12), (1, 14, 128, 3), (1, 15, 129, 31), (1, 13, 100, 33),
    (3, 17, 18, 19), (2, 31, 47, 64), (1, 70, 10, 41), (1, 40, 200, 1), (5, 6, 30, 8),
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_float32_shapes(env, shape):
    _check(env, *shape)


@pytest.mark.parametrize("shape", [(1, 2, 4, 3), (1, 15, 129, 31), (2, 9, 20, 17),
                                   (1, 70, 10, 41)], ids=lambda s: "x".join(map(str, s)))
def test_float64(env, shape):
    _check(env, *shape, dtype=np.float64)


def test_mlp_shapes(env):
    for m, n, k in [(64, 100, 1000), (64, 1000, 100), (100, 64, 64), (64, 10, 100)]:
        _check(env, 1, m, n, k)
    _check(env, 1, 1000, 100, 64, ta=True)  # the weight gradient, x.T @ dy


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_transposed_a_in_place(env, shape):
    _check(env, *shape, ta=True)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_transposed_b_in_place(env, shape):
    """The chosen "nt" kernel (CPUs): B stored (n, k), vector partial sums along k."""
    _, _, gemm = env
    if not gemm.is_cpu:
        pytest.skip("B is read transposed in place on CPUs only")
    _check(env, *shape, tb=True)
    _check(env, *shape, tb=True, dtype=np.float64)


#: The "nt" tiles nt_params returns for 16 and 32 registers, forced, plus shrunk ones
NT_TILES = [{"kind": "nt", "mr": 3, "nc": 4, "vw": 8, "ly": 4},
            {"kind": "nt", "mr": 4, "nc": 6, "vw": 16, "ly": 4},
            {"kind": "nt", "mr": 1, "nc": 1, "vw": 2, "ly": 1},
            {"kind": "nt", "mr": 3, "nc": 4, "vw": 4, "ly": 4}]


@pytest.mark.parametrize("params", NT_TILES, ids=lambda p: f"{p['mr']}x{p['nc']}x{p['vw']}")
def test_nt_tiles(env, params):
    """Each "nt" tile, forced, on edges in every dimension (k below, at and past the vector
    width), batched, broadcast and offset; float64 too."""
    for batch, m, n, k in [(1, 1, 1, 1), (2, 19, 70, 23), (1, 64, 129, 40), (1, 5, 7, 16),
                           (1, 64, 1000, 100), (3, 4, 5, 3)]:
        _check(env, batch, m, n, k, params=params, tb=True)
    _check(env, 3, 10, 33, 17, a_bcast=True, params=params, tb=True)
    _check(env, 3, 10, 33, 17, b_bcast=True, params=params, tb=True)
    _check(env, 2, 6, 40, 9, offset=1, params=params, tb=True)
    _check(env, 2, 7, 13, 37, dtype=np.float64, params=params, tb=True)


def test_packed_path_batched(env, monkeypatch):
    """The packed path as params_for picks it (thresholds lowered), batched and broadcast."""
    monkeypatch.setattr(G, "PACK_AT", {r: (1, 1) for r in G.PACK_AT})
    gemm = env[2]
    gemm._plans.clear()
    try:
        _check(env, 2, 70, 130, 600)
        _check(env, 3, 40, 200, 700, b_bcast=True)
        _check(env, 2, 33, 64, 2000, dtype=np.float64, a_bcast=True)
        assert bool(gemm._scratch) == gemm.is_cpu
        monkeypatch.setattr(G, "SCRATCH_BYTES", 1)  # one batch entry per chunk
        _check(env, 3, 20, 70, 30)
        _check(env, 3, 20, 70, 30, a_bcast=True)
        _check(env, 3, 20, 70, 30, b_bcast=True, offset=1)
    finally:
        gemm._plans.clear()


def test_k_zero_gives_zeros(env):
    _check(env, 2, 9, 70, 0)


@pytest.mark.parametrize("side", ["a", "b"])
def test_broadcast_batch_stride_zero(env, side):
    _check(env, 4, 11, 37, 13, a_bcast=side == "a", b_bcast=side == "b")


def test_offsets_are_honoured(env):
    _check(env, 2, 5, 21, 6, offset=1)
    _check(env, 2, 16, 80, 20, dtype=np.float64, offset=2)


def test_empty_output_enqueues_nothing(env):
    ctx, queue, _ = env
    gemm = G.Gemm(ctx, ctx.devices[0])
    z = cla.empty(queue, (0,), np.float32)
    for batch, m, n in [(0, 3, 3), (2, 0, 3), (2, 3, 0)]:
        gemm(queue, z, z, z, batch, m, n, 4, 0, 0)
    assert not gemm._plans


def test_rejects_other_dtypes(env):
    ctx, queue, gemm = env
    x = cla.zeros(queue, (2, 2), np.int32)
    with pytest.raises(TypeError):
        gemm(queue, x, x, x, 1, 2, 2, 2, 0, 0)


KINDS = {
    "naive": G.NAIVE,
    "reg_tuned": G.CPU_PARAMS["float"],
    "reg_rows_first": dict(G.CPU_PARAMS["float"], mr=3, vw=4, nv=2, rows_first=True),
    "reg_scalar": dict(G.CPU_PARAMS["float"], mr=2, vw=1, nv=3),
    "reg_packed": dict(G.CPU_PARAMS["float"], mr=3, vw=4, nv=2, packed=True, rows_first=True),
    "reg_packed_tuned": dict(G.CPU_PARAMS["float"], packed=True, rows_first=True),
    "tiled_gpu": G.GPU_PARAMS["float"],
    "tiled_small": dict(G.GPU_PARAMS["float"], tm=16, tn=32, tk=8, wm=2, wn=4),
}


@pytest.mark.parametrize("kind", KINDS)
def test_every_kernel_kind(env, kind):
    """Each kernel, forced, on shapes with edges in every dimension (the GPU kernel too)."""
    params = KINDS[kind]
    vw = params.get("vw", 1)
    for batch, m, n, k in [(1, 1, vw, 1), (2, 19, 70, 23), (1, 64, 129, 40)]:
        _check(env, batch, m, n, k, params=params)
    _check(env, 3, 10, 33, 17, a_bcast=True, params=params)
    _check(env, 3, 10, 33, 17, b_bcast=True, params=params)
    _check(env, 2, 6, 40, 9, offset=1, params=params)
    _check(env, 2, 6, 40, 0, params=params)
    for batch, m, n, k in [(1, 1, vw, 1), (2, 19, 70, 23), (1, 64, 129, 40)]:
        _check(env, batch, m, n, k, params=params, ta=True)
    _check(env, 3, 10, 33, 17, a_bcast=True, params=params, ta=True)
    _check(env, 2, 6, 40, 9, offset=1, params=params, ta=True)
    if "vw" not in params:  # same kernel source for float64
        _check(env, 1, 21, 35, 19, dtype=np.float64, params=params)


def test_params_shrink_to_small_matrices(env):
    _, _, gemm = env
    if not gemm.is_cpu:
        pytest.skip("register tiles are the CPU kernel")
    p = gemm.params_for("float", 2, 3, 4)
    assert (p["mr"], p["vw"], p["nv"]) == (2, 2, 2)
    tuned = gemm.params["float"]
    assert tuned == G.cpu_params("float", G.device_vector_width(gemm.device, "float"))
    assert gemm.params_for("float", 200, 256, 256) == tuned
    huge = gemm.params_for("float", 2048, 2048, 2048)
    assert huge == dict(tuned, packed=True, rows_first=True)


# -- choosing CPU parameters from what the device reports ------------------------------------
AVX2_F32 = {"kind": "reg", "mr": 6, "vw": 8, "nv": 2, "lx": 1, "ly": 4}


@pytest.mark.parametrize("dtype,width,expected", [
    ("float", 16, G.CPU_PARAMS["float"]),    # AVX-512: the tile tuned there, unchanged
    ("double", 8, G.CPU_PARAMS["double"]),
    ("float", 32, G.CPU_PARAMS["float"]),    # wider than 512 bits: capped
    ("float", 8, AVX2_F32),                  # AVX/AVX2: 16 ymm registers
    ("double", 4, dict(AVX2_F32, vw=4)),
    ("float", 4, dict(AVX2_F32, vw=4)),      # SSE
    ("float", 12, AVX2_F32),                 # not a power of two: rounded down
    ("float", 1, dict(AVX2_F32, vw=1)),
    ("double", 0, dict(AVX2_F32, vw=1)),     # no fp64 (width 0): never used, but defined
], ids=lambda x: str(x) if not isinstance(x, dict) else "")
def test_cpu_params_from_vector_width(dtype, width, expected):
    assert G.cpu_params(dtype, width) == expected
    assert G.vector_registers(dtype, expected["vw"]) == (32 if expected["mr"] > 6 else 16)


class _FakeCPU:
    """What Gemm reads of a device, for CPUs that this machine is not."""

    def __init__(self, preferred, native, version="OpenCL 3.0"):
        self.type = cl.device_type.CPU
        self.version = version
        self.extensions = "cl_khr_fp64"
        self.name = "fake"
        self.max_work_group_size = 4096
        for t, w in zip(("float", "double"), preferred):
            setattr(self, f"preferred_vector_width_{t}", w)
        for t, w in zip(("float", "double"), native):
            setattr(self, f"native_vector_width_{t}", w)


@pytest.mark.parametrize("preferred,native,float_p,double_p", [
    ((16, 8), (16, 8), G.CPU_PARAMS["float"], G.CPU_PARAMS["double"]),  # pocl, AVX-512
    ((8, 4), (8, 4), AVX2_F32, dict(AVX2_F32, vw=4)),                     # pocl, AVX2
    ((1, 1), (8, 4), AVX2_F32, dict(AVX2_F32, vw=4)),  # a driver preferring scalars
    ((1, 1), (16, 8), G.CPU_PARAMS["float"], G.CPU_PARAMS["double"]),
], ids=["avx512", "avx2", "avx2-preferred-1", "avx512-preferred-1"])
def test_gemm_selects_by_device_properties(preferred, native, float_p, double_p):
    gemm = G.Gemm(None, _FakeCPU(preferred, native))
    assert gemm.params == {"float": float_p, "double": double_p}
    packed = dict(float_p, packed=True, rows_first=True)
    if float_p is G.CPU_PARAMS["float"]:  # AVX-512: as before, packed from 2^32 with m >= 512
        assert gemm.params_for("float", 1024, 1024, 1024) == float_p
        assert gemm.params_for("float", 1024, 2048, 2048) == packed
        assert gemm.params_for("float", 256, 4096, 4096) == float_p
    else:  # 16 registers: packed from 512^3 with m >= 256
        assert gemm.params_for("float", 512, 512, 512) == packed
        assert gemm.params_for("float", 1024, 1024, 1024) == packed
        assert gemm.params_for("float", 256, 256, 256) == float_p
        assert gemm.params_for("float", 1000, 1000, 64) == float_p
        assert gemm.params_for("float", 128, 1024, 1024) == float_p
    assert gemm.params_for("float", 64, 1000, 100) == float_p  # MLP layer: whole tile
    small = gemm.params_for("float", 64, 10, 100)
    assert (small["mr"], small["vw"]) == (min(float_p["mr"], 64), 8)


@pytest.mark.parametrize("version,bits", [
    ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-znver3", 256),
    ("OpenCL 3.0 PoCL HSTR: basic-x86_64-pc-linux-gnu-haswell", 256),
    ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-skylake-avx512", 512),
    ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-znver4", 512),
    ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-x86-64-v4", 512),
    ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-x86-64", 128),
    ("OpenCL 3.0 PoCL HSTR: pthread-aarch64-unknown-linux-gnu-neoverse-n1", None),
    ("OpenCL 3.0 CUDA", None), ("", None),
])
def test_compiled_vector_bits(version, bits):
    assert G.compiled_vector_bits(version) == bits


def test_compile_target_caps_the_reported_width():
    """pocl (LLVM 14) on a Zen 4 reports 16 floats from CPUID but compiles for znver3
    (AVX2): the AVX2 tile, not the AVX-512 one that spills there."""
    znver3 = "OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-znver3"
    gemm = G.Gemm(None, _FakeCPU((16, 8), (16, 8), znver3))
    assert gemm.params == {"float": AVX2_F32, "double": dict(AVX2_F32, vw=4)}
    avx512 = znver3.replace("znver3", "znver4")
    gemm = G.Gemm(None, _FakeCPU((16, 8), (16, 8), avx512))
    assert gemm.params == {"float": G.CPU_PARAMS["float"], "double": G.CPU_PARAMS["double"]}
    assert G.Gemm(None, _FakeCPU((8, 4), (8, 4), avx512)).params["float"] == AVX2_F32


#: Every register tile cpu_params can return for a real x86 device, by (dtype, width).
SELECTABLE = [("float", 16), ("float", 8), ("float", 4), ("double", 8), ("double", 4)]


@pytest.mark.parametrize("packed", [False, True], ids=["inplace", "packed"])
@pytest.mark.parametrize("dtype,width", SELECTABLE, ids=lambda x: str(x))
def test_selectable_params_compute_correctly(env, dtype, width, packed):
    """Each selectable tile, forced whatever this device is, on odd sizes with edges in
    every dimension (n >= vw: smaller n shrinks the tile), batched and broadcast."""
    params = G.cpu_params(dtype, width)
    if packed:
        params = dict(params, packed=True, rows_first=True)
    dt = np.float32 if dtype == "float" else np.float64
    vw = params["vw"]
    for batch, m, n, k in [(1, 1, vw, 1), (2, 19, 70, 23), (1, 13, 4 * vw * 2 + 3, 101),
                           (1, 64, 129, 40)]:
        _check(env, batch, m, n, k, dtype=dt, params=params)
    _check(env, 3, 10, 33, 17, dtype=dt, a_bcast=True, params=params)
    _check(env, 3, 10, 33, 17, dtype=dt, b_bcast=True, params=params)
    _check(env, 2, 7, 40, 0, dtype=dt, params=params)
    for batch, m, n, k in [(1, 1, vw, 1), (2, 19, 70, 23), (1, 13, 4 * vw * 2 + 3, 101)]:
        _check(env, batch, m, n, k, dtype=dt, params=params, ta=True)
    _check(env, 3, 10, 33, 17, dtype=dt, a_bcast=True, params=params, ta=True)


def test_uses_the_given_builder(env):
    ctx, queue, _ = env
    seen = []

    def build(source, options):
        seen.append(source)
        return cl.Program(ctx, source).build(options)

    gemm = G.Gemm(ctx, ctx.devices[0], build=build)
    a = cla.to_device(queue, np.ones((1, 3, 4), np.float32))
    b = cla.to_device(queue, np.ones((1, 4, 5), np.float32))
    c = cla.empty(queue, (1, 3, 5), np.float32)
    for _ in range(3):
        gemm(queue, a, b, c, 1, 3, 5, 4, 12, 20)
    np.testing.assert_array_equal(c.get(), np.full((1, 3, 5), 4.0, np.float32))
    assert len(seen) == 1 and "void gemm(" in seen[0]


def test_sources_generate_for_all_parameter_sets():
    """Source generation needs no device (covers the GPU parameters where no GPU exists)."""
    for t in ("float", "double"):
        for p in (G.CPU_PARAMS[t], G.GPU_PARAMS[t], G.NAIVE):
            src = G.gemm_source(t, p)
            assert "__kernel" in src and "void gemm(" in src and src.count("{") == src.count("}")


def test_nt_tail_keeps_infinities(env):
    """The k % vw tail re-reads lanes already summed, zeroed in both operands: an inf there
    must not turn into 0 * inf = NaN."""
    ctx, queue, gemm = env
    params = {"kind": "nt", "mr": 2, "nc": 3, "vw": 8, "ly": 1}
    a = np.ones((1, 2, 11), np.float32)
    bt = np.ones((1, 3, 11), np.float32)
    bt[0, 1, 4] = np.inf  # summed in the main loop, inside the tail's vector too
    da, db = cla.to_device(queue, a), cla.to_device(queue, bt)
    dc = cla.empty(queue, (1, 2, 3), np.float32)
    gemm.nt_params = lambda *_: params
    gemm._plans.clear()
    try:
        gemm(queue, da, db, dc, 1, 2, 3, 11, 0, 0, b_transposed=True)
    finally:
        del gemm.nt_params
        gemm._plans.clear()
    np.testing.assert_array_equal(dc.get(), a @ bt.swapaxes(1, 2))


@pytest.mark.parametrize("native,tile", [((8, 4), (3, 4, 8)), ((16, 8), (4, 6, 16))],
                         ids=["avx2", "avx512"])
def test_nt_params_follow_the_register_count(native, tile):
    """A @ B.T tiles by the vector width (NT_TILE), shrunk to small m, n and k; B is read
    transposed in place unless the product is large enough to pack it."""
    gemm = G.Gemm(None, _FakeCPU(native, native))
    p = gemm.nt_params("float", 64, 1000, 100)
    assert (p["kind"], p["mr"], p["nc"], p["vw"]) == ("nt",) + tile
    assert (p["mr"], p["nc"]) == G.NT_TILE[G.vector_registers("float", p["vw"])]
    small = gemm.nt_params("float", 1, 2, 5)
    assert (small["mr"], small["nc"], small["vw"]) == (1, 2, 4)
    assert gemm.nt_params("float", 3, 3, 1)["vw"] == 2
    assert gemm.reads_transposed_b("float", 64, 1000, 100)
    assert gemm.reads_transposed_b("float", 1000, 100, 64)
    assert not gemm.reads_transposed_b("float", 4096, 4096, 4096)  # packed: copy B first
