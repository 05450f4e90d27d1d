"""NumPy's index helpers (gpuflow._index_helpers) and the misc functions of
gpuflow._numpy_misc against NumPy, through the real server: dtypes, shapes,
values, NumPy 2's errors and messages, empty arrays, 0-d inputs."""

import numpy as np
import pytest

import gpuflow as gf
import numpy_check

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def check_all(pairs, rtol=None):
    numpy_check.check_all(pairs, rtol=rtol, atol=1e-12)


def r(session, a):
    return session.asarray(np.asarray(a))


def pairs_of(got, expected):
    assert isinstance(got, tuple) and len(got) == len(expected)
    return list(zip(got, expected))


# ---- triangles and diagonals ------------------------------------------------------


@pytest.mark.parametrize("n,k,m", [(4, 0, None), (3, 1, 4), (5, -2, 3), (1, 0, None),
                                   (0, 0, None), (3, 10, 2), (3, -10, 5), (-1, 0, None),
                                   (6, 2, 7)])
def test_tril_and_triu_indices(session, n, k, m):
    pairs = pairs_of(gf.tril_indices(n, k, m, session=session), np.tril_indices(n, k, m))
    pairs += pairs_of(gf.triu_indices(n, k, m, session=session), np.triu_indices(n, k, m))
    check_all(pairs)


def test_indices_from_arrays(session):
    m_np = np.arange(15, dtype=np.float32).reshape(3, 5)
    m = r(session, m_np)
    sq_np = np.zeros((4, 4, 4), np.int8)
    rows, cols = gf.triu_indices_from(m, 1)
    check_all(pairs_of(gf.tril_indices_from(m, -1), np.tril_indices_from(m_np, -1))
              + pairs_of((rows, cols), np.triu_indices_from(m_np, 1))
              + pairs_of(gf.tril_indices_from(m_np), np.tril_indices_from(m_np))
              + pairs_of(gf.diag_indices_from(r(session, sq_np)), np.diag_indices_from(sq_np))
              + pairs_of(gf.diag_indices(3, 3, session=session), np.diag_indices(3, 3))
              + pairs_of(gf.diag_indices(0, session=session), np.diag_indices(0))
              + [(m[rows, cols], m_np[np.triu_indices_from(m_np, 1)])])
    for f in (gf.tril_indices_from, gf.triu_indices_from):
        with pytest.raises(ValueError, match="input array must be 2-d"):
            f(r(session, np.zeros(3)))
    with pytest.raises(ValueError, match="input array must be at least 2-d"):
        gf.diag_indices_from(r(session, np.zeros(3)))
    with pytest.raises(ValueError, match="All dimensions of input must be of equal length"):
        gf.diag_indices_from(m)


@pytest.mark.parametrize("dtype", [np.int16, np.float64, np.bool_, np.complex64])
def test_diagflat(session, dtype):
    v_np = (np.arange(1, 7) % 3).astype(dtype).reshape(2, 3)
    v = r(session, v_np)
    check_all([(gf.diagflat(v), np.diagflat(v_np)), (gf.diagflat(v, 2), np.diagflat(v_np, 2)),
               (gf.diagflat(v, -3), np.diagflat(v_np, -3)),
               (gf.diagflat(r(session, np.zeros(0, dtype)), 1), np.diagflat(np.zeros(0, dtype), 1)),
               (gf.diagflat(r(session, np.array(5, dtype))), np.diagflat(np.array(5, dtype)))])


# ---- flat and multi-dimensional indices -------------------------------------------


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.uint16, np.int32])
def test_unravel_index(session, dtype):
    flat_np = np.array([[0, 7, 13], [14, 3, 5]], dtype)
    flat = r(session, flat_np)
    pairs = []
    for shape in ((3, 5), (15,), (1, 3, 5), (5, 3, 1)):
        for order in ("C", "F"):
            pairs += pairs_of(gf.unravel_index(flat, shape, order),
                              np.unravel_index(flat_np, shape, order))
            pairs += pairs_of(gf.unravel_index(flat_np, shape, order),
                              np.unravel_index(flat_np, shape, order))
    pairs += pairs_of(gf.unravel_index(r(session, np.array(9, dtype)), (2, 7)),
                      [np.asarray(v) for v in np.unravel_index(np.array(9, dtype), (2, 7))])
    pairs += pairs_of(gf.unravel_index(np.zeros(0, dtype), (3, 0)),
                      np.unravel_index(np.zeros(0, dtype), (3, 0)))
    pairs += pairs_of(gf.unravel_index(r(session, [True, False]), 4),
                      np.unravel_index(np.array([True, False]), 4))
    check_all(pairs)
    assert gf.unravel_index(0, ()) == ()


