"""Elementwise functions and NdArray operators against numpy, on every backend."""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable

import numpy as np
import pytest
from conftest import tol
from helpers import A, check, device_params, ids, sample

import nnarray as nna
import nnarray.functions as F
from nnarray.ops import elementwise as rules

pytestmark = pytest.mark.usefixtures("no_fallback")  # a backend runs its own kernels

FLOATS = [np.float16, np.float32, np.float64]
INTS = [np.int32, np.int64]
NUMERIC = FLOATS + INTS
ALL = NUMERIC + [np.bool_]


# -- what runs where ---------------------------------------------------------------------
# numpy runs every case (microseconds each). A compiling backend builds a program per
# kernel source (pocl: ~0.2 s cold each), and an elementwise source is the op's expression
# in its compute type plus each operand's conversion to it (``elementwise.source``): there
# a test runs a cover of those parts (``greedy``), not the product of ops and dtypes.

#: float16 computes in float on the compiling backends (OpenCL's ``cltypes``, CUDA's
#: elementwise): its kernel is float32's with a half load and store, except for the rows
#: with float16 code of their own.
OWN_FLOAT16 = {"nextafter"}


def c_type(name: str, d) -> np.dtype:
    """The type row ``name``'s expression computes in for compute dtype ``d``."""
    d = np.dtype(d)
    return np.dtype(np.float32) if d == np.float16 and name not in OWN_FLOAT16 else d


def greedy(cases: list, needs: Callable, keep: list = ()) -> list:
    """A cover of ``cases``: the ``keep`` cases, then repeatedly the first case covering
    the most of its ``needs`` (a set) not yet covered, until every need of every case is."""
    todo = set().union(*(needs(c) for c in cases)).difference(*(needs(c) for c in keep))
    got = list(keep)
    while todo:
        c = max(cases, key=lambda c: len(needs(c) & todo))
        todo -= needs(c)
        got.append(c)
    return got


def on_backends(cases: list, compiled: list, name: Callable) -> list:
    """``(backend, *case)`` parameters: every case on numpy, those of ``compiled`` on the
    compiling backends (``helpers.device_params``)."""
    return device_params(cases, compiled.__contains__, name)


# -- binary ------------------------------------------------------------------------------
BINARY = {  # name: (F function, Python operator or None, numpy reference)
    "add": (F.add, operator.add, np.add),
    "sub": (F.sub, operator.sub, np.subtract),
    "mul": (F.mul, operator.mul, np.multiply),
    "div": (F.div, operator.truediv, np.true_divide),
    "pow": (F.pow, operator.pow, np.power),
    "maximum": (F.maximum, None, np.maximum),
    "minimum": (F.minimum, None, np.minimum),
    "equal": (F.equal, operator.eq, np.equal),
    "not_equal": (F.not_equal, operator.ne, np.not_equal),
    "less": (F.less, operator.lt, np.less),
    "less_equal": (F.less_equal, operator.le, np.less_equal),
    "greater": (F.greater, operator.gt, np.greater),
    "greater_equal": (F.greater_equal, operator.ge, np.greater_equal),
    "atan2": (F.atan2, None, np.arctan2),
    "hypot": (F.hypot, None, np.hypot),
    "logaddexp": (F.logaddexp, None, np.logaddexp),
    "copysign": (F.copysign, None, np.copysign),
    "nextafter": (F.nextafter, None, np.nextafter),
    "remainder": (F.remainder, operator.mod, np.remainder),
    "floor_divide": (F.floor_divide, operator.floordiv, np.floor_divide),
    "bitwise_and": (F.bitwise_and, operator.and_, np.bitwise_and),
    "bitwise_or": (F.bitwise_or, operator.or_, np.bitwise_or),
    "bitwise_xor": (F.bitwise_xor, operator.xor, np.bitwise_xor),
    "bitwise_left_shift": (F.bitwise_left_shift, operator.lshift, np.left_shift),
    "bitwise_right_shift": (F.bitwise_right_shift, operator.rshift, np.right_shift),
    "logical_and": (F.logical_and, None, np.logical_and),
    "logical_or": (F.logical_or, None, np.logical_or),
    "logical_xor": (F.logical_xor, None, np.logical_xor),
}
FLOAT_ONLY = {"atan2", "hypot", "logaddexp", "copysign", "nextafter"}  # tested on floats (numpy's
INT_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",  # loops
            "bitwise_right_shift"}  # differ from ours on integers only in precision)


def operands(name, da, db, sa=(2, 3), sb=(3,)):
    a, b = sample(sa, da, seed=1), sample(sb, db, seed=2)
    if name == "pow":  # positive bases, small exponents (non-negative for integers)
        a = sample(sa, da, 1, 3, seed=1)
        b = sample(sb, db, 0 if np.dtype(db).kind in "ib" else -2, 2, seed=2)
    if name == "div":  # no zeros on either side (the reflected form divides by a)
        a, b = (np.where(v == 0, np.ones_like(v), v) for v in (a, b))
    if name in ("equal", "not_equal", "less_equal", "greater_equal"):
        b[..., 0] = a[0, 0]  # some ties
    if name in ("remainder", "floor_divide"):  # no zero divisors (numpy warns)
        b = np.where(b == 0, np.ones_like(b), b)
    if name in ("bitwise_left_shift", "bitwise_right_shift"):
        b = np.abs(b)
    return a, b


def _binary_skip(name: str, dtype) -> str | None:
    if dtype == np.bool_ and name in ("sub", "pow", "remainder", "floor_divide",
                                      "bitwise_left_shift", "bitwise_right_shift"):
        return "bool sub/pow/remainder/floor_divide/shifts are errors (test_errors)"
    if name in FLOAT_ONLY and np.dtype(dtype).kind != "f" or \
            name in INT_ONLY and np.dtype(dtype).kind == "f":
        return "not defined for this dtype by the standard"
    return None


