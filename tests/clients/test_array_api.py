"""``import nnarray as xp``: the Array API 2023.12 namespace (API.md §7)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import CHILD_LIMIT, A, available, case, check, ids, rotation, sample

import nnarray as nna
import nnarray.functions as F
from nnarray.ops.fused import Builder, fused_elementwise

NEW_DTYPES = [np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.uint64]
ALL_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
              "uint64", "float16", "float32", "float64"]


def test_namespace_and_constants():
    assert nna.__array_api_version__ == "2023.12"
    x = A(np.arange(3))
    assert x.__array_namespace__() is nna
    assert (nna.e, nna.pi, nna.inf) == (math.e, math.pi, math.inf)
    assert math.isnan(nna.nan) and nna.newaxis is None


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_dtypes_are_numpy_dtypes(name):
    assert getattr(nna, name) == np.dtype(name) and isinstance(getattr(nna, name), np.dtype)


def test_isdtype():
    assert nna.isdtype(nna.int8, "signed integer")
    assert not nna.isdtype(nna.uint8, "signed integer")
    assert nna.isdtype(nna.uint64, "integral") and nna.isdtype(nna.float16, "real floating")
    assert nna.isdtype(nna.bool, ("bool", "numeric")) and not nna.isdtype(nna.bool, "numeric")
    assert nna.isdtype(nna.float32, nna.float32) and not nna.isdtype(nna.float32, nna.float64)
    assert not nna.isdtype(nna.float32, "complex floating")
    with pytest.raises(ValueError, match="isdtype: unknown kind"):
        nna.isdtype(nna.int8, "integer")


@pytest.mark.parametrize("a, b, want", [
    ("int8", "uint8", "int16"), ("uint8", "uint16", "uint16"), ("int16", "uint32", "int64"),
    ("int32", "int64", "int64"), ("float16", "float32", "float32"), ("bool", "bool", "bool"),
    ("uint32", "int32", "int64"), ("uint8", "int8", "int16")])
def test_result_type_follows_the_standard_table(a, b, want):
    assert nna.result_type(np.dtype(a), np.dtype(b)) == np.dtype(want)
    assert nna.result_type(A(np.zeros(2, a)), np.dtype(b)) == np.dtype(want)


def test_can_cast_finfo_iinfo():
    assert nna.can_cast(nna.int8, nna.int16) and not nna.can_cast(nna.int16, nna.int8)
    assert nna.can_cast(A(np.zeros(2, np.uint8)), nna.int16)
    f = nna.finfo(nna.float32)
    assert (f.bits, f.eps, f.dtype) == (32, float(np.finfo(np.float32).eps), nna.float32)
    assert isinstance(f.max, float) and isinstance(f.smallest_normal, float)
    i = nna.iinfo(nna.uint16)
    assert (i.bits, i.min, i.max) == (16, 0, 65535)
    with pytest.raises(nna.DTypeError, match="finfo"):
        nna.finfo(nna.int32)


def test_namespace_info_lists_every_context():
    info = nna.__array_namespace_info__()
    devs = info.devices()
    assert nna.Context("numpy", 0) in devs and info.default_device() in devs
    assert info.default_dtypes() == {"real floating": nna.float32, "integral": nna.int64,
                                     "indexing": nna.int64, "complex floating": nna.complex64}
    assert list(info.dtypes()) == [d for d in ALL_DTYPES if d != "float16"] + [
        "complex64", "complex128"]
    assert set(info.dtypes(kind="unsigned integer")) == {"uint8", "uint16", "uint32", "uint64"}


SMALL_OPS = [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
             ("maximum", np.maximum), ("less", np.less), ("div", np.true_divide)]


@pytest.mark.parametrize("dtype", NEW_DTYPES, ids=ids)
def test_small_integer_dtypes_run_on_every_backend(backend, dtype):
    """Every op on each small integer dtype in one fused program (every op and dtype
    together, one program per dtype), and as the op itself: every op on numpy, one op per
    dtype on a compiling backend (``rotation``: a program per op and dtype), each op on
    one dtype there; then a cast and two reductions."""
    a, b = sample((2, 3), dtype, 0, 9, seed=1), sample((3,), dtype, 1, 9, seed=2)
    s = a + 10  # no wrap-around to compare (unsigned)
    bl = Builder(3)
    outs = [bl.call(name, 2 if name == "sub" else 0, 1) for name, _ in SMALL_OPS]
    fused = fused_elementwise(A(a), A(b), A(s), program=bl.program(outs))
    for (name, ref), got in zip(SMALL_OPS, fused):
        with case(op=name, fused=True):
            check(got, ref(s if name == "sub" else a, b))
    for name, ref in rotation(backend, NEW_DTYPES.index(dtype), SMALL_OPS, len(SMALL_OPS)):
        x = s if name == "sub" else a
        with case(op=name):
            check(getattr(F, name)(A(x), A(b)), ref(x, b))
    check(F.cast(A(a), np.float32), a.astype(np.float32))
    check(F.sum(A(a), 1), a.sum(1))
    check(F.max(A(a), 0), a.max(0))


@pytest.mark.parametrize("da, db", [(np.int8, np.uint8), (np.uint16, np.int32),
                                    (np.uint8, np.uint32), (np.int16, np.float32)], ids=ids)
def test_mixed_small_integer_promotion(backend, da, db):
    a, b = sample((4,), da, 0, 5, seed=1), sample((4,), db, 0, 5, seed=2)
    check(A(a) + A(b), a + b)
    check(A(a) * 3, a * 3)


def test_device_and_to_device(backend):
    x = A(np.arange(4, dtype=np.int16))
    assert x.device == nna.Context("numpy", 0)
    y = x.to_device(backend)
    assert y.device == nna.Context.parse(backend) and y is not x
    check(y, np.arange(4, dtype=np.int16))
    assert nna.zeros(3).device == nna.get_current_context()  # lazy: the current context


def test_mT():
    a = sample((2, 3, 4), np.float32)
    check(A(a).mT, np.swapaxes(a, -1, -2))
    with pytest.raises(ValueError, match="mT"):
        A(np.zeros(3)).mT  # noqa: B018


def test_new_operators_and_in_place_forms(backend):
    a, b = np.array([-7, 5, 12, 3], np.int16), np.array([2, 3, -5, 1], np.int16)
    for op, ref in [("__floordiv__", np.floor_divide), ("__mod__", np.remainder),
                    ("__and__", np.bitwise_and), ("__or__", np.bitwise_or),
                    ("__xor__", np.bitwise_xor), ("__lshift__", np.left_shift),
                    ("__rshift__", np.right_shift)]:
        rhs = np.abs(b) if "shift" in op else b
        check(getattr(A(a), op)(A(rhs)), ref(a, rhs))
        x = A(a)
        y = getattr(x, op.replace("__", "__i", 1))(A(rhs))
        assert y is x
        check(x, ref(a, rhs))
    check(~A(a), ~a)
    check(7 // A(b), 7 // b)
    check(2 << A(np.abs(b)), 2 << np.abs(b))


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_left_shift"])
def test_bitwise_refuses_floats(name):
    with pytest.raises(nna.DTypeError, match=f"{name}: argument 'a' must be an integer"):
        getattr(F, name)(A(np.zeros(2, np.float32)), A(np.zeros(2, np.int32)))
    with pytest.raises(nna.DTypeError, match="bitwise_invert: argument 'x'"):
        F.bitwise_invert(A(np.zeros(2, np.float32)))


# -- creation functions ---------------------------------------------------------------
def test_creation_defaults_and_dtypes():
    assert nna.zeros((2, 3)).dtype == nna.float32 and nna.ones(2).dtype == nna.float32
    assert nna.full(2, 3).dtype == nna.int64 and nna.full(2, True).dtype == nna.bool
    assert nna.full(2, 1.5, dtype=nna.float16).dtype == nna.float16
    check(nna.asarray([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]]))
    check(nna.asarray([1.5, 2.0]), np.array([1.5, 2.0], np.float32))
    check(nna.asarray(3.0), np.float32(3.0))
    check(nna.asarray([1, 2], dtype=nna.uint8), np.array([1, 2], np.uint8))
    check(nna.arange(5), np.arange(5))
    check(nna.arange(1, 2, 0.25), np.arange(1, 2, 0.25, dtype=np.float32))
    check(nna.arange(10, 0, -3, dtype=nna.int16), np.arange(10, 0, -3, dtype=np.int16))
    check(nna.linspace(0, 1, 5), np.linspace(0, 1, 5, dtype=np.float32))
    check(nna.linspace(0, 1, 4, endpoint=False), np.linspace(0, 1, 4, endpoint=False,
                                                           dtype=np.float32))
    check(nna.eye(3, 4, k=1, dtype=nna.int8), np.eye(3, 4, k=1, dtype=np.int8))
    check(nna.empty((2, 0)), np.zeros((2, 0), np.float32))


def test_asarray_shares_and_copies():
    x = A(np.arange(3.0))
    assert nna.asarray(x) is x
    assert nna.asarray(x, copy=True) is not x
    assert nna.asarray(x, dtype=nna.float32).dtype == nna.float32
    with pytest.raises(ValueError, match="copy=False"):
        nna.asarray(x, dtype=nna.float32, copy=False)
    assert nna.astype(x, x.dtype, copy=False) is x
    check(nna.astype(x, nna.int8), np.arange(3, dtype=np.int8))


def test_like_functions_tril_triu_meshgrid(backend):
    a = sample((3, 4), np.float32)
    x = A(a)
    for fn, ref in [(nna.zeros_like, np.zeros_like), (nna.ones_like, np.ones_like),
                    (nna.empty_like, np.zeros_like)]:
        check(fn(x), ref(a))
    check(nna.full_like(x, 7, dtype=nna.int16), np.full_like(a, 7, dtype=np.int16))
    check(nna.tril(x, k=1), np.tril(a, 1))
    check(nna.triu(x, k=-1), np.triu(a, -1))
    u, v = np.arange(3), np.arange(4.0)
    for ix in ("xy", "ij"):
        for got, want in zip(nna.meshgrid(A(u), A(v), indexing=ix),
                             np.meshgrid(u, v, indexing=ix)):
            check(got, want)


def test_device_keyword(backend):
    ctx = nna.Context.parse(backend)
    for x in (nna.zeros(3, device=backend), nna.ones((2,), device=ctx),
              nna.full(2, 1.5, device=backend), nna.arange(4, device=backend),
              nna.asarray([1, 2], device=backend), nna.eye(2, device=backend)):
        assert x.device == ctx, x
    assert nna.zeros_like(nna.arange(3, device=backend)).device == ctx


# -- statistics -------------------------------------------------------------------------
#: The standard's statistics as (name, function of (module, array, kw)).
STATISTICS = [
    ("sum", lambda m, v, kw: m.sum(v, **kw)), ("prod", lambda m, v, kw: m.prod(v, **kw)),
    ("mean", lambda m, v, kw: m.mean(v, **kw)), ("max", lambda m, v, kw: m.max(v, **kw)),
    ("min", lambda m, v, kw: m.min(v, **kw)),
    ("var", lambda m, v, kw: nna.var(v, correction=1, **kw) if m is nna
     else np.var(v, ddof=1, **kw)),
    ("std", lambda m, v, kw: m.std(v, **kw)), ("all", lambda m, v, kw: m.all(v > 1.5, **kw)),
    ("any", lambda m, v, kw: m.any(v > 2.5, **kw))]
REDUCTION_AXES = [None, 0, -1, (0, 2), ()]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's var over no elements
@pytest.mark.parametrize("axis", REDUCTION_AXES, ids=ids)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(backend, axis, keepdims):
    """Every statistic over every axis on numpy; on a compiling backend (a program per
    statistic and axis layout) each axis runs every other statistic (``rotation``), so
    each statistic runs two axes or three, with and without keepdims."""
    a = sample((2, 3, 4), np.float32, 1, 3)
    x = A(a)
    kw = {"axis": axis, "keepdims": keepdims}
    for name, f in rotation(backend, REDUCTION_AXES.index(axis), STATISTICS):
        with case(statistic=name):
            check(f(nna, x, kw), f(np, a, kw))


SUM_PROD_DTYPES = [np.int8, np.uint8, np.int32, np.bool_]
#: (name, function of (module, array)): sums and products with the default dtype,
#: float64, and the input's own.
SUMS_PRODS = [("sum", lambda m, v: m.sum(v, axis=1)), ("prod", lambda m, v: m.prod(v, axis=0)),
              ("sum float64", lambda m, v: m.sum(v, dtype=m.float64)),
              ("sum own", lambda m, v: m.sum(v, axis=0, dtype=v.dtype))]


@pytest.mark.parametrize("dtype", SUM_PROD_DTYPES, ids=ids)
def test_sum_prod_dtypes(backend, dtype):
    """Each form on every dtype on numpy; on a compiling backend (a program per form and
    dtype) each dtype runs every other form (``rotation``), each form two dtypes."""
    a = sample((3, 4), dtype, 0, 3)
    for name, f in rotation(backend, SUM_PROD_DTYPES.index(dtype), SUMS_PRODS):
        with case(form=name):
            check(f(nna, A(a)), f(np, a))


def test_all_any_empty(backend):
    e = A(np.zeros((0, 3), np.float32))
    check(nna.all(e), np.all(np.zeros((0, 3))))
    check(nna.any(e, axis=0), np.any(np.zeros((0, 3)), axis=0))


def test_numpy_functions_accept_ndarrays():
    a = sample((3, 4), np.float32)
    x = A(a)
    check(np.sum(x), np.sum(a))
    check(np.mean(x, axis=0), np.mean(a, axis=0))
    check(np.max(x, axis=1, keepdims=True), np.max(a, axis=1, keepdims=True))
    check(np.std(x, ddof=1), np.std(a, ddof=1))
    check(np.argmax(x), np.argmax(a))
    check(np.prod(x, axis=0), np.prod(a, axis=0))
    with pytest.raises(TypeError, match="sum: out="):
        np.sum(x, out=np.zeros(()))


def test_prod_gradient_with_zeros():
    from nnarray import grad
    a = np.array([[2.0, 0.0, 3.0], [1.0, 2.0, 4.0], [0.0, 0.0, 5.0]])
    v = grad.Variable.from_numpy_array(a, need_grad=True)
    y = F.sum(F.prod(v, axis=1))
    y.forward()
    y.backward()
    want = np.array([[0.0, 6.0, 0.0], [8.0, 4.0, 2.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(v.g, want)


def test_standard_aliases():
    assert nna.add is F.add and nna.subtract is F.sub and nna.multiply is F.mul
    assert nna.divide is F.div and nna.negative is F.neg and nna.pow is F.pow
    a = np.array([-2.0, 0.5, 3.0], np.float32)
    check(nna.clip(A(a), min=-1.0, max=1.0), np.clip(a, -1, 1))
    check(nna.clip(A(a), max=A(np.zeros(3, np.float32))), np.minimum(a, 0))
    check(nna.concat([A(a), A(a)]), np.concatenate([a, a]))
    check(nna.expand_dims(A(a), axis=-1), a[:, None])
    check(nna.squeeze(A(a[None]), axis=0), a)
    check(nna.permute_dims(A(a.reshape(1, 3)), (1, 0)), a.reshape(3, 1))


#: cumulative function -> (numpy's, its reduction, the value include_initial prepends)
CUMULATIVE = {"cumulative_sum": (np.cumsum, np.sum, 0),
              "cumulative_prod": (np.cumprod, np.prod, 1)}


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint16, np.bool_],
                         ids=ids)
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("name", list(CUMULATIVE))
def test_cumulative(backend, name, dtype, axis):
    fn, (ref, red, init) = getattr(nna, name), CUMULATIVE[name]
    a = sample((3, 4, 5), dtype, 0, 3)
    got = fn(A(a), axis=axis)
    check(got, ref(a, axis=axis, dtype=got.dtype))
    assert got.dtype == red(a).dtype
    check(fn(A(a), axis=axis, include_initial=True, dtype=nna.float64),
          np.concatenate([np.full_like(np.take(a, [0], axis), init, np.float64),
                          ref(a, axis=axis, dtype=np.float64)], axis))
    with pytest.raises(ValueError, match=f"{name}: argument 'axis' is required"):
        fn(A(a))


def test_manipulation_functions(backend):
    a = np.arange(24).reshape(2, 3, 4)
    x = A(a)
    check(nna.moveaxis(x, (0, 1), (2, 0)), np.moveaxis(a, (0, 1), (2, 0)))
    check(nna.flip(x, axis=(0, 2)), np.flip(a, (0, 2)))
    check(nna.roll(x, 2), np.roll(a, 2))
    check(nna.roll(x, (1, -1), axis=(0, 2)), np.roll(a, (1, -1), (0, 2)))
    check(nna.tile(x, (2, 1, 1, 2)), np.tile(a, (2, 1, 1, 2)))
    check(nna.repeat(x, 2, axis=1), np.repeat(a, 2, 1))
    check(nna.repeat(x, A(np.array([1, 0, 2])), axis=1), np.repeat(a, [1, 0, 2], 1))
    for got, want in zip(nna.unstack(x, axis=1), [a[:, i] for i in range(3)]):
        check(got, want)
    b = np.arange(12).reshape(3, 4)
    check(nna.tensordot(x, A(b), axes=2), np.tensordot(a, b, 2))
    check(nna.vecdot(A(a.astype(np.int8)), A(a.astype(np.int8))),
          np.sum(a.astype(np.int8) * a.astype(np.int8), -1, dtype=np.int8))
    check(nna.where(x > 5, x, 0), np.where(a > 5, a, 0))


def test_from_dlpack_device_and_copy(backend):
    a = np.arange(3.0)
    y = nna.from_dlpack(a, device=backend)
    assert y.device == nna.Context.parse(backend)
    check(y, a)
    check(nna.from_dlpack(a, copy=True), a)


SETITEM_DTYPES = [np.float32, np.float16, np.int8, np.uint64, np.bool_]
#: (key, value): scalars and arrays ordered so that both the even and the odd positions
#: hold both (``rotation`` gives a dtype one or the other).
SETITEM_CASES = [
    ((1, slice(None), 2), 1), ((slice(None, None, -2), 3), np.arange(6)),
    ((Ellipsis, slice(1, 4)), np.ones((5, 3))), (0, 2), ((1, 2, 3), 1),
    ((None, 1), np.zeros((1, 5, 6))), ((slice(3, 0, -1), slice(None, None, 2), -1),
                                       np.arange(3)), ((), 0), ((-1, 0, Ellipsis, -2), 1)]


@pytest.mark.parametrize("dtype", SETITEM_DTYPES, ids=ids)
def test_setitem_basic(backend, dtype):
    """Every key on every dtype on numpy; on a compiling backend each dtype every other
    key (``rotation``), so each key runs two dtypes or three and each dtype scalar and
    array values."""
    for key, value in rotation(backend, SETITEM_DTYPES.index(dtype), SETITEM_CASES):
        a = sample((4, 5, 6), dtype, 0, 4)
        x = A(a)
        if isinstance(value, np.ndarray):
            value = value.astype(dtype)
            x[key] = A(value)
        else:
            x[key] = value
        a[key] = value
        with case(key=key):
            check(x, a)
            assert x.head == nna.Context.parse(backend).key  # written where the work ran


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.int64], ids=ids)
def test_setitem_zero_dim_and_one_element(backend, dtype):
    x = A(np.array(10, dtype))
    x[()] = 0
    check(x, np.array(0, dtype))
    y = A(np.array([10, 11], dtype))
    y[1] = 0
    y[-2] = A(np.array(3, dtype))
    check(y, np.array([3, 0], dtype))


def test_setitem_checks_everything_first():
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    x = A(a)
    with pytest.raises(nna.ShapeError, match=r"setitem: value of shape \(2,\)"):
        x[0] = A(np.zeros(2, np.float32))
    with pytest.raises(IndexError):
        x[5] = 1.0
    with pytest.raises(IndexError, match="boolean index of shape"):  # masks: test_indexing
        x[A(np.array([True, False, True]))] = 1.0
    with pytest.raises(IndexError, match="out of bounds"):
        x[A(np.array([0, 2])), A(np.array([1, 3]))] = 1.0
    with pytest.raises(nna.DTypeError, match="setitem: cannot store float32"):
        A(np.zeros(3, np.int32))[0] = A(np.ones((), np.float32))
    with pytest.raises(nna.InvalidValueError, match="setitem"):
        A(np.zeros(3, np.uint8))[0] = -1
    check(x, a)  # nothing half-written


def test_nnarray_context_environment_variable():
    """``NNARRAY_CONTEXT`` is the process's default context, and a chosen default is where
    work runs, even on the data of every other available backend (API.md §7); an unknown
    backend fails the import."""
    import os
    import subprocess
    import sys
    devices = [b for b in available() if b != "numpy"]
    code = ("import sys; import nnarray as n; "
            "print(n.get_current_context().key, (n.ones(2) + 1).device.key); "
            "[print((n.asarray([1.0, 2.0], device=b) + n.ones(2, device=b)).device.key) "
            "for b in sys.argv[1:]]")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "NNARRAY_CONTEXT": "numpy:0"}
    out = subprocess.run([sys.executable, "-c", code, *devices], env=env, capture_output=True,
                         text=True, check=True, cwd=root, timeout=CHILD_LIMIT)
    assert out.stdout.split() == ["numpy:0", "numpy:0"] + ["numpy:0"] * len(devices), \
        (devices, out.stderr)
    env["NNARRAY_CONTEXT"] = "nosuch"
    bad = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=root, timeout=CHILD_LIMIT)
    assert bad.returncode != 0 and "unknown backend 'nosuch'" in bad.stderr


_FOLLOW = """
import nnarray as n, numpy as np
x = n.asarray([1.0, 2.0, 3.0], device="{b}")
y = n.ones(3, device="{b}")
with n.strict_transfers():  # no implicit transfer: the ops run where the data is
    z = n.sin(x) * y + 1.0
    s = n.sum(z)
    x += y
