"""Assignment and ndarray members on RemoteArrays against NumPy, through
the real server: a[idx] = v, a[mask] = v, fill, JAX's .at, the ndarray
constructor, flags, strides, base, real/imag, mT, view, and array() of
Python data with a dtype (issue 23)."""

import numpy as np
import pytest

import gpuflow as gf
from numpy_check import check_all

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")


def evaluate_equal(pairs):
    check_all(pairs, exact=True)


SETITEM_CASES = [
    (0, 5), (-1, 7), ((1, 2), 9), (slice(None), 3), (Ellipsis, 1),
    ((slice(1, None), 0), np.array([10, 20, 30])), ((slice(None), slice(None, None, 2)), 8),
    ((slice(None), slice(1, None, 2)), np.arange(8).reshape(4, 2)),
    ((slice(None, None, -1), 2), np.array([1, 2, 3, 4])),
    ((slice(3, 0, -2), slice(None, None, -3)), np.arange(4).reshape(2, 2)),
    ((None, 1, slice(1, 4)), [[5, 6, 7]]), ((Ellipsis, -1), -4), ((2,), np.arange(5)),
    ((slice(1, 3), slice(0, 5, 4)), np.array([[1, 2]])), ((slice(5, 9), 0), 1),
    ((slice(None, None, 3), None, slice(None, None, -2)), np.array([[[1, 2, 3]]])),
    ((1, slice(10, -10, -1)), np.arange(5) * 3), ((np.int64(3), np.int32(-2)), 42),
]


@pytest.mark.parametrize("dtype", ["int32", "float32", "uint8"])
def test_setitem_with_basic_indices_matches_numpy(session, dtype):
    pairs = []
    for key, value in SETITEM_CASES:
        ref = np.arange(20, dtype=dtype).reshape(4, 5)
        x = session.asarray(ref)
        if isinstance(value, int) and value < 0 and dtype.startswith("u"):
            with pytest.raises(OverflowError, match=f"Python integer {value} out of bounds"):
                x[key] = value  # NumPy 2 raises too (NumPy 1.24 only warns)
            continue
        ref[key] = value
        x[key] = value if not isinstance(value, np.ndarray) else session.asarray(value)
        pairs.append((x, ref))
    evaluate_equal(pairs)


def test_setitem_rebinds_without_aliasing(session):
    x = session.asarray(np.zeros((2, 3)))
    before = x[0]  # a new array, not a view
    same_object = x
    x[0] = 1.0
    assert same_object is x
    evaluate_equal([(before, np.zeros(3)), (x, np.array([[1.0] * 3, [0.0] * 3]))])


def test_setitem_casts_like_numpy(session):
    ref = np.zeros(4, np.int8)
    x = session.asarray(ref)
    x[0] = 2.9  # truncated
    x[1] = -1.5
    x[2:] = session.asarray(np.array([300, 258], np.int16))  # arrays cast unsafely: wrap
    x[3] = np.float64(7.8)
    ref[0], ref[1], ref[2:], ref[3] = 2.9, -1.5, np.array([300, 258], np.int16), 7.8
    b = session.asarray(np.zeros(3, bool))
    b[1] = 5
    evaluate_equal([(x, ref), (b, np.array([False, True, False]))])
    with pytest.raises(OverflowError, match="Python integer 300 out of bounds for int8"):
        x[0] = 300
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        x[0] = float("nan")
    with pytest.raises(OverflowError, match="cannot convert float infinity to integer"):
        x[0] = float("inf")
    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(3,\) "
                       r"into shape \(2,\)"):
        x[:2] = [1, 2, 3]
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 with size 4"):
        x[4] = 1


def test_setitem_through_a_boolean_mask(session):
    ref = np.arange(12, dtype=np.float64).reshape(3, 4)
    x = session.asarray(ref)
    x[x > 6] = -1
    ref[ref > 6] = -1
    rows = np.array([True, False, True])
    x[rows] = session.asarray(np.array([9.0, 8.0, 7.0, 6.0]))
    ref[rows] = np.array([9.0, 8.0, 7.0, 6.0])
    x[np.zeros((3, 4), bool)] = 100
    x[[False, True, False]] = 0.5
    ref[[False, True, False]] = 0.5
    y = session.asarray(np.arange(3))
    y[True] = 4
    evaluate_equal([(x, ref), (y, np.full(3, 4))])
    with pytest.raises(IndexError, match="boolean index did not match indexed array along axis "
                       "0; size of axis is 3 but size of corresponding boolean axis is 2"):
        x[np.array([True, False])] = 1
    # One value per selected element, reading through a mask and integer
    # arrays: tests/python/test_select.py.


