"""NumPy's ufuncs on RemoteArrays (gpuflow._ufunc) against NumPy itself,
through the real server: the composed ufuncs on special values and every
real dtype, the ufunc keywords (dtype=, casting=, where=, out=), the
reduce/accumulate/outer methods, in-place operators, NumPy's errors at the
call, and the wrong answers of issue 23.

NumPy 2's promotion rules (np._set_promotion_state("weak")) make NumPy the
reference; where NumPy 1.24 differs from NumPy 2 (a Python int compared
beyond an array's range), the expected values are NumPy 2's, written out.
"""

import math
import operator

import numpy as np
import pytest

import gpuflow as gf
from gpuflow._inference import UFuncTypeError
from numpy_check import check_all

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

FLOATS = ["float16", "float32", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def special(dtype):
    """Values that break naive formulas: zeros of both signs, infinities,
    NaN, the largest and smallest magnitudes, and ordinary ones."""
    info = np.finfo(dtype)
    values = [0.0, -0.0, 1.0, -1.0, 0.5, -0.75, 2.5, -3.25, 10.0, 1e-3, -1e-3, math.pi,
              float(info.max), -float(info.max), float(info.tiny), float(info.tiny) / 4,
              math.inf, -math.inf, math.nan, 0.999, -0.999, 1.001, 30.0, -30.0]
    return np.array(values, dtype=dtype)


UNARY = ["tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh",
         "exp2", "log2", "log10", "cbrt", "rad2deg", "deg2rad", "degrees", "radians", "fabs",
         "rint", "trunc", "signbit", "isfinite", "conjugate"]


@pytest.mark.parametrize("dtype", FLOATS)
def test_composed_unary_ufuncs_match_numpy_on_special_values(session, dtype):
    x_np = special(dtype)
    x = session.asarray(x_np)
    exact = {"fabs", "rint", "trunc", "signbit", "isfinite", "conjugate"}
    pairs = [(getattr(gf, name)(x), getattr(np, name)(x_np)) for name in UNARY]
    check_all([p for p, name in zip(pairs, UNARY) if name not in exact])
    check_all([p for p, name in zip(pairs, UNARY) if name in exact], exact=True)


def test_hyperbolic_functions_near_float64_overflow(session):
    """sinh and cosh stay finite past exp's overflow (710 > log(DBL_MAX)),
    as NumPy's do; the inverse functions at their large-argument branch."""
    x_np = np.array([700.0, 709.5, 710.0, 710.4, -710.4, 711.0, 1e10, 3e8, 2.0 ** 28 + 1, 1e300])
    x = session.asarray(x_np)
    check_all([(gf.sinh(x), np.sinh(x_np)), (gf.cosh(x), np.cosh(x_np)),
               (gf.arcsinh(x), np.arcsinh(x_np)), (gf.arccosh(x), np.arccosh(x_np))])


@pytest.mark.parametrize("dtype", ["bool"] + INTS)
def test_composed_unary_ufuncs_of_integers(session, dtype):
    """Integers take NumPy's float loops (int8 -> float16, int16 -> float32,
    wider -> float64); trunc keeps them, as floor and ceil do; rint does not."""
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype) if dtype != "bool" else None
    if dtype == "bool":
        x_np = np.array([True, False, True])
    else:
        x_np = np.array([0, 1, 8, 27, info.max, info.min], dtype=dtype)
        x_np = np.concatenate([x_np, rng.integers(max(info.min, -50), 50, 5).astype(dtype)])
    x = session.asarray(x_np)
    names = ["tan", "arctan", "sinh", "exp2", "log2", "log10", "cbrt", "rad2deg", "fabs", "rint",
             "signbit", "isfinite", "conjugate"]
    if dtype != "bool":
        names.append("trunc")
    pairs = []
    for name in names:
        expected = getattr(np, name)(x_np)
        if name == "trunc":  # NumPy 2: integers keep their dtype, as for floor and ceil
            expected = x_np.copy()
        pairs.append((getattr(gf, name)(x), expected))
    check_all(pairs)


