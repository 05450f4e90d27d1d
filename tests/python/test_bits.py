"""Bit-level compositions against NumPy, through the real server (issue 23):
view(dtype) across item sizes, packbits / unpackbits, and the frexp, ldexp
and spacing ufuncs, in every dtype they take, with odd sizes, empty and
0-d arrays, the floats' special values and NumPy's errors."""

import warnings

import numpy as np
import pytest

import gpuflow as gf
from numpy_check import check_all

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

# NumPy warns as it makes the references (overflow to inf, NaN from inf).
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
RNG = np.random.default_rng(23)
VIEW_DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "float16", "int32", "uint32",
               "float32", "int64", "uint64", "float64", "complex64", "complex128"]
INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
FLOATS = ["float16", "float32", "float64"]
SPECIALS = [0.0, -0.0, 1.0, -3.0, 0.1, 2.5, np.inf, -np.inf, np.nan, 5e-324, -1e-310, 1e308,
            -1e308, 6e-8, -1e-45, 65504.0, 3.4e38, 1e-40, 2.2250738585072014e-308, 7.0]


def _bytes_equal(pairs):
    """[(RemoteArray, numpy array)]: dtype, shape and every byte as NumPy's
    (NaN payloads and signed zeros included), in one Execute."""
    got = gf.evaluate(*(r for r, _ in pairs))
    for (remote, want), value in zip(pairs, got):
        assert remote.dtype == want.dtype and remote.shape == want.shape, (remote, want.shape)
        assert value.dtype == want.dtype and value.shape == want.shape, (value, want)
        assert value.tobytes() == want.tobytes(), (remote, value, want)