print(z.device.key, s.device.key, x.device.key, (x + n.asarray([1.0, 1.0, 1.0])).device.key)
print(np.allclose(z.numpy(), np.sin([1.0, 2, 3]) + 1), float(s.numpy()) > 0)
"""


@pytest.fixture(scope="module")
def followed() -> dict[str, list[str]]:
    """Each available backend -> what ``_FOLLOW`` printed for it, from one child (no
    ``NNARRAY_CONTEXT``, no scope, no default device: each backend's part runs as in a
    fresh process, numpy's first)."""
    import os
    import subprocess
    import sys
    devices = available()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {k: v for k, v in os.environ.items() if k != "NNARRAY_CONTEXT"}
    code = "".join(_FOLLOW.format(b=b) for b in devices)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, cwd=root, timeout=CHILD_LIMIT)
    assert out.returncode == 0, out.stderr
    words = out.stdout.split()
    return {b: words[6 * i:6 * i + 6] for i, b in enumerate(devices)}


def test_device_follows_the_data(backend, followed):
    """Outside every scope and with no default chosen, ops run on their inputs' device;
    a host array mixed in runs on the device (one counted upload) (API.md §7; that a
    chosen default decides: test_nnarray_context_environment_variable)."""
    key = nna.Context.parse(backend).key
    assert followed[backend] == [key, key, key, key, "True", "True"]


