"""Compute-bound workloads: an axis reduction, SGEMM and a 2-D convolution."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F

from .conftest import Reference, expect, gpu_present, measure, small


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


# -- sum over axis 1 -------------------------------------------------------------------
def _rows(benchmark) -> int:
    return 256 if small(benchmark) else 4096


def _sum_check(xs: np.ndarray):
    """float32 sums of n standard normals against float64 numpy."""
    return expect(xs.sum(axis=1, dtype=np.float64), rtol=1e-4, atol=1e-5 * xs.shape[1])


@pytest.mark.benchmark(group="sum axis=1 4096x4096 f32")
def test_sum_axis_nnarray(benchmark, backend):
    n = _rows(benchmark)
    xs = _rand(n, n)
    x = nna.NdArray.from_numpy_array(xs)
    measure(benchmark, backend, lambda: F.sum(x, axis=1), check=_sum_check(xs))


@pytest.mark.benchmark(group="sum axis=1 4096x4096 f32")
def test_sum_axis_reference(benchmark, ref):
    n = _rows(benchmark)
    xs = _rand(n, n)
    x = ref.asarray(xs)
    measure(benchmark, ref, lambda: x.sum(axis=1), baseline=ref.name == "numpy",
            check=_sum_check(xs))


# -- SGEMM ------------------------------------------------------------------------------
def _gemm(benchmark, impl: Any, n: int) -> int:
    """The group for an n^3 SGEMM and the size actually run; 4096^3 runs on GPUs only
    (and its numpy baseline only where some GPU is present)."""
    benchmark.group = f"sgemm {n}^3 f32"
    if n > 1024 and not impl.gpu and not (impl.reference and impl.name == "numpy"
                                          and gpu_present()):
        pytest.skip(f"{n}^3 SGEMM runs only on GPUs")
    return n // 8 if small(benchmark) else n


def _gemm_check(n: int):
    """float32 products of n-term dot products against float64 numpy."""
    a, b = (_rand(n, n, seed=s).astype(np.float64) for s in (0, 1))
    return expect(a @ b, rtol=1e-4, atol=1e-4 * np.sqrt(n))


@pytest.mark.parametrize("n", [1024, 4096])
def test_sgemm_nnarray(benchmark, backend, n):
    n = _gemm(benchmark, backend, n)
    a, b = (nna.NdArray.from_numpy_array(_rand(n, n, seed=s)) for s in (0, 1))
    measure(benchmark, backend, lambda: F.matmul(a, b), gflop=2 * n**3 / 1e9,
            check=_gemm_check(n))


@pytest.mark.parametrize("n", [1024, 4096])
def test_sgemm_reference(benchmark, ref, n):
    n = _gemm(benchmark, ref, n)
    a, b = (ref.asarray(_rand(n, n, seed=s)) for s in (0, 1))
    mm = ref.xp.matmul
    measure(benchmark, ref, lambda: mm(a, b), baseline=ref.name == "numpy",
            gflop=2 * n**3 / 1e9, check=_gemm_check(n))


# -- the MLP layer's products -------------------------------------------------------------
#: A 64x1000 -> 100 layer's x @ W, dy @ W.T and x.T @ dy: stored shapes of a and b, and
#: whether each is transposed
MLP_PRODUCTS = {"x@W 64x1000x100": ((64, 1000), (1000, 100), False, False),
                "dy@W.T 64x100x1000": ((64, 100), (1000, 100), False, True),
                "x.T@dy 1000x64x100": ((64, 1000), (64, 100), True, False)}


def _mlp_product(name: str) -> tuple[np.ndarray, np.ndarray, bool, bool, float, Any]:
    """Operands, transpose flags, GFLOP and the float64 check of one MLP product."""
    sa, sb, ta, tb = MLP_PRODUCTS[name]
    a, b = _rand(*sa, seed=0), _rand(*sb, seed=1)
    la, lb = (a.T if ta else a).astype(np.float64), (b.T if tb else b).astype(np.float64)
    gflop = 2 * la.shape[0] * la.shape[1] * lb.shape[1] / 1e9
    return a, b, ta, tb, gflop, expect(la @ lb, rtol=1e-4, atol=1e-4 * np.sqrt(la.shape[1]))


@pytest.mark.parametrize("name", MLP_PRODUCTS)
def test_mlp_matmul_nnarray(benchmark, backend, name):
    benchmark.group = f"matmul {name} f32 (MLP layer)"
    a, b, ta, tb, gflop, check = _mlp_product(name)
    x, y = nna.NdArray.from_numpy_array(a), nna.NdArray.from_numpy_array(b)
    measure(benchmark, backend, lambda: F.matmul(x, y, transpose_a=ta, transpose_b=tb),
            gflop=gflop, check=check)


@pytest.mark.parametrize("name", MLP_PRODUCTS)
def test_mlp_matmul_reference(benchmark, ref, name):
    benchmark.group = f"matmul {name} f32 (MLP layer)"
    a, b, ta, tb, gflop, check = _mlp_product(name)
    x, y = ref.asarray(a), ref.asarray(b)
    x, y = (x.T if ta else x), (y.T if tb else y)
    mm = ref.xp.matmul
    measure(benchmark, ref, lambda: mm(x, y), baseline=ref.name == "numpy", gflop=gflop,
            check=check)


# -- conv2d -------------------------------------------------------------------------------
CONV = "conv2d 64x3x32x32 -> 32ch 3x3 pad1 f32"


def _conv_inputs(benchmark) -> list[np.ndarray]:
    n = 4 if small(benchmark) else 64
    return [_rand(n, 3, 32, 32), _rand(32, 3, 3, 3, seed=1), _rand(32, seed=2)]


def _conv_check(inputs: list[np.ndarray]):
    """Against the sliding-window reference in float64 (checked against nnarray's own
    host conv by ``test_conv2d_reference_is_right``, and independent of it)."""
    return expect(conv2d_xp(np, *(v.astype(np.float64) for v in inputs), 1),
                  rtol=1e-4, atol=1e-4)


def conv2d_xp(xp: Any, x: Any, w: Any, b: Any, pad: int) -> Any:
    """Stride-1 NCHW convolution by im2col (sliding windows) and one tensordot."""
    kh, kw = w.shape[2:]
    xp_ = xp.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = xp.lib.stride_tricks.sliding_window_view(xp_, (kh, kw), axis=(2, 3))
    y = xp.tensordot(win, w, axes=((1, 4, 5), (1, 2, 3)))  # (N, OH, OW, O)
    return xp.ascontiguousarray(y.transpose(0, 3, 1, 2)) + b[:, None, None]


@pytest.mark.benchmark(group=CONV)
def test_conv2d_nnarray(benchmark, backend):
    inputs = _conv_inputs(benchmark)
    x, w, b = (nna.NdArray.from_numpy_array(v) for v in inputs)
    measure(benchmark, backend, lambda: F.conv2d(x, w, b, pad=1), check=_conv_check(inputs))


@pytest.mark.benchmark(group=CONV)
def test_conv2d_reference(benchmark, ref: Reference):
    inputs = _conv_inputs(benchmark)
    x, w, b = (ref.asarray(v) for v in inputs)
    if ref.name.startswith("torch"):
        conv = ref.xp.nn.functional.conv2d
        fn = lambda: conv(x, w, b, padding=1)  # noqa: E731
    else:
        fn = lambda: conv2d_xp(ref.xp, x, w, b, 1)  # noqa: E731
    measure(benchmark, ref, fn, baseline=ref.name == "numpy", check=_conv_check(inputs))


def test_conv2d_reference_is_right():
    """The hand-written reference agrees with nnarray's conv2d on the host."""
    x, w, b = (_rand(2, 3, 6, 5), _rand(4, 3, 3, 3, seed=1), _rand(4, seed=2))
    got = conv2d_xp(np, x, w, b, 1)
    want = F.conv2d(*(nna.NdArray.from_numpy_array(v) for v in (x, w, b)), pad=1)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-4, atol=1e-4)


# -- sort / argsort of 1e6 float32 ------------------------------------------------------
def _sort_input(benchmark) -> np.ndarray:
    return _rand(10_000 if small(benchmark) else 1_000_000, seed=3)


SORTS = ("sort", "argsort")


@pytest.mark.parametrize("fn", SORTS)
def test_sort_nnarray(benchmark, backend, fn):
    benchmark.group = f"{fn} 1e6 f32"
    xs = _sort_input(benchmark)
    x = nna.NdArray.from_numpy_array(xs)
    f = getattr(nna, fn)
    measure(benchmark, backend, lambda: f(x), check=expect(getattr(np, fn)(xs, kind="stable")))


@pytest.mark.parametrize("fn", SORTS)
def test_sort_reference(benchmark, ref, fn):
    if ref.name.startswith("torch"):
        pytest.skip("the sort rows compare numpy-style array modules only")
    benchmark.group = f"{fn} 1e6 f32"
    xs = _sort_input(benchmark)
    x = ref.asarray(xs)
    f = getattr(ref.xp, fn)
    measure(benchmark, ref, lambda: f(x, kind="stable"), baseline=ref.name == "numpy",
            check=expect(getattr(np, fn)(xs, kind="stable")))