def _binary_needs(case: tuple) -> set:
    """A same-dtype binary kernel: the row's expression in its compute type (a comparison's
    input type, else the result's) and the operands' conversion."""
    name, dtype = case
    d = np.dtype(dtype)
    if rules.BINARY[name][0] not in ("compare", "logical"):
        d = rules.binary_dtype(name, d)
    return {("e", name, c_type(name, d)), ("c", np.dtype(dtype), d)}


BINARY_CASES = [(n, d) for n in BINARY for d in ALL]
#: On compiling backends: float32 for every row that has it, then a cover of the rest;
#: the float-only and integer-only rows run there in the dtype-pair tests below (every
#: dtype on each side, every compute type).
BINARY_COMPILED = greedy(
    [c for c in BINARY_CASES if _binary_skip(*c) is None and c[0] not in FLOAT_ONLY | INT_ONLY],
    _binary_needs, [c for c in BINARY_CASES if c[1] == np.float32 and _binary_skip(*c) is None
                    and c[0] not in FLOAT_ONLY])


@pytest.mark.parametrize("backend, name, dtype",
                         on_backends(BINARY_CASES, BINARY_COMPILED,
                                     lambda c: f"{c[0]}-{np.dtype(c[1]).name}"),
                         indirect=["backend"])
def test_binary(backend, name, dtype):
    why = _binary_skip(name, dtype)
    if why:
        pytest.skip(why)
    fn, op, ref = BINARY[name]
    a, b = operands(name, dtype, dtype)
    want = ref(a, b)
    check(fn(A(a), A(b)), want)
    if op is not None:
        check(op(A(a), A(b)), want)


MIXED = [(np.float32, np.float64), (np.float16, np.float32), (np.int32, np.float32),
         (np.int32, np.int64), (np.bool_, np.float32), (np.bool_, np.int32),
         (np.int64, np.float16), (np.int32, np.float16)]
MIXED_OPS = ["add", "mul", "div", "maximum", "less"]


def _mixed_needs(case: tuple) -> set:
    """A mixed kernel (name, a's dtype, b's): the op with each on its side, its expression
    in the compute type (a comparison's promoted type, else the result's), the
    conversions, the pair in this order."""
    name, x, y = case
    x, y = np.dtype(x), np.dtype(y)
    d = np.promote_types(x, y) if name == "less" else \
        BINARY[name][2](np.ones(1, x), np.ones(1, y)).dtype
    return {("a", name, x), ("b", name, y), ("e", name, c_type(name, d)), ("c", x, d),
            ("c", y, d), ("p", x, y)}


#: On compiling backends: a cover of the ops x pairs x both orders.
MIXED_ORDERS = greedy([(n, x, y) for n in MIXED_OPS for a, b in MIXED
                       for x, y in ((a, b), (b, a))], _mixed_needs)


@pytest.mark.parametrize("backend, name, da, db", on_backends(
    [(n, a, b) for n in MIXED_OPS for a, b in MIXED],
    [(n, a, b) for n, a, b in MIXED_ORDERS] + [(n, b, a) for n, a, b in MIXED_ORDERS],
    lambda c: f"{c[0]}-{ids(c[1])}-{ids(c[2])}"), indirect=["backend"])
def test_binary_mixed_dtypes(backend, name, da, db):
    """Both operand orders (a compiling backend: those of ``MIXED_ORDERS``)."""
    fn, _, ref = BINARY[name]
    a, b = operands(name, da, db)
    for x, y, dx, dy in ((a, b, da, db), (b, a, db, da)):
        if backend == "numpy" or (name, dx, dy) in MIXED_ORDERS:
            check(fn(A(x), A(y)), ref(x, y))


SHAPE_PAIRS = [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((4, 1, 3), (2, 1)),
               ((), (2, 3)), ((1,), (3,)), ((2, 3, 1), (3, 4)), ((1, 1), ()), ((0, 3), (3,)),
               ((5, 1, 4, 1), (3, 1, 2))]


BROADCAST_OPS = ["add", "sub", "mul", "maximum", "greater"]


def rotating(backend: str, k: int, name: str, names: list) -> list[bool]:
    """The operand orders (swapped or not) op ``name`` runs on shape pair ``k``: both on
    numpy; on a compiling backend, where a broadcast's index code and the op's expression
    are generated apart, order o goes to op ``(k + o) mod len(names)``: every pair in
    both orders, the ops taking turns."""
    return [o for o in (False, True)
            if backend == "numpy" or names.index(name) == (k + o) % len(names)]


@pytest.mark.parametrize("sa, sb", SHAPE_PAIRS, ids=ids)
@pytest.mark.parametrize("name", BROADCAST_OPS)
def test_broadcasting(backend, name, sa, sb):
    fn, _, ref = BINARY[name]
    a, b = sample(sa, np.float32, seed=3), sample(sb, np.float32, seed=4)
    orders = rotating(backend, SHAPE_PAIRS.index((sa, sb)), name, BROADCAST_OPS)
    if not orders:
        pytest.skip("the other ops take this shape pair's orders here (rotating)")
    for swap in orders:
        x, y = (b, a) if swap else (a, b)
        check(fn(A(x), A(y)), ref(x, y))


# -- scalars -----------------------------------------------------------------------------
SCALAR_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
              operator.lt, operator.ge, operator.eq, operator.ne]


SCALARS = [2, 0.5, True, -1.25]
COMPARE_OPS = (operator.lt, operator.ge, operator.eq, operator.ne)