def test_fill_and_in_place_rebinding_keep_the_dtype(session):
    x = gf.zeros((2, 2), np.uint16, session=session)
    x.fill(7)
    f = session.asarray(np.ones(3, np.float32))
    f.fill(np.float64(0.1))
    ref = np.ones(3, np.float32)
    ref.fill(np.float64(0.1))
    evaluate_equal([(x, np.full((2, 2), 7, np.uint16)), (f, ref)])
    with pytest.raises(OverflowError, match="Python integer -1 out of bounds for uint16"):
        x.fill(-1)
    assert x.writable  # writable arrays stay writable for custom kernels


def test_at_updates_are_new_arrays(session):
    base_np = np.arange(10, dtype=np.int32)
    x = session.asarray(base_np)
    m_np = np.arange(12.0).reshape(3, 4)
    m = session.asarray(m_np)
    set_ = x.at[2:5].set(-1)
    add = x.at[::3].add(100)
    mul = m.at[1].multiply(2)
    mx = m.at[:, 1].max(5.0)
    mn = m.at[m > 8].min(9.5)
    masked_add = m.at[m > 8].add(1000)
    dv = m.at[0].divide(2)
    pw = x.at[-2:].power(2)
    got = x.at[3:6].get()
    sq = m.at[2].apply(gf.square)
    e = [base_np.copy() for _ in range(3)]
    e[0][2:5] = -1
    e[1][::3] += 100
    e[2][-2:] **= 2
    em = [m_np.copy() for _ in range(6)]
    em[0][1] *= 2
    em[1][:, 1] = np.maximum(em[1][:, 1], 5.0)
    em[2][m_np > 8] = np.minimum(em[2][m_np > 8], 9.5)
    em[3][m_np > 8] += 1000
    em[4][0] /= 2
    em[5][2] **= 2
    evaluate_equal([(set_, e[0]), (add, e[1]), (pw, e[2]), (mul, em[0]), (mx, em[1]),
                    (mn, em[2]), (masked_add, em[3]), (dv, em[4]), (sq, em[5]),
                    (got, base_np[3:6]), (x, base_np), (m, m_np)])


def test_ndarray_members(session):
    x_np = np.zeros((3, 1, 4), np.float32)
    x = session.asarray(x_np)
    assert x.strides == x_np.strides == (16, 16, 4)
    assert session.asarray(np.zeros((2, 0, 3))).strides == np.zeros((2, 0, 3)).strides
    assert session.asarray(np.zeros((), np.int16)).strides == ()
    for shape in ((3, 1, 4), (1, 5), (5,), (0, 3), (), (2, 3)):
        ours, theirs = session.asarray(np.zeros(shape)).flags, np.zeros(shape).flags
        for key in ("C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA", "WRITEABLE", "ALIGNED"):
            assert ours[key] == theirs[key], (shape, key)
        assert ours.c_contiguous and ours.f_contiguous == theirs.f_contiguous
        assert repr(ours) == repr(theirs)
    assert x.flags["C"] and x.flags.owndata and x.base is None
    with pytest.raises(KeyError):
        x.flags["nonsense"]
    assert (x.itemsize, x.nbytes) == (4, 48)
    m_np = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    m = session.asarray(m_np)
    evaluate_equal([(m.mT, np.swapaxes(m_np, -1, -2)), (m.T, m_np.T), (m.real, m_np),
                    (m.imag, np.zeros_like(m_np)), (m.view(np.uint16), m_np.view(np.uint16)),
                    (m.view(), m_np), (session.asarray(np.array([True, False])).view(np.int8),
                                       np.array([1, 0], np.int8))])
    with pytest.raises(ValueError, match="matrix transpose with ndim < 2 is undefined"):
        session.asarray(np.ones(3)).mT
    # Views that change the item size scale the last axis (tests/python/test_bits.py).
    evaluate_equal([(x.view(np.int16), x_np.view(np.int16)),
                    (session.asarray(np.array([0, 3], np.int8)).view(np.bool_),
                     np.array([False, True]))])
    # NumPy's own error, whose text changed in NumPy 2 ("Cannot set imaginary
    # part of non-complex array."): the installed NumPy's.
    with pytest.raises(TypeError) as want:
        x_np.imag = 1
    with pytest.raises(TypeError) as got:
        x.imag = 1
    assert type(got.value) is type(want.value) and str(got.value) == str(want.value)
    y = session.asarray(np.ones(2))
    y.real = 5
    evaluate_equal([(y, np.full(2, 5.0))])


def test_the_ndarray_constructor(session):
    a = gf.ndarray((2, 3), np.int16, session=session)
    assert isinstance(a, gf.ndarray) and isinstance(a, gf.RemoteArray) and a.writable
    b = gf.ndarray(4, session=session)
    assert isinstance(session.asarray([1]), gf.ndarray)
    evaluate_equal([(a, np.zeros((2, 3), np.int16)), (b, np.zeros(4))])
    with session:
        c = gf.ndarray((2,), "float32", strides=(4,))
        assert c.shape == (2,) and c.dtype == np.float32
    with pytest.raises(NotImplementedError, match="C-contiguous"):
        gf.ndarray((2, 3), order="F", session=session)
    with pytest.raises(NotImplementedError, match="memptr"):
        gf.ndarray((2,), memptr=1, session=session)