def _floats(dtype):
    with np.errstate(over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.array(SPECIALS, np.float64).astype(dtype)


# ---- view(dtype) -----------------------------------------------------------------------


def _random_bytes(shape):
    return RNG.integers(0, 256, size=shape, dtype=np.uint8)


@pytest.mark.parametrize("src", VIEW_DTYPES)
def test_views_across_item_sizes_read_numpys_bytes(session, src):
    pairs = []
    for shape in [(3, 48), (1, 16), (2, 0, 16), (0, 32)]:
        raw = _random_bytes(shape)
        a_np = (raw & 1).view(bool) if src == "bool" else raw.view(src)
        a = session.asarray(a_np)
        for dst in VIEW_DTYPES:
            want = a_np.view(dst)
            if dst == "bool":
                want = want != 0  # gpuflow's bool holds 0 or 1: any nonzero byte is True
            pairs.append((a.view(dst), want))
    _bytes_equal(pairs)


@pytest.mark.parametrize("dst", ["uint8", "int16", "float32", "int64", "complex64", "complex128"])
def test_views_keep_the_special_floats_bit_for_bit(session, dst):
    pairs = []
    for src in FLOATS + ["complex64", "complex128"]:
        base = _floats("float64" if src[0] == "c" else src)
        if src[0] == "c":  # every pair of the specials as (real, imaginary)
            re, im = np.meshgrid(base, base)
            base = (np.stack([re.ravel(), im.ravel()], -1).astype(
                "float32" if src == "complex64" else "float64")).view(src).ravel()
        a_np = base[:base.size // 8 * 8]  # whole items of every dst
        pairs.append((session.asarray(a_np).view(dst), a_np.view(dst)))
    _bytes_equal(pairs)


def test_views_of_the_negative_nan_parts_and_signed_zeros_make_complex128(session):
    parts = np.array([[0.0, -0.0], [-0.0, 0.0], [-0.0, -0.0], [1.0, -np.nan], [-np.nan, np.inf],
                      [np.inf, -0.0], [-np.inf, np.nan], [3.0, -np.inf], [-0.0, 7.5]])
    x = session.asarray(parts)
    _bytes_equal([(x.view(np.complex128), parts.view(np.complex128)),
                  (x.view(np.uint8).view(np.complex128), parts.view(np.complex128)),
                  (x.astype(np.float32).view(np.complex64), parts.astype(np.float32).view(
                      np.complex64))])


def test_views_of_odd_sizes_and_computed_values(session):
    x_np = RNG.standard_normal((5, 7)).astype(np.float32)
    x = session.asarray(x_np)
    b_np = _random_bytes((3, 5, 24))
    b = session.asarray(b_np)
    _bytes_equal([(x.view(np.uint8), x_np.view(np.uint8)),
                  ((x * 2).view(np.int16), (x_np * 2).view(np.int16)),
                  (x.view(np.uint8).view(np.float32), x_np),
                  (b.view(np.float32), b_np.view(np.float32)),
                  (b.view(np.int16).view(np.int32), b_np.view(np.int32)),
                  (session.asarray(np.arange(7, dtype=np.int64)).view(np.int16),
                   np.arange(7, dtype=np.int64).view(np.int16)),
                  (b.view(np.complex64), b_np.view(np.complex64))])


def test_view_errors_are_numpys(session):
    cases = [(np.zeros((2, 3), np.uint8), np.uint16), (np.zeros((0, 3), np.uint8), np.float32),
             (np.zeros(6, np.int16), np.int64), (np.zeros(3, np.float32), np.complex128),
             (np.array(1.0, np.float32), np.uint8), (np.array(1, np.uint16), np.uint32),
             (np.array(1j, np.complex64), np.float32)]
    for host, dst in cases:
        with pytest.raises(ValueError) as want:
            host.view(dst)
        with pytest.raises(ValueError) as got:
            session.asarray(host).view(dst)
        assert str(got.value) == str(want.value), (host.dtype, host.shape, dst)
    # 0-d views of the same item size are NumPy's too.
    _bytes_equal([(session.asarray(np.array(1.5, np.float32)).view(np.int32),
                   np.array(1.5, np.float32).view(np.int32))])


# ---- packbits / unpackbits ------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["bool"] + INTS)
def test_packbits_matches_numpy(session, dtype):
    pairs = []
    for shape in [(), (0,), (1,), (7,), (13,), (3, 9), (2, 0, 5), (4, 3, 17)]:
        a_np = RNG.integers(0, 3, size=shape).astype(dtype)
        if dtype.startswith("int"):
            a_np = a_np * np.array(-1, dtype)  # negative values are nonzero too
        a = session.asarray(a_np)
        for axis in [None] + list(range(-len(shape), len(shape))) + ([0] if shape == () else []):
            for order in ("big", "little"):
                pairs.append((gf.packbits(a, axis=axis, bitorder=order),
                              np.packbits(a_np, axis=axis, bitorder=order)))
    check_all(pairs, exact=True)


def _unpacked(a, axis, count, order):
    """numpy.unpackbits, zero-padded past the end as NumPy documents it
    (NumPy 1.24 leaves some of those bytes uninitialised)."""
    if count is None or count <= 0:
        return np.unpackbits(a, axis=axis, count=count, bitorder=order)
    full = np.unpackbits(a, axis=axis, bitorder=order)
    ax = -1 if axis is None else axis
    if count <= full.shape[ax]:
        return np.unpackbits(a, axis=axis, count=count, bitorder=order)
    pad = [(0, 0)] * full.ndim
    pad[ax] = (0, count - full.shape[ax])
    return np.pad(full, pad)


def test_unpackbits_matches_numpy(session):
    pairs = []
    for shape in [(), (0,), (1,), (7,), (3, 5), (2, 0, 3), (2, 3, 4)]:
        a_np = RNG.integers(0, 256, size=shape).astype(np.uint8)
        a = session.asarray(a_np)
        for axis in [None] + list(range(-len(shape), len(shape))) + ([0] if shape == () else []):
            length = 8 * (a_np.size if axis is None else a_np.reshape(shape or (1,)).shape[axis])
            for order in ("big", "little"):
                for count in [None, 0, 3, length, length + 5, -1, -length]:
                    if count is not None and count < 0 and -count > length:
                        continue
                    pairs.append((gf.unpackbits(a, axis=axis, count=count, bitorder=order),
                                  _unpacked(a_np, axis, count, order)))
    check_all(pairs, exact=True)
    # The round trip.
    bits = RNG.integers(0, 2, size=(3, 21)).astype(bool)
    packed = gf.packbits(session.asarray(bits), axis=1, bitorder="little")
    check_all([(gf.unpackbits(packed, axis=1, count=21, bitorder="little"),
                bits.astype(np.uint8))], exact=True)


def test_packbits_and_unpackbits_errors_are_numpys(session):
    floats = np.ones(3)
    u8 = np.array([1, 2], np.uint8)
    cases = [(np.packbits, floats, {}), (np.packbits, np.array([1j]), {}),
             (np.packbits, np.array([1, 0]), {"bitorder": "mid"}),
             (np.packbits, np.array([1, 0]), {"bitorder": "l"}),
             (np.packbits, np.array([1, 0]), {"bitorder": 3}),
             (np.packbits, np.ones((2, 3), int), {"axis": 2}),
             (np.packbits, np.ones(3, int), {"axis": 1.0}),
             (np.unpackbits, np.array([1], np.int8), {}), (np.unpackbits, np.array([True]), {}),
             (np.unpackbits, u8, {"count": -17}), (np.unpackbits, u8, {"count": 1.5}),
             (np.unpackbits, u8, {"bitorder": "x"}), (np.unpackbits, u8, {"bitorder": None}),
             (np.unpackbits, np.ones((1, 2), np.uint8), {"axis": 5})]
    for fn, host, kw in cases:
        with pytest.raises(Exception) as want:
            fn(host, **kw)
        with pytest.raises(type(want.value)) as got:
            getattr(gf, fn.__name__)(session.asarray(host), **kw)
        assert str(got.value) == str(want.value), (fn.__name__, host.dtype, kw)
    # The prefixes NumPy accepts.
    check_all([(gf.packbits(session.asarray(np.array([1, 0, 1])), bitorder="littlex"),
                np.packbits(np.array([1, 0, 1]), bitorder="littlex")),
               (gf.unpackbits(session.asarray(u8), bitorder="lsb"),
                np.unpackbits(u8, bitorder="lsb"))], exact=True)


# ---- frexp, ldexp, spacing ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_frexp_and_spacing_of_special_floats(session, dtype):
    x_np = _floats(dtype)
    x = session.asarray(x_np)
    m, e = gf.frexp(x)
    mw, ew = np.frexp(x_np)
    with np.errstate(over="ignore"):
        sw = np.spacing(x_np)
    # NaN's sign is not NumPy's promise: compare NaN as NaN, the rest byte for byte.
    # frexp's mantissa of NaN is computed, so which NaN it is is the
    # hardware's (x86 keeps the input's, NVIDIA GPUs give their canonical
    # NaN): NaN as NaN there too; the rest, and the exponents, byte for byte.
    s = gf.spacing(x)
    nan = np.isnan(x_np)
    got = gf.evaluate(s, m, e)
    assert s.dtype == sw.dtype and got[0].dtype == sw.dtype
    np.testing.assert_array_equal(got[0], sw)
    assert m.dtype == mw.dtype and got[1].dtype == mw.dtype and np.isnan(got[1][nan]).all()
    _bytes_equal([(m[~nan], mw[~nan]), (e, ew)])
    # frexp's parts rebuild x.
    check_all([(gf.ldexp(m, e), x_np)], exact=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_frexp_spacing_and_ldexp_of_random_floats(session, dtype):
    info = np.finfo(dtype)
    bits = RNG.integers(0, 2 ** info.bits - 1, size=1023, dtype=np.uint64)
    x_np = bits.astype({"float16": np.uint16, "float32": np.uint32,
                        "float64": np.uint64}[dtype]).view(dtype)
    x = session.asarray(x_np)
    n_np = RNG.integers(-80, 80, size=1023).astype(np.int32)
    m, e = gf.frexp(x)
    mw, ew = np.frexp(x_np)
    with np.errstate(all="ignore"):
        sw = np.spacing(x_np)
        lw = np.ldexp(x_np, n_np)
    s = gf.spacing(x)
    got = gf.evaluate(m, e, s, gf.ldexp(x, session.asarray(n_np)))
    for value, want in zip(got, (mw, ew, sw, lw)):
        assert value.dtype == want.dtype
        np.testing.assert_array_equal(value, want)


@pytest.mark.parametrize("dtype", ["bool"] + INTS)
def test_frexp_ldexp_spacing_of_integers_take_numpys_float_loops(session, dtype):
    x_np = np.array([0, 1, 5, 7, 100, 1, 0]).astype(dtype)
    x = session.asarray(x_np)
    m, e = gf.frexp(x)
    mw, ew = np.frexp(x_np)
    pairs = [(m, mw), (e, ew), (gf.spacing(x), np.spacing(x_np)), (gf.ldexp(x, 3),
                                                                  np.ldexp(x_np, 3))]
    if dtype != "uint64":  # integer exponents of every dtype NumPy casts safely to int64
        f_np = np.array([1.5, -2.0, 0.0, 3.0, 1.0, 7.0, 9.0], np.float32)
        pairs.append((gf.ldexp(session.asarray(f_np), x), np.ldexp(f_np, x_np)))
    check_all(pairs, exact=True)


def test_ldexp_overflows_underflows_and_rounds_once(session):
    x_np = np.array([1.0, -1.5, 0.75, 3.0, 1e-300, 5e-324, -0.0, np.inf, np.nan, 1.0000000000000002,
                     1.9999999999999998, 2.5e-310])
    n_np = np.array([1024, 1023, -1074, -1075, 700, 2000, -5, 3, -3, -1074, -1073, 2500],
                    np.int64)
    pairs = [(gf.ldexp(session.asarray(x_np), session.asarray(n_np)), np.ldexp(x_np, n_np))]
    for n in [-2**31, -3000, -1100, -1075, -1074, -1023, -1, 0, 1, 1023, 1100, 2**31 - 1]:
        pairs.append((gf.ldexp(session.asarray(x_np), n), np.ldexp(x_np, n)))
    for dtype in ("float16", "float32"):
        y_np = np.array([1.0, -1.5, 65504.0, 6e-8, 0.1, 3.0]).astype(dtype)
        m_np = np.array([-25, -24, 1, 3, -150, 127], np.int64)
        pairs.append((gf.ldexp(session.asarray(y_np), session.asarray(m_np)),
                      np.ldexp(y_np, m_np)))
    _bytes_equal(pairs)


def test_ldexp_dtypes_and_errors_are_numpys(session):
    i16 = np.array([1, 2], np.int16)
    f32 = np.array([1.5, 2.0], np.float32)
    check_all([(gf.ldexp(2, session.asarray(i16)), np.ldexp(2, i16)),
               (gf.ldexp(2.0, session.asarray(i16)), np.ldexp(2.0, i16)),
               (gf.ldexp(session.asarray(f32), True), np.ldexp(f32, True)),
               (gf.ldexp(session.asarray(f32), np.int64(3)), np.ldexp(f32, np.int64(3)))],
              exact=True)
    cases = [(f32, np.array([3], np.uint64)), (f32, 2.0), (f32, np.array([1.0])),
             (np.array([1j]), 2), (f32, 2 ** 40), (f32, -2 ** 40)]
    for x1, x2 in cases:
        with pytest.raises(Exception) as want:
            np.ldexp(x1, x2)
        r2 = session.asarray(x2) if isinstance(x2, np.ndarray) else x2
        with pytest.raises(type(want.value)) as got:
            gf.ldexp(session.asarray(x1), r2)
        assert str(got.value) == str(want.value), (x1.dtype, x2)
    for name in ("frexp", "spacing"):
        with pytest.raises(TypeError) as want:
            getattr(np, name)(np.array([1j]))
        with pytest.raises(TypeError) as got:
            getattr(gf, name)(session.asarray(np.array([1j])))
        assert str(got.value) == str(want.value)


def test_frexp_ldexp_spacing_of_empty_and_0d_arrays(session):
    pairs = []
    for host in (np.zeros(0, np.float32), np.zeros((2, 0)), np.array(0.375), np.array(
            -5e-324), np.array(3, np.int8)):
        x = session.asarray(host)
        m, e = gf.frexp(x)
        mw, ew = np.frexp(host)
        pairs += [(m, mw), (e, ew), (gf.spacing(x), np.spacing(host)),
                  (gf.ldexp(x, 2), np.ldexp(host, 2)),
                  (gf.ldexp(x, session.asarray(np.array(-1, np.int32))),
                   np.ldexp(host, np.array(-1, np.int32)))]
    _bytes_equal(pairs)
    # NumPy's ufunc objects: the outputs, out= and the numpy entry point.
    assert (gf.frexp.nin, gf.frexp.nout, gf.ldexp.nin, gf.spacing.nout) == (1, 2, 2, 1)
    x_np = np.array([1.0, 6.0, -0.5])
    x = session.asarray(x_np)
    m, e = gf.zeros(3, session=session), gf.zeros(3, np.int32, session=session)
    gf.frexp(x, out=(m, e))
    m2, e2 = np.frexp(x)  # __array_ufunc__
    check_all([(m, np.frexp(x_np)[0]), (e, np.frexp(x_np)[1]), (m2, np.frexp(x_np)[0]),
               (e2, np.frexp(x_np)[1])], exact=True)