def _scalar_kernel(case: tuple) -> tuple:
    """(op, array dtype, compute dtype, scalar on the left) of ``a op s`` (or ``s op a``):
    the scalar is a kernel argument, so every scalar that computes in the same type shares
    the kernel."""
    op, dtype, s, left = case
    a = np.ones(1, dtype)
    d = np.result_type(a, s) if op in COMPARE_OPS else op(a, s).dtype
    return op, np.dtype(dtype), d, left


def _scalar_needs(case: tuple) -> set:
    op, dtype, d, left = _scalar_kernel(case)
    """A scalar kernel: the op on this side in its compute type, the array's conversion,
    the scalar's kind converted to that type; each scalar once."""
    return {("e", op, c_type(op.__name__, d), left), ("c", dtype, d),
            ("s", type(case[2]), d), ("v", case[2])}


SCALAR_CASES = [(op, d, s, left) for op in SCALAR_OPS for d in NUMERIC for s in SCALARS
                for left in (False, True) if not (left and op is operator.pow and s < 0)]
#: On compiling backends: the cases whose kernel a cover of expressions (each op on each
#: side in each compute type), conversions and scalar kinds builds, float32's first.
SCALAR_RUN = set(map(_scalar_kernel, greedy(SCALAR_CASES, _scalar_needs,
                                            [c for c in SCALAR_CASES if c[1] == np.float32])))


@pytest.mark.parametrize("backend, op, dtype, s", on_backends(
    [(op, d, s) for op in SCALAR_OPS for d in NUMERIC for s in SCALARS],
    [c[:3] for c in SCALAR_CASES if _scalar_kernel(c) in SCALAR_RUN],
    lambda c: f"{c[0].__name__}-{ids(c[1])}-{c[2]!r}"), indirect=["backend"])
def test_scalar_operators(backend, op, dtype, s):
    """``a op s`` and the reflected ``s op a`` follow numpy with the scalar weak (a
    compiling backend: the sides whose kernel is in ``SCALAR_RUN``)."""
    a = sample((2, 3), dtype, 1, 3)  # positive: pow and reflected division are defined
    for left in (False, True):
        if left and op is operator.pow and s < 0:
            continue  # negative base: nan for fractional exponents
        if backend != "numpy" and _scalar_kernel((op, dtype, s, left)) not in SCALAR_RUN:
            continue
        check(op(s, A(a)) if left else op(A(a), s), op(s, a) if left else op(a, s))


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "minimum", "less"])
def test_scalar_function_forms(backend, name):
    fn, _, ref = BINARY[name]
    a = sample((4,), np.float32, 1, 3)
    check(fn(A(a), 2.5), ref(a, 2.5))
    check(fn(3, A(a)), ref(3, a))


@pytest.mark.parametrize("dtype, s, want", [
    (np.float32, 0.1, np.float32), (np.float16, 0.1, np.float16), (np.float16, 3, np.float16),
    (np.int32, 0.5, np.float64), (np.int32, 7, np.int32), (np.int64, 2.5, np.float64),
    (np.bool_, 1, np.int64), (np.bool_, 1.5, np.float64), (np.int32, True, np.int32),
    (np.float32, np.float64(0.1), np.float64), (np.int32, np.int64(2), np.int64),
    (np.float16, np.float32(2), np.float32)], ids=ids)
def test_weak_python_scalars(backend, dtype, s, want):
    """Python scalars do not upcast; numpy scalars are strong (NEP 50)."""
    a = sample((3,), dtype, 1, 3)
    r = A(a) * s
    assert r.dtype == np.dtype(want)
    check(r, a * s)
    check(s * A(a), s * a)


# -- unary -------------------------------------------------------------------------------
def _sigmoid(x):
    d = np.exp(x[:0]).dtype
    with np.errstate(over="ignore"):
        return (1 / (1 + np.exp(-x.astype(np.float64)))).astype(d)


_erf64 = np.vectorize(math.erf, otypes=[np.float64])
_erfc64 = np.vectorize(math.erfc, otypes=[np.float64])


def _float_ref(f):
    """``f`` computed in float64, returned in numpy's floating dtype for the input (as
    ``np.exp`` gives it: float16 stays, integers give float64)."""
    return lambda x: f(x.astype(np.float64)).astype(np.exp(x[:0]).dtype)


def _gelu(x):
    return 0.5 * x * (1 + _erf64(x / np.sqrt(2)))


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


