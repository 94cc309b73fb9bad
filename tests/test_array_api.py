"""``import nnarray as xp``: the Array API 2023.12 namespace (API.md §7)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import A, check, ids, sample

import nnarray as nna
import nnarray.functions as F

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
                                     "indexing": nna.int64}
    assert list(info.dtypes()) == ALL_DTYPES
    assert set(info.dtypes(kind="unsigned integer")) == {"uint8", "uint16", "uint32", "uint64"}


@pytest.mark.parametrize("dtype", NEW_DTYPES, ids=ids)
@pytest.mark.parametrize("name, ref", [("add", np.add), ("sub", np.subtract),
                                       ("mul", np.multiply), ("maximum", np.maximum),
                                       ("less", np.less), ("div", np.true_divide)])
def test_small_integer_dtypes_run_on_every_backend(backend, dtype, name, ref):
    a, b = sample((2, 3), dtype, 0, 9, seed=1), sample((3,), dtype, 1, 9, seed=2)
    if name == "sub":
        a = a + 10  # no wrap-around to compare (unsigned)
    check(getattr(F, name)(A(a), A(b)), ref(a, b))
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
