"""A small training loop in the spirit of Chainer's Trainer.

``Trainer(model, solver).fit((x, t), epochs, val=(xv, tv))`` iterates seeded, shuffled
minibatches of numpy datasets, uploads each batch explicitly to the current context, runs
forward/backward/update there, shows a tqdm progress bar, prints one report line per epoch
(loss, accuracy, elapsed) and can append each report to a JSON-lines log. Loss and
accuracy accumulate on the device and are read once per epoch.

``Trainer(..., comm=comm)`` trains data-parallel (``nnarray.distributed``): every rank
draws the same batches and trains on its contiguous shard of each; the solver averages
the gradients, weighted so that with a mean loss the step equals the whole batch's even
when the shards differ in size; evaluation shards the validation set; the epoch's loss
and accuracy are summed over the ranks; rank 0 alone shows progress, reports and logs.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

import numpy as np
from tqdm import tqdm

from . import functions as F
from . import grad
from .data import batch_size_of
from .errors import InvalidValueError
from .ndarray import NdArray, zeros
from .nn.module import Module
from .nn.parameter import place
from .ops.random import Generator, next_seed
from .solvers.solver import Solver


def minibatches(n: int, batch_size: int, shuffle: bool = True,
                rng: np.random.Generator | Generator | None = None,
                drop_last: bool = False) -> Iterator[np.ndarray]:
    """Index arrays covering ``range(n)`` in batches (a seeded permutation if ``shuffle``;
    ``rng=None``: a Philox generator seeded from ``nna.seed``'s stream)."""
    batch_size = batch_size_of("minibatches", batch_size)
    order = (rng or Generator(next_seed())).permutation(n) if shuffle else np.arange(n)
    stop = n - n % batch_size if drop_last else n
    for i in range(0, stop, batch_size):
        yield order[i:i + batch_size]


def shard(n: int, rank: int, size: int) -> tuple[int, int]:
    """``(start, stop)`` of rank ``rank``'s contiguous share of ``n`` items (sizes differ
    by at most one, larger first, as ``numpy.array_split``)."""
    q, r = divmod(n, size)
    start = rank * q + min(rank, r)
    return start, start + q + (rank < r)


def variable(a: np.ndarray) -> Any:
    """A no-grad ``grad.Variable`` holding ``a`` on the current context (explicit upload)."""
    v = grad.Variable.from_numpy_array(np.ascontiguousarray(a), need_grad=False)
    place(v.data)
    return v


def softmax_cross_entropy_loss(y: Any, t: Any) -> Any:
    """Mean cross entropy of logits ``y`` against integer labels ``t``."""
    return F.mean(F.softmax_cross_entropy(y, t))


def _count_correct(y: NdArray, t: NdArray) -> NdArray | None:
    """Number of rows whose argmax equals the label (on the device), or None when the
    output is not a classification."""
    if y.ndim != 2 or t.ndim != 1 or t.dtype.kind not in "iu":
        return None
    hit = F.equal(F.argmax(y, axis=1), F.cast(t, np.int64))
    return F.sum(F.cast(hit, np.float32))


class _Meter:
    """Running sums of loss and correct predictions kept on the device."""

    def __init__(self) -> None:
        self.loss: NdArray = zeros(())
        self.correct: NdArray | None = zeros(())
        self.n = 0

    def add(self, loss: NdArray, y: NdArray, t: NdArray) -> None:
        n = y.shape[0] if y.ndim else 1
        self.loss += F.cast(loss, np.float32) * float(n)
        c = _count_correct(y, t) if self.correct is not None else None
        if c is None:
            self.correct = None
        else:
            self.correct += c
        self.n += n

    def read(self, comm: Any = None) -> dict[str, float]:
        """Means over every sample seen (on every rank, with ``comm``)."""
        c = self.correct
        sums = np.array([float(self.loss.get_data("r", "numpy")),
                         0.0 if c is None else float(c.get_data("r", "numpy")),
                         self.n, c is not None], np.float64)
        if comm is not None and comm.size > 1:
            total = NdArray.from_numpy_array(sums)
            comm.all_reduce([total], op="sum")
            sums = total.numpy()
            classifier = sums[3] == comm.size
        else:
            classifier = c is not None
        n = max(sums[2], 1)
        out = {"loss": float(sums[0] / n)}
        if classifier:
            out["accuracy"] = float(sums[1] / n)
        return out


class Trainer:
    """Trains ``model`` with ``solver`` on numpy datasets under the current context.

    ``loss_fn(y, t)`` returns a scalar (default: mean softmax cross entropy); ``seed``
    seeds the shuffling; ``log_path`` appends one JSON object per epoch; ``progress``
    shows a tqdm bar; ``report`` prints one line per epoch to ``out``. ``comm``
    (``nnarray.distributed``) trains data-parallel: each rank on its shard of every batch
    (``batch_size`` is the global batch), with the solver's gradients averaged over the
    ranks; rank 0 alone shows progress, reports and logs. Each ``fit`` starts the log
    with a ``{"run": ..., "started": ...}`` line; the bar is shown only on a terminal (piped
    output gets the report lines alone). ``plot``: a file that ``fit`` writes the loss and
    metric curves to (needs matplotlib: ``pip install 'nnarray[plot]'``).
    """

    def __init__(self, model: Module, solver: Solver,
                 loss_fn: Callable[[Any, Any], Any] = softmax_cross_entropy_loss,
                 batch_size: int = 32, shuffle: bool = True, seed: int = 0,
                 weight_decay: float = 0.0, log_path: str | os.PathLike | None = None,
                 progress: bool = True, report: bool = True, out: TextIO | None = None,
                 comm: Any = None, plot: str | os.PathLike | None = None) -> None:
        self.model, self.solver, self.loss_fn = model, solver, loss_fn
        self.batch_size = batch_size_of("Trainer", batch_size)
        self.shuffle = bool(shuffle)
        self.comm = comm
        self.is_main = comm is None or comm.rank == 0
        if comm is not None:
            if solver.comm is None:  # gradients unaveraged would let the ranks drift apart
                solver.comm = comm
                if solver.params:
                    solver.set_parameters(solver.params)
            elif solver.comm is not comm:
                raise ValueError("Trainer: the solver was given another communicator")
            seed = comm.bcast_obj(seed)  # every rank draws the same batches
        self.rng = Generator(seed)  # Philox: the same batches on every backend
        self.decay = float(weight_decay)
        self.log_path = log_path if self.is_main else None
        self.progress, self.report = progress and self.is_main, report and self.is_main
        self.out = out or sys.stdout
        self.plot = plot if self.is_main else None
        self.epoch = 0
        self.iteration = 0
        self.history: list[dict[str, Any]] = []
        self.runs = 0  # fit calls (each starts the log with a "run" line)
        if not solver.params:
            solver.set_parameters(model.parameters())

    def step(self, x: np.ndarray, t: np.ndarray) -> tuple[Any, Any, Any]:
        """One iteration on a batch: forward, backward, update. Returns ``(loss, y, t)``
        Variables; nothing moves between devices but the explicit batch upload.

        With a ``comm`` of several ranks this rank runs its shard of the batch (returning
        ``(None, None, None)`` when the shard is empty) and its gradient is weighted by
        ``shard size * ranks / batch size`` before the solver averages it."""
        weight = 1.0
        comm = self.comm
        if comm is not None and comm.size > 1:
            n = len(x)
            start, stop = shard(n, comm.rank, comm.size)
            x, t = x[start:stop], t[start:stop]
            weight = (stop - start) * comm.size / n
        self.model.train()
        self.solver.zero_grad()
        loss = y = tv = None
        if len(x):
            xv, tv = variable(x), variable(t)
            with grad.auto_forward():
                y = self.model(xv)
                loss = self.loss_fn(y, tv)
            check_loss(loss)
            loss.backward()
            if weight != 1.0:
                self.solver.scale_grad(weight)
        if self.decay:
            self.solver.weight_decay(self.decay)
        self.solver.update()
        self.iteration += 1
        return loss, y, tv

    def evaluate(self, x: np.ndarray, t: np.ndarray,
                 batch_size: int | None = None) -> dict[str, float]:
        """Loss (and accuracy for classifiers) in evaluation mode without a graph. With a
        ``comm`` of several ranks each evaluates its shard of ``x`` and the sums are
        reduced: call it on every rank."""
        x, t = self._check_data(x, t, "evaluate")
        if batch_size is not None:
            batch_size = batch_size_of("Trainer.evaluate", batch_size)
        was_training = self.model.training
        self.model.eval()
        meter = _Meter()
        comm = self.comm
        if comm is not None and comm.size > 1:
            self._check_same("Trainer.evaluate", "the number of samples", (len(x),))
            start, stop = shard(len(x), comm.rank, comm.size)
            x, t = x[start:stop], t[start:stop]
        try:
            with grad.no_grad(), grad.auto_forward():
                for idx in minibatches(len(x), batch_size or self.batch_size, shuffle=False):
                    tv = variable(t[idx])
                    y = self.model(variable(x[idx]))
                    loss = self.loss_fn(y, tv)
                    check_loss(loss)
                    meter.add(loss.data, y.data, tv.data)
        finally:
            self.model.train(was_training)
        return meter.read(comm)

    def fit(self, train: tuple[np.ndarray, np.ndarray], epochs: int,
            val: tuple[np.ndarray, np.ndarray] | None = None) -> list[dict[str, Any]]:
        """Train for ``epochs`` epochs; returns (and keeps in ``history``) one record per
        epoch: ``epoch``, ``iteration``, ``loss``, ``accuracy``, ``val/...``, ``elapsed``."""
        x, t = self._check_data(*train, "fit")
        if val is not None:
            val = self._check_data(*val, "fit (val)")
        if self.comm is None or self.comm.size == 1:
            return self._fit(x, t, epochs, val)
        from .distributed import faults
        self._check_same("Trainer.fit", "(samples, batch_size, epochs, validation samples)",
                         (len(x), self.batch_size, epochs, None if val is None else len(val[0])))
        with faults.together("Trainer.fit"):  # a rank leaving aborts every rank
            history = self._fit(x, t, epochs, val)
            self.comm.barrier()  # none leaves while another still reports, logs, ...
        return history

    def _fit(self, x: np.ndarray, t: np.ndarray, epochs: int,
             val: tuple[np.ndarray, np.ndarray] | None) -> list[dict[str, Any]]:
        per_epoch = -(-len(x) // self.batch_size)
        start = time.perf_counter()
        # The bar counts iterations (minibatches) over all epochs; its label says which
        # epoch of how many, so "120/300" never reads as epochs.
        bar = tqdm(total=epochs * per_epoch, disable=not (self.progress and _tty(self.out)),
                   leave=False, unit="iter", file=self.out, dynamic_ncols=True)
        self.runs += 1
        self._log({"run": self.runs, "started":
                   time.strftime("%Y-%m-%dT%H:%M:%S"), "epochs": epochs, "samples": len(x)})
        last = self.epoch + epochs
        try:
            for _ in range(epochs):
                rec = self._epoch(x, t, bar, last)
                if val is not None:
                    rec.update({f"val/{k}": v for k, v in self.evaluate(*val).items()})
                rec["elapsed"] = time.perf_counter() - start
                self._record(rec, bar)
        finally:
            bar.close()
        if self.plot is not None:
            plot_history(self.history, self.plot)
        return self.history

    def _check_data(self, x: Any, t: Any, where: str) -> tuple[np.ndarray, np.ndarray]:
        """Inputs and targets as numpy arrays of one length; integer labels for the
        default classification loss (plain messages, before any step)."""
        x, t = np.asarray(x), np.asarray(t)
        if x.ndim == 0 or t.ndim == 0 or len(x) != len(t):
            raise ValueError(f"Trainer.{where}: inputs of shape {x.shape} and targets of "
                             f"shape {t.shape}: need one sample per row in both")
        if len(x) == 0:  # no batch: the loss and accuracy would read 0.0
            raise InvalidValueError(f"Trainer.{where}: the dataset is empty (0 samples of "
                                    f"shape {x.shape[1:]}, batch_size {self.batch_size}): "
                                    f"no batch to run")
        if self.loss_fn is softmax_cross_entropy_loss and t.dtype.kind not in "iu":
            raise TypeError(f"Trainer.{where}: the default loss (softmax cross entropy) "
                            f"needs integer class labels, got {t.dtype} (e.g. "
                            "np.asarray(labels, dtype=np.int64)); pass loss_fn= for "
                            "other targets")
        return x, t

    def _check_same(self, where: str, what: str, plan: tuple) -> None:
        """Ranks that would run different numbers of steps would wait forever in a
        collective, and sums over shards of different datasets mean nothing: raise on
        every rank instead."""
        from .distributed import DistributedError
        plans = self.comm.allgather_obj(plan)
        if len(set(plans)) > 1:
            shown = ", ".join(f"rank {r}: {p}" for r, p in enumerate(plans))
            raise DistributedError(f"{where}: the ranks disagree on {what}: {shown}")

    def _epoch(self, x: np.ndarray, t: np.ndarray, bar: Any, last: int) -> dict[str, Any]:
        meter = _Meter()
        self.epoch += 1
        bar.set_description(f"epoch {self.epoch}/{last}", refresh=False)
        for idx in minibatches(len(x), self.batch_size, self.shuffle, self.rng):
            loss, y, tv = self.step(x[idx], t[idx])
            if loss is not None:
                meter.add(loss.data, y.data, tv.data)
            bar.update(1)
        return {"epoch": self.epoch, "iteration": self.iteration, **meter.read(self.comm)}

    def _record(self, rec: dict[str, Any], bar: Any) -> None:
        self.history.append(rec)
        if self.report:
            bar.write(format_report(rec), file=self.out)
        self._log(rec)

    def _log(self, rec: dict[str, Any]) -> None:
        if self.log_path is not None:
            with open(self.log_path, "a") as f:
                f.write(json.dumps(rec) + "\n")


def check_loss(loss: Any) -> None:
    """A plain ``ValueError`` unless ``loss`` is a scalar (one element)."""
    if getattr(loss, "size", 1) != 1:
        raise ValueError(f"Trainer: the loss must be a scalar, but loss_fn returned shape "
                         f"{tuple(loss.shape)}: reduce it (e.g. F.mean of a per-sample loss)")


def _tty(out: Any) -> bool:
    """Whether ``out`` is a terminal (a progress bar's carriage returns belong there only)."""
    try:
        return bool(out.isatty())
    except (AttributeError, ValueError):
        return False


def plot_history(history: list[dict[str, Any]], path: str | os.PathLike) -> bool:
    """Write the loss and metric curves of ``fit``'s records to ``path`` with matplotlib;
    without it, warn how to get it and return False."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        import warnings
        warnings.warn("Trainer(plot=...) needs matplotlib: pip install 'nnarray[plot]' "
                      "(no plot written)", UserWarning, stacklevel=3)
        return False
    keys = [k for k in history[0] if k not in ("epoch", "iteration", "elapsed")] \
        if history else []
    groups = sorted({k.split("/")[-1] for k in keys})
    fig, axes = plt.subplots(1, max(len(groups), 1), figsize=(5 * max(len(groups), 1), 3.5),
                             squeeze=False)
    epochs = [r["epoch"] for r in history]
    for ax, g in zip(axes[0], groups):
        for k in keys:
            if k.split("/")[-1] == g:
                ax.plot(epochs, [r[k] for r in history], marker="o", label=k)
        ax.set_xlabel("epoch")
        ax.set_title(g)
        ax.legend()
    fig.tight_layout()
    fig.savefig(os.fspath(path))
    plt.close(fig)
    return True


def format_report(rec: dict[str, Any]) -> str:
    """One line: ``epoch 3  iter 120  loss 0.1234  accuracy 0.9650  ...  elapsed 1.2s``."""
    parts = [f"epoch {rec['epoch']:>3}", f"iter {rec['iteration']:>6}"]
    for k, v in rec.items():
        if k not in ("epoch", "iteration", "elapsed"):
            parts.append(f"{k} {v:.4f}")
    parts.append(f"elapsed {rec['elapsed']:.1f}s")
    return "  ".join(parts)
