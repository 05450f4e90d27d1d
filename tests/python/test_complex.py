"""Complex dtypes (issue 23 item 1) through the real server, against NumPy:
uploads and downloads of complex64/complex128, complex Python and NumPy
scalars, NumPy 2 promotion, every op that takes complex values (special
values included), casts, reductions, matmul, the members real/imag/conj and
the functions angle, real_if_close, iscomplex..., and NumPy's errors for the
ops without a complex loop.

NumPy 2's promotion (np._set_promotion_state("weak")) makes NumPy 1.24 the
reference; sign of complex values is NumPy 2's z / |z|, written out.
"""

import math
import warnings

import numpy as np
import pytest

import gpuflow as gf
from numpy_check import check_all

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

COMPLEX = ["complex64", "complex128"]
inf, nan = math.inf, math.nan


def values(dtype):
    v = [1 + 2j, -3.5 + 0.25j, 0j, complex(inf, 0), complex(nan, 1), complex(0, -inf),
         -2 + 0j, 0.5 - 0.5j, complex(-inf, inf), 1e-3 + 30j]
    return np.array(v, dtype=dtype)


def test_dtypes_are_numpys():
    assert gf.complex64 is np.complex64 and gf.complex128 is np.complex128


@pytest.mark.parametrize("dtype", COMPLEX)
def test_converting_copies_past_one_block_keep_the_server_up(session, dtype):
    # zeros(513, complex128) once overflowed the host's block buffer (sized
    # for 8-byte values) and killed the server.
    n = 2 * 1024 + 3
    np.testing.assert_array_equal(gf.zeros(n, dtype, session=session).get(),
                                  np.zeros(n, dtype))
    np.testing.assert_array_equal(gf.full((3, n), 2.5, dtype, session=session).get(),
                                  np.full((3, n), 2.5, dtype))
    f = np.arange(n, dtype=np.float32)
    z = np.array([1 - 2j], dtype)
    got = gf.concatenate([session.asarray(f), session.asarray(z)]).get()
    np.testing.assert_array_equal(got, np.concatenate([f, z]))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_upload_and_download_keep_the_values(session, dtype):
    x_np = values(dtype)
    x = session.asarray(x_np)
    assert x.dtype == np.dtype(dtype)
    got = x.get()
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, x_np)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_unary_functions_match_numpy(session, dtype):
    x_np = values(dtype)
    x = session.asarray(x_np)
    names = ["sqrt", "exp", "log", "log1p", "expm1", "sin", "cos", "tanh", "square", "reciprocal",
             "negative", "absolute", "conjugate", "rint"]
    pairs = [(getattr(gf, n)(x), getattr(np, n)(x_np)) for n in names]
    with np.errstate(all="ignore"):
        pairs += [(gf.isnan(x), np.isnan(x_np)), (gf.isinf(x), np.isinf(x_np)),
                  (gf.isfinite(x), np.isfinite(x_np)), (gf.logical_not(x), np.logical_not(x_np))]
    check_all(pairs, rtols={"complex64": 2e-6, "complex128": 1e-13, "float32": 2e-6,
                            "float64": 1e-13, "bool": 0})


@pytest.mark.parametrize("dtype", COMPLEX)
def test_sign_is_numpy2s_z_over_abs(session, dtype):
    x_np = np.array([3 + 4j, -2 + 0j, 0j, complex(inf, 1), complex(1, -inf), complex(nan, 0)],
                    dtype)
    want = np.array([0.6 + 0.8j, -1 + 0j, 0j, 1 + 0j, -1j, complex(nan, nan)], dtype)
    check_all([(gf.sign(session.asarray(x_np)), want)])


@pytest.mark.parametrize("dtype", COMPLEX)
def test_arithmetic_and_ordering_match_numpy(session, dtype):
    a_np = values(dtype)
    b_np = np.roll(values(dtype), 3)
    a, b = session.asarray(a_np), session.asarray(b_np)
    with np.errstate(all="ignore"):
        pairs = [(a + b, a_np + b_np), (a - b, a_np - b_np), (a * b, a_np * b_np),
                 (a / b, a_np / b_np), (gf.maximum(a, b), np.maximum(a_np, b_np)),
                 (gf.minimum(a, b), np.minimum(a_np, b_np))]
        for op in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
            pairs.append((getattr(a, op)(b), getattr(a_np, op)(b_np)))
    check_all(pairs)


