"""A transformer LM built from nnarray's layers trains like torch's: the example's
``CharTransformer`` and the same network written with torch's functions, from identical
weights, under AdamW + cosine schedule + gradient clipping, give the same losses,
gradient norms, learning rates and parameters on every backend (torch is the oracle)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import nnarray.functions as F
from nnarray import grad, nn, solvers

torch = pytest.importorskip(
    "torch", reason="torch is not installed: it is the oracle of this test (pip install torch)")
tF = torch.nn.functional

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from char_transformer import CharTransformer, lm_loss  # noqa: E402

VOCAB, CONTEXT, DIM, HEADS, LAYERS = 11, 8, 16, 2, 2
STEPS, LR, MIN_LR, DECAY, CLIP = 6, 1e-2, 1e-3, 0.1, 0.5


def torch_forward(P: dict, idx, targets):
    """``CharTransformer``'s forward and ``lm_loss`` in torch, on parameters ``P``."""
    n, length = idx.shape
    x = tF.embedding(idx, P["tok.W"]) + P["pos.W"][:length]
    for i in range(LAYERS):
        b = f"blocks.{i}."

        def lin(h, name, b=b):
            return h @ P[b + name + ".W"] + P[b + name + ".b"]

        def heads(h):
            return h.reshape(n, length, HEADS, DIM // HEADS).transpose(1, 2)

        h = tF.layer_norm(x, (DIM,), P[b + "ln1.weight"], P[b + "ln1.bias"])
        q, k, v = (heads(lin(h, f"attn.{s}")) for s in "qkv")
        y = tF.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + lin(y.transpose(1, 2).reshape(n, length, DIM), "attn.out")
        h = tF.layer_norm(x, (DIM,), P[b + "ln2.weight"], P[b + "ln2.bias"])
        x = x + lin(tF.gelu(lin(h, "fc1")), "fc2")
    x = tF.layer_norm(x, (DIM,), P["ln.weight"], P["ln.bias"])
    logits = x @ P["head.W"] + P["head.b"]
    return tF.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def test_transformer_lm_trains_as_torch(backend):
    rng = np.random.default_rng(0)
    model = CharTransformer(VOCAB, CONTEXT, DIM, HEADS, LAYERS)
    for p in model.parameters().values():  # nonzero biases and norms: every path counts
        p.d = (p.d + rng.normal(0, 0.05, p.shape)).astype(np.float32)
    P = {k: torch.tensor(v.d, requires_grad=True) for k, v in model.parameters().items()}
    opt = solvers.AdamW(model.parameters(), lr=LR, weight_decay=DECAY)
    sched = solvers.CosineSchedule(opt, STEPS, min_lr=MIN_LR)
    topt = torch.optim.AdamW(list(P.values()), lr=LR, weight_decay=DECAY)
    tsched = torch.optim.lr_scheduler.CosineAnnealingLR(topt, STEPS, eta_min=MIN_LR)
    for step in range(STEPS):
        x = rng.integers(0, VOCAB, (4, CONTEXT))
        t = rng.integers(0, VOCAB, (4, CONTEXT))
        opt.zero_grad()
        with grad.auto_forward():
            loss = lm_loss(model(grad.Variable.from_numpy_array(x)),
                           grad.Variable.from_numpy_array(t))
        loss.backward()
        norm = nn.clip_grad_norm(model.parameters(), CLIP)
        lr = opt.lr
        opt.update()
        sched.step()

        topt.zero_grad()
        tloss = torch_forward(P, torch.tensor(x), torch.tensor(t))
        tloss.backward()
        tnorm = float(torch.nn.utils.clip_grad_norm_(list(P.values()), CLIP))
        tlr = topt.param_groups[0]["lr"]
        topt.step()
        tsched.step()

        assert abs(float(loss.d) - tloss.item()) < 1e-3, (step, float(loss.d), tloss.item())
        assert abs(norm - tnorm) < 1e-3 * max(1.0, tnorm), (step, norm, tnorm)
        assert norm > CLIP  # clipping took part
        assert abs(lr - tlr) < 1e-9, (step, lr, tlr)
    for k, p in model.parameters().items():
        # The key projection's bias adds one constant to each row of scores, which the
        # softmax cancels: its gradient is rounding noise on both sides, and Adam's
        # normalized step turns noise into steps of up to lr. Only that bound holds there.
        atol = 2 * LR * STEPS if k.endswith("attn.k.b") else 1e-3
        np.testing.assert_allclose(p.d, P[k].detach().numpy(), atol=atol, rtol=1e-3,
                                   err_msg=k)
    assert abs(opt.lr - tsched.get_last_lr()[0]) < 1e-9


@pytest.mark.parametrize("make", [
    (lambda ps: solvers.RMSprop(ps, lr=0.01, alpha=0.9),
     lambda ps: torch.optim.RMSprop(ps, lr=0.01, alpha=0.9)),
    (lambda ps: solvers.Adagrad(ps, lr=0.1, lr_decay=0.01),
     lambda ps: torch.optim.Adagrad(ps, lr=0.1, lr_decay=0.01)),
    (lambda ps: solvers.AdamW(ps, lr=0.05, weight_decay=0.5),
     lambda ps: torch.optim.AdamW(ps, lr=0.05, weight_decay=0.5)),
], ids=["RMSprop", "Adagrad", "AdamW"])
def test_solver_matches_torch(backend, make):
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal((3, 4)).astype(np.float32)
    w = grad.Variable.from_numpy_array(w0, need_grad=True)
    tw = torch.tensor(w0, requires_grad=True)
    opt, topt = make[0]([w]), make[1]([tw])
    for _ in range(5):
        x = rng.standard_normal((2, 3)).astype(np.float32)
        opt.zero_grad()
        with grad.auto_forward():
            loss = F.sum(F.tanh(F.matmul(grad.Variable.from_numpy_array(x), w)))
        loss.backward()
        opt.update()
        topt.zero_grad()
        torch.tanh(torch.tensor(x) @ tw).sum().backward()
        topt.step()
    np.testing.assert_allclose(w.d, tw.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert not np.allclose(w.d, w0)


def test_step_schedule_matches_torch():
    w = grad.Variable.from_numpy_array(np.zeros(2, np.float32), need_grad=True)
    opt = solvers.SGD([w], lr=0.3)
    sched = solvers.StepSchedule(opt, step_size=3, gamma=0.5)
    topt = torch.optim.SGD([torch.zeros(2, requires_grad=True)], lr=0.3)
    tsched = torch.optim.lr_scheduler.StepLR(topt, step_size=3, gamma=0.5)
    for _ in range(10):
        assert abs(opt.lr - topt.param_groups[0]["lr"]) < 1e-12
        sched.step()
        topt.step()  # torch wants a step before its schedule's
        tsched.step()


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_functions_match_torch(backend, approximate):
    """gelu, layer_norm, embedding (repeated indices) and masked attention, values and
    gradients, against torch."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 5, 6)).astype(np.float32) * 2
    W = rng.standard_normal((4, 6)).astype(np.float32)
    idx = np.array([[0, 3, 3, 1, 0], [2, 2, 2, 3, 1]])
    mask = rng.random((5, 5)) > 0.3
    np.fill_diagonal(mask, True)

    def run(lib):
        if lib == "torch":
            xs, Ws = torch.tensor(x, requires_grad=True), torch.tensor(W, requires_grad=True)
            f, emb, ln, sdpa, ix, m = (tF.gelu, tF.embedding, tF.layer_norm,
                                       tF.scaled_dot_product_attention, torch.tensor(idx),
                                       torch.tensor(mask))
        else:
            xs = grad.Variable.from_numpy_array(x, need_grad=True)
            Ws = grad.Variable.from_numpy_array(W, need_grad=True)
            f, emb, ln, sdpa, ix, m = (F.gelu, F.embedding, F.layer_norm,
                                       F.scaled_dot_product_attention,
                                       grad.Variable.from_numpy_array(idx),
                                       grad.Variable.from_numpy_array(mask))
        with grad.auto_forward():
            h = f(ln(xs, (6,)), approximate=approximate) + emb(ix, Ws)
            y = sdpa(h, h, h, attn_mask=m)
            out = (y * y).sum() if lib == "torch" else F.sum(y * y)
        out.backward()
        g = (xs.grad.numpy(), Ws.grad.numpy()) if lib == "torch" else (xs.g, Ws.g)
        return float(out.detach() if lib == "torch" else out.d), g

    (a, ga), (b, gb) = run("nnarray"), run("torch")
    assert abs(a - b) < 1e-4 * max(1, abs(b))
    for u, v in zip(ga, gb):
        np.testing.assert_allclose(u, v, rtol=1e-4, atol=1e-4)
