"""gpuflow.testing, CuPy's cupy.testing: each assertion passes and fails
when it should for RemoteArrays, numpy arrays and scalars; each
numpy_cupy_* decorator runs the function with numpy and with gpuflow and
fails on a mismatch of values, dtypes, shapes, kinds or errors; the dtype
and order loops call each dtype; parameterize/product expand."""

import inspect
import sys
import threading
import types
import unittest
import warnings

import numpy as np
import pytest

import gpuflow as gf
from gpuflow import testing

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")


# ---- assertions -------------------------------------------------------------------------


def test_assert_allclose(session):
    a = np.array([1.0, 2.0, 3.0])
    x = session.asarray(a)
    testing.assert_allclose(x, a)
    testing.assert_allclose(a, x)
    testing.assert_allclose(x, x)
    testing.assert_allclose(x * (1 + 1e-8), a)
    testing.assert_allclose(session.asarray(np.float32(2.0)), 2.0)
    testing.assert_allclose(x + 1e-3, a, rtol=0, atol=2e-3)
    with pytest.raises(AssertionError, match="Not equal to tolerance"):
        testing.assert_allclose(x * (1 + 1e-6), a)
    with pytest.raises(AssertionError, match="my message"):
        testing.assert_allclose(x + 1e-3, a, atol=1e-4, err_msg="my message")
    with pytest.raises(AssertionError):
        testing.assert_allclose(x, a[:2])


def test_bfloat16_arrays_are_compared_by_value(session):
    x = session.asarray(np.array([1.0, 2.5, -3.0], np.float32)).astype("bfloat16")
    testing.assert_allclose(x, [1.0, 2.5, -3.0])
    testing.assert_array_equal(x, np.array([1.0, 2.5, -3.0], np.float32))
    with pytest.raises(AssertionError):
        testing.assert_allclose(x, [1.0, 2.5, 3.0])

    @testing.numpy_cupy_allclose(type_check=False, rtol=1e-2)
    def cast(xp):
        a = xp.asarray(np.linspace(-2, 2, 9, dtype=np.float32))
        return a.astype("bfloat16") if xp is gf else a

    @testing.numpy_cupy_allclose(rtol=1e-2)
    def cast_checked(xp):
        a = xp.asarray(np.linspace(-2, 2, 9, dtype=np.float32))
        return a.astype("bfloat16") if xp is gf else a

    cast()
    with pytest.raises(AssertionError, match="different dtypes"):
        cast_checked()  # numpy has no bfloat16: a dtype mismatch


def test_assert_array_almost_equal_nulp_and_ulp(session):
    a = np.array([1.0, 10.0, 100.0], np.float32)
    x = session.asarray(a)
    testing.assert_array_almost_equal(x + 1e-7, a)
    testing.assert_array_almost_equal(x + 0.004, a, decimal=2)
    with pytest.raises(AssertionError):
        testing.assert_array_almost_equal(x + 1e-4, a)
    step = np.nextafter(a, np.float32(np.inf))
    testing.assert_array_almost_equal_nulp(session.asarray(step), a, nulp=1)
    testing.assert_array_max_ulp(session.asarray(step), x, maxulp=1)
    two = np.nextafter(step, np.float32(np.inf))
    with pytest.raises(AssertionError):
        testing.assert_array_almost_equal_nulp(session.asarray(two), a, nulp=1)
    with pytest.raises(AssertionError):
        testing.assert_array_max_ulp(session.asarray(two), x, maxulp=1)
    testing.assert_array_max_ulp(session.asarray(two), x, maxulp=2, dtype=np.float32)


def test_assert_array_equal(session):
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    x = session.asarray(a)
    testing.assert_array_equal(x, a)
    testing.assert_array_equal(x.astype(np.int64), a)
    testing.assert_array_equal(session.asarray(np.zeros(3)), 0)  # a scalar broadcasts
    with pytest.raises(AssertionError):
        testing.assert_array_equal(x.astype(np.int64), a, strict=True)
    with pytest.raises(AssertionError):
        testing.assert_array_equal(session.asarray(np.zeros(3)), 0, strict=True)
    with pytest.raises(AssertionError, match="Mismatched elements: 1 / 6"):
        testing.assert_array_equal(x + (np.arange(6).reshape(2, 3) == 4), a)
    testing.assert_array_equal(x, a, strides_check=True)
    with pytest.raises(AssertionError, match="Strides are not equal"):
        testing.assert_array_equal(x.T, a.T, strides_check=True)
    nan = np.array([np.nan, 1.0])
    testing.assert_array_equal(session.asarray(nan), nan)


