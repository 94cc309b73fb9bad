"""The examples and ``python -m nnarray`` run end to end with their smallest settings."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs
from helpers import CHILD_LIMIT, child_env

import nnarray as nna

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
#: Collected whether or not available: an unavailable one skips (or fails, when
#: NNARRAY_REQUIRE_BACKENDS names it) with its reason instead of vanishing.
BACKENDS = ["numpy", "opencl"]


def env() -> dict:
    """The examples import this checkout; one BLAS thread each (2-core CI, busy machines:
    threaded BLAS under contention is many times slower)."""
    e = child_env()
    e.setdefault("OPENBLAS_NUM_THREADS", "1")
    e.setdefault("OMP_NUM_THREADS", "1")
    return e


def run(*args: str, timeout: float = CHILD_LIMIT) -> str:
    p = subprocess.run([sys.executable, *args], cwd=ROOT, env=env(), capture_output=True,
                       text=True, timeout=timeout)
    assert p.returncode == 0, f"{args} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}"
    return p.stdout


@pytest.mark.parametrize("backend", BACKENDS)
def test_chainer_mlp_stages_agree(backend):
    needs(backend)
    out = run(str(EXAMPLES / "chainer_mlp.py"), "--backend", backend, "--iters", "20",
              "--no-progress")
    assert out.count("loss@19") == 5 and "all stages agree with numpy" in out


def test_custom_functions():
    out = run(str(EXAMPLES / "custom_functions.py"), "--backend", "numpy")
    assert out.count("ok") >= 3 and "FAIL" not in out


@pytest.mark.parametrize("backend", BACKENDS)
def test_digits_cnn_two_short_epochs(backend, tmp_path):
    needs(backend)
    pytest.importorskip("sklearn")
    log = tmp_path / "log.jsonl"
    out = run(str(EXAMPLES / "digits_cnn.py"), "--backend", backend, "--epochs", "2",
              "--train-size", "600", "--min-accuracy", "0.6", "--no-progress", "--log", str(log),
              "--save", str(tmp_path / "cnn.npz"))
    assert "epoch   2" in out and "test accuracy" in out
    assert len(log.read_text().splitlines()) == 3 and (tmp_path / "cnn.npz").exists()


def test_digits_cnn_reaches_the_same_accuracy_on_numpy_and_opencl():
    """One Philox stream (issue 42): the same dropout masks and batches on both backends,
    so the runs differ only by float rounding: the first epoch's training loss agrees to
    1e-3 and the test accuracy is equal (before, 0.8384 against 0.8440, epoch-1 losses
    2.1064 and 2.0793)."""
    pytest.importorskip("sklearn")
    got = {}
    for backend in BACKENDS:
        needs(backend)
        out = run(str(EXAMPLES / "digits_cnn.py"), "--backend", backend, "--epochs", "2",
                  "--train-size", "600", "--min-accuracy", "0", "--no-progress", timeout=600)
        loss = float(re.search(r"epoch +1 .*? loss ([0-9.]+)", out).group(1))
        acc = float(re.search(r"test accuracy ([0-9.]+)", out).group(1))
        got[backend] = loss, acc
    (l0, a0), (l1, a1) = got.values()
    assert abs(l0 - l1) < 1e-3 and a0 == a1, got


@pytest.mark.parametrize("backend", BACKENDS)
def test_char_transformer_trains_and_samples(backend):
    needs(backend)
    out = run(str(EXAMPLES / "char_transformer.py"), "--backend", backend, "--steps", "12",
              "--warmup", "3", "--dim", "16", "--heads", "2", "--layers", "1", "--sample", "30")
    losses = [float(line.split("loss ")[1].split()[0]) for line in out.splitlines()
              if line.startswith("step")]
    assert len(losses) == 2 and losses[-1] < losses[0]
    assert "final loss after 12 steps" in out and "sample: " in out


@pytest.mark.parametrize("precision", ["bfloat16", "float16"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_char_transformer_trains_in_reduced_precision(backend, precision):
    needs(backend)
    args = ("--backend", backend, "--steps", "12", "--warmup", "3", "--dim", "16",
            "--heads", "2", "--layers", "1", "--sample", "5")

    def final(*more):
        out = run(str(EXAMPLES / "char_transformer.py"), *args, *more)
        return float(out.split("final loss after 12 steps: ")[1].split()[0])

    # autocast's products in 16 bits: the loss tracks float32's on the same data and seed
    assert abs(final("--precision", precision) - final()) < 0.02 * final()


@pytest.mark.parametrize("backend", BACKENDS)
def test_mxnet_symbol_tutorial(backend):
    needs(backend)
    out = run(str(EXAMPLES / "mxnet_symbol.py"), "--backend", backend)
    assert "all steps done" in out and out.count("  ok  ") == 7
    assert "round-trips exactly" in out and "raises" in out


def test_unavailable_backend_is_reported():
    if nna.backends.why_unavailable("cuda") is None:
        pytest.skip("cuda is available here")
    p = subprocess.run([sys.executable, str(EXAMPLES / "chainer_mlp.py"), "--backend", "cuda"],
                       cwd=ROOT, env=env(), capture_output=True, text=True, timeout=CHILD_LIMIT)
    assert p.returncode == 2 and "cuda unavailable" in p.stderr


def test_python_m_nnarray_trains_on_every_backend():
    out = run("-m", "nnarray", "--repeats", "2", "--iters", "4")
    for b in BACKENDS:
        if nna.backends.why_unavailable(b) is None:
            assert any(line.strip().startswith(b) and "ms/iteration" in line
                       for line in out.splitlines()), out
    assert "median of 2 runs" in out and "host threads:" in out


def test_python_m_nnarray_help_prints_usage_only():
    out = run("-m", "nnarray", "--help")
    assert out.startswith("usage: python -m nnarray") and "--repeats" in out
    assert "Training demo" not in out


def test_busy_host_note_names_openblas_threads(monkeypatch, capsys):
    """Issue 42: OpenBLAS's default threads made numpy runs several times slower on a busy
    2-core host and nothing said so; ``python -m nnarray`` now prints a note when the
    load is at least half the CPUs (and 1) and no ``*_NUM_THREADS`` limits the BLAS."""
    from nnarray.__main__ import busy_host_note, main
    note = busy_host_note(1.5, 2, {})
    assert note and "load 1.5 on 2 CPUs" in note and "OPENBLAS_NUM_THREADS=1" in note
    assert busy_host_note(0.9, 2, {}) is None and busy_host_note(15.0, 32, {}) is None
    assert busy_host_note(16.0, 32, {}) is not None
    for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        assert busy_host_note(4.0, 2, {k: "1"}) is None
    monkeypatch.setattr("os.getloadavg", lambda: (8.0, 8.0, 8.0))
    for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(k, raising=False)
    assert main(["--backend", "numpy", "--repeats", "1", "--iters", "1"]) == 0
    assert "note: this host is busy (load 8.0" in capsys.readouterr().out
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    assert main(["--backend", "numpy", "--repeats", "1", "--iters", "1"]) == 0
    assert "host is busy" not in capsys.readouterr().out


def test_examples_take_any_context_string():
    """``--backend`` takes ``backend:N``; a device that does not exist is reported."""
    needs("opencl")
    n = nna.backends.module("opencl").device_count()
    out = run(str(EXAMPLES / "custom_functions.py"), "--backend", f"opencl:{n - 1}")
    assert out.count("ok") >= 3 and "FAIL" not in out
    p = subprocess.run([sys.executable, str(EXAMPLES / "custom_functions.py"), "--backend",
                        f"opencl:{n}"], cwd=ROOT, env=env(), capture_output=True, text=True,
                       timeout=CHILD_LIMIT)
    assert p.returncode == 2 and f"opencl:{n}: no such device" in p.stderr
    p = subprocess.run([sys.executable, str(EXAMPLES / "chainer_mlp.py"), "--help"],
                       cwd=ROOT, env=env(), capture_output=True, text=True, timeout=CHILD_LIMIT)
    assert p.returncode == 0 and "training iterations per stage" in p.stdout


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.py")
                                         if "_cli.parser(" in p.read_text()))
def test_example_help_gives_the_whole_first_paragraph(name):
    """Issue 42: ``mxnet_symbol.py --help`` cut its description at the docstring's first
    line, mid-sentence; each example's ``--help`` gives its first paragraph whole."""
    doc = re.search(r'"""(.*?)"""', (EXAMPLES / name).read_text(), re.S).group(1)
    want = " ".join(doc.strip().split("\n\n")[0].split())
    out = run(str(EXAMPLES / name), "--help")
    assert want.endswith(".") and want in " ".join(out.split()), (want, out)