def test_unravel_index_errors(session):
    for indices in ([1, 15], r(session, [3, 15, -1])):
        with pytest.raises(ValueError, match="index 15 is out of bounds for array with size 15"):
            gf.unravel_index(indices, (3, 5))
    with pytest.raises(ValueError, match="index -1 is out of bounds for array with size 6"):
        gf.unravel_index(r(session, np.array([2, -1, 9])), (2, 3))
    with pytest.raises(ValueError, match="index 0 is out of bounds for array with size 0"):
        gf.unravel_index([0], (2, 0))
    with pytest.raises(TypeError, match="only int indices permitted"):
        gf.unravel_index([1.0], (2, 3))
    with pytest.raises(TypeError, match="only int indices permitted"):
        gf.unravel_index(r(session, np.array([1.0])), (2, 3))
    with pytest.raises(TypeError, match="indices must be integral"):
        gf.unravel_index([], (2, 3))
    with pytest.raises(ValueError, match="order must be one of 'C', 'F', 'A', or 'K'"):
        gf.unravel_index(1, (2, 3), order="X")
    with pytest.raises(ValueError, match="only 'C' or 'F' order is permitted"):
        gf.unravel_index(1, (2, 3), order="A")
    with pytest.raises(ValueError, match="multiple indices are not supported for 0d arrays"):
        gf.unravel_index([0], ())


def test_ravel_multi_index(session):
    i_np, j_np = np.array([[0, 2], [1, 2]], np.int32), np.array([4, -1], np.int16)
    i, j = r(session, i_np), r(session, j_np)
    pairs = []
    for order in ("C", "F"):
        for mode in ("wrap", "clip", ("clip", "wrap"), ("wrap", "clip")):
            pairs.append((gf.ravel_multi_index((i, j), (3, 4), mode, order),
                          np.ravel_multi_index((i_np, j_np), (3, 4), mode, order)))
            pairs.append((gf.ravel_multi_index((i_np, j), (3, 4), mode, order),
                          np.ravel_multi_index((i_np, j_np), (3, 4), mode, order)))
        ok = (np.array([0, 2, 1], np.uint8), np.array([3, 0, 1], np.int64),
              np.array([1], np.int8))
        pairs.append((gf.ravel_multi_index(tuple(r(session, c) for c in ok), (3, 4, 2),
                                           order=order),
                      np.ravel_multi_index(ok, (3, 4, 2), order=order)))
        pairs.append((gf.ravel_multi_index(ok, (3, 4, 2), order=order),
                      np.ravel_multi_index(ok, (3, 4, 2), order=order)))
    stacked = np.array([[1, 2], [0, 3]])
    pairs.append((gf.ravel_multi_index(r(session, stacked), (3, 4)),
                  np.ravel_multi_index(stacked, (3, 4))))
    pairs.append((gf.ravel_multi_index((1, 2), (3, 4)),
                  np.asarray(np.ravel_multi_index((1, 2), (3, 4)))))
    pairs.append((gf.ravel_multi_index(([5],), 7), np.ravel_multi_index(([5],), 7)))
    empty = (np.zeros(0, np.int64),) * 2
    pairs.append((gf.ravel_multi_index(empty, (3, 0)), np.ravel_multi_index(empty, (3, 0))))
    check_all(pairs)