def test_rint_of_integers_gives_numpys_float_dtypes(session):
    """Regression (issue 23): rint of integers kept the integer dtype."""
    for dtype, want in (("int8", "float16"), ("uint8", "float16"), ("int16", "float32"),
                        ("uint16", "float32"), ("int32", "float64"), ("int64", "float64"),
                        ("uint64", "float64"), ("bool", "float16")):
        x = session.asarray(np.array([1, 0, 1], dtype=dtype))
        assert gf.rint(x).dtype == np.dtype(want) == np.rint(np.ones(1, dtype)).dtype
        assert np.rint(x).dtype == np.dtype(want)  # through __array_ufunc__ too
    check_all([(gf.rint(session.asarray(np.array([-3, 7], np.int32))), np.array([-3.0, 7.0]))])


BINARY = ["hypot", "logaddexp", "logaddexp2", "heaviside", "copysign", "float_power", "fmod",
          "fmax", "fmin"]


@pytest.mark.parametrize("dtype", FLOATS)
def test_composed_binary_ufuncs_match_numpy(session, dtype):
    x_np = special(dtype)
    y_np = np.roll(special(dtype), 5)
    x, y = session.asarray(x_np), session.asarray(y_np)
    pairs = [(getattr(gf, name)(x, y), getattr(np, name)(x_np, y_np)) for name in BINARY]
    pairs += [(gf.hypot(x, 3), np.hypot(x_np, 3)), (gf.fmod(x, -2.5), np.fmod(x_np, -2.5)),
              (gf.heaviside(x, 0.5), np.heaviside(x_np, 0.5)),
              (gf.logaddexp(2.0, x), np.logaddexp(2.0, x_np))]
    check_all(pairs)


def test_hypot_does_not_overflow_or_underflow(session):
    """sqrt(x*x + y*y) would give inf and 0 here; NumPy's hypot does not."""
    x_np = np.array([1e300, 3e-310, 1e308, 0.0, math.inf, math.nan, 3.0])
    y_np = np.array([1e300, 4e-310, 1e308, 0.0, math.nan, math.inf, 4.0])
    x, y = session.asarray(x_np), session.asarray(y_np)
    f_np = np.array([3e38, 1e-40, 5.0], np.float32)
    f = session.asarray(f_np)
    check_all([(gf.hypot(x, y), np.hypot(x_np, y_np)), (gf.hypot(f, f), np.hypot(f_np, f_np))])


@pytest.mark.parametrize("left,right", [("int8", "int8"), ("int16", "int32"), ("uint8", "int8"),
                                        ("uint64", "uint64"), ("bool", "bool"),
                                        ("int32", "float32")])
def test_composed_binary_ufuncs_with_integers(session, left, right):
    rng = np.random.default_rng(5)

    def make(dtype):
        if dtype == "bool":
            return rng.integers(0, 2, 12).astype(bool)
        lo = 0 if dtype.startswith("u") else -20
        v = rng.integers(lo, 20, 12).astype(dtype)
        return np.where(v == 0, 3, v).astype(dtype)

    a_np, b_np = make(left), make(right)
    a, b = session.asarray(a_np), session.asarray(b_np)
    names = ["fmod", "hypot", "fmax", "fmin", "float_power", "logaddexp", "heaviside"]
    pairs = []
    for name in names:
        try:
            expected = getattr(np, name)(a_np, b_np)
        except TypeError:
            with pytest.raises(TypeError):
                getattr(gf, name)(a, b)
            continue
        pairs.append((getattr(gf, name)(a, b), expected))
    pairs.append((gf.fmod(a, 7), np.fmod(a_np, 7)))
    check_all(pairs)


def test_fmod_of_integers_keeps_the_dividends_sign_and_zero_divisors_give_zero(session):
    a_np = np.array([-7, 7, -7, 7, 0, -128, 5], np.int8)
    b_np = np.array([3, -3, -3, 3, 4, -1, 0], np.int8)
    a, b = session.asarray(a_np), session.asarray(b_np)
    with np.errstate(all="ignore"):
        expected = np.fmod(a_np, b_np)
    check_all([(gf.fmod(a, b), expected), (gf.remainder(a, b), np.remainder(a_np, b_np))])


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint16", "uint64", "int64"])
def test_shifts_match_numpy_including_counts_beyond_the_width(session, dtype):
    bits = np.dtype(dtype).itemsize * 8
    signed = np.dtype(dtype).kind == "i"
    x_np = np.array([1, 3, 5, 7, -5 if signed else 9, -1 if signed else 2, 100, 1, 1], dtype)
    n_np = np.array([0, 1, 2, bits - 1, 1, bits - 1, bits, bits + 3, 3], dtype)
    x, n = session.asarray(x_np), session.asarray(n_np)
    check_all([(gf.left_shift(x, n), np.left_shift(x_np, n_np)),
               (gf.right_shift(x, n), np.right_shift(x_np, n_np)),
               (x << 2, x_np << 2), (x >> 1, x_np >> 1), (3 << n, 3 << n_np),
               (gf.left_shift(x, bits + 1), np.left_shift(x_np, bits + 1)),
               (gf.right_shift(x, bits + 1), np.right_shift(x_np, bits + 1))])
    with pytest.raises(TypeError, match="ufunc 'left_shift' not supported for the input types"):
        gf.left_shift(session.asarray(np.ones(2)), 1)