def test_assert_array_list_equal_and_less(session):
    a, b = np.arange(3), np.ones((2, 2))
    xs = [session.asarray(a), session.asarray(b)]
    testing.assert_array_list_equal(xs, [a, b])
    testing.assert_array_list_equal(tuple(xs), (a, b))
    with pytest.raises(AssertionError, match="Matching types of list or tuple"):
        testing.assert_array_list_equal(xs, (a, b))
    with pytest.raises(AssertionError, match="List or tuple is expected"):
        testing.assert_array_list_equal(a, a)
    with pytest.raises(AssertionError, match="List size is different"):
        testing.assert_array_list_equal(xs, [a])
    with pytest.raises(AssertionError):
        testing.assert_array_list_equal(xs, [a, b + 1])
    testing.assert_array_less(xs[0], a + 1)
    testing.assert_array_less(-1, xs[0])
    with pytest.raises(AssertionError):
        testing.assert_array_less(xs[0], a)


def test_numpy_testing_reexports(session):
    x = session.asarray(np.arange(3.0))
    testing.assert_equal({"a": [x, 2], "b": (x,)},
                         {"a": [np.arange(3.0), 2], "b": (np.arange(3.0),)})
    testing.assert_equal(3, 3)
    with pytest.raises(AssertionError):
        testing.assert_equal([x], [np.arange(3.0) + 1])
    testing.assert_almost_equal(x + 1e-9, np.arange(3.0))
    with pytest.raises(AssertionError):
        testing.assert_almost_equal(x + 1e-3, np.arange(3.0))
    testing.assert_approx_equal(1.0000001, 1.0)
    testing.assert_raises(ValueError, int, "x")
    with testing.assert_raises(ZeroDivisionError):
        1 / 0
    testing.assert_raises_regex(ValueError, "invalid literal", int, "x")
    testing.assert_string_equal("abc", "abc")
    with testing.assert_no_warnings():
        pass
    assert testing.suppress_warnings is np.testing.suppress_warnings


def test_assert_warns():
    with testing.assert_warns(DeprecationWarning):
        warnings.warn("old", DeprecationWarning)
    assert testing.assert_warns(UserWarning, lambda v: warnings.warn("u") or v, 5) == 5
    with pytest.raises(AssertionError, match="DeprecationWarning not triggered"):
        with testing.assert_warns(DeprecationWarning):
            warnings.warn("other", UserWarning)
    with pytest.raises(AssertionError):
        testing.assert_warns(UserWarning, lambda: None)


# ---- the numpy/gpuflow decorators ------------------------------------------------------------


def test_allclose_runs_both_modules(session):
    seen = []

    @testing.numpy_cupy_allclose()
    def f(xp):
        seen.append(xp)
        return xp.sqrt(xp.arange(5, dtype=np.float64))

    f()
    assert seen == [gf, np]
    # pytest asks no fixture for an argument with a default (CuPy's way).
    assert inspect.signature(f).parameters["xp"].default is None


def test_allclose_fails_on_values_dtypes_shapes_and_kinds(session):
    @testing.numpy_cupy_allclose()
    def values(xp):
        return xp.arange(3.0) + (1e-3 if xp is gf else 0)

    @testing.numpy_cupy_allclose(atol=1e-2)
    def values_within_atol(xp):
        return xp.arange(3.0) + (1e-3 if xp is gf else 0)

    @testing.numpy_cupy_allclose()
    def dtypes(xp):
        return xp.arange(3, dtype=np.float32 if xp is gf else np.float64)

    @testing.numpy_cupy_allclose(type_check=False)
    def dtypes_unchecked(xp):
        return xp.arange(3, dtype=np.float32 if xp is gf else np.float64)

    @testing.numpy_cupy_allclose()
    def shapes(xp):
        return xp.zeros((2, 3) if xp is gf else (3, 2))

    @testing.numpy_cupy_allclose()
    def host_result(xp):
        return np.arange(3.0)  # gpuflow must return a RemoteArray where numpy returns an ndarray

    @testing.numpy_cupy_allclose()
    def lengths(xp):
        return (xp.arange(2.0),) * (2 if xp is gf else 1)

    for func in (values, dtypes, shapes, host_result, lengths):
        with pytest.raises(AssertionError):
            func()
    values_within_atol()
    dtypes_unchecked()