def branch_cut_values(dtype):
    """Both sides of every cut (signed zeros), the branch points, tiny and
    huge values, infinities and NaN."""
    v = [2 + 0j, complex(2, -0.0), -2 + 0j, complex(-2, -0.0), 2j, complex(0, 2), complex(-0.0, 2),
         complex(0, -2), complex(-0.0, -2), 1 + 0j, -1 + 0j, 1j, -1j, 0.5 - 0.5j, 1e-9 + 1e-10j,
         -1e-12 + 3e-13j, 1e20 - 3e19j, -4e200 + 1e200j, 1 + 1e-20j, complex(inf, 1),
         complex(-inf, -2), complex(3, inf), complex(nan, 0), complex(0, nan), complex(nan, inf),
         complex(inf, nan), complex(-inf, inf), 0.3 + 2.5j, -7 - 0.01j]
    return np.array(v, dtype=dtype)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_inverse_functions_match_numpys_branch_cuts(session, dtype):
    z_np = branch_cut_values(dtype)
    if dtype == "complex64":
        z_np = z_np[np.abs(z_np.real) < 1e30]  # within float32 range
    z = session.asarray(z_np)
    names = ["arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh"]
    with np.errstate(all="ignore"):
        pairs = [(getattr(gf, n)(z), getattr(np, n)(z_np)) for n in names]
    check_all(pairs, rtols={"complex64": 2e-6, "complex128": 1e-13})
    # The side of a cut, by the sign of a zero: exactly NumPy's signs.
    got = gf.evaluate(*(r for r, _ in pairs))
    for value, (_, want) in zip(got, pairs):
        finite = np.isfinite(want)
        np.testing.assert_array_equal(np.signbit(value.imag[finite]),
                                      np.signbit(want.imag[finite]))
        np.testing.assert_array_equal(np.signbit(value.real[finite]),
                                      np.signbit(want.real[finite]))


def test_inverse_functions_of_real_values_keep_their_rules(session):
    x_np = np.array([-0.5, 0.25, 0.9], np.float32)
    x = session.asarray(x_np)
    check_all([(gf.arcsin(x), np.arcsin(x_np)), (gf.arctanh(x), np.arctanh(x_np)),
               (gf.arcsin(x + 0j), np.arcsin(x_np + np.complex64(0j)))])


@pytest.mark.parametrize("dtype", COMPLEX)
def test_fused_complex_reductions_match_numpy(session, dtype):
    rng = np.random.default_rng(11)
    x_np = (rng.standard_normal((5, 33)) + 1j * rng.standard_normal((5, 33))).astype(dtype)
    x = session.asarray(x_np)
    with np.errstate(all="ignore"):
        pairs = [(((x * (0.5 + 2j)).sum(axis=1)) * (1 - 1j),
                  (x_np * (0.5 + 2j)).sum(axis=1) * (1 - 1j)),
                 (gf.exp(x).mean(axis=0).conj(), np.exp(x_np).mean(axis=0).conj()),
                 (abs(x).max(axis=1), np.abs(x_np).max(axis=1)),
                 ((x > 0).any(axis=1), (x_np > 0).any(axis=1)),
                 (gf.sqrt(x).prod(), np.sqrt(x_np).prod()),
                 (gf.maximum(x, 1j).argmin(axis=1), np.maximum(x_np, 1j).argmin(axis=1))]
    check_all(pairs, rtols={"complex64": 1e-5, "complex128": 1e-12, "float32": 1e-5,
                            "float64": 1e-12})


def test_composed_functions_of_complex_values(session):
    z_np = np.array([1 + 2j, -0.5 + 0.25j, 0.1 - 3j, 2 + 0j])
    z = session.asarray(z_np)
    check_all([(gf.tan(z), np.tan(z_np)), (gf.sinh(z), np.sinh(z_np)), (gf.cosh(z), np.cosh(z_np)),
               (gf.exp2(z), np.exp2(z_np)), (gf.log2(z), np.log2(z_np)),
               (gf.log10(z), np.log10(z_np))], rtols={"complex128": 1e-13})


