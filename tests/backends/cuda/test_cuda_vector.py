"""The CUDA backend's vectorized elementwise kernels (``cuda/vector.py``): every function,
operand layout and dtype against numpy, with lengths that leave a tail past the last full
vector. Compiled by g++ through the host shim (``cuda_host``: the kernels' arithmetic, no
device) and by NVRTC in ``test_cuda_nvrtc``; ``test_vector_kernels_on_gpu`` runs them on
a GPU where there is one."""

from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest
from cuda_host import load, ptr, scalar

import nnarray as nna
from nnarray.backends.cuda import vector

_erf = np.vectorize(math.erf, otypes=[np.float64])
REFS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
        "maximum": np.maximum, "minimum": np.minimum, "neg": np.negative, "abs": np.abs,
        "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "square": np.square,
        "relu": lambda x: np.maximum(x, 0), "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
        "erf": lambda x: _erf(x), "gelu": lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))),
        "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) *
                                                      (x + 0.044715 * x ** 3)))}


def test_every_function_has_a_reference():
    assert set(REFS) == set(vector.BINARY) | set(vector.UNARY)


@pytest.fixture(scope="module")
def lib():
    return load(vector.SOURCE.code)


@pytest.mark.parametrize("dtype", list(vector.TYPES), ids=lambda d: d.name)
@pytest.mark.parametrize("op", list(REFS))
def test_vector_kernels_on_host(lib, op, dtype):
    rng = np.random.default_rng(0)
    n = 1031  # not a multiple of the lanes: the tail loop runs too
    a = rng.uniform(0.1, 3, n).astype(dtype)
    b = rng.uniform(-3, 3, n).astype(dtype)
    a[:4] = [np.nan, 0.5, 2.0, 1.0]
    b[:4] = [1.0, np.nan, 2.0, -1.0]
    c = scalar(dtype)
    fn = getattr(lib, vector.kernel_name(op, dtype))
    s = dtype.type(1.5)
    modes = [(0, (a, b))] if op in vector.BINARY else [(3, (a,))]
    if op in vector.BINARY:
        modes += [(1, (a, s)), (2, (s, a))]
    for mode, args in modes:
        y = np.empty_like(a)
        fn(ptr(a), ptr(b), c(s), ctypes.c_int(mode), ptr(y), ctypes.c_longlong(n))
        with np.errstate(all="ignore"):
            want = REFS[op](*args).astype(dtype)
        np.testing.assert_allclose(y, want, rtol=2e-6 if dtype == np.float32 else 1e-12,
                                   err_msg=f"{op} mode {mode}")


def test_vector_kernels_on_gpu():
    reason = nna.backends.why_unavailable("cuda")
    if reason is not None:
        pytest.skip(f"cuda unavailable: {reason}")
    import cupy

    import nnarray.functions as F
    n = vector.MIN_SIZE + 3
    x = np.random.default_rng(0).uniform(0.1, 2, n).astype(np.float32)
    with nna.context_scope("cuda"):
        a = nna.asarray(x)
        for got, want in ((F.mul(a, 2.0), 2 * x), (F.add(a, a), x + x), (F.exp(a), np.exp(x)),
                          (F.sub(1.0, a), 1 - x), (F.relu(-a), np.zeros_like(x))):
            np.testing.assert_allclose(got.numpy(), want, rtol=2e-6)
    assert cupy.cuda.runtime.getDeviceCount() >= 1