UNARY = {  # name: (F function, numpy reference, lo, hi, dtypes)
    "neg": (F.neg, np.negative, -3, 3, NUMERIC),
    "abs": (F.abs, np.abs, -3, 3, ALL),
    "square": (F.square, np.square, -3, 3, NUMERIC),
    "sign": (F.sign, np.sign, -3, 3, NUMERIC),
    "exp": (F.exp, np.exp, -3, 3, ALL),
    "log": (F.log, np.log, 1, 5, NUMERIC),
    "sqrt": (F.sqrt, np.sqrt, 0, 5, ALL),
    "tanh": (F.tanh, np.tanh, -3, 3, ALL),
    "sigmoid": (F.sigmoid, _sigmoid, -5, 5, ALL),
    "relu": (F.relu, lambda x: np.where(x > 0, x, np.zeros_like(x)), -3, 3, ALL),
    "expm1": (F.expm1, np.expm1, -3, 3, NUMERIC),
    "log1p": (F.log1p, np.log1p, 0, 5, NUMERIC),
    "log2": (F.log2, np.log2, 1, 5, NUMERIC),
    "log10": (F.log10, np.log10, 1, 5, NUMERIC),
    "sin": (F.sin, np.sin, -3, 3, ALL),
    "cos": (F.cos, np.cos, -3, 3, NUMERIC),
    "tan": (F.tan, np.tan, -1, 1, FLOATS),
    "asin": (F.asin, np.arcsin, -1, 1, FLOATS),
    "acos": (F.acos, np.arccos, -1, 1, FLOATS),
    "atan": (F.atan, np.arctan, -3, 3, NUMERIC),
    "sinh": (F.sinh, np.sinh, -3, 3, FLOATS),
    "cosh": (F.cosh, np.cosh, -3, 3, FLOATS),
    "asinh": (F.asinh, np.arcsinh, -3, 3, FLOATS),
    "acosh": (F.acosh, np.arccosh, 1, 5, FLOATS),
    "atanh": (F.atanh, np.arctanh, -0.75, 0.75, FLOATS),
    "positive": (F.positive, np.positive, -3, 3, NUMERIC),
    "ceil": (F.ceil, np.ceil, -3, 3, NUMERIC),
    "floor": (F.floor, np.floor, -3, 3, NUMERIC),
    "trunc": (F.trunc, np.trunc, -3, 3, NUMERIC),
    "round": (F.round, np.round, -3, 3, NUMERIC),
    "bitwise_invert": (F.bitwise_invert, np.invert, -3, 3, INTS + [np.bool_]),
    "isfinite": (F.isfinite, np.isfinite, -3, 3, ALL),
    "isinf": (F.isinf, np.isinf, -3, 3, ALL),
    "isnan": (F.isnan, np.isnan, -3, 3, ALL),
    "signbit": (F.signbit, np.signbit, -3, 3, NUMERIC),
    "logical_not": (F.logical_not, np.logical_not, -3, 3, ALL),
    "erf": (F.erf, _float_ref(_erf64), -3, 3, ALL),
    "erfc": (F.erfc, _float_ref(_erfc64), -3, 3, NUMERIC),
    "gelu": (F.gelu, _float_ref(_gelu), -4, 4, NUMERIC),
    "gelu_tanh": (F.gelu_tanh, _float_ref(_gelu_tanh), -4, 4, NUMERIC),
    "logit": (F.logit, _float_ref(lambda x: np.log(x / (1 - x))), 0.05, 0.95, FLOATS),
}
UNARY_CASES = [(n, d) for n, v in UNARY.items() for d in v[4]]


def _unary_needs(case: tuple) -> set:
    """A unary kernel: the row's expression in its compute type (a predicate's input type,
    else the result's: float64 for an integer of a float row) and the input's conversion."""
    name, dtype = case
    d = np.dtype(dtype) if rules.UNARY[name][0] == "pred" else rules.unary_dtype(
        name, np.dtype(dtype))
    return {("e", name, c_type(name, d)), ("c", np.dtype(dtype), d)}


#: On compiling backends: float32 for every row that has it, then a cover of the rest.
UNARY_COMPILED = greedy(UNARY_CASES, _unary_needs,
                        [c for c in UNARY_CASES if c[1] == np.float32])


@pytest.mark.parametrize("backend, name, dtype",
                         on_backends(UNARY_CASES, UNARY_COMPILED,
                                     lambda c: f"{c[0]}-{np.dtype(c[1]).name}"),
                         indirect=["backend"])
def test_unary(backend, name, dtype):
    """Every row on each of its dtypes (a compiling backend: each in float32 and every
    other compute type, each input dtype converted, ``UNARY_COMPILED``)."""
    fn, ref, lo, hi, _ = UNARY[name]
    x = sample((3, 4), dtype, lo, hi)
    if name == "log":
        x = np.where(x <= 0, np.ones_like(x), x)
    check(fn(A(x)), ref(x))


def test_every_table_row_is_tested():
    """A row added to the elementwise tables is tested here and has kernels on every
    backend that has the table (``no_fallback`` then proves they run natively)."""
    from nnarray.ops import elementwise
    assert set(elementwise.UNARY) <= set(UNARY)
    assert set(elementwise.BINARY) == set(BINARY)
    for name in elementwise.ops:
        assert set(nna.registry.kernels(name)) >= {"numpy"}, name


def test_unary_operators(backend):
    x = sample((2, 3), np.float32)
    a = A(x)
    check(-a, -x)
    check(abs(a), np.abs(x))
    assert +a is a


def test_zero_dim(backend):
    x, y = np.array(1.5, np.float32), np.array(-2, np.int32)
    check(F.exp(A(x)), np.exp(x))
    check(A(x) * A(y), x * y)
    check(A(y) + 1, y + 1)
    check(2.0 / A(x), 2.0 / x)
    check(F.where(A(np.array(True)), A(x), 0.0), np.where(True, x, np.float32(0)))


def test_unary_extreme_values(backend):
    x = np.array([-1000, -80, -20, 0, 20, 80, 1000], np.float32)
    check(F.sigmoid(A(x)), _sigmoid(x))
    check(F.tanh(A(x)), np.tanh(x))
    with np.errstate(over="ignore"):
        check(F.exp(A(np.array([-200, 100], np.float32))), np.array([0, np.inf], np.float32))