def test_allclose_tuples_scalars_and_tolerance_dicts(session):
    @testing.numpy_cupy_allclose()
    def pair(xp):
        a = xp.arange(6.0).reshape(2, 3)
        return a.sum(axis=0), a.max()

    @testing.numpy_cupy_allclose()
    def python_scalar(xp):
        return bool(xp.allclose(xp.arange(3.0), xp.arange(3.0)))

    @testing.numpy_cupy_allclose()
    def second_differs(xp):
        a = xp.arange(6.0)
        return a, a + (xp is gf)

    tol = {np.float32: 1e-2, "default": 1e-12}

    @testing.numpy_cupy_allclose(rtol=tol)
    def loose_float32(xp):
        return xp.ones(3, np.float32) * (1.001 if xp is gf else 1.0)

    @testing.numpy_cupy_allclose(rtol=tol)
    def tight_float64(xp):
        return xp.ones(3, np.float64) * (1.001 if xp is gf else 1.0)

    pair()
    python_scalar()
    loose_float32()
    with pytest.raises(AssertionError):
        second_differs()
    with pytest.raises(AssertionError):
        tight_float64()
    with pytest.raises(TypeError, match="Keys of the tolerance dictionary"):
        testing.numpy_cupy_allclose(rtol={"float32": 1e-3})
    with pytest.raises(TypeError, match="When `type_check` is `False`"):
        testing.numpy_cupy_allclose(rtol={np.float32: 1e-3}, type_check=False)

    @testing.numpy_cupy_allclose(atol={np.float64: 1e-5})
    def no_tolerance_for(xp):
        return xp.ones(2, np.float32)

    with pytest.raises(TypeError, match="Can not find tolerance"):
        no_tolerance_for()


def test_errors_must_match(session):
    @testing.numpy_cupy_allclose(accept_error=ValueError)
    def both_value_errors(xp):
        return xp.zeros((2, 3)).reshape(4)

    @testing.numpy_cupy_allclose()
    def not_accepted(xp):
        return xp.zeros((2, 3)).reshape(4)

    @testing.numpy_cupy_allclose(accept_error=True)
    def only_gpuflow(xp):
        if xp is gf:
            raise ValueError("gpuflow only")
        return xp.zeros(2)

    @testing.numpy_cupy_allclose(accept_error=True)
    def different(xp):
        raise (TypeError if xp is gf else ValueError)("differ")

    @testing.numpy_cupy_allclose(accept_error=np.linalg.LinAlgError)
    def linalg_errors(xp):
        return xp.linalg.inv(xp.zeros((2, 2)))

    both_value_errors()
    linalg_errors()
    with pytest.raises(AssertionError, match="Both gpuflow and numpy raise exceptions"):
        not_accepted()
    with pytest.raises(AssertionError, match="Only gpuflow raises error"):
        only_gpuflow()
    with pytest.raises(AssertionError, match="Different types of errors occurred"):
        different()

    @testing.numpy_cupy_allclose()
    def f(xp):
        return xp.zeros(2)

    with pytest.raises(TypeError):  # a bad keyword fails before the function runs
        f(bogus=1)


def test_both_skipped_skips(session):
    @testing.numpy_cupy_allclose()
    def skipped(xp):
        raise unittest.SkipTest("not here")

    with pytest.raises(unittest.SkipTest):
        skipped()

    @testing.numpy_cupy_allclose()
    def pytest_skipped(xp):
        pytest.skip("not here either")

    with pytest.raises(pytest.skip.Exception):
        pytest_skipped()


def test_decorators_need_a_session(client):
    @testing.numpy_cupy_allclose()
    def f(xp):
        return xp.zeros(2)

    # The current session is per thread: a new thread has none (whatever
    # other tests left entered in this one).
    outcome = []

    def run():
        assert gf.current_session() is None
        try:
            f()
        except RuntimeError as e:
            outcome.append(str(e))
        with client.session():
            f()
            outcome.append("ran")

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    assert len(outcome) == 2 and "no current session" in outcome[0] and outcome[1] == "ran"