def test_ravel_multi_index_errors(session):
    for coords in (([1, 3], [0, 3]), ([1, -1], [0, 3]),
                   (r(session, [1, 3]), r(session, [0, 3])), (r(session, [1, -1]), [0, 3])):
        with pytest.raises(ValueError, match="invalid entry in coordinates array"):
            gf.ravel_multi_index(coords, (3, 4))
    with pytest.raises(ValueError, match="clipmode must be one of 'clip', 'raise', or 'wrap'"):
        gf.ravel_multi_index(([1], [2]), (3, 4), mode="x")
    with pytest.raises(ValueError, match=r"list of clipmodes has wrong length \(1 instead of 2\)"):
        gf.ravel_multi_index(([1], [2]), (3, 4), mode=("clip",))
    with pytest.raises(ValueError, match="parameter multi_index must be a sequence of length 2"):
        gf.ravel_multi_index(([1, 2],), (3, 4))
    with pytest.raises(TypeError, match="only int indices permitted"):
        gf.ravel_multi_index(([1.0, 2], [0, 1]), (3, 4))
    with pytest.raises(TypeError, match="indices must be integral"):
        gf.ravel_multi_index(([], []), (3, 4))
    with pytest.raises(ValueError, match=r"operands could not be broadcast together with shapes "
                                         r"\(2,\) \(3,\)"):
        gf.ravel_multi_index(([1, 2], [1, 2, 3]), (3, 4))
    with pytest.raises(ValueError, match="invalid dims: array size defined by dims is larger"):
        gf.ravel_multi_index(([1], [2]), (2**40, 2**40))
    with pytest.raises(ValueError, match="cannot unravel if shape has zero entries"):
        gf.ravel_multi_index(([0], [0]), (3, 0), mode="wrap")
    with pytest.raises(ValueError, match="only 'C' or 'F' order is permitted"):
        gf.ravel_multi_index(([1], [2]), (3, 4), order="K")


def test_ix(session):
    x_np = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    x = r(session, x_np)
    mask_np = np.array([True, False, True, True])
    got = gf.ix_([0, 2], r(session, mask_np), np.array([4, 1], np.int16))
    expected = np.ix_([0, 2], mask_np, np.array([4, 1], np.int16))
    odd = gf.ix_([], [True, False, True], np.array([1.5]))
    check_all(pairs_of(got, expected) + [(x[got], x_np[expected])]
              + pairs_of(odd, np.ix_([], [True, False, True], np.array([1.5])))
              + pairs_of(gf.ix_(r(session, np.zeros(0, bool))), np.ix_(np.zeros(0, bool))))
    assert gf.ix_() == ()
    with pytest.raises(ValueError, match="Cross index must be 1 dimensional"):
        gf.ix_([[1]])
    with pytest.raises(ValueError, match="Cross index must be 1 dimensional"):
        gf.ix_(r(session, np.array(3)))


# ---- writes -----------------------------------------------------------------------


@pytest.mark.parametrize("shape,val,wrap", [((4, 4), 7, False), ((5, 3), 1.5, False),
                                            ((7, 3), [1, 2, 3, 4], True), ((2, 5), 9, False),
                                            ((3, 3, 3), [5, 6], False), ((0, 3), 1, False),
                                            ((3, 3), [], False), ((6, 2), -1, True)])
@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.uint8])
def test_fill_diagonal(session, shape, val, wrap, dtype):
    a_np = np.arange(int(np.prod(shape))).astype(dtype).reshape(shape)
    a = r(session, a_np)
    before = a
    with np.errstate(all="ignore"):
        np.fill_diagonal(a_np, np.asarray(val).astype(dtype) if dtype == np.uint8 else val,
                         wrap=wrap)
    gf.fill_diagonal(a, np.asarray(val).astype(dtype) if dtype == np.uint8 else val, wrap=wrap)
    assert a is before
    check_all([(a, a_np)])


def test_fill_diagonal_errors(session):
    with pytest.raises(ValueError, match="array must be at least 2-d"):
        gf.fill_diagonal(r(session, np.zeros(3)), 1)
    with pytest.raises(ValueError, match="All dimensions of input must be of equal length"):
        gf.fill_diagonal(r(session, np.zeros((2, 3, 2))), 1)
    with pytest.raises(TypeError):
        gf.fill_diagonal(np.zeros((2, 2)), 1)


