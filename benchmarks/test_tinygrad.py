"""tinygrad on the same pocl devices as nnarray's OpenCL rows.

Each row joins an existing group, so one table compares nnarray's OpenCL rows, tinygrad
(``TinyJit``-compiled, its kernels fused by its own scheduler) and numpy by hand: the MLP
training step (``test_training.MLP``), the elementwise chain forward plus backward
(``test_math.CHAIN``) and SGEMM 1024^3 (``test_compute``). tinygrad's ``CL`` device opens
the OpenCL library pyopencl ships (``OPENCL_PATH``, set here before tinygrad is
imported) and takes the first platform's default device: on pocl that is nnarray's
``opencl:0`` (pocl's ``basic`` driver, one thread), so compare with the ``opencl`` rows.
The rows skip, with the reason, where tinygrad is not installed
(``pip install nnarray[bench]``) or cannot open pocl.
"""

from __future__ import annotations

import glob
import os
from typing import Any

import numpy as np
import pytest

from .conftest import expect, measure
from .test_compute import _gemm, _gemm_check, _rand
from .test_math import CHAIN, _chain_inputs, chain_by_hand
from .test_training import LR, MLP, _first_loss, mlp_data, mlp_params

DEVICES = ["CL"]


def _tinygrad(device: str) -> Any:
    """The ``tinygrad`` module with ``device`` opened, or a skip saying why not."""
    try:
        import pyopencl
    except ImportError:
        pytest.skip("tinygrad rows: pyopencl not installed")
    libs = glob.glob(os.path.join(os.path.dirname(pyopencl.__file__), ".libs", "libOpenCL*"))
    if libs:
        os.environ.setdefault("OPENCL_PATH", libs[0])
    try:
        import tinygrad
        tinygrad.Device[device]
    except ImportError:
        pytest.skip("tinygrad not installed (pip install nnarray[bench])")
    except Exception as e:  # noqa: BLE001  (any failure to open the device is a skip)
        pytest.skip(f"tinygrad cannot open {device}: {type(e).__name__}: {e}")
    return tinygrad


class Tinygrad:
    """tinygrad on one OpenCL device, as ``measure`` expects an implementation."""

    reference = True

    def __init__(self, device: str) -> None:
        self.tg = _tinygrad(device)
        self.device = device
        self.label = f"tinygrad-{device}"

    def tensor(self, a: np.ndarray, requires_grad: bool = False) -> Any:
        t = self.tg.Tensor(a.copy(), device=self.device)  # tinygrad 0.14: no requires_grad
        return t.is_param_(requires_grad).realize()

    def sync(self) -> None:
        self.tg.Device[self.device].synchronize()


def _on_host(check: Any) -> Any:
    """``check`` applied to tinygrad results read back to numpy."""
    def run(got: Any) -> None:
        check(tuple(g.numpy() for g in got) if isinstance(got, tuple) else got.numpy())
    return run


@pytest.fixture(params=DEVICES)
def tiny(request) -> Tinygrad:
    return Tinygrad(request.param)


def test_mlp_step_tinygrad(benchmark, tiny):
    """The MLP step of ``test_training`` as a TinyJit function: forward, MSE, backward
    and SGD from the same initial parameters."""
    benchmark.group = MLP
    tg = tiny.tg
    p = {k: tiny.tensor(v, requires_grad=True) for k, v in mlp_params().items()}
    x, t = (tiny.tensor(a) for a in mlp_data())
    opt = tg.nn.optim.SGD(list(p.values()), lr=LR)

    @tg.TinyJit
    def step() -> Any:
        with tg.Context(TRAINING=1):  # tinygrad's optimizers refuse to step without it
            opt.zero_grad()
            h = (x @ p["l1.W"] + p["l1.b"]).relu()
            d = h @ p["l2.W"] + p["l2.b"] - t
            loss = (d * d).mean()
            loss.backward()
            return loss.realize(*opt.schedule_step())  # one schedule, as tinygrad's examples

    measure(benchmark, tiny, step, variant="TinyJit", check=_on_host(_first_loss("mlp")))


def test_chain_tinygrad(benchmark, tiny):
    """The chain of ``test_math``, forward and the gradient of ``sum(y * dy)``."""
    benchmark.group = CHAIN
    tg = tiny.tg
    xn, dyn = _chain_inputs(benchmark)
    x, dy = tiny.tensor(xn, requires_grad=True), tiny.tensor(dyn)

    @tg.TinyJit
    def step() -> Any:
        x.grad = None
        y = (x * 0.5 + 0.1).tanh() * x.sigmoid() + x * x
        (y * dy).sum().backward()
        return y.realize(), x.grad.realize()

    measure(benchmark, tiny, step, variant="TinyJit",
            check=_on_host(expect(*chain_by_hand(xn, dyn), rtol=1e-4, atol=1e-5)))


def test_sgemm_tinygrad(benchmark, tiny):
    tiny.gpu, tiny.name = False, tiny.label  # for test_compute's group and size
    n = _gemm(benchmark, tiny, 1024)
    tg = tiny.tg
    a, b = (tiny.tensor(_rand(n, n, seed=s)) for s in (0, 1))
    mm = tg.TinyJit(lambda: (a @ b).realize())
    measure(benchmark, tiny, mm, gflop=2 * n**3 / 1e9, check=_on_host(_gemm_check(n)))
