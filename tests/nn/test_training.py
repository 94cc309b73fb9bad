"""The training loop: minibatches, fit/evaluate, reports and logs, and a whole training
step under strict transfers on OpenCL."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, nn, solvers
from nnarray.training import Trainer, minibatches, variable


def blobs(n=120, seed=0):
    rng = np.random.default_rng(seed)
    t = rng.integers(0, 3, n)
    centers = np.array([[2, 0], [-2, 2], [0, -2]], np.float32)
    x = centers[t] + rng.standard_normal((n, 2)).astype(np.float32) * 0.5
    return x.astype(np.float32), t.astype(np.int64)


def mlp(seed=0):
    rng = np.random.default_rng(seed)
    return nn.Sequential(nn.Linear(2, 16, rng=rng), nn.relu, nn.Dropout(0.1),
                         nn.Linear(16, 3, rng=rng))


def test_minibatches_cover_everything_and_are_seeded():
    a = list(minibatches(10, 3, rng=np.random.default_rng(1)))
    b = list(minibatches(10, 3, rng=np.random.default_rng(1)))
    assert [len(i) for i in a] == [3, 3, 3, 1]
    assert sorted(np.concatenate(a).tolist()) == list(range(10))
    assert all((x == y).all() for x, y in zip(a, b))
    assert [i.tolist() for i in minibatches(5, 2, shuffle=False, drop_last=True)] == \
        [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="batch_size"):
        list(minibatches(5, 0))


def test_fit_learns_reports_and_logs(backend, tmp_path):
    x, t = blobs()
    out = io.StringIO()
    log = tmp_path / "log.jsonl"
    model = mlp()
    trainer = Trainer(model, solvers.Adam(0.05), batch_size=16, log_path=log,
                      progress=False, out=out)
    hist = trainer.fit((x, t), epochs=4, val=(x[:40], t[:40]))
    assert [r["epoch"] for r in hist] == [1, 2, 3, 4] and hist[-1]["iteration"] == 32
    assert set(hist[-1]) == {"epoch", "iteration", "loss", "accuracy", "val/loss",
                             "val/accuracy", "elapsed"}
    assert hist[-1]["loss"] < hist[0]["loss"] and hist[-1]["val/accuracy"] > 0.9
    lines = out.getvalue().strip().splitlines()
    assert len(lines) == 4 and lines[0].startswith("epoch   1") and "elapsed" in lines[0]
    recs = [json.loads(s) for s in log.read_text().splitlines()]
    assert recs[0]["run"] == 1 and recs[0]["epochs"] == 4 and recs[1:] == hist
    assert model.training  # evaluate() restored training mode


def test_evaluate_runs_without_graph_in_eval_mode():
    x, t = blobs(40)
    model = mlp()
    trainer = Trainer(model, solvers.SGD(0.1), progress=False, report=False)
    r1, r2 = trainer.evaluate(x, t), trainer.evaluate(x, t, batch_size=7)
    assert r1["loss"] == pytest.approx(r2["loss"], rel=1e-5)  # dropout off: deterministic
    assert 0 <= r1["accuracy"] <= 1


def test_regression_loss_has_no_accuracy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((20, 3)).astype(np.float32)
    y = x @ np.ones((3, 1), np.float32)
    trainer = Trainer(nn.Linear(3, 1), solvers.SGD(0.1), loss_fn=F.mean_squared_error,
                      batch_size=5, progress=False, report=False)
    hist = trainer.fit((x, y), epochs=5)
    assert "accuracy" not in hist[-1] and hist[-1]["loss"] < hist[0]["loss"]


def _opencl():
    if "opencl" not in nna.backends.registered():
        pytest.skip("opencl backend not registered")
    reason = nna.backends.why_unavailable("opencl")
    if reason is not None:
        pytest.skip(f"opencl unavailable: {reason}")


def test_training_step_under_strict_transfers_on_opencl():
    _opencl()
    x = np.random.default_rng(0).standard_normal((8, 1, 8, 8)).astype(np.float32)
    t = np.arange(8) % 10
    with nna.context_scope("opencl"):
        rng = np.random.default_rng(0)
        model = nn.Sequential(nn.Conv2d(1, 4, 3, pad=1, rng=rng), nn.BatchNorm(4), nn.relu,
                              lambda h: F.max_pooling(h, 2), nn.Linear(64, 10, rng=rng),
                              nn.Dropout(0.2))
        opt = solvers.Adam(0.01)
        trainer = Trainer(model, opt, progress=False, report=False)
        trainer.step(x, t)  # warm-up: kernel compilation
        nna.reset_transfer_stats()
        with nna.strict_transfers():  # any implicit move (or numpy fallback) raises
            loss, _, _ = trainer.step(x, t)
            opt.weight_decay(1e-4)
            with grad.no_grad():
                model.eval()
                model(variable(x))
        value = float(loss.data.get_data("r", "numpy"))  # the one explicit read
    assert np.isfinite(value)
    routes = nna.transfer_stats()["by_route"]
    assert set(routes) <= {("numpy:0", "opencl:0"), ("opencl:0", "numpy:0")}
    assert routes.get(("numpy:0", "opencl:0"), (0, 0))[0] == 3  # x, t and eval x uploads
    with nna.context_scope("opencl"), nna.strict_transfers():  # a whole epoch + evaluation
        trainer.fit((x, t), 1, val=(x, t))


def test_trainer_says_plainly_what_is_wrong_with_loss_and_labels():
    x, t = blobs(40)
    per_sample = lambda y, t: F.softmax_cross_entropy(y, t)  # noqa: E731
    trainer = Trainer(mlp(), solvers.SGD(0.1), loss_fn=per_sample, progress=False,
                      report=False)
    with pytest.raises(ValueError, match=r"the loss must be a scalar.*\(16,\)|\(32,\)"):
        trainer.fit((x, t), epochs=1)
    trainer = Trainer(mlp(), solvers.SGD(0.1), progress=False, report=False)
    with pytest.raises(TypeError, match="integer class labels, got float"):
        trainer.fit((x, t.astype(np.float32)), epochs=1)
    hist = trainer.fit((x.tolist(), t.tolist()), epochs=1)  # Python lists are fine
    assert len(hist) == 1 and np.isfinite(hist[0]["loss"])


def test_piped_output_has_no_progress_fragments_and_runs_are_separated(tmp_path):
    x, t = blobs(40)
    out = io.StringIO()  # not a terminal
    log = tmp_path / "log.jsonl"
    trainer = Trainer(mlp(), solvers.SGD(0.1), batch_size=8, out=out, log_path=log)
    trainer.fit((x, t), epochs=2)
    trainer.fit((x, t), epochs=1)
    assert "\r" not in out.getvalue() and "it/s" not in out.getvalue()
    assert len(out.getvalue().strip().splitlines()) == 3
    recs = [json.loads(s) for s in log.read_text().splitlines()]
    assert [r.get("run") for r in recs] == [1, None, None, 2, None]


def test_plot_writes_curves_or_says_how_to_get_matplotlib(tmp_path):
    x, t = blobs(40)
    path = tmp_path / "curves.png"
    trainer = Trainer(mlp(), solvers.SGD(0.1), progress=False, report=False, plot=path)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.warns(UserWarning, match=r"pip install 'nnarray\[plot\]'"):
            trainer.fit((x, t), epochs=2, val=(x, t))
        assert not path.exists()
        return
    trainer.fit((x, t), epochs=2, val=(x, t))
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_fit_and_evaluate_refuse_an_empty_dataset(backend):
    """An empty dataset reported loss 0.0 and accuracy 0.0 (issue 40 item 11)."""
    x, t = blobs(8)
    trainer = Trainer(mlp(), solvers.SGD(0.1), batch_size=4, progress=False, report=False)
    for where, call in [("fit", lambda: trainer.fit((x[:0], t[:0]), epochs=1)),
                        ("fit", lambda: trainer.fit((x, t), 1, val=(x[:0], t[:0]))),
                        ("evaluate", lambda: trainer.evaluate(x[:0], t[:0]))]:
        with pytest.raises(nna.InvalidValueError,
                           match=rf"Trainer.{where}.*empty \(0 samples.*batch_size 4"):
            call()
    assert trainer.history == [] and trainer.iteration == 0


@pytest.mark.parametrize("bs", [1.5, "3", True, float("inf")])
def test_trainer_batch_size_must_be_an_int(backend, bs):
    with pytest.raises(TypeError, match="Trainer: batch_size must be a positive int"):
        Trainer(mlp(), solvers.SGD(0.1), batch_size=bs)
    trainer = Trainer(mlp(), solvers.SGD(0.1), progress=False, report=False)
    x, t = blobs(8)
    with pytest.raises(TypeError, match="Trainer.evaluate: batch_size"):
        trainer.evaluate(x, t, batch_size=bs)
    with pytest.raises(TypeError, match="minibatches: batch_size"):
        list(minibatches(5, bs))