def test_copyto(session):
    base = np.arange(6, dtype=np.int32).reshape(2, 3)
    cases = [
        (10, {}), (-3, {"where": base % 2 == 0}), (np.array([7, 8, 9], np.int16), {}),
        (np.array([[1], [2]], np.int8), {"where": [True, False, True]}),
        (np.zeros((1, 2, 3), np.int64), {"casting": "unsafe"}),
        (np.array([1.5, -2.5, 3.9]), {"casting": "unsafe"}), (2.7, {"casting": "unsafe"}),
        (np.array(4, np.int32), {"casting": "no"}), (5, {"casting": "no"}),
        (np.array([True, False, True]), {"casting": "safe"}),
        (np.arange(6, dtype=np.uint8).reshape(2, 3) * 9, {"where": np.array([[True], [False]])}),
        (np.array([1, 2, 3], np.uint16), {"where": [1, 0, 2]}),
    ]
    pairs = []
    for src, kwargs in cases:
        dst_np = base.copy()
        # NumPy 2 (NEP 50): a Python int takes dst's dtype before the casting check.
        np.copyto(dst_np, np.int32(src) if type(src) is int else src, **kwargs)
        for remote_src in (False, True):
            dst = r(session, base)
            before = dst
            s = r(session, src) if remote_src and isinstance(src, np.ndarray) else src
            if remote_src and "where" in kwargs and not isinstance(kwargs["where"], list):
                kwargs = dict(kwargs, where=r(session, kwargs["where"]))
            gf.copyto(dst, s, **kwargs)
            assert dst is before and dst.dtype == np.int32
            pairs.append((dst, dst_np))
    f_np = np.zeros(4, np.float32)
    f = r(session, f_np)
    np.copyto(f_np, 1e-3)
    gf.copyto(f, 1e-3)
    c_np = np.zeros(3, np.complex128)
    c = r(session, c_np)
    np.copyto(c_np, np.array([1, 2, 3], np.float32))
    gf.copyto(c, np.array([1, 2, 3], np.float32))
    src = r(session, np.arange(3.0))
    e = r(session, np.zeros(3))
    gf.copyto(e, src)
    check_all([(e, np.arange(3.0))])
    gf.copyto(e, 5.0, where=[True, False, True])
    check_all(pairs + [(f, f_np), (c, c_np), (e, [5.0, 1.0, 5.0]), (src, np.arange(3.0))])


def test_copyto_errors(session):
    dst = r(session, np.zeros((2, 3), np.int32))
    with pytest.raises(TypeError, match=r"Cannot cast scalar from dtype\('float64'\) to "
                                        r"dtype\('int32'\) according to the rule 'same_kind'"):
        gf.copyto(dst, 1.5)
    with pytest.raises(TypeError, match=r"Cannot cast scalar from dtype\('float64'\) to "
                                        r"dtype\('int32'\)"):
        gf.copyto(dst, np.float64(1.5))
    with pytest.raises(TypeError, match=r"Cannot cast scalar from dtype\('complex128'\)"):
        gf.copyto(dst, 1j)
    with pytest.raises(TypeError, match=r"Cannot cast array data from dtype\('float64'\) to "
                                        r"dtype\('int32'\) according to the rule 'same_kind'"):
        gf.copyto(dst, r(session, np.array([1.5])))
    with pytest.raises(TypeError, match=r"Cannot cast scalar from dtype\('int64'\) to "
                                        r"dtype\('int32'\) according to the rule 'no'"):
        gf.copyto(dst, np.int64(1), casting="no")
    with pytest.raises(TypeError, match=r"Cannot cast scalar from dtype\('int64'\) to "
                                        r"dtype\('bool'\)"):
        gf.copyto(r(session, np.zeros(2, bool)), 1)
    with pytest.raises(TypeError, match="cannot cast Python float to float64 under the casting "
                                        "rule 'equiv'"):
        gf.copyto(dst, 1.5, casting="equiv")
    with pytest.raises(OverflowError, match="Python integer 1099511627776 out of bounds for int32"):
        gf.copyto(dst, 2**40)
    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(2,\) "
                                         r"into shape \(2,3\)$"):
        gf.copyto(dst, [1, 2])
    with pytest.raises(ValueError, match=r"could not broadcast where mask from shape \(2,\) "
                                         r"into shape \(2,3\)$"):
        gf.copyto(dst, [1, 2, 3], where=[True, False])
    for mask in (np.array([1, 0, 1]), r(session, np.array([1, 0, 1]))):
        with pytest.raises(TypeError, match=r"Cannot cast array data from dtype\('int64'\) to "
                                            r"dtype\('bool'\) according to the rule 'safe'"):
            gf.copyto(dst, 1, where=mask)
    with pytest.raises(ValueError, match="casting must be one of"):
        gf.copyto(dst, 1, casting="x")
    with pytest.raises(TypeError, match="copyto\\(\\) argument 1 must be"):
        gf.copyto([1], 2)