def test_special_values(backend):
    """Predicates, rounding and numpy's floor division / remainder at signed zeros,
    infinities and NaN; integer division by zero gives 0 (and numpy's warning-free)."""
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, -2.5, 2.5, 0.5, -3.65, 7.0], np.float32)
    y = np.array([1.0, 2.0, 2.0, -3.0, 3.0, np.inf, -np.inf, -0.0, 2.0, -2.0], np.float32)
    for name in ("isnan", "isinf", "isfinite", "signbit", "round", "ceil", "floor", "trunc",
                 "logical_not"):
        check(getattr(F, name)(A(x)), UNARY[name][1](x))
    with np.errstate(all="ignore"):
        for name in ("floor_divide", "remainder", "copysign", "logaddexp", "atan2", "hypot"):
            check(getattr(F, name)(A(x), A(y)), BINARY[name][2](x, y))
    i = np.array([-7, 7, -7, 7, 5, -128], np.int8)
    j = np.array([2, -2, -2, 0, 0, -1], np.int8)
    with np.errstate(all="ignore"):
        check(A(i) // A(j), i // j)
        check(A(i) % A(j), i % j)
    s = np.array([0, 1, 7, 8, 9, 70], np.int8)
    check(F.bitwise_left_shift(A(i), A(s)), np.left_shift(i, s))
    check(F.bitwise_right_shift(A(i), A(s)), np.right_shift(i, s))


def test_nan_propagates(backend):
    """numpy semantics: maximum/minimum/relu/clip propagate NaN (unlike C's fmax)."""
    x = np.array([np.nan, 1.0, -2.0, np.nan], np.float32)
    y = np.array([0.0, np.nan, 5.0, np.nan], np.float32)
    check(F.maximum(A(x), A(y)), np.maximum(x, y))
    check(F.minimum(A(x), A(y)), np.minimum(x, y))
    check(F.maximum(A(x), 0.0), np.maximum(x, 0.0))
    check(F.relu(A(x)), np.array([np.nan, 1, 0, np.nan], np.float32))
    check(F.clip(A(x), -1.0, 0.5), np.clip(x, -1.0, 0.5))
    check(A(x) < A(y), x < y)
    check(A(x) != A(x), x != x)


@pytest.mark.parametrize("dtype", NUMERIC, ids=ids)
@pytest.mark.parametrize("alpha", [None, 0.2, 0.0, 0, 2], ids=repr)
def test_leaky_relu(backend, dtype, alpha):
    """``alpha`` is a float attribute: an int ``alpha`` still gives a float result."""
    x = sample((3, 4), dtype)
    al = 0.1 if alpha is None else float(alpha)
    want = np.where(x > 0, x, x * al)
    check(F.leaky_relu(A(x)) if alpha is None else F.leaky_relu(A(x), alpha), want)


@pytest.mark.parametrize("dtype, lo, hi", [
    (np.float32, -1.0, 1.5), (np.float32, None, 0.5), (np.float16, -0.5, None),
    (np.float64, 2.0, 1.0), (np.int32, -1, 2), (np.int64, None, 0), (np.int32, 0.5, 2.5)],
    ids=ids)
def test_clip(backend, dtype, lo, hi):
    x = sample((3, 4), dtype)
    check(F.clip(A(x), lo, hi), np.clip(x, lo, hi))


@pytest.mark.parametrize("sc, sx, sy", [((2, 3), (2, 3), (2, 3)), ((2, 3), (3,), (2, 1)),
                                        ((3,), (2, 3), ()), ((2, 1), (1, 3), (2, 3))], ids=ids)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.bool_],
                         ids=ids)
def test_where(backend, dtype, sc, sx, sy):
    c = sample(sc, np.bool_, seed=5)
    x, y = sample(sx, dtype, seed=6), sample(sy, dtype, seed=7)
    check(F.where(A(c), A(x), A(y)), np.where(c, x, y))


def test_where_scalars(backend):
    c = np.array([[True, False, True]])
    x = sample((2, 3), np.float32)
    check(F.where(A(c), A(x), 0.5), np.where(c, x, 0.5))
    check(F.where(A(c), -1, A(x)), np.where(c, -1, x))
    i = sample((2, 3), np.int32)
    check(F.where(A(c), A(i), 2), np.where(c, i, 2))
    check(F.where(A(c), A(i), 0.5), np.where(c, i, 0.5))  # float64, as numpy
    # two Python floats: nnarray's default float dtype
    check(F.where(A(c), 1.0, -2.0), np.where(c, 1.0, -2.0).astype(np.float32))
    check(F.where(A(c), 3, 4), np.where(c, 3, 4))


LARGE_SHAPES = [((64, 96), (64, 96)), ((64, 1), ()), ((), (96,)), ((1, 96), (64, 1))]
LARGE_DTYPES = [np.float16, np.float32, np.float64, np.int32, np.int64, np.bool_]
#: On compiling backends, where a kernel's dtypes and its broadcast's index code are
#: generated apart: each dtype with one shape pair, each pair with some dtype, each float
#: dtype with a pair of arrays (where NaN and the rest go in).
LARGE_COMPILED = [(d, *LARGE_SHAPES[k]) for d, k in zip(LARGE_DTYPES, (0, 3, 3, 1, 2, 0))]


@pytest.mark.parametrize("backend, dtype, sx, sy", on_backends(
    [(d, *sh) for d in LARGE_DTYPES for sh in LARGE_SHAPES], LARGE_COMPILED,
    lambda c: "-".join(map(ids, c))), indirect=["backend"])
def test_where_large(backend, dtype, sx, sy):
    """Conditions of thousands of elements without a pattern (numpy selects the bits
    branch-free there): values exact, NaN, infinities and signed zeros included (a
    compiling backend: the cases of ``LARGE_COMPILED``)."""
    c = sample((64, 96), np.bool_, seed=5)
    x, y = sample(sx, dtype, seed=6), sample(sy, dtype, seed=7)
    if np.dtype(dtype).kind == "f" and x.ndim and y.ndim:
        x.flat[:4], y.flat[:4] = [np.nan, np.inf, -np.inf, -0.0], [-0.0, np.nan, 1, -np.inf]
    got = F.where(A(c), A(x), A(y))
    want = np.where(c, x, y)
    check(got, want, exact=True)
    if want.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(np.asarray(got)), np.signbit(want))
    for v in (0, 0.0, -0.0, 2):
        want = np.where(c, x, v)
        check(F.where(A(c), A(x), v), want, exact=True)
        check(F.where(A(c), v, A(y)), np.where(c, v, y), exact=True)
        if want.dtype.kind == "f":
            np.testing.assert_array_equal(np.signbit(np.asarray(F.where(A(c), A(x), v))),
                                          np.signbit(want))