def test_array_of_python_ints_goes_straight_to_the_dtype(session):
    """Regression (issue 23): the list went through float64 first, so
    2**64 - 1 came back as 0 in uint64."""
    top = 2 ** 64 - 1
    values = [0, 0, top, np.uint64(top)]
    a = gf.array(values, dtype=np.uint64, session=session)
    big = gf.asarray([2 ** 63 + 1, 2 ** 62], dtype="uint64", session=session)
    i = gf.array([[1, -2], [3, 2 ** 62 + 1]], dtype=np.int64, session=session)
    evaluate_equal([(a, np.array(values, dtype=np.uint64)),
                    (big, np.array([2 ** 63 + 1, 2 ** 62], np.uint64)),
                    (i, np.array([[1, -2], [3, 2 ** 62 + 1]], np.int64))])
    assert a.get()[2] == top
    with pytest.raises(OverflowError):
        gf.array([1, 2 ** 64], dtype=np.uint64, session=session)


def test_reductions_and_scans_take_out(session):
    x_np = np.arange(12, dtype=np.float64).reshape(3, 4)
    x = session.asarray(x_np)
    s = gf.zeros(4, np.int32, session=session)
    c = gf.zeros((3, 4), session=session)
    arg = gf.zeros(3, np.int64, session=session)
    mx = gf.zeros((), session=session)
    assert gf.sum(x, axis=0, out=s) is s
    x.cumsum(axis=1, out=c)
    x.argmax(axis=1, out=arg)
    gf.nanmax(x, out=mx)
    evaluate_equal([(s, x_np.sum(axis=0).astype(np.int32)), (c, x_np.cumsum(axis=1)),
                    (arg, x_np.argmax(axis=1)), (mx, np.array(11.0))])
    with pytest.raises(ValueError, match="output parameter for sum has shape"):
        x.sum(axis=1, out=s)
    with pytest.raises(ValueError, match="output array is not acceptable"):
        gf.dot(x, x.T, out=gf.zeros((3, 3), np.float32, session=session))


def test_views_of_the_same_item_size_read_the_bytes(session):
    """view(dtype) across kinds is the server's bitcast: NumPy's bytes."""
    specials = [0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, -np.nan, 1e-40, 65504.0]
    pairs = []
    for src, dsts in (("float16", ("int16", "uint16")), ("float32", ("int32", "uint32")),
                      ("float64", ("int64", "uint64", "complex64")),
                      ("int32", ("float32", "uint32")), ("uint64", ("float64", "int64")),
                      ("complex64", ("float64", "uint64")), ("complex128", ("complex128",))):
        with np.errstate(over="ignore"):
            a_np = np.array(specials, dtype=np.float64).astype(src) if src[0] in "fc" else \
                np.array([0, 1, -1, 2**31 - 1, -2**31, 7], dtype=np.int64).astype(src)
        a = session.asarray(a_np)
        for dst in dsts:
            pairs.append((a.view(dst), a_np.view(dst)))
        pairs.append((a.reshape(2, -1).view(dsts[0]), a_np.reshape(2, -1).view(dsts[0])))
    got = gf.evaluate(*[p[0] for p in pairs])
    for g, (_, want) in zip(got, pairs):
        assert g.dtype == want.dtype and g.shape == want.shape
        assert g.tobytes() == want.tobytes(), (g, want)
    # Computed values view too (the bitcast fuses into the kernel that makes them).
    b_np = np.arange(5, dtype=np.float32) - 2
    b = session.asarray(b_np)
    assert (b * 2).view(np.uint32).get().tobytes() == (b_np * 2).view(np.uint32).tobytes()
    assert session.asarray(np.zeros(0, np.float64)).view(np.int64).get().shape == (0,)


def test_signbit_reads_the_sign_bit(session):
    values = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, -np.nan], np.float64)
    for dtype in ("float16", "float32", "float64"):
        x_np = values.astype(dtype)
        got = gf.signbit(session.asarray(x_np)).get()
        np.testing.assert_array_equal(got, np.signbit(x_np), err_msg=dtype)
    assert gf.signbit(session.asarray(np.array([-3, 0, 4], np.int8))).get().tolist() == \
        [True, False, False]
    # copysign takes the sign of -NaN too.
    ones = session.asarray(np.ones(2))
    np.testing.assert_array_equal(gf.copysign(ones, session.asarray(np.array([-np.nan, np.nan]))
                                              ).get(), [-1.0, 1.0])
