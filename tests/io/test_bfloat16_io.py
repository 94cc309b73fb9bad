"""bfloat16 through the I/O paths: pickling, ``.npz`` checkpoints (modules and solver
states with float32 master weights), DLPack with PyTorch both ways (``kDLBfloat``; numpy,
which has no DLPack code for it, refuses with its own error) and ONNX export
(``BFLOAT16`` tensors, checked by ``onnx.checker`` and run by onnx's reference evaluator:
onnxruntime's CPU provider has no bfloat16 kernels for these ops)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import nnarray as nna
import nnarray.functions as F
from nnarray import grad, nn, solvers
from nnarray.errors import DTypeError

BF16 = nna.bfloat16


def bits(a) -> np.ndarray:
    return np.asarray(a).view(np.uint16)


def bf16_array(shape=(3, 4), seed=0) -> nna.NdArray:
    """A bfloat16 NdArray on the current backend, written there (an op's result)."""
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return nna.asarray(x).astype(BF16) * 1.0


def test_pickle_keeps_bits_and_device(backend):
    a = bf16_array()
    b = pickle.loads(pickle.dumps(a))
    assert b.dtype == BF16 and b.device.key == a.device.key
    np.testing.assert_array_equal(bits(b.numpy()), bits(a.numpy()))


def test_module_checkpoint_round_trips_and_refuses_a_float32_model(backend, tmp_path):
    nna.seed(0)
    m = nn.Linear(5, 3).bfloat16()
    m.save(tmp_path / "m.npz")
    m2 = nn.Linear(5, 3).bfloat16()
    m2.load(tmp_path / "m.npz")
    for k in ("W", "b"):
        p, q = getattr(m, k), getattr(m2, k)
        assert q.dtype == BF16
        np.testing.assert_array_equal(bits(q.d), bits(p.d))
    with pytest.raises(nn.CheckpointError, match="entry 'W' has dtype bfloat16, expected "
                       "float32"):
        nn.Linear(5, 3).load(tmp_path / "m.npz")


def test_solver_states_with_master_weights_round_trip(backend, tmp_path):
    nna.seed(1)
    m = nn.Linear(4, 2).bfloat16()
    opt = solvers.Adam(m.parameters(), lr=1e-2, master_dtype=nna.float32)
    x = nna.asarray(np.ones((3, 4), np.float32)).astype(BF16)
    with grad.auto_forward():
        for _ in range(2):
            opt.zero_grad()
            F.sum(m(x) * m(x)).backward()
            opt.step()
    opt.save_states(tmp_path / "s.npz")
    other = solvers.Adam(m.parameters(), lr=1e-2, master_dtype=nna.float32)
    other.load_states(tmp_path / "s.npz")
    assert other.states["W"]["master_weight"].dtype == nna.float32
    for k, st in opt.states.items():
        for s, a in st.items():
            np.testing.assert_array_equal(other.states[k][s].numpy(), a.numpy())


# -- DLPack ----------------------------------------------------------------------------
def test_dlpack_export_to_torch_is_bfloat16(backend):
    torch = pytest.importorskip("torch")
    a = bf16_array()
    t = torch.from_dlpack(a)
    assert t.dtype == torch.bfloat16 and tuple(t.shape) == a.shape
    np.testing.assert_array_equal(t.view(torch.int16).numpy().view(np.uint16),
                                  bits(a.numpy()))
    if backend == "numpy":  # the host buffer is shared: torch's writes are seen
        t[0, 0] = 5.0
        assert float(a.numpy()[0, 0]) == 5.0


def test_dlpack_import_from_torch_shares_a_writable_tensor(backend):
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3).to(torch.bfloat16) / 3
    a = nna.from_dlpack(t)
    assert a.dtype == BF16 and a.shape == (2, 3)
    np.testing.assert_array_equal(bits(a.numpy()), t.view(torch.int16).numpy().view(np.uint16))
    t[1, 2] = 7.0  # zero-copy, as for every other dtype
    assert float(a.numpy()[1, 2]) == 7.0
    got = (a * 2.0).numpy()  # and it computes on the current backend
    np.testing.assert_array_equal(got.astype(np.float32),
                                  (t.float().numpy() * 2).astype(BF16).astype(np.float32))


def test_dlpack_import_of_a_strided_torch_view_copies():
    torch = pytest.importorskip("torch")
    t = torch.arange(12, dtype=torch.bfloat16).reshape(3, 4)
    a = nna.from_dlpack(t.T)
    np.testing.assert_array_equal(a.numpy().astype(np.float32), t.T.float().numpy())
    t[0, 0] = 9.0
    assert float(a.numpy()[0, 0]) == 0.0


def test_dlpack_nnarray_to_nnarray_shares():
    a = bf16_array()
    b = nna.from_dlpack(a)
    assert b.dtype == BF16
    b[0, 0] = 3.0
    assert float(a.numpy()[0, 0]) == 3.0


def test_dlpack_consumers_without_bfloat16_refuse():
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="Unsupported dtype in DLTensor"):
        np.from_dlpack(bf16_array())  # numpy's own refusal: it reads no kDLBfloat
    with pytest.raises(DTypeError, match="from_dlpack: argument 'obj'.*float8"):
        nna.from_dlpack(torch.zeros(2, dtype=torch.float8_e4m3fn))


# -- ONNX ------------------------------------------------------------------------------
def test_onnx_export_of_a_bfloat16_graph(backend, tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx.reference import ReferenceEvaluator

    from nnarray.grad import onnx as gonnx
    rng = np.random.default_rng(0)
    lin = nn.Linear(6, 4, rng=rng).bfloat16()
    x = grad.Variable((3, 6), dtype=BF16)
    x.d = rng.standard_normal((3, 6)).astype(BF16)
    y = F.tanh(lin(x)) * 2.0
    y.forward()
    path = tmp_path / "bf16.onnx"
    gonnx.export([y], path, params=lin.parameters(), arg_names={id(x): "data"})  # checked
    model = onnx.load(str(path))
    BF = onnx.TensorProto.BFLOAT16
    assert [i.type.tensor_type.elem_type for i in model.graph.input] == [BF]
    assert [o.type.tensor_type.elem_type for o in model.graph.output] == [BF]
    assert {t.data_type for t in model.graph.initializer} == {BF}  # W, b, the constant 2
    (got,) = ReferenceEvaluator(model).run(None, {"data": x.d})
    assert got.dtype == BF16
    # the reference rounds after each node, as nnarray does: equal up to one bfloat16 ulp
    np.testing.assert_allclose(got.astype(np.float32), y.d.astype(np.float32),
                               rtol=2 ** -7, atol=2 ** -7)
    # and back: the imported graph holds bfloat16 parameters and gives the same values
    (out,), values = gonnx.import_model(path)
    assert {values[k].dtype for k in ("W", "b")} == {BF16}
    values["data"].d = x.d
    out.forward()
    assert out.dtype == BF16
    np.testing.assert_array_equal(out.d.astype(np.float32), y.d.astype(np.float32))