# ---- gpuflow._numpy_misc ----------------------------------------------------------


def numpy2_geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """NumPy 2's geomspace (numpy/_core/function_base.py), which NumPy 1.24
    (here) computes otherwise for negative and complex ends: sign(z) is
    z / |z| and logspace's base a float64 array."""
    start, stop = np.asanyarray(start), np.asanyarray(stop)
    if np.any(start == 0) or np.any(stop == 0):
        raise ValueError("Geometric sequence cannot include zero")
    dt = np.result_type(start, stop, float(num), np.zeros((), dtype))
    dtype = dt if dtype is None else np.dtype(dtype)
    start, stop = start.astype(dt, copy=True), stop.astype(dt, copy=True)
    with np.errstate(all="ignore"):
        out_sign = (start / np.abs(start)).astype(dt) if dt.kind == "c" else np.sign(start)
        start = (start / out_sign).astype(dt)
        stop = (stop / out_sign).astype(dt)
        log_start, log_stop = np.log10(start), np.log10(stop)
    ndmax = np.broadcast(log_start, log_stop).ndim
    y = np.linspace(np.array(log_start, ndmin=ndmax), np.array(log_stop, ndmin=ndmax), num=num,
                    endpoint=endpoint)
    result = np.power(np.array(10.0, ndmin=ndmax), y).astype(dt, copy=False)
    if num > 0:
        result[0] = start
        if num > 1 and endpoint:
            result[-1] = stop
    result *= out_sign
    if axis != 0:
        result = np.moveaxis(result, 0, axis)
    return result.astype(dtype, copy=False)


@pytest.mark.parametrize("start,stop,kwargs", [
    (1, 1000, {"num": 4}), (1, 1000, {"num": 4, "endpoint": False}), (2.0, 3e5, {"num": 7}),
    (-1, -1000, {"num": 5}), (-3.0, 7.0, {"num": 3}), (1, 256, {"num": 9, "dtype": np.int32}),
    (np.float32(1.5), np.float32(40.0), {"num": 6}),
    (np.float32(1.5), np.float32(40.0), {"num": 6, "dtype": np.float32}),
    (1j, 1000j, {"num": 4}), (-1 + 0j, 1 + 0j, {"num": 5}), (2, 8, {"num": 1}),
    (2, 8, {"num": 0}), (5, 5, {"num": 3}), (np.float16(2), np.float16(8), {"num": 3}),
    (True, 4, {"num": 3}),
])
def test_geomspace_scalars(session, start, stop, kwargs):
    expected = numpy2_geomspace(start, stop, **kwargs)
    got = gf.geomspace(start, stop, session=session, **kwargs)
    if expected.dtype.kind in "iu":
        # An integer dtype truncates the float64 sequence: where a value is
        # within rounding of an integer (2**7 as 127.99999999999997 from
        # glibc's pow, 128.00000000000003 from the GPU's), either integer.
        exact = numpy2_geomspace(start, stop, **{**kwargs, "dtype": None})
        near = np.abs(exact - np.round(exact)) <= 1e-9 * np.abs(exact)
        value = got.get()
        assert value.dtype == expected.dtype and value.shape == expected.shape
        np.testing.assert_array_equal(value[~near], expected[~near])
        assert (np.abs(value[near].astype(np.int64) - expected[near]) <= 1).all(), (value, expected)
        assert near.any()  # the case this tolerance is for is in the data
        return
    check_all([(got, expected)])