def test_power_matches_numpy(session):
    a_np = np.array([1 + 1j, 2 - 3j, 1 + 1j, 0j, 0j, -1 + 0j, 2 + 0.5j])
    b_np = np.array([5 + 0j, 5 + 0j, -2 + 0j, 0j, 2 + 0j, 0.5 + 0j, 1.5 - 1j])
    a, b = session.asarray(a_np), session.asarray(b_np)
    check_all([(a ** b, a_np ** b_np), (a ** 2, a_np ** 2), (a ** 0.5, a_np ** 0.5)])


def test_promotion_with_real_arrays_and_python_scalars(session):
    cases = [("float32", 1j), ("float16", 1j), ("float64", 1j), ("int8", 1j), ("int64", 2j),
             ("bool", 1j), ("uint16", 0.5 - 1j)]
    pairs = []
    for dtype, scalar in cases:
        x_np = np.array([1, 0, 1], dtype=dtype)
        x = session.asarray(x_np)
        pairs += [(x + scalar, x_np + scalar), (x * scalar, x_np * scalar)]
    c64 = np.array([1 + 1j, 2 - 1j], np.complex64)
    c = session.asarray(c64)
    for other in (np.array([1, 2], np.float32), np.array([1, 2], np.int16),
                  np.array([1, 2], np.int32), np.array([1, 2], np.float64)):
        pairs.append((c + session.asarray(other), c64 + other))
    # NumPy scalars are strong (NumPy 2; NumPy 1.24's weak mode gives complex64 here).
    pairs += [(c + 1.5, c64 + 1.5), (c * 2, c64 * 2),
              (c + np.complex128(1j), c64.astype(np.complex128) + 1j),
              (c + np.float64(1), c64 + np.float64(1))]
    check_all(pairs)
    assert (c + 1j).dtype == np.complex64
    assert (session.asarray(np.ones(2, np.int32)) + 1j).dtype == np.complex128


def test_parts_members_and_functions(session):
    z_np = np.array([1 + 2j, -3.5 + 0.25j, complex(0, -inf), -2 + 0j], np.complex64)
    z = session.asarray(z_np)
    x_np = np.array([-2.0, 0.0, 3.0], np.float32)
    x = session.asarray(x_np)
    check_all([(z.real, z_np.real), (z.imag, z_np.imag), (z.conj(), z_np.conj()),
               (z.conjugate(), z_np.conjugate()), (gf.real(z), np.real(z_np)),
               (gf.imag(z), np.imag(z_np)), (gf.angle(z), np.angle(z_np)),
               (gf.angle(z, deg=True), np.angle(z_np, deg=True)), (abs(z), abs(z_np)),
               (gf.iscomplex(z), np.iscomplex(z_np)), (gf.isreal(z), np.isreal(z_np)),
               (x.real, x_np.real), (x.imag, x_np.imag), (gf.angle(x), np.angle(x_np)),
               (gf.conj(x), np.conj(x_np))])
    assert gf.iscomplexobj(z) and not gf.isrealobj(z)
    assert gf.isrealobj(x) and not gf.iscomplexobj(x)


def test_real_part_of_a_real_array_is_the_array_itself(session):
    # NumPy: x.real is x (and np.real(x) is x) for real dtypes, so a later
    # rebinding of x (x += 1, x[0] = 9) shows through the name taken from it.
    for dtype in (np.bool_, np.int8, np.uint32, np.float16, np.float64):
        x_np = np.arange(6).reshape(2, 3).astype(dtype)
        assert x_np.real is x_np and np.real(x_np) is x_np
        x = session.asarray(x_np)
        assert x.real is x
        assert gf.real(x) is x
    x = session.asarray(np.array([1.0, 2.0, 3.0], np.float32))
    r = x.real
    x += 1
    x[0] = 9
    np.testing.assert_array_equal(r.get(), np.array([9.0, 3.0, 4.0], np.float32))
    z = session.asarray(np.array([1 + 2j], np.complex64))
    assert z.real is not z and z.real.dtype == np.float32


