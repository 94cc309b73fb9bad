"""A small causal transformer language model on characters, trained on a generated text.

Token and position embeddings, ``--layers`` pre-norm blocks (``LayerNorm`` ->
causal ``MultiheadAttention`` -> residual, ``LayerNorm`` -> ``GELU`` MLP -> residual), a
final ``LayerNorm`` and a linear head. Batches come from ``nnarray.data.DataLoader``; the
solver is ``AdamW`` with ``CosineSchedule`` (linear warmup) and ``nn.clip_grad_norm``. At
the end the model writes ``--sample`` characters, one at a time. ``--precision bfloat16``
(or ``float16``, with a ``LossScaler``) runs the products under ``nna.autocast``.

    python examples/char_transformer.py --backend opencl --steps 300
"""

from __future__ import annotations

import sys
import time

import _cli
import numpy as np

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, nn, solvers
from nnarray.data import DataLoader

SUBJECTS = ["the cat", "a dog", "the old man", "my sister", "the bird", "a child"]
VERBS = ["sees", "likes", "finds", "follows", "paints", "hears"]
OBJECTS = ["the moon", "a red ball", "the river", "an apple", "the small house", "the sea"]


def make_text(n_sentences: int, seed: int) -> str:
    """Sentences from a tiny grammar (seeded): structure a small model can learn."""
    rng = np.random.default_rng(seed)
    pick = lambda words: words[rng.integers(len(words))]  # noqa: E731
    return " ".join(f"{pick(SUBJECTS)} {pick(VERBS)} {pick(OBJECTS)}." for _ in
                    range(n_sentences))


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention and a GELU MLP, each residual."""

    def __init__(self, dim: int, heads: int) -> None:
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, causal=True)
        # base_axis=-1: over the last axis, as torch's Linear (the default flattens)
        self.fc1 = nn.Linear(dim, 4 * dim, base_axis=-1)
        self.fc2 = nn.Linear(4 * dim, dim, base_axis=-1)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class CharTransformer(nn.Module):
    """``(N, L)`` int64 characters -> ``(N, L, vocab)`` next-character logits."""

    def __init__(self, vocab: int, context: int, dim: int = 64, heads: int = 4,
                 layers: int = 2) -> None:
        self.context = context
        self.tok = nn.Embedding(vocab, dim, w_init=nn.initializers.Normal(0.02))
        self.pos = nn.Embedding(context, dim, w_init=nn.initializers.Normal(0.02))
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, base_axis=-1)

    def forward(self, idx):
        x = self.tok(idx) + self.pos.W[:idx.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def lm_loss(logits, targets):
    """Mean cross entropy over every position."""
    n, length, v = logits.shape
    return F.mean(F.softmax_cross_entropy(F.reshape(logits, (n * length, v)),
                                          F.reshape(targets, (n * length,))))


def windows(codes: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray]:
    """Every ``length``-character input and its one-shifted target."""
    starts = np.arange(len(codes) - length)
    idx = starts[:, None] + np.arange(length)
    return codes[idx], codes[idx + 1]


def sample(model: CharTransformer, prompt: np.ndarray, n: int, rng) -> list[int]:
    """``n`` characters drawn one at a time from the model's softmax."""
    out = list(prompt)
    with grad.no_grad(), grad.auto_forward():
        for _ in range(n):
            ctx = np.asarray(out[-model.context:], np.int64)[None]
            logits = model(grad.Variable.from_numpy_array(ctx))
            p = F.softmax(logits[0, -1]).data.numpy().astype(np.float64)
            out.append(int(rng.choice(len(p), p=p / p.sum())))
    return out[len(prompt):]


def main(argv: list[str] | None = None) -> int:
    ap = _cli.parser(__doc__)
    ap.add_argument("--steps", type=int, default=300, help="training steps")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--context", type=int, default=32, help="characters per sequence")
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=20, help="warmup steps of the schedule")
    ap.add_argument("--clip", type=float, default=1.0, help="gradient norm limit")
    ap.add_argument("--sample", type=int, default=200, help="characters to write at the end")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--precision", choices=("float32", "bfloat16", "float16"),
                    default="float32", help="autocast dtype of the products (float16 with "
                    "loss scaling); parameters and the optimizer stay float32")
    args = ap.parse_args(argv)
    if _cli.unavailable(args.backend):
        return 2
    text = make_text(2000, args.seed)
    chars = sorted(set(text))
    codes = np.array([chars.index(c) for c in text], np.int64)
    nna.seed(args.seed)  # initializers and the loader's shuffling
    with nna.context_scope(args.backend):
        model = CharTransformer(len(chars), args.context, args.dim, args.heads, args.layers)
        opt = solvers.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
        sched = solvers.CosineSchedule(opt, args.steps, warmup_steps=args.warmup)
        loader = DataLoader(windows(codes, args.context), args.batch_size, shuffle=True,
                            drop_last=True)
        print(f"{len(text)} characters, vocabulary {len(chars)}, "
              f"{sum(p.size for p in model.parameters().values())} parameters, "
              f"backend {args.backend}")
        low = None if args.precision == "float32" else np.dtype(getattr(nna, args.precision))
        scaler = solvers.LossScaler(enabled=args.precision == "float16")
        step, start, loss = 0, time.perf_counter(), None
        while step < args.steps:
            for x, y in loader:
                opt.zero_grad()
                with grad.auto_forward(), nna.autocast(low or nna.bfloat16, low is not None):
                    loss = lm_loss(model(grad.Variable.from_ndarray(x)),
                                   grad.Variable.from_ndarray(y))
                    scaled = scaler.scale(loss)  # define-by-run: the product runs now
                scaled.backward()
                scaler.unscale_(opt)  # the norm of the true gradients (a no-op if disabled)
                norm = nn.clip_grad_norm(model.parameters(), args.clip)
                lr = opt.lr  # this step's rate (the schedule sets the next one)
                scaler.step(opt)  # opt.update(), skipped on a non-finite float16 gradient
                scaler.update()
                sched.step()
                step += 1
                if step % 50 == 0 or step in (1, args.steps):
                    print(f"step {step:4d}  loss {float(loss.d):.4f}  grad norm {norm:.3f}  "
                          f"lr {lr:.2e}  {time.perf_counter() - start:.1f}s")
                if step == args.steps:
                    break
        print(f"final loss after {step} steps: {float(loss.d):.4f}")
        prompt = codes[:args.context]
        got = sample(model, prompt, args.sample, np.random.default_rng(args.seed))
    print("sample: " + "".join(chars[c] for c in prompt) + "|" + "".join(chars[c] for c in got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