def test_two_output_ufuncs(session):
    x_np = np.array([-2.5, 3.75, -0.0, math.inf, -math.inf, math.nan, 7.0])
    x = session.asarray(x_np)
    frac, whole = gf.modf(x)
    q, r = gf.divmod(x, 2)
    ef, ew = np.modf(x_np)
    eq, er = np.divmod(x_np, 2)
    check_all([(frac, ef), (whole, ew), (q, eq), (r, er)])
    i_np = np.array([-7, 8, 9], np.int16)
    fi, wi = gf.modf(session.asarray(i_np))
    check_all([(fi, np.modf(i_np)[0]), (wi, np.modf(i_np)[1])])
    o1, o2 = gf.zeros(7, session=session), gf.zeros(7, np.float32, session=session)
    assert gf.modf(x, out=(o1, o2)) == (o1, o2)
    check_all([(o1, ef), (o2, ew.astype(np.float32))])


# ---- ufunc keywords ---------------------------------------------------------------------


def test_dtype_computes_in_that_dtype(session):
    i_np = np.array([100, 27, -3], np.int8)
    j_np = np.array([7, 4, 2], np.int8)
    f_np = np.array([1.5, -2.25, 3.0], np.float32)
    i, j, f = (session.asarray(v) for v in (i_np, j_np, f_np))
    check_all([
        (gf.floor_divide(i, j, dtype=np.float32), np.floor_divide(i_np, j_np, dtype=np.float32)),
        (gf.remainder(i, j, dtype=np.float64), np.remainder(i_np, j_np, dtype=np.float64)),
        (gf.true_divide(i, j, dtype=np.float16), np.true_divide(i_np, j_np, dtype=np.float16)),
        (gf.power(i, 2, dtype=np.int16), np.power(i_np, 2, dtype=np.int16)),
        (gf.add(i, 100, dtype=np.int16), np.add(i_np, 100, dtype=np.int16)),
        (gf.add(i, 1.5, dtype=np.int8, casting="unsafe"),
         np.add(i_np, 1.5, dtype=np.int8, casting="unsafe")),
        (gf.multiply(f, i, dtype=np.float64), np.multiply(f_np, i_np, dtype=np.float64)),
        (gf.sqrt(i * i, dtype=np.float32), np.sqrt(i_np * i_np, dtype=np.float32)),
        (gf.hypot(i, j, dtype=np.float32), np.hypot(i_np, j_np, dtype=np.float32)),
        (gf.less(i, j, dtype=bool), np.less(i_np, j_np, dtype=bool)),
        (gf.add(f, f, dtype=np.float16, casting="same_kind"),
         np.add(f_np, f_np, dtype=np.float16, casting="same_kind")),
        (gf.subtract(f, 1, dtype=np.int32, casting="unsafe"),
         np.subtract(f_np, 1, dtype=np.int32, casting="unsafe")),
    ])