def test_real_if_close(session):
    close_np = np.array([1 + 1e-14j, 2 - 1e-15j])
    far_np = np.array([1 + 1e-3j, 2 + 0j])
    close = gf.real_if_close(session.asarray(close_np))
    assert close.dtype == np.float64
    np.testing.assert_array_equal(close.get(), np.real_if_close(close_np))
    far = gf.real_if_close(session.asarray(far_np))
    assert far.dtype == np.complex128
    np.testing.assert_array_equal(far.get(), far_np)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_reductions_match_numpy(session, dtype):
    rng = np.random.default_rng(5)
    x_np = (rng.standard_normal((4, 6)) + 1j * rng.standard_normal((4, 6))).astype(dtype)
    x = session.asarray(x_np)
    pairs = [(x.sum(), x_np.sum()), (x.sum(axis=0), x_np.sum(axis=0)), (x.prod(axis=1),
             x_np.prod(axis=1)), (x.mean(), x_np.mean()), (x.mean(axis=1), x_np.mean(axis=1)),
             (x.var(), x_np.var()), (x.std(axis=0), x_np.std(axis=0)),
             (x.var(axis=1, ddof=1), x_np.var(axis=1, ddof=1)),
             (x.max(axis=1), x_np.max(axis=1)), (x.min(), x_np.min()),
             (x.argmax(axis=0), x_np.argmax(axis=0)), (x.argmin(), x_np.argmin()),
             (gf.cumsum(x, axis=1), np.cumsum(x_np, axis=1)),
             (gf.cumprod(x, axis=0), np.cumprod(x_np, axis=0))]
    check_all(pairs, rtols={"complex64": 1e-5, "complex128": 1e-12, "float32": 1e-5,
                            "float64": 1e-12})


@pytest.mark.parametrize("dtype", COMPLEX)
def test_matmul_and_dot(session, dtype):
    rng = np.random.default_rng(7)
    a_np = (rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5))).astype(dtype)
    b_np = (rng.standard_normal((5, 2)) + 1j * rng.standard_normal((5, 2))).astype(dtype)
    a, b = session.asarray(a_np), session.asarray(b_np)
    f_np = rng.standard_normal((5, 2)).astype(np.float32)
    check_all([(a @ b, a_np @ b_np), (gf.dot(a[0], b[:, 0]), np.dot(a_np[0], b_np[:, 0])),
               (a @ session.asarray(f_np), a_np @ f_np)])


def test_casts_to_and_from_complex(session):
    z_np = np.array([1.5 + 2j, -2.7 - 1j, 0j, 1j], np.complex128)
    z = session.asarray(z_np)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pairs = [(z.astype(t), z_np.astype(t))
                 for t in ("float32", "float64", "int32", "int8", "bool", "complex64")]
    i_np = np.array([-7, 300], np.int16)
    pairs += [(session.asarray(i_np).astype("complex64"), i_np.astype("complex64")),
              (session.asarray(np.array([True, False])).astype(np.complex128),
               np.array([True, False]).astype(np.complex128))]
    check_all(pairs)


def test_creation_and_where(session):
    z_np = np.array([1 + 1j, 2 - 2j])
    z = session.asarray(z_np)
    check_all([(gf.full((2, 2), 1j), np.full((2, 2), 1j)),
               (gf.zeros(3, np.complex64, session=session), np.zeros(3, np.complex64)),
               (gf.where(z.real > 1, z, 0), np.where(z_np.real > 1, z_np, 0)),
               (gf.concatenate([z, session.asarray(np.array([3.0]))]),
                np.concatenate([z_np, [3.0]])),
               (z.reshape(2, 1).T, z_np.reshape(2, 1).T)])


def test_ops_without_a_complex_loop_raise_numpys_type_error(session):
    z = session.asarray(np.array([1 + 1j]))
    for fn in (gf.floor, gf.ceil, gf.trunc, gf.fabs):
        with pytest.raises(TypeError, match="not supported for the input types"):
            fn(z)
    for fn in (gf.floor_divide, gf.remainder, gf.arctan2):
        with pytest.raises(TypeError, match="not supported for the input types"):
            fn(z, z)
    with pytest.raises(TypeError, match="not supported for the input types"):
        gf.bitwise_and(z, z)
    for fn in (gf.rad2deg, gf.deg2rad, gf.degrees, gf.radians):  # real loops only
        with pytest.raises(TypeError, match=f"ufunc '{fn.__name__}' not supported"):
            fn(z)
    check_all([(gf.sort(z), np.sort(np.array([1 + 1j])))])  # complex sorts (a lexsort)


def test_scatter_into_complex_arrays(session):
    z_np = np.array([1 + 1j, 2 - 1j, 0j])
    z = session.asarray(z_np)
    z[np.array([0, 2])] = 5 - 2j
    want = z_np.copy()
    want[[0, 2]] = 5 - 2j
    check_all([(z, want)])
