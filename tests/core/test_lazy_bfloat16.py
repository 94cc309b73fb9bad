"""``ml_dtypes`` (most of ``import nnarray``'s time) is imported on first use of bfloat16
only: a float32 workflow never imports it, and every way bfloat16 comes in loads it.

Each check runs in a fresh Python (a plain ``subprocess``: ``tests/forked.py``'s server
has ``ml_dtypes`` imported already), which prints JSON the test compares."""

from __future__ import annotations

import json
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import nnarray as nna
from nnarray import dtypes

FLOAT32_WORKFLOW = r"""
import json, sys
import numpy as np
import nnarray as nna
import nnarray.functions as F
from nnarray import grad, nn

backend, path = sys.argv[1], sys.argv[2]
out = {}
with nna.context_scope(backend):
    x = nna.asarray(np.arange(6, dtype=np.float32).reshape(2, 3) / 6)
    out["ops"] = nna.sum(nna.exp(x) * 2 + nna.matmul(x, x.T)[0, 0]).item()
    v = grad.Variable.from_numpy_array(np.arange(3, dtype=np.float32), need_grad=True)
    with grad.auto_forward():
        loss = F.sum(v * v)
    loss.backward()
    out["dbr_grad"] = v.grad.numpy().tolist()
    w = grad.Variable.from_numpy_array(np.arange(3, dtype=np.float32) / 4, need_grad=True)
    y = F.sum(F.tanh(w))  # static: recorded, then run
    y.forward()
    y.backward()
    out["static"] = [float(y.d), w.grad.numpy().tolist()]
    m = nn.Linear(3, 2, rng=np.random.default_rng(0))
    m.save(path)
    m2 = nn.Linear(3, 2, rng=np.random.default_rng(1))
    m2.load(path)
    out["npz"] = [str(a.dtype) for a in m2.state_dict().values()] + [
        bool(np.array_equal(a.numpy(), b.numpy()))
        for a, b in zip(m.state_dict().values(), m2.state_dict().values())]
out["ml_dtypes"] = "ml_dtypes" in sys.modules
print(json.dumps(out))
"""


def child(code: str, *args: str) -> dict:
    """Run ``code`` in a new Python; its last line of output, as JSON."""
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_import_and_a_float32_workflow_leave_ml_dtypes_out(backend, tmp_path):
    out = child(FLOAT32_WORKFLOW, backend, str(tmp_path / "m.npz"))
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 6
    np.testing.assert_allclose(out["ops"], np.sum(np.exp(x) * 2 + (x @ x.T)[0, 0]), rtol=1e-5)
    np.testing.assert_allclose(out["dbr_grad"], [0, 2, 4])
    w = np.arange(3) / 4
    np.testing.assert_allclose(out["static"][0], np.tanh(w).sum(), rtol=1e-5)
    np.testing.assert_allclose(out["static"][1], 1 - np.tanh(w) ** 2, rtol=1e-5)
    assert out["npz"] == ["float32", "float32", True, True]
    assert out["ml_dtypes"] is False


ASKED_FOR = r"""
import json, sys
import numpy as np
import nnarray as nna
how = sys.argv[1]
with nna.context_scope(sys.argv[2]):
    if how == "attribute":
        d = nna.bfloat16
    elif how == "string":
        d = nna.asarray([1.5, 3.0], dtype="bfloat16").dtype
    elif how == "dtypes":
        from nnarray.dtypes import bfloat16 as d
    elif how == "autocast":
        d = nna.autocast().dtype
    elif how == "user_array":
        import ml_dtypes
        d = nna.asarray(np.array([1.5, 3.0], dtype=ml_dtypes.bfloat16)).dtype
    elif how == "npz":
        from nnarray.nn import npz
        d = npz.read(sys.argv[3])["w"].dtype
    elif how == "onnx":  # onnx's reader imports ml_dtypes for BFLOAT16 tensors
        from nnarray.grad import onnx as gonnx
        d = gonnx.import_model(sys.argv[3])[1]["W"].dtype
    elif how == "dlpack":
        import torch
        d = nna.from_dlpack(torch.tensor([1.5, 3.0], dtype=torch.bfloat16)).dtype
    x = nna.asarray(np.array([1.5, 3.0], np.float32)).astype(d)
    print(json.dumps([str(d), (x * 2).numpy().astype(np.float32).tolist(),
                      "ml_dtypes" in sys.modules]))
"""


def onnx_model(path: str) -> None:
    """A bfloat16 ``nn.Linear`` exported to ONNX at ``path`` (initializers ``W``, ``b``)."""
    from nnarray import grad, nn
    from nnarray.grad import onnx as gonnx
    lin = nn.Linear(2, 2, rng=np.random.default_rng(0)).bfloat16()
    x = grad.Variable((1, 2), dtype=nna.bfloat16)
    y = lin(x)
    y.forward()
    gonnx.export([y], path, params=lin.parameters(), arg_names={id(x): "data"})


@pytest.mark.parametrize("how", ["attribute", "string", "dtypes", "autocast", "user_array",
                                 "npz", "onnx", "dlpack"])
def test_each_way_bfloat16_comes_in_imports_ml_dtypes(how, tmp_path):
    path = str(tmp_path / "bf16.npz")
    np.savez(path, w=np.array([1.5, 3.0], dtype=ml_dtypes.bfloat16))
    if how == "dlpack":
        pytest.importorskip("torch")
    if how == "onnx":
        pytest.importorskip("onnx")
        path = str(tmp_path / "bf16.onnx")
        onnx_model(path)
    assert child(ASKED_FOR, how, "numpy", path) == ["bfloat16", [3.0, 6.0], True]


def test_bfloat16_by_name_in_a_fresh_process_on_each_backend(backend):
    assert child(ASKED_FOR, "string", backend) == ["bfloat16", [3.0, 6.0], True]


def test_dtype_sets_answer_bfloat16_once_ml_dtypes_is_loaded():
    bf16 = np.dtype(ml_dtypes.bfloat16)
    assert dtypes.is_bfloat16(bf16) and not dtypes.is_bfloat16(np.dtype(np.float16))
    assert not dtypes.is_bfloat16(ml_dtypes.bfloat16)  # the scalar type is not a dtype
    assert not dtypes.is_bfloat16(bf16.newbyteorder(">"))  # unsupported, as ">f4" is
    assert bf16.newbyteorder(">") not in dtypes.SUPPORTED
    for s in (dtypes.SUPPORTED, dtypes.FLOATS, dtypes.LOW, dtypes.INEXACT):
        assert bf16 in s and bf16 in list(s) and len(list(s)) == len(s)
    assert np.dtype(np.complex64) in dtypes.INEXACT and np.dtype(np.int8) not in dtypes.FLOATS
    assert "bfloat16" not in dtypes.FLOATS  # a name is not a dtype (as in a frozenset)
    assert set(dtypes.LOW) == {np.dtype(np.float16), bf16}
    assert nna.bfloat16 is nna.xp.bfloat16 is dtypes.bfloat16 == bf16
    assert "bfloat16" in nna.__all__
    assert nna.isdtype(bf16, "real floating") and nna.isdtype(bf16, "numeric")