def test_dtype_errors_are_numpys(session):
    i = session.asarray(np.array([1, 2], np.int8))
    f = session.asarray(np.ones(2))
    with pytest.raises(UFuncTypeError, match=r"Cannot cast ufunc 'add' input 0 from "
                       r"dtype\('float64'\) to dtype\('int32'\) with casting rule 'same_kind'"):
        gf.add(f, 1, dtype=np.int32)
    # NumPy 2: a Python float does not go into an integer loop unless unsafe.
    with pytest.raises(UFuncTypeError, match=r"Cannot cast ufunc 'add' input 1 from "
                       r"dtype\('float64'\) to dtype\('int8'\) with casting rule 'same_kind'"):
        gf.add(i, 1.5, dtype=np.int8)
    with pytest.raises(TypeError, match="No loop matching the specified signature and casting "
                       "was found for ufunc divide"):
        gf.true_divide(i, i, dtype=np.int8)
    with pytest.raises(TypeError, match="No loop matching .* ufunc sqrt"):
        gf.sqrt(i, dtype=np.int64)
    with pytest.raises(TypeError, match="No loop matching .* ufunc less"):
        gf.less(i, i, dtype=np.float64)
    with pytest.raises(UFuncTypeError, match=r"Cannot cast ufunc 'add' input 0 from "
                       r"dtype\('int8'\) to dtype\('int16'\) with casting rule 'no'"):
        gf.add(i, session.asarray(np.ones(2, np.int16)), casting="no")
    with pytest.raises(UFuncTypeError, match=r"ufunc 'sqrt' input 0 from dtype\('int8'\) to "
                       r"dtype\('float16'\) with casting rule 'equiv'"):
        gf.sqrt(i, casting="equiv")
    with pytest.raises(ValueError, match="casting must be one of"):
        gf.add(i, i, casting="sometimes")
    # The same calls in NumPy raise the same types.
    with pytest.raises(TypeError):
        np.add(np.ones(2), 1, dtype=np.int32)
    with pytest.raises(TypeError):
        np.add(np.ones(2, np.int8), np.ones(2, np.int16), casting="no")


def test_out_is_rebound_and_cast_into_its_dtype(session):
    a_np = np.array([1.5, -2.5, 3.5])
    a = session.asarray(a_np)
    o = gf.zeros(3, np.float32, session=session)
    before = o
    r = gf.multiply(a, 2, out=o)
    assert r is o and o is before and o.dtype == np.float32
    wide = gf.zeros((2, 3), session=session)
    gf.add(a, 1, wide)  # positional out, broadcast into (2, 3)
    i = gf.zeros(3, np.int64, session=session)
    gf.floor_divide(a, 1, out=i, casting="unsafe")
    t = gf.zeros((), session=session)
    a.sum(out=t)
    m = gf.zeros(3, np.int32, session=session)
    eye = session.asarray(np.eye(3, dtype=np.int32))
    gf.matmul(eye, session.asarray(np.arange(3, dtype=np.int32)), out=m)
    check_all([(o, (a_np * 2).astype(np.float32)), (wide, np.broadcast_to(a_np + 1, (2, 3))),
               (i, np.floor_divide(a_np, 1).astype(np.int64)), (t, np.array(a_np.sum())),
               (m, np.arange(3, dtype=np.int32))])
    with pytest.raises(UFuncTypeError, match=r"Cannot cast ufunc 'add' output from "
                       r"dtype\('float64'\) to dtype\('int64'\) with casting rule 'same_kind'"):
        gf.add(a, 1, out=i)
    with pytest.raises(ValueError, match=r"non-broadcastable output operand with shape \(1,\) "
                       r"doesn't match the broadcast shape \(3,\)"):
        gf.add(a, 1, out=gf.zeros(1, session=session))
    with pytest.raises(TypeError, match="out must be a gpuflow RemoteArray|return arrays must be"):
        gf.add(a, 1, out=np.zeros(3))
    with pytest.raises(TypeError, match="both a positional and keyword"):
        gf.add(a, 1, o, out=o)


def test_where_keeps_out_where_false(session):
    a_np = np.array([1.0, -2.0, 3.0, -4.0])
    a = session.asarray(a_np)
    o = session.asarray(np.full(4, 9.0)).copy()
    gf.sqrt(a, where=a > 0, out=o)
    expected = np.full(4, 9.0)
    np.sqrt(a_np, where=a_np > 0, out=expected)
    a2 = a.copy()
    gf.multiply(a2, 10, where=[True, False, True, False], out=a2)
    b = gf.add(a, 1, where=a < 0)  # NumPy leaves the others uninitialised; gpuflow zeros them
    check_all([(o, expected), (a2, np.array([10.0, -2.0, 30.0, -4.0])),
               (b, np.array([0.0, -1.0, 0.0, -3.0]))])