def test_geomspace_arrays(session):
    start_np = np.array([1.0, -2.0, 10.0], np.float32)
    stop_np = np.array([[100.0, -64.0, 0.01], [2.0, -2.0, 1e4]], np.float32)
    start, stop = r(session, start_np), r(session, stop_np)
    z_np = np.array([1 + 1j, -4j], np.complex64)
    check_all([
        (gf.geomspace(start, stop, 5), numpy2_geomspace(start_np, stop_np, 5)),
        (gf.geomspace(start, stop, 4, endpoint=False, axis=-1),
         numpy2_geomspace(start_np, stop_np, 4, endpoint=False, axis=-1)),
        (gf.geomspace(start, 1000, 3, dtype=np.float32),
         numpy2_geomspace(start_np, 1000, 3, dtype=np.float32)),
        (gf.geomspace(start_np, stop, 6, axis=1), numpy2_geomspace(start_np, stop_np, 6, axis=1)),
        (gf.geomspace(r(session, z_np), 100j, 4), numpy2_geomspace(z_np, 100j, 4)),
    ], rtol=1e-5)
    for a, b in ((0, 5), (1, np.array([3.0, 0.0])), (r(session, np.array([1.0, 0.0])), 4.0)):
        with pytest.raises(ValueError, match="Geometric sequence cannot include zero"):
            gf.geomspace(a, b, session=session)
    with pytest.raises(ValueError, match="Number of samples, -1, must be non-negative."):
        gf.geomspace(1, 5, -1, session=session)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_fix_and_infinities(session, dtype):
    x_np = np.array([-2.5, -0.5, -0.0, 0.0, 0.5, 1.999, 3.0, np.inf, -np.inf, np.nan, 7.25],
                    dtype)
    x = r(session, x_np)
    out = r(session, np.zeros(x_np.shape, np.float64))
    gf.fix(x, out=out)
    fixed = gf.fix(x)
    check_all([(fixed, np.fix(x_np)), (out, np.fix(x_np).astype(np.float64)),
               (gf.isposinf(x), np.isposinf(x_np)), (gf.isneginf(x), np.isneginf(x_np)),
               (gf.fix(r(session, x_np[:0])), np.fix(x_np[:0])),
               (gf.fix(r(session, np.array(-3.5, dtype))),
                np.asarray(np.fix(np.array(-3.5, dtype)))),
               (gf.isposinf(r(session, np.array(np.inf, dtype))), np.array(True)),
               (gf.isneginf(x_np), np.isneginf(x_np))])
    assert np.signbit(gf.fix(x).get()[1])  # -0.5 -> -0.0, as NumPy's ceil gives it


def test_fix_integers_and_errors(session):
    for dtype in (np.int8, np.uint32, np.int64, np.bool_):
        v_np = np.array([0, 1, 5, 1], dtype)
        v = r(session, v_np)
        check_all([(gf.fix(v), v_np), (gf.isposinf(v), np.zeros(4, bool)),
                   (gf.isneginf(v), np.zeros(4, bool))])
    z = r(session, np.array([1 + 1j, np.inf + 0j]))
    for f in (gf.isposinf, gf.isneginf):
        with pytest.raises(TypeError, match="This operation is not supported for complex128 "
                                            "values because it would be ambiguous."):
            f(z)
    with pytest.raises(TypeError, match="ufunc 'ceil' not supported"):
        gf.fix(z)
    with pytest.raises(TypeError, match="Cannot cast ufunc 'fix' output from dtype"):
        gf.fix(r(session, np.array([1.5])), out=r(session, np.zeros(1, np.int64)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int32, np.uint8])
def test_i0(session, dtype):
    values = [0.0, 0.5, -1.0, 3.25, 7.99, 8.0, 8.01, 10.5, -6.0]
    if dtype == np.uint8:  # NumPy 2.5 refuses negative values for uint8
        values = [abs(v) for v in values]
    x_np = np.array(values, np.float64).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x_np = np.append(x_np, np.array([np.nan], dtype))
    if dtype != np.float16 and dtype != np.uint8:
        x_np = np.append(x_np, np.array([30.0, 150.0, -600.0], dtype))
    x = r(session, x_np.reshape(1, -1))
    check_all([(gf.i0(x), np.i0(x_np.reshape(1, -1))),
               (gf.i0(r(session, x_np[:0])), np.i0(x_np[:0])),
               (gf.i0(r(session, np.array(2, dtype))), np.i0(np.array(2, dtype)))],
              rtol={np.dtype(np.float16): 2e-3, np.dtype(np.float32): 1e-6}.get(
                  np.dtype(dtype), 1e-14))
    with pytest.raises(TypeError, match="i0 not supported for complex values"):
        gf.i0(r(session, np.array([1j])))