def test_other_comparisons(session):
    @testing.numpy_cupy_array_equal()
    def equal(xp):
        return xp.arange(5) * 2

    @testing.numpy_cupy_array_equal()
    def not_equal(xp):
        return xp.arange(5) * (2 if xp is gf else 3)

    @testing.numpy_cupy_array_equal(strides_check=True)
    def strides(xp):
        return xp.arange(6.0).reshape(2, 3).T  # numpy's is F-ordered, gpuflow's C-ordered

    @testing.numpy_cupy_array_equal()
    def f_ordered(xp):
        return xp.arange(6.0).reshape(2, 3).T  # contiguity is not a mismatch

    @testing.numpy_cupy_array_almost_equal(decimal=3)
    def almost(xp):
        return xp.ones(3) + (1e-5 if xp is gf else 0)

    @testing.numpy_cupy_array_almost_equal(decimal=6)
    def not_almost(xp):
        return xp.ones(3) + (1e-5 if xp is gf else 0)

    @testing.numpy_cupy_array_less()
    def less(xp):
        return xp.arange(3.0) - (1 if xp is gf else 0)

    @testing.numpy_cupy_array_less()
    def not_less(xp):
        return xp.arange(3.0)

    @testing.numpy_cupy_array_max_ulp(maxulp=1)
    def ulp(xp):
        return xp.sqrt(xp.arange(1.0, 9.0, dtype=np.float32))

    @testing.numpy_cupy_array_almost_equal_nulp(nulp=1)
    def nulp(xp):
        a = xp.arange(1.0, 4.0, dtype=np.float32)
        return a * (np.float32(1 + 2.5e-7) if xp is gf else np.float32(1))

    equal()
    f_ordered()
    almost()
    less()
    ulp()
    for func in (not_equal, strides, not_almost, not_less, nulp):
        with pytest.raises(AssertionError):
            func()
    with pytest.warns(DeprecationWarning):
        list_equal = testing.numpy_cupy_array_list_equal()(lambda xp: [xp.arange(2), xp.ones(1)])
    list_equal()


def deprecated_raises(**kwargs):
    # numpy_cupy_raises is deprecated (a DeprecationWarning), as in CuPy.
    with pytest.warns(DeprecationWarning, match="numpy_cupy_raises is deprecated"):
        return testing.numpy_cupy_raises(**kwargs)


def test_equal_and_raises(session):
    @testing.numpy_cupy_equal()
    def shapes(xp):
        a = xp.zeros((2, 3))
        return a.shape, a.ndim, a.T.shape

    @testing.numpy_cupy_equal()
    def arrays(xp):
        return [xp.arange(3)]

    @testing.numpy_cupy_equal()
    def differ(xp):
        return xp.zeros(4 if xp is gf else 3).shape

    @deprecated_raises()
    def raises(xp):
        xp.zeros(3)[5]

    @deprecated_raises()
    def raises_nothing(xp):
        return xp.zeros(3)

    @deprecated_raises()
    def raise_different(xp):
        raise (IndexError if xp is gf else ValueError)()

    @deprecated_raises(accept_error=ValueError)
    def reshape(xp):
        xp.zeros((2, 3)).reshape(5)

    shapes()
    arrays()
    raises()
    reshape()
    with pytest.raises(AssertionError, match="Results are not equal"):
        differ()
    with pytest.raises(AssertionError, match="expected to raise errors, but not"):
        raises_nothing()
    with pytest.raises(AssertionError, match="Different types of errors"):
        raise_different()


def test_other_names_and_scipy_stand_in(session):
    @testing.numpy_cupy_allclose(name="mod")
    def f(mod):
        return mod.ones(2)

    f()
    assert inspect.signature(f).parameters["mod"].default is None

    @testing.numpy_cupy_allclose(scipy_name="scp")
    def g(xp, scp):
        return scp.special.erf(xp.linspace(-2, 2, 5))

    try:
        import scipy  # noqa: F401
    except ImportError:
        with pytest.raises(unittest.SkipTest, match="scipy is not installed"):
            g()
    else:
        g()


