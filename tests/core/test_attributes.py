"""Assigning an array's attributes (issue 40 item 1): ``NdArray.shape`` reshapes in place
where no copy is needed (numpy's rule) and raises otherwise; every other attribute, and a
Variable's shape and dtype, refuses a value that would make it lie about its data."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import run_json_child

import nnarray as nna
import nnarray.functions as F
from nnarray import grad
from nnarray.errors import AttributeShapeError, DTypeError, GraphError, ShapeError


def _arange6() -> nna.NdArray:
    return nna.array(np.arange(6, dtype=np.float32)) + 0  # a kernel result on the backend


_CRASH = """
import json, sys
import numpy as np
import nnarray as nna
with nna.context_scope(sys.argv[1]):
    a = nna.array(np.arange(6, dtype=np.float32)) + 0
    try:
        a.shape = (1 << 20,)
        raised = None
    except nna.ShapeError as e:
        raised = str(e)
    a[1024:1 << 19] = 7  # the write that crashed the process where the shape was taken
    part = a[1024:1 << 19]
    print(json.dumps({"raised": raised, "shape": list(a.shape), "part": list(part.shape),
                      "values": a.numpy().tolist()}))
"""


def test_shape_of_another_size_is_refused_without_crashing(backend):
    """The issue's crash: a bigger shape was taken as is, and the write after it ran past
    the buffer (SIGSEGV); the read returned another array's values. Run in a child so a
    crash fails this test instead of ending pytest."""
    r = run_json_child(_CRASH, backend, timeout=600)
    assert r["raised"] is not None and "(1048576,)" in r["raised"] and "(6,)" in r["raised"]
    assert r["shape"] == [6] and r["part"] == [0]
    assert r["values"] == list(range(6))


def test_shape_of_another_size_leaves_the_array_unchanged(backend):
    a = _arange6()
    for bad in [(1 << 20,), (4,), (2, 4), (-1, 4), (-1, -1), ("a",), 7]:
        with pytest.raises(ShapeError, match="NdArray.shape"):
            a.shape = bad
    assert a.shape == (6,)
    assert a[1024:1 << 19].shape == (0,)
    np.testing.assert_array_equal(a.numpy(), np.arange(6))


def test_shape_assignment_reshapes_in_place(backend):
    """``a.shape = (2, 3)`` then ``sum(axis=0)``: ``[3, 5, 7]`` as numpy (it was ``15``:
    the kernel read the old one-axis copy)."""
    a, ref = _arange6(), np.arange(6, dtype=np.float32)
    a.shape = (2, 3)
    ref.shape = (2, 3)
    assert a.shape == (2, 3) and a.ndim == 2
    np.testing.assert_array_equal(a.sum(axis=0).numpy(), ref.sum(axis=0))
    np.testing.assert_array_equal((a * 2).numpy(), ref * 2)
    a[1, :] = 7  # writes land in the reshaped storage
    ref[1, :] = 7
    np.testing.assert_array_equal(a.numpy(), ref)
    a.shape = (-1, 2)
    ref.shape = (-1, 2)
    np.testing.assert_array_equal(a.sum(axis=1).numpy(), ref.sum(axis=1))
    a.shape = 6
    assert a.shape == (6,)


def test_shape_assignment_keeps_views_and_copies_of_the_root(backend):
    a = _arange6()
    v = a[2:]
    a.numpy()  # a second current copy (the host's) on a device backend
    a.shape = (3, 2)
    np.testing.assert_array_equal(v.numpy(), [2, 3, 4, 5])
    a[2] = -1  # through the reshaped root: the view sees it
    np.testing.assert_array_equal(v.numpy(), [2, 3, -1, -1])
    np.testing.assert_array_equal(a.numpy(), [[0, 1], [2, 3], [-1, -1]])


def test_shape_assignment_on_views_follows_numpy(backend):
    a, ref = _arange6(), np.arange(6, dtype=np.float32)
    a.shape = ref.shape = (2, 3)
    v, rv = a[:, 1:], ref[:, 1:]
    v.shape = rv.shape = (2, 2, 1)  # a view reshape numpy does without a copy
    np.testing.assert_array_equal(v.numpy(), rv)
    v[1] = 9
    rv[1] = 9
    np.testing.assert_array_equal(a.numpy(), ref)
    t, rt = a.T, ref.T
    with pytest.raises(AttributeError, match="Incompatible shape"):
        rt.shape = (6,)
    with pytest.raises(AttributeShapeError, match=r"shape \(6,\) for in-place .*\(3, 2\)"):
        t.shape = (6,)
    assert isinstance(AttributeShapeError("x"), AttributeError)
    assert t.shape == (3, 2)
    np.testing.assert_array_equal(t.numpy(), rt)


def test_dtype_assignment_is_refused_unless_unchanged(backend):
    a = _arange6()
    a.dtype = np.float32  # the same dtype: nothing to do
    for d in (np.int32, np.float64, np.uint8):
        with pytest.raises(DTypeError, match="NdArray.dtype.*astype"):
            a.dtype = d
    assert a.dtype == np.float32
    np.testing.assert_array_equal(a.numpy(), np.arange(6))


@pytest.mark.parametrize("attr,value", [("size", 3), ("ndim", 2), ("strides", (4,)),
                                        ("device", "numpy"), ("nbytes", 4), ("head", "x"),
                                        ("devices", []), ("version", 0), ("base", None),
                                        ("T", None), ("itemsize", 2)])
def test_derived_attributes_are_read_only(backend, attr, value):
    a = _arange6()
    a += 1  # version 1
    before = {k: getattr(a, k, None) for k in ("shape", "size", "ndim", "nbytes", "version")}
    with pytest.raises(AttributeError):
        setattr(a, attr, value)
    assert {k: getattr(a, k, None) for k in before} == before


def test_variable_shape_and_dtype_are_refused(backend):
    v = grad.Variable.from_numpy_array(np.arange(6, dtype=np.float32), need_grad=True)
    v.shape = (6,)
    v.dtype = np.float32
    with pytest.raises(AttributeShapeError, match="reset_shape"):
        v.shape = (2, 3)
    with pytest.raises(DTypeError, match="Variable.dtype"):
        v.dtype = np.float64
    assert v.shape == (6,) and v.dtype == np.float32
    for attr in ("d", "g"):
        with pytest.raises(ShapeError):
            setattr(v, attr, np.zeros((2, 3)))
    np.testing.assert_array_equal(v.d, np.arange(6))
    v.reset_shape((2, 3))  # the documented way, kept working
    assert v.shape == (2, 3) and v.d.shape == (2, 3)


def _refused(a: nna.NdArray) -> None:
    with pytest.raises(AttributeShapeError, match=r"\(6,\) to \(2, 3\).*a graph keeps"):
        a.shape = (2, 3)
    assert a.shape == (6,)


def test_arrays_a_graph_holds_refuse_in_place_reshapes(backend):
    """A Variable's data reshaped under it made kernels run on the new shape while the
    graph inferred the old one: ``F.sum(x, axis=0)`` gave a () result holding 3 values."""
    x = grad.Variable.from_numpy_array(np.arange(6, dtype=np.float32), need_grad=True)
    _refused(x.data)
    _refused(x.grad)
    nd = _arange6()
    v = grad.Variable.from_ndarray(nd)
    _refused(nd)
    w = grad.Variable((6,))
    w.data = _arange6()
    _refused(w.data)
    c = _arange6()
    y = x * c  # static: the graph reads the constant at each forward
    _refused(c)
    y.forward()
    np.testing.assert_array_equal(y.d, np.arange(6) ** 2)
    with grad.auto_forward():
        s = F.sum(x, axis=0)
    assert s.shape == () and float(s.d) == 15.0
    x.d.shape = (2, 3)  # a numpy handle's own shape: the Variable's data is untouched
    assert v.shape == x.shape == (6,)
    a, b = grad.Variable((6,), name="a"), grad.Variable((6,), name="b")
    nd_a, nd_b = _arange6(), _arange6()
    ex = grad.Graph(a * b).bind(backend, {"a": nd_a, "b": nd_b}, grad_req="write")
    _refused(nd_a)  # the executor's argument
    _refused(ex.grad_dict["b"])
    ex.forward()
    np.testing.assert_array_equal(ex.outputs[0].numpy(), np.arange(6) ** 2)
    view = x.data[1:]  # a view of a Variable's data has its own shape
    view.shape = (5, 1)
    assert x.data.shape == (6,)


def test_data_saved_for_backward_reshaped_in_place_is_refused(backend):
    c = _arange6()
    with grad.auto_forward():
        x = grad.Variable.from_numpy_array(np.arange(6, dtype=np.float32), need_grad=True)
        z = (x * c).sum()  # c is saved for the gradient of x
    c.shape = (2, 3)  # not a graph's own array: numpy's in-place reshape, version bumped
    with pytest.raises(GraphError, match="modified in place"):
        z.backward()