def test_relu_large(backend):
    x = sample((64, 96), np.float32, seed=2)
    x.flat[:4] = [np.nan, -np.inf, np.inf, -0.0]
    check(F.relu(A(x)), np.maximum(x, np.float32(0)), exact=True)


@pytest.mark.parametrize("src, dst", [
    (np.float32, np.int32), (np.float64, np.int64), (np.int32, np.float32),
    (np.float32, np.float16), (np.float64, np.float32), (np.float32, np.bool_),
    (np.bool_, np.float32), (np.int64, np.int32), (np.bool_, np.int64), (np.int32, np.bool_),
    (np.float32, np.float32)], ids=ids)
def test_cast(backend, src, dst):
    x = sample((3, 5), src) + (np.array(0.3, src) if np.dtype(src).kind == "f" else 0)
    x = x.astype(src)
    a = A(x)
    check(F.cast(a, dst), x.astype(dst))
    check(a.astype(dst), x.astype(dst))
    c = a.copy()
    assert c is not a
    check(c, x)


# -- in-place operators ------------------------------------------------------------------
INPLACE = [("__iadd__", np.add), ("__isub__", np.subtract), ("__imul__", np.multiply),
           ("__itruediv__", np.true_divide), ("__ipow__", np.power)]


@pytest.mark.parametrize("other", ["array", "row", "column", "scalar", "int"])
@pytest.mark.parametrize("method, ref", INPLACE, ids=[m for m, _ in INPLACE])
def test_inplace(backend, method, ref, other):
    x = sample((3, 4), np.float32, 1, 3, seed=8)
    b = {"array": sample((3, 4), np.float32, 1, 2, seed=9),
         "row": sample((4,), np.float32, 1, 2, seed=9),
         "column": sample((3, 1), np.float64, 1, 2, seed=9),  # narrower target: same_kind
         "scalar": 1.5, "int": 2}[other]
    a = A(x)
    v = a.version
    r = getattr(a, method)(A(b) if isinstance(b, np.ndarray) else b)
    assert r is a
    assert a.version > v
    check(a, ref(x, b).astype(np.float32))


def test_inplace_statement_keeps_identity(backend):
    x = sample((2, 3), np.float32, 1, 3)
    a = A(x)
    ident, v = id(a), a.version
    a += 1
    a -= A(np.ones(3, np.float32))
    a *= 2.0
    a /= A(np.full((2, 1), 4, np.float32))
    assert id(a) == ident and a.version >= v + 4
    check(a, (x + 1 - 1) * 2 / 4)


@pytest.mark.parametrize("dtype, b", [(np.int32, 3), (np.int32, np.arange(3, dtype=np.int64)),
                                      (np.int64, True), (np.float16, 0.5),
                                      (np.float64, np.ones(3, np.float32))], ids=ids)
def test_inplace_dtypes(backend, dtype, b):
    """The target keeps its dtype; the other operand may be narrower or same-kind wider."""
    x = sample((2, 3), dtype, 1, 3)
    a = A(x)
    a += A(b) if isinstance(b, np.ndarray) else b
    a *= A(b) if isinstance(b, np.ndarray) else b
    want = x.copy()
    want += b
    want *= b
    check(a, want)


@pytest.mark.parametrize("method, ref", INPLACE[:4], ids=[m for m, _ in INPLACE[:4]])
def test_inplace_repeated(backend, method, ref):
    """Repeated same-shape updates (the solvers' pattern, a cached fast path): each one
    writes in place and bumps the version."""
    x, y = sample((4, 5), np.float32, 1, 3, seed=10), sample((4, 5), np.float32, 1, 2, seed=11)
    a, b = A(x), A(y)
    for _ in range(3):
        v = a.version
        assert getattr(a, method)(b) is a
        assert a.version > v
        x = ref(x, y)
        check(a, x)
    check(b, y)


def test_inplace_on_lazy_array(backend):
    z = nna.zeros((2, 3))
    z += 1.5
    z *= A(np.arange(3, dtype=np.float32))
    check(z, np.tile(np.arange(3, dtype=np.float32) * 1.5, (2, 1)))
    o = nna.ones((2,), dtype=np.int64)
    o -= 3
    check(o, np.array([-2, -2], np.int64))


def test_inplace_aliasing(backend):
    x = sample((2, 3), np.float32)
    a = A(x)
    a += a
    check(a, x * 2)
    a *= a
    check(a, (x * 2) ** 2)


def test_operators_do_not_modify_inputs(backend):
    x, y = sample((2, 3), np.float32, seed=1), sample((2, 3), np.float32, seed=2)
    a, b = A(x), A(y)
    va, vb = a.version, b.version
    for r in (a + b, a - b, a * b, a / (b * b + 1), -a, abs(a), a ** 2, a < b):
        assert r is not a and r is not b
    assert (a.version, b.version) == (va, vb)
    check(a, x)
    check(b, y)