def test_unsigned_results_compared_where_the_signed_run_is_non_negative(session):
    # What a negative value becomes in an unsigned type differs by device,
    # so CuPy (and gpuflow.testing) compare only where the same function
    # with the signed counterpart gives values >= 0.
    def body(xp, src, dst, bad):
        a = xp.array(np.array([-3, 5, 7], dtype=src)).astype(dst)
        if xp is gf and np.dtype(dst).kind == "u":
            a = a + xp.array(np.array(bad, dtype=dst))
        return a

    @testing.numpy_cupy_array_equal()
    def at_negative(xp, src, dst, order):
        return body(xp, src, dst, [9, 0, 0])

    @testing.numpy_cupy_array_equal()
    def at_positive(xp, src, dst):
        return body(xp, src, dst, [0, 1, 0])

    at_negative(src=np.int16, dst=np.uint16, order="C")  # "C" is no dtype: left alone
    with pytest.raises(AssertionError):
        at_positive(src=np.int16, dst=np.uint16)


@pytest.mark.parametrize("example", [
    "array([1], uint8) + int64(1)",  # numpy.dtype raises ValueError
    "uint8(1) + 2",  # TypeError
    ",",  # SyntaxError
    "1c",  # NumPy 1.x: a FutureWarning (an error under -W error); NumPy 2: ('S1', (1,))
])
def test_string_parameters_that_are_no_dtype_are_left_alone(session, example):
    # CuPy's nep50 examples pass expressions as string parameters next to
    # unsigned dtypes; however numpy.dtype refuses one, it names no dtype.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            want = np.dtype(example).type
        except (TypeError, ValueError, SyntaxError, Warning):
            want = None
        assert example == "1c" or want is None
        assert testing._dtype_type(example) is want

        @testing.numpy_cupy_array_equal()
        def f(xp, example, dtype):
            return xp.array(np.array([1, 2], dtype=dtype)) + 1

        f(example=example, dtype=np.uint8)
    assert testing._dtype_type("u1") is np.uint8
    assert testing._dtype_type(np.dtype("f4")) is np.float32
    assert testing._dtype_type(np.int16) is np.int16
    assert testing._dtype_type(3) is None


# ---- dtype and order loops ------------------------------------------------------------------

ALL = [np.float64, np.float32, np.float16, np.int8, np.int16, np.int32, np.int64, np.uint8,
       np.uint16, np.uint32, np.uint64, np.bool_, np.complex64, np.complex128]


def _called(decorator, *args):
    seen = []

    @decorator
    def f(*args, dtype):
        seen.append(dtype)

    f(*args)
    return seen


def test_dtype_loops_call_each_dtype():
    assert _called(testing.for_all_dtypes()) == ALL
    assert _called(testing.for_all_dtypes(no_float16=True, no_bool=True, no_complex=True)) == [
        t for t in ALL if t not in (np.float16, np.bool_, np.complex64, np.complex128)]
    assert _called(testing.for_float_dtypes()) == [np.float64, np.float32, np.float16]
    assert _called(testing.for_float_dtypes(no_float16=True)) == [np.float64, np.float32]
    assert _called(testing.for_signed_dtypes()) == [np.int8, np.int16, np.int32, np.int64]
    assert _called(testing.for_unsigned_dtypes()) == [np.uint8, np.uint16, np.uint32, np.uint64]
    assert _called(testing.for_int_dtypes()) == ALL[3:12]
    assert _called(testing.for_int_dtypes(no_bool=True)) == ALL[3:11]
    assert _called(testing.for_complex_dtypes()) == [np.complex64, np.complex128]
    assert _called(testing.for_dtypes(["f", np.int8, np.dtype("c16")])) == [
        np.float32, np.int8, np.complex128]
    assert "bfloat16" not in [np.dtype(t).name for t in _called(testing.for_all_dtypes())]


def test_dtype_loop_names_and_failures():
    seen = []

    @testing.for_float_dtypes(name="t")
    def f(t, extra=0):
        seen.append((t, extra))

    f(extra=1)
    assert seen == [(np.float64, 1), (np.float32, 1), (np.float16, 1)]
    assert inspect.signature(f).parameters["t"].default is None

    @testing.for_all_dtypes()
    def fails_for_one(dtype):
        assert dtype != np.int32

    with pytest.raises(AssertionError):
        fails_for_one()


