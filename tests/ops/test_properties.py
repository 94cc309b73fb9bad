"""Property tests against numpy: random broadcastable shapes and dtypes for elementwise ops,
random shapes/axes/keepdims for reductions, random basic-indexing keys."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import A, check
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

import nnarray.functions as F

pytestmark = pytest.mark.usefixtures("no_fallback")  # a backend runs its own kernels

DTYPES = [np.float16, np.float32, np.float64, np.int32, np.int64, np.bool_]
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def sample(shape, dtype, seed) -> np.ndarray:
    """Quarters in [-4, 4] for floats (exact sums), small ints, or bools."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    v = rng.integers(-16, 17, shape)
    return v.astype(dtype) if dtype.kind == "i" else (v / 4).astype(dtype)


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
          "maximum": np.maximum, "minimum": np.minimum, "less": np.less,
          "greater_equal": np.greater_equal, "equal": np.equal}
scalars = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, -1.25, 2.0]), st.booleans())


@SETTINGS
@given(name=st.sampled_from(sorted(BINARY)), shapes=mutually_broadcastable_shapes(
    num_shapes=2, max_dims=4, max_side=4), da=st.sampled_from(DTYPES),
    db=st.sampled_from(DTYPES), scalar=st.one_of(st.none(), scalars),
    seed=st.integers(0, 2**16))
def test_binary_broadcasting(backend, name, shapes, da, db, scalar, seed):
    """Arrays (or one weak Python scalar) of broadcastable shapes: numpy's values and dtype."""
    sa, sb = shapes.input_shapes
    a = sample(sa, da, seed)
    b = sample(sb, db, seed + 1) if scalar is None else scalar
    if name == "div":
        b = np.where(b == 0, np.ones_like(b), b) if scalar is None else (b or 1)
    if name == "sub" and a.dtype == np.bool_ and np.result_type(a, b) == np.bool_:
        return  # a documented error (test_errors)
    want = BINARY[name](a, b)
    bb = A(b) if scalar is None else b
    check(getattr(F, name)(A(a), bb), want)
    if name not in ("div", "sub"):  # commutative or mirrored comparisons: swap operands
        check(getattr(F, name)(bb, A(a)), BINARY[name](b, a))


@st.composite
def reduction_case(draw):
    shape = draw(array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=5))
    nd = len(shape)
    kind = draw(st.sampled_from(["none", "int", "tuple"]) if nd else st.just("none"))
    if kind == "none":
        axis = None
    elif kind == "int":
        axis = draw(st.integers(-nd, nd - 1))
    else:
        axes = draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True))
        axis = tuple(a - nd if draw(st.booleans()) else a for a in axes)
    return shape, axis


@SETTINGS
@given(name=st.sampled_from(["sum", "mean", "max", "min"]), case=reduction_case(),
       dtype=st.sampled_from(DTYPES), keepdims=st.booleans(), seed=st.integers(0, 2**16))
def test_reductions(backend, name, case, dtype, keepdims, seed):
    shape, axis = case
    x = sample(shape, dtype, seed)
    check(getattr(F, name)(A(x), axis=axis, keepdims=keepdims),
          getattr(np, name)(x, axis=axis, keepdims=keepdims))


@SETTINGS
@given(case=reduction_case(), dtype=st.sampled_from(DTYPES[:5]), keepdims=st.booleans(),
       seed=st.integers(0, 2**16))
def test_argmax(backend, case, dtype, keepdims, seed):
    shape, axis = case
    if isinstance(axis, tuple):
        axis = axis[0]
    x = sample(shape, dtype, seed)
    check(F.argmax(A(x), axis=axis, keepdims=keepdims), np.argmax(x, axis=axis, keepdims=keepdims))


@st.composite
def index_case(draw):
    shape = draw(array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=6))
    key, i, used_ellipsis = [], 0, False
    while i < len(shape):
        k = draw(st.sampled_from(["int", "slice", "slice", "none", "ellipsis", "stop"]))
        if k == "stop":
            break
        if k == "int":
            key.append(draw(st.integers(-shape[i], shape[i] - 1)))
        elif k == "slice":
            bound = st.one_of(st.none(), st.integers(-shape[i] - 2, shape[i] + 2))
            key.append(slice(draw(bound), draw(bound),
                             draw(st.one_of(st.none(), st.sampled_from([1, 2, 3, -1, -2])))))
        elif k == "none":
            key.append(None)
            continue
        elif not used_ellipsis:
            key.append(Ellipsis)
            used_ellipsis = True
            break
        i += 1
    if used_ellipsis and draw(st.booleans()):
        key.append(draw(st.integers(-shape[-1], shape[-1] - 1)))
    return shape, tuple(key)


@SETTINGS
@given(case=index_case(), dtype=st.sampled_from([np.float32, np.int64, np.bool_]),
       seed=st.integers(0, 2**16))
def test_basic_indexing(backend, case, dtype, seed):
    shape, key = case
    x = sample(shape, dtype, seed)
    check(A(x)[key], x[key])