def test_binary_fast_path_skips_inference_once_seen(backend, monkeypatch):
    """F.add and the operators on operands seen before take the fast path: no
    re-validation, the context's cached Kernel (a guard for the dispatch benchmark)."""
    a = A(np.ones((2, 3), np.float32))
    F.add(a, a), a * 2.0  # first calls: inferred, result dtypes remembered
    op, calls = F.add.op, []
    infer = op.infer
    monkeypatch.setattr(op, "infer", lambda *args: calls.append(args) or infer(*args))
    mul_calls = []
    minfer = F.mul.op.infer
    monkeypatch.setattr(F.mul.op, "infer", lambda *args: mul_calls.append(1) or minfer(*args))
    check(F.add(a, a), np.full((2, 3), 2, np.float32))
    check(a + a, np.full((2, 3), 2, np.float32))
    check(a * 2.0, np.full((2, 3), 2, np.float32))
    assert calls == [] and mul_calls == []
    op.metas.clear()  # broadcasting: inferred once per operand metas (by value)
    F.add(a, A(np.ones((3,), np.float32)))
    F.add(A(np.ones((2, 3), np.float32)), A(np.zeros((3,), np.float32)))
    assert len(calls) == 1
    with pytest.raises(nna.ShapeError):  # a bad call is never cached: it raises again
        F.add(a, A(np.ones((4,), np.float32)))
    with pytest.raises(nna.ShapeError):
        F.add(a, A(np.ones((4,), np.float32)))


@pytest.mark.parametrize("name", ["greater", "equal", "div", "add"])
def test_binary_on_large_arrays_keeps_result_dtype(backend, name):
    """Past the numpy backend's pool threshold (256 Ki elements) the kernel allocates the
    result itself: comparisons give bool storage and int division float64, as on small
    arrays (the storage was float32 / int32 before)."""
    n = (1 << 18) + 3
    x = np.arange(n, dtype=np.int32) % 7 + 1
    y = np.arange(n, dtype=np.int32) % 5 + 1
    fn, ref = getattr(F, name), {"greater": np.greater, "equal": np.equal,
                                 "div": np.true_divide, "add": np.add}[name]
    for a, b in ((x, y), (x.astype(np.float32), y), (x, 2)):
        got = fn(A(a), A(b) if isinstance(b, np.ndarray) else b)
        want = ref(a, b)
        assert got.numpy().dtype == got.dtype == want.dtype
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_unary_fast_path_skips_inference_once_seen(backend, monkeypatch):
    """One-operand functions on an input dtype seen before take the fast path too, and
    still validate what they have not seen (a bool input to ``sin`` becomes floats)."""
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    F.sin(A(x))
    F.sin.op.metas.pop(np.dtype(bool), None)  # unseen (the cache is per op, not backend)
    calls = []
    infer = F.sin.op.infer
    monkeypatch.setattr(F.sin.op, "infer", lambda *args: calls.append(args) or infer(*args))
    check(F.sin(A(x)), np.sin(x))
    check(F.sin(A(x[:1])), np.sin(x[:1]))  # another shape, same dtype: still cached
    assert calls == []
    y = F.sin(A(np.array([True, False])))
    assert y.dtype.kind == "f" and len(calls) == 1
    np.testing.assert_allclose(y.numpy(), np.sin([1.0, 0.0]), rtol=1e-3)


ROW_PAIRS = [((300, 130), (1, 130)), ((300, 130), (300, 1)), ((4, 30, 200), (30, 1)),
             ((2, 3, 5, 70), (3, 1, 70)), ((2, 70, 3, 64), (70, 1, 1))]


@pytest.mark.parametrize("sa, sb", ROW_PAIRS, ids=str)
def test_broadcast_rows(backend, sa, sb):
    """Broadcasts whose innermost dimension is long (OpenCL: the 2-D row launch) match
    numpy in both operand orders (a compiling backend: each order with one of the ops,
    ``rotating``)."""
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)
    for name, ref in (("sub", np.subtract), ("maximum", np.maximum)):
        f = getattr(F, name)
        for swap in rotating(backend, ROW_PAIRS.index((sa, sb)), name, ["sub", "maximum"]):
            x, y = (b, a) if swap else (a, b)
            np.testing.assert_array_equal(f(A(x), A(y)).numpy(), ref(x, y))


# -- every dtype pair: the data is what .dtype says -------------------------------------
EVERY = [np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                               np.uint16, np.uint32, np.uint64, np.float16, np.float32,
                               np.float64)]


def float_rule(da, db) -> np.dtype:
    """The "float" rule written out: the operands' promoted type if floating, else the
    float numpy's ``exp`` gives for it (int8 with uint8 promote to int16: float32)."""
    d = np.promote_types(da, db)
    return d if d.kind == "f" else np.exp(np.ones(1, d)).dtype


SIGNED = {np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64)}


def int_rule(da, db) -> np.dtype | None:
    """The bitwise rows' compute type: the promoted integer type (``None``: uint64 with a
    signed integer, refused)."""
    d = np.promote_types(da, db)
    return d if d.kind in "biu" else None


#: Pairs the bitwise rows refuse (no kernel is built): run everywhere.
REFUSED = [(a, b) for a in EVERY for b in EVERY if a.kind in "iu" and b.kind in "iu"
           and {a, b} & {np.dtype(np.uint64)} and {a, b} & SIGNED]


def _needs(name: str, da: np.dtype, db: np.dtype, d: np.dtype) -> set:
    """What kernel (``name``, da, db) computing in ``d`` exercises (``elementwise.source``
    generates each apart): the op with ``da`` as a and ``db`` as b, its expression in
    ``d``, and the conversions da -> d and db -> d (the same code on either side)."""
    return {("a", name, da), ("b", name, db), ("d", name, d), ("c", da, d), ("c", db, d)}


@functools.lru_cache
def _cover(names: frozenset, dtypes: tuple, result: Callable) -> dict:
    every = [(n, da, db, d) for n in sorted(names) for da in dtypes for db in dtypes
             for d in (result(da, db),) if d is not None]
    got: dict = {n: [] for n in names}
    for n, da, db, _ in greedy(every, lambda c: _needs(*c)):
        got[n].append((da, db))
    return got