def test_dtype_combinations():
    seen = []

    @testing.for_dtypes_combination([np.int8, np.float32, np.complex64], names=("a", "b"),
                                    full=True)
    def full(a, b):
        seen.append((a, b))

    full()
    assert sorted(seen, key=str) == sorted(
        [(a, b) for a in (np.int8, np.float32, np.complex64)
         for b in (np.int8, np.float32, np.complex64)], key=str)
    seen.clear()

    @testing.for_all_dtypes_combination(names=("a", "b"), full=False)
    def subset(a, b):
        seen.append((a, b))

    subset()
    assert len(seen) < len(ALL) ** 2 and len(set(seen)) == len(seen)
    for i in range(2):  # every dtype appears for each name
        assert {pair[i] for pair in seen} == set(ALL)
    first = list(seen)
    seen.clear()
    subset()
    assert seen == first  # the same subset every run
    seen.clear()

    @testing.for_int_dtypes_combination(names=("a", "b"), no_bool=True, full=True)
    def ints(a, b):
        seen.append((a, b))

    ints()
    assert len(seen) == 64
    assert len(_called(testing.for_dtypes_combination([np.int8], names=("dtype",)))) == 1


@testing.for_all_dtypes()
@testing.numpy_cupy_allclose(rtol={np.float16: 1e-3, "default": 1e-6})
def test_collected_by_pytest_as_cupy_tests_are(session, xp, dtype):
    # pytest passes `session` only: xp and dtype come from the decorators.
    a = testing.shaped_arange((2, 3), xp, dtype)
    return a * 2 if dtype != np.bool_ else a


def test_dtype_combinations_with_allclose(session):
    @testing.for_dtypes_combination([np.int16, np.float32, np.complex64], names=("a", "b"),
                                    full=True)
    @testing.numpy_cupy_allclose(rtol=1e-6)
    def add(xp, a, b):
        return testing.shaped_arange((2, 3), xp, a) + testing.shaped_reverse_arange((2, 3), xp, b)

    add()


def test_orders():
    seen = []

    @testing.for_CF_orders()
    def f(order):
        seen.append(order)

    f()
    assert seen == [None, "C", "F", "c", "f"]
    seen.clear()

    @testing.for_orders(["C", "A"], name="o")
    def g(o):
        seen.append(o)

    g()
    assert seen == ["C", "A"]

    class Case:
        shape = (2, 3, 4)
        order = "C"

        @testing.for_contiguous_axes()
        def run(self, axis):
            seen.append(axis)

    seen.clear()
    Case().run()
    assert seen == [(0, 1, 2), (1, 2), (2,)]
    seen.clear()
    Case.order = "F"
    Case().run()
    assert seen == [(0, 1, 2), (0, 1), (0,)]


# ---- arrays -------------------------------------------------------------------------------


@pytest.mark.usefixtures("session")
@pytest.mark.parametrize("dtype", ALL)
def test_shaped_arrays_match_numpy(dtype):
    for make in (testing.shaped_arange, testing.shaped_reverse_arange, testing.shaped_random):
        x, a = make((2, 3, 4), gf, dtype), make((2, 3, 4), np, dtype)
        assert isinstance(x, gf.RemoteArray) and isinstance(a, np.ndarray)
        assert x.dtype == a.dtype == dtype and x.shape == a.shape == (2, 3, 4)
        np.testing.assert_array_equal(x.get(), a)
    assert testing.shaped_arange((0, 3), gf, dtype).shape == (0, 3)
    assert testing.shaped_arange((), np, dtype).shape == ()