def test_in_place_operators_rebind_with_numpys_casting(session):
    x_np = np.arange(6, dtype=np.int16).reshape(2, 3)
    x = session.asarray(x_np)
    alias = x
    steps = [(operator.iadd, 1), (operator.imul, np.int16(3)),
             (operator.isub, np.array([1, 2, 3], np.int16)), (operator.ifloordiv, 2),
             (operator.ipow, 2), (operator.imod, 7), (operator.ilshift, 2), (operator.ior, 1),
             (operator.ixor, 3), (operator.iand, 0x7F), (operator.irshift, 1)]
    ref = x_np.copy()
    for op, value in steps:
        x = op(x, session.asarray(value) if isinstance(value, np.ndarray) else value)
        ref = op(ref, value)
    assert alias is x
    f = session.asarray(np.ones((2, 2), np.float32))
    f /= 4
    f @= session.asarray(np.full((2, 2), 2.0, np.float32))
    check_all([(x, ref), (f, np.full((2, 2), 1.0, np.float32))])
    with pytest.raises(UFuncTypeError, match=r"ufunc 'add' output from dtype\('float64'\) to "
                       r"dtype\('int16'\)"):
        x += 1.5
    with pytest.raises(UFuncTypeError, match=r"ufunc 'divide' output"):
        x /= 2
    with pytest.raises(ValueError, match="non-broadcastable output operand"):
        y = session.asarray(np.ones(3))
        y += session.asarray(np.ones((2, 3)))
    with pytest.raises(TypeError):
        x += "a"


def test_reduce_accumulate_and_outer(session):
    x_np = np.arange(1, 13, dtype=np.int8).reshape(3, 4)
    f_np = np.linspace(-1, 1, 12).reshape(3, 4)
    x, f = session.asarray(x_np), session.asarray(f_np)
    u_np, v_np = np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0])
    u, v = session.asarray(u_np), session.asarray(v_np)
    check_all([
        (gf.add.reduce(x), np.add.reduce(x_np)), (gf.add.reduce(x, axis=1), np.add.reduce(x_np, 1)),
        (gf.multiply.reduce(x, axis=None), np.multiply.reduce(x_np, axis=None)),
        (gf.maximum.reduce(f, axis=1, keepdims=True), np.maximum.reduce(f_np, 1, keepdims=True)),
        (gf.minimum.reduce(f), np.minimum.reduce(f_np)),
        (gf.logical_and.reduce(x > 2, axis=0), np.logical_and.reduce(x_np > 2, axis=0)),
        (gf.logical_or.reduce(f > 0.9), np.logical_or.reduce(f_np > 0.9)),
        (gf.add.reduce(f, axis=0, initial=10.0), np.add.reduce(f_np, axis=0, initial=10.0)),
        (gf.add.reduce(f, axis=1, where=f > 0), np.add.reduce(f_np, axis=1, where=f_np > 0)),
        (gf.maximum.reduce(f, axis=0, initial=0.5), np.maximum.reduce(f_np, 0, initial=0.5)),
        (gf.add.accumulate(x), np.add.accumulate(x_np)),
        (gf.multiply.accumulate(f, axis=1), np.multiply.accumulate(f_np, axis=1)),
        (gf.subtract.outer(u, v), np.subtract.outer(u_np, v_np)),
        (gf.multiply.outer(u, 2.0), np.multiply.outer(u_np, 2.0)),
        (np.add.reduce(f, axis=0), np.add.reduce(f_np, axis=0)),  # __array_ufunc__
        (np.add.outer(u, v), np.add.outer(u_np, v_np)),
    ])
    with pytest.raises(ValueError, match="does not have an identity"):
        gf.maximum.reduce(f, where=f > 0)
    with pytest.raises(NotImplementedError):
        gf.arctan2.reduce(f)
    assert (gf.add.nin, gf.add.nout, gf.modf.nout, gf.add.identity) == (2, 1, 2, 0)
    assert repr(gf.add) == "<ufunc 'add'>" and gf.abs is gf.absolute and gf.mod is gf.remainder


def test_numpy_ufuncs_with_keywords_stay_remote(session):
    a_np = np.array([1.0, 4.0, 9.0])
    a = session.asarray(a_np)
    o = gf.zeros(3, np.float32, session=session)
    r = np.sqrt(a, out=o)
    assert r is o
    s = np.add(a, 1, dtype=np.float32)
    h = np.hypot(a, 4.0)
    m = np.fmod(a, 2.0)
    assert all(isinstance(v, gf.RemoteArray) for v in (s, h, m))
    check_all([(o, np.sqrt(a_np).astype(np.float32)), (s, np.add(a_np, 1, dtype=np.float32)),
               (h, np.hypot(a_np, 4.0)), (m, np.fmod(a_np, 2.0))])