def _readme() -> str:
    return (ROOT / "README.md").read_text()


@pytest.mark.parametrize("i", range(len(re.findall(r"```python\n", _readme()))))
def test_readme_python_blocks_run_alone(i):
    """Each README code block is self-contained (a reader pastes one at a time)."""
    block = re.findall(r"```python\n(.*?)```", _readme(), re.S)[i]
    if "context_scope(\"opencl\")" in block or "device=\"opencl\"" in block:
        needs("opencl")
    run("-c", block)


def test_onnx_guide_block_runs(tmp_path):
    """The first block of docs/onnx.md exports and re-imports a model as written."""
    pytest.importorskip("onnx")
    text = (ROOT / "docs" / "onnx.md").read_text()
    block = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    p = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, env=env(),
                       capture_output=True, text=True, timeout=CHILD_LIMIT)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "net.onnx").stat().st_size > 0


def test_readme_links_stay_inside_the_repository():
    for target in re.findall(r"\]\(([^)#]+)", _readme()):
        if "://" in target:
            continue
        path = (ROOT / target).resolve()
        assert path.is_relative_to(ROOT) and path.exists(), target


@pytest.mark.parametrize("mode", ["define-by-run", "static"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_gradient_penalty_critic_separates(backend, mode):
    needs(backend)
    out = run(str(EXAMPLES / "gradient_penalty.py"), "--backend", backend,
              *(["--static"] if mode == "static" else []), timeout=600)
    assert "separated: W estimate" in out and "NOT" not in out


@pytest.mark.parametrize("backend", BACKENDS)
def test_pinn_loss_falls_below_its_bound(backend):
    needs(backend)
    out = run(str(EXAMPLES / "pinn.py"), "--backend", backend, timeout=600)
    assert "converged: loss" in out and "NOT" not in out