def test_array_api_compat_accepts_ndarrays(backend):
    compat = pytest.importorskip("array_api_compat")
    x = nna.asarray([1.0, 2.0, 4.0], device=backend)
    xp = compat.array_namespace(x)
    assert xp is nna and compat.device(x) == nna.Context.parse(backend)
    y = xp.sum(xp.sqrt(x) * 2, axis=0)  # code written only against the standard
    assert y.device == nna.Context.parse(backend)
    np.testing.assert_allclose(float(y), 2 * (1 + np.sqrt(2) + 2), rtol=1e-6)


TAKES = [(0, [1, 0, 1]), (1, [2, -1, 0, 0]), (2, []), (-1, [3])]


@pytest.mark.parametrize("axis, idx", TAKES, ids=ids)
def test_take(backend, axis, idx):
    """Every dtype on numpy; on a compiling backend (a program per case and dtype) the
    cases take float32 and int8, float16 and bool in turn (``rotation``)."""
    dtypes = [np.float32, np.float16, np.int8, np.bool_]
    for dtype in rotation(backend, TAKES.index((axis, idx)), dtypes):
        a = sample((2, 3, 4), dtype)
        i = np.asarray(idx, np.int64 if axis else np.int32)
        with case(dtype=dtype):
            check(nna.take(A(a), A(i), axis=axis), np.take(a, i, axis=axis))


def test_take_checks_arguments():
    x = A(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="take: argument 'axis' is required"):
        nna.take(x, A(np.array([0])))
    with pytest.raises(nna.ShapeError, match="take: argument 'indices' must be a 1-D integer"):
        nna.take(x, A(np.array([0.5])), axis=0)