def test_matmul_axes(session):
    rng = np.random.default_rng(11)
    a_np = rng.standard_normal((4, 2, 3))
    b_np = rng.standard_normal((3, 2, 5))
    a, b = session.asarray(a_np), session.asarray(b_np)
    axes = [(0, 2), (0, 2), (1, 0)]
    v_np = rng.standard_normal(3)
    check_all([
        (gf.matmul(a, b, axes=axes), np.matmul(a_np, b_np, axes=axes)),
        (gf.matmul(a_np.transpose(1, 0, 2), b_np.transpose(1, 0, 2), axes=[(-2, -1)] * 3),
         np.matmul(a_np.transpose(1, 0, 2), b_np.transpose(1, 0, 2))),
        (gf.matmul(a, b, axes=[(0, 2), (0, 2), (-1, -2)]),
         np.matmul(a_np, b_np, axes=[(0, 2), (0, 2), (-1, -2)])),
        (gf.matmul(a, v_np, axes=[(0, 2), (0,), (1,)]),
         np.matmul(a_np, v_np, axes=[(0, 2), (0,), (1,)])),
        (gf.matmul(v_np, v_np, axes=[(0,), (0,), ()]),
         np.matmul(v_np, v_np, axes=[(0,), (0,), ()])),
    ])
    with pytest.raises(ValueError, match="axes should be a list with an entry for all 3"):
        gf.matmul(v_np, v_np, axes=[(0,), (0,)])
    with pytest.raises(ValueError, match="axes item 0 should be a tuple with 2 elements"):
        gf.matmul(a, b, axes=[(0,), (2, 0), (1, 0)])
    with pytest.raises(TypeError, match="axis can only be used"):
        gf.matmul(a, b, axis=0)


# ---- errors at the call, as NumPy raises them ---------------------------------------------


def test_python_ints_out_of_bounds_raise_overflow_error_at_the_call(session):
    """Regression (issue 23): NumPy raises OverflowError when a Python int
    must become a dtype that cannot hold it; gpuflow raised
    InvalidArgumentError at evaluation."""
    x = session.asarray(np.array([1, 2], np.int8))
    for build in (lambda: x + 300, lambda: 300 * x, lambda: gf.maximum(x, -129),
                  lambda: gf.where(x > 1, x, 300), lambda: gf.clip(x, 0, 1000),
                  lambda: gf.full(3, 300, np.int8, session=session), lambda: x.fill(300),
                  lambda: x.__setitem__(0, 300), lambda: gf.array([1, 300], np.int8,
                                                                   session=session),
                  lambda: session.asarray(np.array([1, 2], np.uint8)) - 256):
        with pytest.raises(OverflowError, match=r"Python integer -?\d+ out of bounds for u?int8"):
            build()
    with pytest.raises(OverflowError):
        np.array([1, 2], np.int8) + 300  # NumPy's own, for reference
    # Not converted, so no error: true division, comparisons, logical ops.
    check_all([(x / 300, np.array([1, 2], np.int8) / 300),
               (gf.logical_and(x, 300), np.array([True, True]))])


def test_comparisons_with_ints_beyond_the_dtype_are_exact(session):
    """Regression (issue 23): int64 == 2**63 gave True for INT64_MAX (the
    comparison ran in float64). NumPy 2: no int64 equals 2**63."""
    imax, imin = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    i = session.asarray(np.array([imax, imin, 0, imax - 1], np.int64))
    u = session.asarray(np.array([0, 2 ** 64 - 1, 5], np.uint64))
    b = session.asarray(np.array([100, -100], np.int8))
    false4, true4 = np.zeros(4, bool), np.ones(4, bool)
    check_all([(i == 2 ** 63, false4), (i != 2 ** 63, true4), (i < 2 ** 63, true4),
               (i <= 2 ** 63, true4), (i > 2 ** 63, false4), (i >= 2 ** 63, false4),
               (2 ** 63 > i, true4), (i == 2 ** 64 - 1, false4),
               (u > -1, np.ones(3, bool)), (u == -1, np.zeros(3, bool)),
               (b < 300, np.array([True, True])), (b > -300, np.array([True, True])),
               (b == 228, np.array([False, False])),
               (i == imax, np.array([True, False, False, False]))])


