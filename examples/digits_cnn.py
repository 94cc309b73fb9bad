"""A small CNN on scikit-learn's bundled 8x8 digits (no download).

Conv(1->16) + BatchNorm + relu + 2x2 max pool, Conv(16->32) + relu + pool, then a
Linear -> relu -> Dropout -> Linear classifier, trained with Adam by ``training.Trainer``
(progress bar, one report line per epoch) and evaluated on a held-out 20% split.

    python examples/digits_cnn.py --backend opencl --log digits.jsonl
"""

from __future__ import annotations

import functools
import sys
import time

import _cli
import numpy as np

import nnarray as nna
import nnarray.functions as F
from nnarray import nn, solvers
from nnarray.training import Trainer


def load(seed: int, test_fraction: float = 0.2, train_size: int | None = None):
    """``(x_train, t_train), (x_test, t_test)``: NCHW float32 in [0, 1], int64 labels
    (the first ``train_size`` shuffled training images if given)."""
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[:, None]
    t = d.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(len(x) * test_fraction)
    test, train = order[:n_test], order[n_test:][:train_size]
    return (x[train], t[train]), (x[test], t[test])


def make_model(rng: np.random.Generator) -> nn.Sequential:
    """The CNN; weights drawn from ``rng``."""
    pool = functools.partial(F.max_pooling, kernel=2)
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, pad=1, rng=rng), nn.BatchNorm(16), nn.relu, pool,   # 16x4x4
        nn.Conv2d(16, 32, 3, pad=1, rng=rng), nn.relu, pool,                    # 32x2x2
        nn.Linear(128, 64, rng=rng), nn.relu, nn.Dropout(0.2),
        nn.Linear(64, 10, rng=rng))


def main(argv: list[str] | None = None) -> int:
    ap = _cli.parser(__doc__)
    ap.add_argument("--epochs", type=int, default=12, help="passes over the training set")
    ap.add_argument("--batch-size", type=int, default=32, help="images per iteration")
    ap.add_argument("--lr", type=float, default=2e-3, help="Adam learning rate")
    ap.add_argument("--seed", type=int, default=0,
                    help="seed of the split, the weights, the shuffling and dropout")
    ap.add_argument("--train-size", type=int, default=None,
                    help="train on this many images only (quick runs)")
    ap.add_argument("--log", default=None, help="append per-epoch JSON lines here")
    ap.add_argument("--save", default=None, help="write the trained model's .npz here")
    ap.add_argument("--min-accuracy", type=float, default=0.97,
                    help="exit with status 1 below this test accuracy")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    if _cli.unavailable(args.backend):
        return 2
    train, test = load(args.seed, train_size=args.train_size)
    nna.seed(args.seed)  # dropout masks
    with nna.context_scope(args.backend):
        model = make_model(np.random.default_rng(args.seed))
        opt = solvers.Adam(args.lr)
        opt.set_parameters(model.parameters())
        trainer = Trainer(model, opt, batch_size=args.batch_size, seed=args.seed,
                          log_path=args.log, progress=not args.no_progress)
        print(f"digits CNN on {args.backend}: {len(train[0])} train / {len(test[0])} test "
              f"images, {sum(p.size for p in model.parameters().values())} parameters")
        t0 = time.perf_counter()
        trainer.fit(train, args.epochs, val=test)
        acc = trainer.evaluate(*test)["accuracy"]
        if args.save:
            model.save(args.save)
    print(f"test accuracy {acc:.4f} after {args.epochs} epochs "
          f"({time.perf_counter() - t0:.1f}s on {args.backend})")
    return 0 if acc >= args.min_accuracy else 1


if __name__ == "__main__":
    sys.exit(main())