def test_shaped_array_values(session):
    np.testing.assert_array_equal(testing.shaped_arange((2, 2)).get(),
                                  np.array([[1, 2], [3, 4]], np.float32))
    np.testing.assert_array_equal(testing.shaped_reverse_arange((3,), np, np.int8), [3, 2, 1])
    np.testing.assert_array_equal(testing.shaped_arange((4,), np, np.bool_),
                                  [False, True, False, True])
    np.testing.assert_array_equal(testing.shaped_arange((2,), np, np.complex64), [1 + 1j, 2 + 2j])
    r = testing.shaped_random((100,), np, np.float64, scale=3, seed=7)
    assert 0 <= r.min() and r.max() < 3
    np.testing.assert_array_equal(r, np.random.RandomState(7).rand(100) * 3)
    assert not np.array_equal(r, testing.shaped_random((100,), np, np.float64, seed=8))
    assert testing.shaped_arange((2, 3), np, order="F").flags.f_contiguous
    assert testing.shaped_arange((2, 3), gf, order="F").shape == (2, 3)
    np.testing.assert_array_equal(testing.shaped_linspace(-2, 2, (5,), np, np.uint8),
                                  np.linspace(0, 2, 5).astype(np.uint8))
    m = testing.generate_matrix((2, 4, 3), gf, np.float64, singular_values=[3.0, 2.0, 1.0])
    np.testing.assert_allclose(np.linalg.svd(m.get(), compute_uv=False), [[3, 2, 1]] * 2)
    with pytest.raises(ValueError, match="too few axes"):
        testing.generate_matrix((3,), np, singular_values=[1.0])
    with pytest.raises(ValueError, match="negative singular value"):
        testing.generate_matrix((2, 2), np, singular_values=[1.0, -1.0])
    with pytest.raises(TypeError, match="not supported"):
        testing.generate_matrix((2, 2), np, np.int32, singular_values=[1.0, 1.0])


# ---- parameterize, product, requirements, fix_random ---------------------------------------


def test_product():
    assert testing.product({"b": [1, 2], "a": ["x"]}) == [{"a": "x", "b": 1},
                                                           {"a": "x", "b": 2}]
    assert len(testing.product({"a": [1, 2, 3], "b": [4, 5], "c": [6]})) == 6
    assert testing.product({"a": []}) == []
    assert testing.product_dict([{"a": 1}, {"a": 2}], [{"b": 3}]) == [{"a": 1, "b": 3},
                                                                      {"a": 2, "b": 3}]


SEEN_PARAMS = []


@testing.parameterize(*testing.product({"shape": [(2,), (3, 1)], "dtype": [np.float32]}))
@pytest.mark.usefixtures("session")
class TestParameterizedPytestClass:
    @testing.numpy_cupy_allclose()
    def test_zeros(self, xp):
        assert self.dtype == np.float32 and self.shape in ((2,), (3, 1))
        return xp.zeros(self.shape, self.dtype) + 1


def test_parameterize_of_a_pytest_class_parametrizes_it():
    marks = [m for m in TestParameterizedPytestClass.pytestmark if m.name == "parametrize"]
    assert len(marks) == 1
    params = marks[0].args[1]
    assert [p.values[0] for p in params] == [{"dtype": np.float32, "shape": (2,)},
                                             {"dtype": np.float32, "shape": (3, 1)}]
    assert params[0].id.startswith("_param_0_{dtype=float32, shape=(2,)}")
    with pytest.raises(RuntimeError, match="twice"):
        testing.parameterize({"a": 1})(TestParameterizedPytestClass)


def test_parameterize_of_a_unittest_class():
    module = types.ModuleType("gpuflow_param_case")
    sys.modules[module.__name__] = module
    try:
        ran = []

        class TestCase(unittest.TestCase):
            def test_record(self):
                ran.append((self.a, self.b))

        TestCase.__module__ = module.__name__
        once = testing.parameterize({"a": 1}, {"a": 2})(TestCase)
        names = sorted(n for n in vars(module) if n.startswith("TestCase_param"))
        assert names == ["TestCase_param_0_{a=1}", "TestCase_param_1_{a=2}"]
        twice = testing.parameterize({"b": "x"}, {"b": "y"})(once)
        names = sorted(n for n in vars(module) if n.startswith("TestCase_param"))
        assert len(names) == 4 and all(n.count("_param_") == 2 for n in names)
        assert len(twice.cases) == 4
        suite = unittest.TestSuite(unittest.defaultTestLoader.loadTestsFromTestCase(
            getattr(module, n)) for n in names)
        result = unittest.TextTestRunner(stream=open("/dev/null", "w")).run(suite)
        assert result.wasSuccessful()
        assert sorted(ran) == [(1, "x"), (1, "y"), (2, "x"), (2, "y")]
    finally:
        del sys.modules[module.__name__]


def test_requirements():
    assert testing.installed("numpy>=1.0")
    assert not testing.installed("numpy<1.0")
    assert not testing.installed("no-such-package-gpuflow")
    assert testing.numpy_satisfies(">=1.20")
    mark = testing.with_requires("no-such-package-gpuflow")
    assert mark.name == "skipif" and mark.args[0] is True
    assert testing.with_requires("numpy").args[0] is False


