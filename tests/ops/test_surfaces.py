"""Op declarations (``ops/surfaces.py``): ``F``, the namespace's chapters, numpy's protocol
and the ONNX exporter offer every declared function, read from its declaration."""

from __future__ import annotations

import inspect
import pickle

import numpy as np
import pytest
from helpers import A, check, sample

import nnarray as nna
import nnarray.functions as F
from nnarray import xp
from nnarray.ops import surfaces
from nnarray.ops.op import Op

DECLARED = surfaces.declared()


def test_the_declared_include_the_scans_and_logsumexp():
    assert {"cumulative_sum", "cumulative_prod", "logsumexp"} <= set(DECLARED)


#: The families whose surfaces read their declarations (issue 41 item 2)
FAMILIES = {
    "reductions": ("sum", "prod", "mean", "max", "min", "argmax", "argmin"),
    "shape": ("reshape", "transpose", "broadcast_to", "concatenate", "stack", "split",
              "slice", "getitem", "take"),
    "softmax and losses": ("softmax", "log_softmax", "one_hot", "softmax_cross_entropy",
                           "mean_squared_error"),
    "layers": ("conv2d", "im2col", "col2im", "max_pooling", "average_pooling",
               "batch_normalization", "layer_norm", "embedding", "dropout", "rand", "randn"),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_family_is_declared_and_its_ops_are_not_its_names(family):
    """Each function is declared with its op; the spec module's name is the function
    (the ``Op`` is ``<name>_op`` or private), so ``F`` reads it from there."""
    for name in FAMILIES[family]:
        s = DECLARED[name]
        module = inspect.getmodule(s.function)
        assert getattr(module, name) is s.function and isinstance(s.op, Op), name


def test_the_exporter_translates_with_the_declared_function():
    pytest.importorskip("onnx")
    from nnarray.grad import onnx_export
    for s in DECLARED.values():
        if s.onnx is not None:
            assert onnx_export._EXPORT[s.op.name] is s.onnx, s.name


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_f_offers_the_declared_function(name):
    s = DECLARED[name]
    assert getattr(F, name).__wrapped__ is s.function
    assert name in F.__all__ and isinstance(s.op, Op)


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_fs_declared_function_pickles_as_itself(name):
    """pickle finds F's wrapper (``name=``) under ``nnarray.functions``, not the spec's."""
    fn = getattr(F, name)
    assert pickle.loads(pickle.dumps(fn)) is fn


@pytest.mark.parametrize("name", sorted(n for n, s in DECLARED.items() if s.xp))
def test_the_chapter_offers_it_with_the_standards_keywords(name):
    chapter = getattr(xp, DECLARED[name].xp[0])
    fn = getattr(chapter, name)
    assert getattr(nna, name) is fn and name in chapter.__all__ and name in nna.__all__
    params = list(inspect.signature(fn).parameters.values())
    assert params[0].kind is inspect.Parameter.POSITIONAL_ONLY
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:])


#: numpy's arguments after the array, where ``axis=1`` is not one of them
NUMPY_ARGS = {"broadcast_to": ((4, 2, 3),), "transpose": ((1, 0),), "split": (3, 1)}


@pytest.mark.parametrize("name", sorted(n for n, s in DECLARED.items() if s.numpy))
def test_numpy_dispatches_to_it_on_the_device(backend, name):
    x = sample((2, 3), np.float32)
    np_fn = getattr(np, DECLARED[name].numpy[0])
    args, kw = NUMPY_ARGS.get(name, ()), {} if name in NUMPY_ARGS else {"axis": 1}
    got, want = np_fn(A(x), *args, **kw), np_fn(x, *args, **kw)
    pairs = zip(got, want) if type(want) is list else [(got, want)]  # split: a list
    for g, w in pairs:
        assert isinstance(g, nna.NdArray) and g.device == nna.Context(backend, 0)
        check(g, w)


def test_onnx_exports_the_declared_translations():
    pytest.importorskip("onnx")
    from nnarray.grad import onnx_export
    want = {s.op.name for s in DECLARED.values() if s.onnx is not None}
    assert want and want <= onnx_export.EXPORTED_OPS


def test_two_functions_under_one_name_are_refused():
    s = DECLARED["logsumexp"]

    def logsumexp(x):
        return x
    with pytest.raises(RuntimeError, match="two functions named 'logsumexp'"):
        surfaces.declare(s.op)(logsumexp)
    assert surfaces.declared()["logsumexp"] is s