def cover(backend: str, name: str, names: set, dtypes: list, result: Callable) -> list:
    """The (da, db) pairs ``name`` runs on ``backend``: every pair on numpy; on a backend
    that compiles a kernel per (op, da, db) (a pocl program each, ~0.2 s cold) a cover,
    chosen over all ``names`` at once, of what those kernels differ by (``_needs``): each
    op runs every dtype on each side and computes in every type ``result`` (the compute
    dtype of a pair, ``None``: refused, not run) gives it, and each dtype's conversion to
    each compute type it reaches runs once. Which pairs promote to what is host code
    (``dtypes.promote``), the same on every backend: numpy checks every pair."""
    if backend == "numpy":
        return [(da, db) for da in dtypes for db in dtypes]
    return _cover(frozenset(names), tuple(dtypes), result)[name]


def test_cover_runs_every_dtype_each_side_compute_type_and_conversion():
    """Checked apart from the greedy loop: each op has every dtype on each side and every
    compute type; every (dtype, compute type) that some pair reaches is converted."""
    for names, dtypes, result in ((FLOAT_ONLY, EVERY, float_rule),
                                  ({"a", "b", "c"}, EVERY[:9], int_rule)):
        reach = {(x, result(da, db)) for da in dtypes for db in dtypes
                 if result(da, db) is not None for x in (da, db)}
        seen = set()
        for n in names:
            got = cover("opencl", n, names, dtypes, result)
            assert len(set(got)) < len(dtypes) ** 2
            assert {a for a, _ in got} == {b for _, b in got} == set(dtypes)
            assert {result(a, b) for a, b in got} == {d for _, d in reach}
            seen |= {(x, result(a, b)) for a, b in got for x in (a, b)}
        assert seen == reach


@pytest.mark.parametrize("name", sorted(FLOAT_ONLY))
def test_float_ops_on_every_dtype_pair(backend, name):
    fn, _, ref = BINARY[name]
    wrong = []
    run = cover(backend, name, FLOAT_ONLY, EVERY, float_rule)
    for da, db in run:
        a, b = sample((2, 3), da, seed=1), sample((3,), db, seed=2)
        r = fn(A(a), A(b))
        d = float_rule(da, db)
        data = r.get_data("r").dtype
        want = ref(a.astype(d), b.astype(d))
        got = np.asarray(r)
        if (r.dtype, data, got.dtype) != (d, d, d) or not np.allclose(
                got, want, **tol(d), equal_nan=True):
            wrong.append(f"{da}/{db}: .dtype {r.dtype}, data {data}, want {d}")
    assert not wrong, f"{len(wrong)} of {len(run)} pairs: {wrong[:6]}"


@pytest.mark.parametrize("name", sorted(INT_ONLY))
def test_bitwise_on_every_integer_pair(backend, name, capfd):
    fn, op, ref = BINARY[name]
    shift = "shift" in name
    kinds = "iu" if shift else "biu"
    wrong = []
    family = {n for n in INT_ONLY if ("shift" in n) == shift}
    dtypes = [d for d in EVERY if d.kind in kinds]
    run = cover(backend, name, family, dtypes, int_rule) + REFUSED * (backend != "numpy")
    for da, db in run:
        a, b = sample((2, 3), da, seed=1), sample((3,), db, seed=2)
        if shift:  # negative counts too (numpy: every bit shifted out)
            b = sample((3,), db, -1, 9, seed=2)
        if {da, db} & {np.dtype(np.uint64)} and {da, db} & SIGNED:
            x = A(a)
            with pytest.raises(nna.DTypeError, match=f"{name}: .*uint64 with signed"):
                fn(x, A(b))
            with pytest.raises(nna.DTypeError):
                op(x, A(b))  # the operator form
            assert (x.data == a).all()
            continue
        want = ref(a, b)
        for got in (fn(A(a), A(b)), op(A(a), A(b))):  # the function and operator forms
            if got.dtype != want.dtype or not (np.asarray(got) == want).all():
                wrong.append(f"{da}/{db}: {got.dtype} {np.asarray(got)}, want {want}")
    assert not wrong, wrong[:6]
    assert "error" not in capfd.readouterr().err  # no kernel build was tried


def test_compiling_backends_still_reach_every_row_dtype_and_form():
    """What the covers leave compiling backends: every row and every dtype of each table,
    every scalar operator on both sides with every dtype and scalar, every mixed pair in
    both orders, every large where dtype and shape pair."""
    def dtypes(cases):
        return {np.dtype(d) for d in cases}
    assert {n for n, _ in UNARY_COMPILED} == set(UNARY)
    assert dtypes(d for _, d in UNARY_COMPILED) == dtypes(ALL)
    assert {n for n, _ in BINARY_COMPILED} | FLOAT_ONLY | INT_ONLY == set(BINARY)
    assert dtypes(d for _, d in BINARY_COMPILED) == dtypes(ALL)
    run = [c for c in SCALAR_CASES if _scalar_kernel(c) in SCALAR_RUN]
    assert {(op, left) for op, _, _, left in run} == {(op, lf) for op in SCALAR_OPS
                                                      for lf in (False, True)}
    assert dtypes(d for _, d, _, _ in run) == dtypes(NUMERIC)
    assert {repr(s) for _, _, s, _ in run} == {repr(s) for s in SCALARS}
    assert {(x, y) for _, x, y in MIXED_ORDERS} == set(MIXED) | {(b, a) for a, b in MIXED}
    assert {n for n, _, _ in MIXED_ORDERS} == set(MIXED_OPS)
    assert dtypes(d for d, _, _ in LARGE_COMPILED) == dtypes(LARGE_DTYPES)
    assert {(x, y) for _, x, y in LARGE_COMPILED} == set(LARGE_SHAPES)
