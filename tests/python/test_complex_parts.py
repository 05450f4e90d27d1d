"""Assigning to .real and .imag against NumPy, through the real server
(issue 23): complex arrays are rebound with one part replaced (the other
part's bits kept: signed zeros, infinities, NaN), real arrays take .real
whole and refuse .imag, with NumPy's broadcasting, conversions, warnings and
errors."""

import re
import warnings

import numpy as np
import pytest

import gpuflow as gf

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

ComplexWarning = getattr(np, "exceptions", np).ComplexWarning
SPECIALS = [0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, -np.nan, 5e-324, -1e-310, 1e308]


def _bytes_equal(pairs):
    got = gf.evaluate(*(r for r, _ in pairs))
    for (remote, want), value in zip(pairs, got):
        assert remote.dtype == want.dtype and remote.shape == want.shape, (remote, want.shape)
        assert value.tobytes() == want.tobytes(), (value, want)


def _specials(dtype):
    """Every pair of the special floats as (real, imaginary) parts."""
    part = np.float32 if dtype == "complex64" else np.float64
    with np.errstate(over="ignore"):
        values = np.array(SPECIALS).astype(part)
    re, im = np.meshgrid(values, values)
    return np.stack([re.ravel(), im.ravel()], -1).view(dtype).ravel()


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("part", ["real", "imag"])
def test_setting_a_part_keeps_the_others_bits(session, dtype, part):
    pairs = []
    base = _specials(dtype)
    for value in (5, -0.0, np.nan, -np.inf, np.float32(2.5), np.array(-7.25)):
        a_np, a = base.copy(), session.asarray(base)
        setattr(a_np, part, value)
        setattr(a, part, value)
        pairs.append((a, a_np))
    # Arrays of every special, host and remote, as the new part.
    values = np.resize(np.array(SPECIALS), base.size).astype(np.float64)
    with np.errstate(over="ignore"):
        narrow = values.astype(np.float32)
    for v in (values, session.asarray(narrow)):
        a_np, a = base.copy(), session.asarray(base)
        with np.errstate(over="ignore"):
            setattr(a_np, part, v if isinstance(v, np.ndarray) else narrow)
        setattr(a, part, v)
        pairs.append((a, a_np))
    _bytes_equal(pairs)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_parts_broadcast_convert_and_rebind_as_numpy(session, dtype):
    rng = np.random.default_rng(7)
    host = (rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5))).astype(dtype)
    a_np, a = host.copy(), session.asarray(host)
    same_object, before = a, a[0]  # an earlier index keeps the old value
    a.real = [1, 2, 3, 4, 5]
    a_np.real = [1, 2, 3, 4, 5]
    a.imag = session.asarray(np.arange(3, dtype=np.int16).reshape(3, 1))
    a_np.imag = np.arange(3, dtype=np.int16).reshape(3, 1)
    assert a is same_object
    pairs = [(a, a_np), (before, host[0])]
    # Values past float32 become inf in complex64, as NumPy casts them.
    b_np, b = host.copy(), session.asarray(host)
    with np.errstate(over="ignore"):
        b_np.imag = 1e300
    b.imag = 1e300
    pairs.append((b, b_np))
    # Empty and 0-d arrays.
    for shape in [(0,), (2, 0), ()]:
        e_np = np.full(shape, 1 + 2j, dtype)
        e = session.asarray(e_np)
        e.real, e_np.real = 3, 3
        e.imag, e_np.imag = -4, -4
        pairs.append((e, e_np))
    _bytes_equal(pairs)


def _numpy_part_assignment(host, part, value):
    """(array after ``host.<part> = value``, NumPy's error or None, its warnings)."""
    a_np = host.copy()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            setattr(a_np, part, value)
        except Exception as e:  # noqa: BLE001 - gpuflow must raise the same
            return a_np, e, seen
    return a_np, None, seen


@pytest.mark.parametrize("part", ["imag", "real"])
def test_a_complex_value_for_a_part_is_what_numpy_does(session, part):
    # NumPy 1.x warns and keeps the real part of a complex value; NumPy 2.5
    # refuses a complex scalar (TypeError) and still warns for arrays: the
    # running NumPy's outcome, and gpuflow's the same.
    for dtype in ("complex64", "complex128"):
        host = np.array([1 + 2j, 3 - 4j], dtype)
        for value in (5 + 6j, np.array([1j, 2 - 1j]), np.complex64(2 + 3j), [1j, 2]):
            a_np, error, seen = _numpy_part_assignment(host, part, value)
            a = session.asarray(host)
            remote = session.asarray(value) if isinstance(value, np.ndarray) else value
            if error is not None:
                try:
                    setattr(a, part, remote)
                except type(error) as e:
                    assert str(e) == str(error), (dtype, value)
                else:
                    pytest.fail(f"no {type(error).__name__} for {dtype} .{part} = {value!r}")
                _bytes_equal([(a, host)])  # unchanged
                continue
            assert any(issubclass(w.category, ComplexWarning) for w in seen), (dtype, value)
            with pytest.warns(ComplexWarning, match="Casting complex values to real discards "
                              "the imaginary part"):
                setattr(a, part, remote)
            _bytes_equal([(a, a_np)])


def test_part_errors_are_numpys(session):
    host = np.zeros(3, np.complex64)
    a = session.asarray(host)
    for value in ([1, 2], np.ones((2, 3))):
        with pytest.raises(ValueError) as want:
            host.real = value
        with pytest.raises(ValueError) as got:
            a.real = value
        # a[...] = v's message writes shapes as Python does, "(2, 3)" for NumPy's "(2,3)"
        assert str(got.value).replace(", ", ",") == str(want.value).replace(", ", ",")
    _bytes_equal([(a, np.zeros(3, np.complex64))])  # unchanged by the refused assignments


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "uint16", "int32",
                                   "uint32", "int64", "uint64", "float16", "float32",
                                   "float64"])
def test_real_arrays_take_real_and_refuse_imag(session, dtype):
    host = np.arange(6).astype(dtype).reshape(2, 3)
    a_np, a = host.copy(), session.asarray(host)
    a_np.real = [1, 0, 1]
    a.real = [1, 0, 1]
    _bytes_equal([(a, a_np), (a.imag, host.imag)])
    with pytest.raises(TypeError) as want:
        a_np.imag = 1
    with pytest.raises(TypeError) as got:
        a.imag = 1
    # NumPy's own error, whose text changed in NumPy 2 ("Cannot set imaginary part ...")
    assert type(got.value) is type(want.value) and str(got.value) == str(want.value)
    assert re.match("array does not have imaginary part to set$|Cannot set imaginary part",
                    str(want.value))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a.real = a  # no warning for a real value


def test_bfloat16_refuses_imag_as_numpys_float32(session):
    with pytest.raises(TypeError) as want:
        np.zeros(2, np.float32).imag = 1
    with pytest.raises(TypeError) as got:
        gf.zeros(2, "bfloat16", session=session).imag = 1
    assert type(got.value) is type(want.value) and str(got.value) == str(want.value)
