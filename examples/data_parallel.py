"""Data-parallel training of the digits CNN: every rank trains on its shard of each batch.

Launch one process per device (or per core) with MPI; a plain run is a world of one:

    mpiexec -n 2 python examples/data_parallel.py --backend numpy
    python examples/data_parallel.py            # the same training on one process

``--backend`` picks the device kind; ``dist.init`` places each rank on its own device of
that kind (``cuda:<local rank>`` for CUDA, ``opencl:<local rank % devices>``). Rank 0 shows
the progress bar and the report lines; every rank prints its own throughput.
"""

from __future__ import annotations

import sys
import time

import _cli
import numpy as np
from digits_cnn import load, make_model

import nnarray as nna
from nnarray import distributed as dist
from nnarray import solvers
from nnarray.training import Trainer, shard


def main(argv: list[str] | None = None) -> int:
    ap = _cli.parser(__doc__)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=64, help="global batch (all ranks)")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train-size", type=int, default=None,
                    help="train on this many images only (quick runs)")
    ap.add_argument("--log", default=None, help="append per-epoch JSON lines here (rank 0)")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    if _cli.unavailable(args.backend):
        return 2
    # each rank's device is chosen by its local rank: only the backend name is used
    comm = dist.init(backend=nna.Context.parse(args.backend).backend)
    train, test = load(args.seed, train_size=args.train_size)
    nna.seed(args.seed + comm.rank)  # dropout masks differ per rank, as per sample
    with nna.context_scope(comm.ctx):
        model = make_model(np.random.default_rng(args.seed))
        opt = solvers.Adam(args.lr, comm=comm)  # averages gradients over the ranks
        trainer = Trainer(model, opt, batch_size=args.batch_size, seed=args.seed,
                          log_path=args.log, progress=not args.no_progress, comm=comm)
        if comm.rank == 0:
            print(f"digits CNN, {comm.size} rank(s), global batch {args.batch_size}: "
                  f"{len(train[0])} train / {len(test[0])} test images", flush=True)
        comm.barrier()
        t0 = time.perf_counter()
        hist = trainer.fit(train, args.epochs, val=test)
        nna.device_synchronize()
        elapsed = time.perf_counter() - t0
    # the samples this rank computed: its shard of every batch, validation excluded
    sizes = np.diff([*range(0, len(train[0]), args.batch_size), len(train[0])])
    mine = args.epochs * sum(b - a for a, b in (shard(int(n), comm.rank, comm.size)
                                                 for n in sizes))
    print(f"rank {comm.rank}/{comm.size} on {comm.ctx}: {mine} samples in {elapsed:.2f}s = "
          f"{mine / elapsed:.0f} samples/s ({trainer.iteration / elapsed:.1f} steps/s)",
          flush=True)
    comm.barrier()
    if comm.rank == 0:
        print(f"test accuracy {hist[-1]['val/accuracy']:.4f} after {args.epochs} epochs; "
              f"{len(train[0]) * args.epochs / elapsed:.0f} samples/s over all ranks "
              "(validation included in the time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