def test_fix_random():
    @testing.fix_random()
    def draw():
        return np.random.rand(3)

    np.random.seed(1)
    before = np.random.get_state()[1].copy()
    a, b = draw(), draw()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.random.get_state()[1], before)  # restored


# A test file as CuPy writes them (with `cupy` renamed): a parameterized
# unittest class whose methods loop over dtypes; the session comes from an
# autouse fixture.


@testing.parameterize(*testing.product({"shape": [(2, 3), (7,)], "axis": [0, -1]}))
@pytest.mark.usefixtures("session")
class TestCupyStyleUnittestClass(unittest.TestCase):
    @testing.for_all_dtypes(no_bool=True)
    @testing.numpy_cupy_allclose(rtol={np.float16: 1e-3, "default": 1e-6})
    def test_sum(self, xp, dtype):
        a = testing.shaped_arange(self.shape, xp, dtype)
        return a.sum(axis=self.axis)

    @testing.for_float_dtypes()
    @testing.numpy_cupy_array_equal()
    def test_flip(self, xp, dtype):
        return xp.flip(testing.shaped_random(self.shape, xp, dtype), axis=self.axis)


def test_cupy_style_classes_were_generated():
    names = sorted(n for n in globals() if n.startswith("TestCupyStyleUnittestClass_param_"))
    assert len(names) == 4
    assert isinstance(globals()["TestCupyStyleUnittestClass"], testing._ParameterizedCases)


# CuPy's bases for functions with NumPy's names, as its test files use them
# (tests/cupy_tests/logic_tests/test_type_test.py, binary_tests).


class TestIsScalar(testing.NumpyAliasBasicTestBase):
    func = "isscalar"


@testing.parameterize(*testing.product({"args": [(0,), (3,), (-3,), (3, 5), (-3, 5)]}))
class TestBinaryReprValues(testing.NumpyAliasValuesTestBase):
    func = "binary_repr"


def _alias_results(base, func, monkeypatch=None, replacement=None, args=None):
    """What unittest makes of a subclass of ``base`` for ``func`` (with
    gpuflow's function replaced by ``replacement`` when given)."""
    if replacement is not None:
        monkeypatch.setattr(gf, func, replacement)
    case = type("Case", (base,), {"func": func, **({"args": args} if args else {})})
    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(case).run(result)
    return result.testsRun, [t._testMethodName for t, _ in result.failures + result.errors]


def test_numpy_alias_bases_check_gpuflows_function(monkeypatch):
    assert not issubclass(testing.NumpyAliasBasicTestBase, testing.NumpyAliasValuesTestBase)
    # kept out of a star import, where pytest would collect and run the bases
    assert not {n for n in testing.__all__ if n.startswith("NumpyAlias")}
    assert _alias_results(testing.NumpyAliasBasicTestBase, "base_repr") == (2, [])
    assert _alias_results(testing.NumpyAliasValuesTestBase, "base_repr", args=(10, 3)) == (1, [])
    # numpy's own function re-exported: its docstring is numpy's object
    assert _alias_results(testing.NumpyAliasBasicTestBase, "base_repr", monkeypatch,
                          np.base_repr) == (2, ["test_docstring"])

    def other_signature(number, base=2):
        """Another signature."""
        return np.base_repr(number, base)

    assert _alias_results(testing.NumpyAliasBasicTestBase, "base_repr", monkeypatch,
                          other_signature) == (2, ["test_argspec"])

    def undocumented(number, base=2, padding=0):
        return "0"

    assert _alias_results(testing.NumpyAliasBasicTestBase, "base_repr", monkeypatch,
                          undocumented) == (2, ["test_docstring"])
    assert _alias_results(testing.NumpyAliasValuesTestBase, "base_repr", monkeypatch,
                          undocumented, args=(10, 3)) == (1, ["test_values"])
    # without a func, the base's NotImplementedError
    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(
        type("NoFunc", (testing.NumpyAliasBasicTestBase,), {})).run(result)
    assert len(result.errors) == 2 and "NotImplementedError" in result.errors[0][1]


def test_numpy_alias_classes_were_collected():
    names = [n for n in globals() if n.startswith("TestBinaryReprValues_param_")]
    assert len(names) == 5
