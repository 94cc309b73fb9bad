"""The GPU rows of issue 39 item 4, run by ``.ci/gpu``: ``torch.compile`` (default and
``mode="reduce-overhead"``: CUDA graphs) beside torch eager and nnarray on the MLP step,
the CNN step and the elementwise chain fwd+bwd; a new group, the char-transformer step
(``examples/char_transformer.py``'s model, one SGD step), for nnarray define-by-run and
static, torch eager and compiled; and nnarray's static MLP step replayed as a CUDA graph.
The tiny add and fft 2^20 rows (nnarray, torch, CuPy) are in test_elementwise.py and
test_fft.py.

``torch.compile`` rows run on CUDA only (on a CPU they would measure the C++ compiler
torch calls); they and the replayed row skip with the reason elsewhere. The nnarray
char-transformer rows run on every backend; their first loss is checked against the
same model written in torch (CPU) from the same parameters.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import nnarray as nna

from .conftest import Reference, _torch_cuda_reason, expect, measure, require, small
from .test_math import CHAIN, _chain_inputs, chain_by_hand
from .test_training import (
    GROUPS,
    _first_loss,
    eager_step,
    initial,
    nnarray_step,
    static_step,
    torch_step,
)

CHAR = "char-transformer step 32x32 vocab32 dim64 h4 2 layers sgd"
MODES = {"default": "torch.compile", "reduce-overhead": "torch.compile reduce-overhead"}
LR = 0.01


@pytest.fixture(params=list(MODES))
def compiled(request) -> tuple[Reference, Any, str]:
    """``(torch-cuda reference, torch.compile with the mode, the column's label)``,
    skipped without CUDA."""
    try:
        import torch
    except ImportError:
        pytest.skip("torch not installed")
    if _torch_cuda_reason():
        pytest.skip(f"torch.compile rows run on CUDA only ({_torch_cuda_reason()})")
    mode = request.param
    return Reference("torch-cuda"), lambda f: torch.compile(f, mode=mode), MODES[mode]


# -- MLP and CNN steps -------------------------------------------------------------------
@pytest.mark.parametrize("kind", list(GROUPS))
def test_step_torch_compile(benchmark, compiled, kind):
    ref, wrap, label = compiled
    benchmark.group = GROUPS[kind]
    measure(benchmark, ref, torch_step(kind, ref, wrap), label=label,
            check=_first_loss(kind))


def test_mlp_step_static_replayed(benchmark, backend):
    """The static MLP step with CUDA-graph replay on (``grad.cuda_graphs``)."""
    grad = require("nnarray.grad", "cuda_graphs")
    if backend.name.split(":")[0] != "cuda":
        pytest.skip("CUDA graphs replay on CUDA only")
    from nnarray.grad import cuda_replay
    if not cuda_replay.WIRED:
        pytest.skip("the replay's launch is not wired into static schedules yet (issue 39 "
                    "item 1): this row would time the plain static step")
    benchmark.group = GROUPS["mlp"]
    with grad.cuda_graphs(True):
        measure(benchmark, backend, nnarray_step("mlp", initial("mlp"), static=True)[1],
                variant="static graph · cuda graph", check=_first_loss("mlp"))


# -- the elementwise chain ---------------------------------------------------------------
def _torch_chain(torch: Any, xn: np.ndarray, dyn: np.ndarray, device: str, wrap: Any):
    x = torch.from_numpy(xn).to(device).requires_grad_(True)
    dy = torch.from_numpy(dyn).to(device)

    def f(x: Any) -> Any:
        return torch.tanh(0.5 * x + 0.1) * torch.sigmoid(x) + x * x
    fn = wrap(f) if wrap is not None else f

    def step() -> Any:
        x.grad = None
        y = fn(x)
        y.backward(dy)
        return y.detach(), x.grad
    return step


@pytest.mark.benchmark(group=CHAIN)
def test_chain_torch_cuda(benchmark, ref):
    if ref.name != "torch-cuda":
        pytest.skip("torch eager on CUDA is this group's GPU reference")
    xn, dyn = _chain_inputs(benchmark)
    measure(benchmark, ref, _torch_chain(ref.xp, xn, dyn, "cuda", None),
            check=expect(*chain_by_hand(xn, dyn), rtol=1e-4, atol=1e-5))


@pytest.mark.benchmark(group=CHAIN)
def test_chain_torch_compile(benchmark, compiled):
    ref, wrap, label = compiled
    xn, dyn = _chain_inputs(benchmark)
    measure(benchmark, ref, _torch_chain(ref.xp, xn, dyn, "cuda", wrap),
            label=label, check=expect(*chain_by_hand(xn, dyn), rtol=1e-4,
                                                  atol=1e-5))


# -- the char-transformer step -----------------------------------------------------------
def _example() -> Any:
    """``examples/char_transformer.py`` as a module (its model and loss)."""
    folder = str(Path(__file__).resolve().parent.parent / "examples")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module("char_transformer")


def _char_setup(benchmark: Any) -> tuple[Any, np.ndarray, np.ndarray]:
    """The model (seeded, on the current context) and one batch of 32 (smoke: 4)
    windows of 32 characters of the example's text, vocabulary padded to 32."""
    ex = _example()
    nna.seed(0)
    model = ex.CharTransformer(32, 32, 64, 4, 2)
    text = ex.make_text(200, 0)
    chars = sorted(set(text))
    codes = np.array([chars.index(c) for c in text], np.int64)
    x, t = ex.windows(codes, 32)
    n = 4 if small(benchmark) else 32
    return model, x[:n], t[:n]


def _char_params(model: Any) -> dict[str, np.ndarray]:
    return {k: np.array(p.d) for k, p in model.named_parameters()}


def _torch_char_loss(torch: Any, P: dict[str, Any], x: Any, t: Any, layers: int = 2,
                     heads: int = 4) -> Any:
    """The example's model in torch, functionally, over parameters ``P`` named as
    nnarray's (``Linear.W`` is ``in x out``)."""
    tf = torch.nn.functional
    n, length = x.shape
    dim = P["tok.W"].shape[1]

    def lin(h, name):
        return h @ P[name + ".W"] + P[name + ".b"]

    def ln(h, name):
        return tf.layer_norm(h, (dim,), P[name + ".weight"], P[name + ".bias"], 1e-5)

    def split(h):
        return h.reshape(n, length, heads, dim // heads).transpose(1, 2)

    h = P["tok.W"][x] + P["pos.W"][:length]
    for i in range(layers):
        b = f"blocks.{i}."
        a = ln(h, b + "ln1")
        q, k, v = (split(lin(a, b + "attn." + s)) for s in "qkv")
        y = tf.scaled_dot_product_attention(q, k, v, is_causal=True)
        h = h + lin(y.transpose(1, 2).reshape(n, length, dim), b + "attn.out")
        h = h + lin(tf.gelu(lin(ln(h, b + "ln2"), b + "fc1")), b + "fc2")
    logits = lin(ln(h, "ln"), "head")
    return tf.cross_entropy(logits.reshape(n * length, -1), t.reshape(n * length))


def _char_first_loss(params: dict[str, np.ndarray], x: np.ndarray, t: np.ndarray):
    """A ``check``: the first step's loss equals the torch model's on the CPU."""
    try:
        import torch
    except ImportError:
        pytest.skip("torch not installed: the char-transformer rows check against it")
    P = {k: torch.from_numpy(v) for k, v in params.items()}
    with torch.no_grad():
        want = _torch_char_loss(torch, P, torch.from_numpy(x), torch.from_numpy(t)).item()
    return expect(np.float32(want), rtol=2e-4, atol=1e-5)


def _torch_char_step(ref: Reference, params: dict, x: np.ndarray, t: np.ndarray,
                     wrap: Any = None) -> Any:
    torch = ref.xp
    P = {k: torch.from_numpy(v.copy()).to(ref.device).requires_grad_(True)
         for k, v in params.items()}
    xb, tb = torch.from_numpy(x).to(ref.device), torch.from_numpy(t).to(ref.device)
    opt = torch.optim.SGD(P.values(), lr=LR)

    def loss(xb: Any, tb: Any) -> Any:
        return _torch_char_loss(torch, P, xb, tb)
    fn = wrap(loss) if wrap is not None else loss

    def step() -> Any:
        opt.zero_grad()
        out = fn(xb, tb)
        out.backward()
        opt.step()
        return out
    return step


@pytest.mark.parametrize("static", [False, True], ids=["define-by-run", "static"])
def test_char_step_nnarray(benchmark, backend, static):
    grad = require("nnarray.grad", "Variable", "auto_forward")
    solvers = require("nnarray.solvers", "SGD")
    benchmark.group = CHAR
    model, xs, ts = _char_setup(benchmark)
    check = _char_first_loss(_char_params(model), xs, ts)
    ex = _example()
    x, t = grad.Variable.from_numpy_array(xs), grad.Variable.from_numpy_array(ts)
    solver = solvers.SGD(LR)
    solver.set_parameters(model.parameters())
    if static:
        step = static_step(ex.lm_loss(model(x), t), solver)
    else:
        def step() -> Any:
            return eager_step(grad, solver, lambda: ex.lm_loss(model(x), t))
    # on OpenCL the embedding's gather reads its index-range flag to the host once per
    # step (ops/indexing.py check_indices; CUDA keeps it on the device)
    moves = int(backend.name.split(":")[0] == "opencl")
    measure(benchmark, backend, step, variant="static graph" if static else None,
            check=check, transfers=moves)


def test_char_step_torch(benchmark, ref):
    if not ref.name.startswith("torch"):
        pytest.skip("torch is this group's reference")
    benchmark.group = CHAR
    with nna.context_scope("numpy"):
        model, xs, ts = _char_setup(benchmark)
    params = _char_params(model)
    measure(benchmark, ref, _torch_char_step(ref, params, xs, ts),
            baseline=ref.name == "torch-cpu", check=_char_first_loss(params, xs, ts))


def test_char_step_torch_compile(benchmark, compiled):
    ref, wrap, label = compiled
    benchmark.group = CHAR
    with nna.context_scope("numpy"):
        model, xs, ts = _char_setup(benchmark)
    params = _char_params(model)
    measure(benchmark, ref, _torch_char_step(ref, params, xs, ts, wrap),
            label=label, check=_char_first_loss(params, xs, ts))


def test_char_model_matches_the_torch_model(backend):
    """Not timed: the torch model the rows compare with computes nnarray's loss, and
    one SGD step moves both alike (so every row times the same work)."""
    pytest.importorskip("torch")
    grad = require("nnarray.grad", "Variable", "auto_forward")
    solvers = require("nnarray.solvers", "SGD")

    class Tiny:
        disabled = True
    model, xs, ts = _char_setup(Tiny())
    params = _char_params(model)
    solver = solvers.SGD(LR)
    solver.set_parameters(model.parameters())
    x, t = grad.Variable.from_numpy_array(xs), grad.Variable.from_numpy_array(ts)
    losses = [float(eager_step(grad, solver, lambda: _example().lm_loss(model(x), t)).d)
              for _ in range(2)]
    step = _torch_char_step(Reference("torch-cpu"), params, xs, ts)
    want = [step().item() for _ in range(2)]
    np.testing.assert_allclose(losses, want, rtol=2e-4)
    assert losses[1] < losses[0]