def test_integer_to_negative_integer_power_raises_value_error(session):
    x = session.asarray(np.array([2, 3], np.int32))
    for exponent in (-1, np.int8(-2), np.array([1, -1])):
        with pytest.raises(ValueError, match="Integers to negative integer powers are not "
                           "allowed."):
            x ** exponent
    check_all([(x ** -1.0, np.array([2, 3], np.int32) ** -1.0),
               (x ** 2, np.array([4, 9], np.int32))])


def test_bool_errors_have_numpys_messages(session):
    b = session.asarray(np.array([True, False]))
    with pytest.raises(TypeError, match="The numpy boolean negative, the `-` operator, is not "
                       "supported"):
        -b
    with pytest.raises(TypeError, match="numpy boolean subtract, the `-` operator, is not "
                       "supported"):
        b - b
    with pytest.raises(TypeError) as ours:
        b - b
    with pytest.raises(TypeError) as theirs:
        np.array([True]) - np.array([True])
    assert str(ours.value) == str(theirs.value)


def test_operators_are_ufuncs_with_numpy_semantics(session):
    a_np = np.array([3, -7, 12], np.int16)
    a = session.asarray(a_np)
    ops = [operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod,
           operator.and_, operator.or_, operator.xor, operator.truediv]
    check_all([(op(a, 5), op(a_np, 5)) for op in ops] + [(op(5, a), op(5, a_np)) for op in ops])


# ---- gcd and lcm (server ops) ------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "uint64"])
def test_gcd_and_lcm_match_numpy(session, dtype):
    rng = np.random.default_rng(7)
    info = np.iinfo(dtype)
    a_np = rng.integers(max(info.min, -1000), min(info.max, 1000), size=37, endpoint=True,
                        dtype=dtype)
    b_np = rng.integers(max(info.min, -1000), min(info.max, 1000), size=37, endpoint=True,
                        dtype=dtype)
    a_np[:3] = [0, 0, 12]
    b_np[:3] = [0, 5, 18]
    a, b = session.asarray(a_np), session.asarray(b_np)
    for name in ("gcd", "lcm"):
        got = getattr(gf, name)(a, b).get()
        want = getattr(np, name)(a_np, b_np)
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want, err_msg=name)
    # A weak Python int keeps the array's dtype; an empty array stays empty.
    np.testing.assert_array_equal(gf.gcd(a, 6).get(), np.gcd(a_np, 6))
    assert gf.lcm(session.asarray(np.zeros(0, dtype)), 4).get().shape == (0,)


def test_gcd_and_lcm_wrap_and_refuse_as_numpy(session):
    a = session.asarray(np.array([-128, 100, -12], np.int8))
    b = session.asarray(np.array([0, 3, 18], np.int8))
    np.testing.assert_array_equal(gf.gcd(a, b).get(), np.array([-128, 1, 6], np.int8))
    np.testing.assert_array_equal(gf.lcm(a, b).get(), np.array([0, 44, 36], np.int8))
    for bad in (session.asarray(np.array([1.0, 2.0])), session.asarray(np.array([True]))):
        with pytest.raises(TypeError):
            gf.gcd(bad, bad)
        with pytest.raises(TypeError):
            np.gcd(bad.get(), bad.get())
    with pytest.raises(TypeError):
        gf.lcm(session.asarray(np.array([1], np.int64)), session.asarray(np.array([1], np.uint64)))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_nextafter_matches_numpy(session, dtype):
    f = np.finfo(dtype)
    vals = np.array([0.0, -0.0, 1.0, -1.0, f.max, -f.max, np.inf, -np.inf, np.nan,
                     f.tiny, -f.tiny, f.smallest_subnormal, 3.5], dtype)
    toward = np.array([1.0, -1.0, 2.0, -2.0, np.inf, -np.inf, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0,
                       np.nan], dtype)
    x, y = session.asarray(vals), session.asarray(toward)
    for a, b, an, bn in ((x, y, vals, toward), (y, x, toward, vals), (x, x, vals, vals)):
        got = gf.nextafter(a, b).get()
        want = np.nextafter(an, bn)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        assert got.tobytes() == want.tobytes() or np.isnan(want).any()
    # ints take the float64 loop, as NumPy's; a weak float keeps the array's dtype.
    i = np.array([1, -3, 0], np.int32)
    np.testing.assert_array_equal(gf.nextafter(session.asarray(i), 0).get(), np.nextafter(i, 0))
    assert gf.nextafter(x, 5.0).get().dtype == np.nextafter(vals, 5.0).dtype