@pytest.mark.parametrize("M", [0, -3, 1, 2, 3, 8, 51, 4.5, np.int16(12)])
def test_window_functions(session, M):
    pairs = [(f(M, session=session), getattr(np, f.__name__)(M))
             for f in (gf.bartlett, gf.blackman, gf.hamming, gf.hanning)]
    if not isinstance(M, float):
        pairs += [(gf.kaiser(M, beta, session=session), np.kaiser(M, beta))
                  for beta in (0.0, 5.0, 14.0, 60.0)]
    check_all(pairs, rtol=1e-13)


@pytest.mark.parametrize("trim", ["fb", "f", "b", "BF"])
def test_trim_zeros(session, trim):
    a_np = np.array([0, 0, 3, 0, 1.5, 0, 0], np.float32)
    m_np = np.array([[0, 0, 0, 0], [0, 2, 0, 0], [0, 0, 3, 0], [0, 0, 0, 0]], np.int16)
    z_np = np.array([0j, 1j, 0j])
    pairs = [(gf.trim_zeros(r(session, a_np), trim), np.trim_zeros(a_np, trim.lower())),
             (gf.trim_zeros(a_np, trim), np.trim_zeros(a_np, trim.lower())),
             (gf.trim_zeros(r(session, z_np), trim), np.trim_zeros(z_np, trim.lower())),
             (gf.trim_zeros(r(session, np.zeros(5)), trim), np.zeros(0)),
             (gf.trim_zeros(r(session, np.zeros(0, np.int8)), trim), np.zeros(0, np.int8)),
             (gf.trim_zeros(r(session, np.array([np.nan, 0.0])), trim),
              np.trim_zeros(np.array([np.nan, 0.0]), trim.lower()))]
    # NumPy 2.2's n-dimensional trim (1.24 here trims 1-D only): the box of nonzeros.
    f, b = "f" in trim.lower(), "b" in trim.lower()
    box = m_np[1 if f else None:3 if b else None, 1 if f else None:3 if b else None]
    pairs += [(gf.trim_zeros(r(session, m_np), trim), box),
              (gf.trim_zeros(r(session, m_np), trim, axis=-1),
               m_np[:, 1 if f else None:3 if b else None]),
              (gf.trim_zeros(r(session, np.zeros((2, 3))), trim), np.zeros((0, 0))),
              (gf.trim_zeros(r(session, np.zeros((2, 3))), trim, axis=1), np.zeros((2, 0)))]
    check_all(pairs)
    zero_d = r(session, np.array(0.0))
    assert gf.trim_zeros(zero_d).shape == ()
    with pytest.raises(ValueError, match="unexpected character\\(s\\) in `trim`: 'x'"):
        gf.trim_zeros(r(session, a_np), "x")


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.float16, np.float32,
                                   np.float64, np.bool_, np.uint64])
def test_sort_complex_real_dtypes(session, dtype):
    x_np = (np.array([[5, 3, 6, 2, 1], [0, 9, 4, 4, 1]]) % 7).astype(dtype)
    check_all([(gf.sort_complex(r(session, x_np)), np.sort_complex(x_np)),
               (gf.sort_complex(r(session, x_np[:, :0])), np.sort_complex(x_np[:, :0]))])


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_sort_complex(session, dtype):
    nan = np.nan
    x_np = np.array([1 + 2j, 2 - 1j, 3 - 2j, 3 - 3j, 3 + 5j, complex(nan, 1), complex(1, nan),
                     complex(nan, nan), complex(nan, -2), -1 + 0j, complex(3, nan)], dtype)
    m_np = np.array([[3 + 1j, 3 - 1j, -2 + 0j], [1j, -1j, 0j]], dtype)
    check_all([(gf.sort_complex(r(session, x_np)), np.sort_complex(x_np)),
               (gf.sort_complex(r(session, m_np)), np.sort_complex(m_np)),
               (gf.sort_complex(r(session, x_np[:0])), np.sort_complex(x_np[:0]))])
    with pytest.raises(gf._inference.AxisError,
                       match="axis -1 is out of bounds for array of dimension 0"):
        gf.sort_complex(r(session, np.array(1j, dtype)))


def test_broadcast_shapes_and_scalars():
    for shapes in [((2, 3), (5, 1, 3), (1,)), (), ((),), (4, (3, 1)), ((0, 1), (1, 7)),
                   ((6, 1, 2), (1, 5, 1), 2)]:
        assert gf.broadcast_shapes(*shapes) == np.broadcast_shapes(*shapes)
    with pytest.raises(ValueError, match=r"shape mismatch: objects cannot be broadcast to a "
                                         r"single shape.  Mismatch is between arg 0 with shape "
                                         r"\(2,\) and arg 1 with shape \(3,\)."):
        gf.broadcast_shapes((2,), (3,))
    with pytest.raises(ValueError, match=r"Mismatch is between arg 1 with shape \(3,\) and arg 2 "
                                         r"with shape \(4,\)."):
        gf.broadcast_shapes((2, 1), (3,), 4)
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        gf.broadcast_shapes((-1,))
    for x in (3, 2.5, 1j, True, np.float32(1), "s", b"b"):
        assert gf.isscalar(x) is True
    for x in ([1], np.array(3), None, (1,)):
        assert gf.isscalar(x) is False


def test_isscalar_remote_and_conversions(session):
    x_np = np.arange(6, dtype=np.int16).reshape(2, 3)
    assert gf.isscalar(r(session, np.array(2.0))) is False
    a = gf.asanyarray(x_np, session=session)
    b = gf.asanyarray(x_np, dtype=np.float32, session=session)
    c = gf.asarray_chkfinite([1.0, 2.5], session=session)
    d = gf.asarray_chkfinite(r(session, x_np), dtype=np.float16)
    e = gf.require(x_np, np.float64, "CAW", session=session)
    f = gf.require(r(session, x_np[0]), requirements=["F_CONTIGUOUS", "E"])
    assert e.writable and isinstance(f, gf.RemoteArray)
    check_all([(a, x_np), (b, x_np.astype(np.float32)), (c, np.asarray_chkfinite([1.0, 2.5])),
               (d, x_np.astype(np.float16)), (e, np.require(x_np, np.float64, "CAW")),
               (f, x_np[0]), (gf.require(x_np, session=session), x_np),
               (gf.asarray_chkfinite(r(session, x_np)), x_np)])
    for bad in ([1.0, np.nan], np.array([np.inf], np.float32), [1j, complex(0, np.inf)]):
        with pytest.raises(ValueError, match="array must not contain infs or NaNs"):
            gf.asarray_chkfinite(bad, session=session)
    with pytest.raises(ValueError, match="array must not contain infs or NaNs"):
        gf.asarray_chkfinite(r(session, [1.0, 2.0]) / 0.0)
    with pytest.raises(KeyError):
        gf.require(x_np, requirements="X", session=session)
    with pytest.raises(ValueError, match='Cannot specify both "C" and "F" order'):
        gf.require(x_np, requirements="CF", session=session)
    with pytest.raises(NotImplementedError, match="C-contiguous only"):
        gf.require(x_np, requirements="F", session=session)


def test_fromfunction(session):
    got = gf.fromfunction(lambda i, j: i * 10 + j, (3, 4), session=session)
    typed = gf.fromfunction(lambda i, j, k=1: (i - j) * k, (2, 5), dtype=np.int16, k=3,
                            session=session)
    one = gf.fromfunction(lambda i: i ** 2, (5,), dtype=int, session=session)
    check_all([(got, np.fromfunction(lambda i, j: i * 10 + j, (3, 4))),
               (typed, np.fromfunction(lambda i, j, k=1: (i - j) * k, (2, 5), dtype=np.int16,
                                       k=3)),
               (one, np.fromfunction(lambda i: i ** 2, (5,), dtype=int)),
               (gf.fromfunction(lambda i, j: i + j, (0, 3), session=session),
                np.fromfunction(lambda i, j: i + j, (0, 3)))])
