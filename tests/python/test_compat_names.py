"""The NumPy 2 / CuPy names of gpuflow._compat and gpuflow._compat_host
against NumPy, through the real server: dtypes, shapes and values for odd
sizes, empty and 0-d inputs, every dtype each takes, and NumPy's errors.
NumPy 2's functions that NumPy 1.24 lacks (cumulative_sum, unique_all,
vecdot, matvec, bitwise_count, unstack ...) are checked against their
definitions in NumPy 2's source, written here with NumPy's primitives."""

import io
import warnings

import numpy as np
import pytest

import gpuflow as gf
from numpy_check import check_all

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

# NumPy's own warnings while it computes the references (complex to real
# casts, np.r_['r'] making a matrix); gpuflow's are asserted where they matter.
pytestmark = pytest.mark.filterwarnings("ignore:Casting complex values to real discards",
                                        "ignore::PendingDeprecationWarning")

# numpy.AxisError and numpy.msort are gone in NumPy 2 (numpy.exceptions.AxisError is
# NumPy >= 1.25's); gpuflow keeps msort, as CuPy does.
AxisError = np.exceptions.AxisError if hasattr(np, "exceptions") else np.AxisError
RNG = np.random.default_rng(2323)
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
REALS = ["bool"] + INTS + ["float16", "float32", "float64"]
ALL = REALS + ["complex64", "complex128"]


def _data(dtype, shape, nan=False):
    values = RNG.integers(-9, 10, shape)
    if dtype == "bool":
        return values > 0
    if np.dtype(dtype).kind == "u":
        values = np.abs(values)
    host = values.astype(dtype)
    if np.dtype(dtype).kind == "c":
        host = host + 1j * RNG.integers(-9, 10, shape).astype(dtype)
    if nan and host.size and np.dtype(dtype).kind in "fc":
        host.reshape(-1)[RNG.integers(0, host.size, max(1, host.size // 4))] = np.nan
    return host


# ---- cumulative_sum, cumulative_prod ------------------------------------------------


def _cumulative_ref(fn, identity, x, axis, include_initial, dtype=None):
    x = np.atleast_1d(x)
    axis = 0 if axis is None else axis
    res = fn(x, axis=axis, dtype=dtype)
    if include_initial:
        shape = list(x.shape)
        shape[axis] = 1
        res = np.concatenate([np.full(shape, identity, res.dtype), res], axis=axis)
    return res


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape,axis", [((), None), ((0,), None), ((7,), None), ((7,), -1),
                                        ((3, 5), 0), ((3, 5), 1), ((2, 0, 3), 1)])
def test_cumulative_sum_and_prod_match_numpy(session, dtype, shape, axis):
    host = _data(dtype, shape)
    x = session.asarray(host)
    pairs = []
    for initial in (False, True):
        pairs.append((gf.cumulative_sum(x, axis=axis, include_initial=initial),
                      _cumulative_ref(np.cumsum, 0, host, axis, initial)))
        pairs.append((gf.cumulative_prod(x, axis=axis, include_initial=initial),
                      _cumulative_ref(np.cumprod, 1, host, axis, initial)))
    check_all(pairs)


def test_cumulative_sum_dtype_out_and_errors(session):
    host = np.arange(1, 8, dtype=np.int8)
    x = session.asarray(host)
    out = gf.zeros(8, "float32", session=session)
    got = gf.cumulative_sum(x, dtype="float32", include_initial=True, out=out)
    assert got is out
    check_all([(out, _cumulative_ref(np.cumsum, 0, host, 0, True, "float32")),
               (gf.cumulative_prod([2, 3], dtype="int16"), np.array([2, 6], np.int16))])
    with pytest.raises(ValueError, match=r"``axis`` argument is required"):
        gf.cumulative_sum(gf.ones((2, 3), session=session))
    with pytest.raises(AxisError):
        gf.cumulative_prod(x, axis=1)


# ---- unique_* ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", REALS)
@pytest.mark.parametrize("shape", [(), (0,), (1,), (13,), (3, 7)])
def test_unique_family_matches_numpy(session, dtype, shape):
    host = _data(dtype, shape, nan=True)
    x = session.asarray(host)
    values, index, inverse, counts = np.unique(host, return_index=True, return_inverse=True,
                                               return_counts=True, equal_nan=False)
    inverse = inverse.reshape(host.shape)
    every = gf.unique_all(x)
    assert type(every).__name__ == "UniqueAllResult"
    assert every._fields == ("values", "indices", "inverse_indices", "counts")
    c = gf.unique_counts(x)
    i = gf.unique_inverse(x)
    assert c._fields == ("values", "counts") and i._fields == ("values", "inverse_indices")
    check_all([(every.values, values), (every.indices, index), (every.inverse_indices, inverse),
               (every.counts, counts), (c.values, values), (c.counts, counts),
               (i.values, values), (i.inverse_indices, inverse),
               (gf.unique_values(x), values)])


# ---- array-API spellings -----------------------------------------------------------


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "float16", "float64", "complex64"])
def test_array_api_spellings(session, dtype):
    host = _data(dtype, (2, 3, 5))
    other = _data("int16", (2, 3, 4))
    x, y = session.asarray(host), session.asarray(other)
    check_all([(gf.matrix_transpose(x), np.swapaxes(host, -1, -2)),
               (gf.permute_dims(x, (2, 0, 1)), np.transpose(host, (2, 0, 1))),
               (gf.permute_dims(x), np.transpose(host)),
               (gf.concat([x, y], axis=2), np.concatenate([host, other], axis=2)),
               (gf.concat([x, y], axis=None), np.concatenate([host, other], axis=None)),
               (gf.astype(x, "float32"), host.astype("float32")),
               (gf.astype(x, np.int64, copy=False), host.astype(np.int64))])
    assert gf.astype(x, dtype, copy=False) is x
    check_all([(gf.astype(host, "int32"), host.astype("int32")),
               (gf.astype(host.tolist(), "float64"), np.asarray(host.tolist()).astype("float64"))])
    assert gf.astype(x, dtype) is not x
    parts = gf.unstack(x, axis=1)
    assert isinstance(parts, tuple) and len(parts) == 3
    check_all([(p, host[:, k]) for k, p in enumerate(parts)]
              + [(p, host[k]) for k, p in enumerate(gf.unstack(x))])


def test_array_api_spelling_errors(session):
    v = gf.ones(4, session=session)
    with pytest.raises(ValueError, match="Input array must be at least 2-dimensional"):
        gf.matrix_transpose(v)
    with pytest.raises(ValueError, match="Input array must be at least 1-d."):
        gf.unstack(gf.ones((), session=session))
    with pytest.raises(AxisError):
        gf.unstack(v, axis=1)
    with pytest.raises(ValueError, match="device"):
        gf.astype(v, "float32", device="cuda")
    assert gf.unstack(gf.ones((0, 3), session=session)) == ()


# ---- vecdot, matvec, vecmat --------------------------------------------------------


def _vecdot_ref(a, b, axis=-1):
    a, b = np.moveaxis(a, axis, -1), np.moveaxis(b, axis, -1)
    dt = np.result_type(a, b)
    if dt == bool:
        return np.any(np.logical_and(a, b), axis=-1)
    return np.sum(_conj(a).astype(dt) * b.astype(dt), axis=-1, dtype=dt)


def _conj(x):
    return np.conj(x) if x.dtype.kind == "c" else x


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("sa,sb", [((7,), (7,)), ((3, 5), (5,)), ((2, 3, 4), (2, 1, 4)),
                                   ((0,), (0,)), ((4, 0), (1, 0))])
def test_vecdot_matvec_vecmat_match_numpy_2(session, dtype, sa, sb):
    ha, hb = _data(dtype, sa), _data(dtype, sb)
    a, b = session.asarray(ha), session.asarray(hb)
    pairs = [(gf.vecdot(a, b), _vecdot_ref(ha, hb))]
    if len(sa) >= 2:
        # NumPy 2's matvec: matmul with x2 as a column, no conjugate.
        pairs.append((gf.matvec(a, b), np.matmul(ha, hb[..., None])[..., 0]))
        hm = np.swapaxes(ha, -1, -2)
        # vecmat: conj(x1) as a row.
        pairs.append((gf.vecmat(b, session.asarray(hm)),
                      np.matmul(_conj(hb)[..., None, :], hm)[..., 0, :]))
    check_all(pairs, rtol=1e-2 if dtype == "float16" else None)


def test_vecdot_axis_dtype_and_mixed_dtypes(session):
    ha, hb = _data("int8", (5, 3)), _data("float32", (5, 1))
    a, b = session.asarray(ha), session.asarray(hb)
    z = _data("complex128", (4,))
    check_all([(gf.vecdot(a, b, axis=0), _vecdot_ref(ha, hb, axis=0)),
               (gf.vecdot(a, a, dtype="int64"), np.sum(ha.astype(np.int64) ** 2, axis=-1)),
               (gf.vecdot(z, z), np.vdot(z, z)),
               (gf.vecdot(ha, 2 * ha), _vecdot_ref(ha, 2 * ha))])


def test_gufunc_errors_as_numpy(session):
    m, v = gf.ones((3, 4), session=session), gf.ones(3, session=session)
    with pytest.raises(ValueError, match=r"vecdot: Input operand 1 has a mismatch in its core "
                                         r"dimension 0, with gufunc signature \(n\),\(n\)->\(\) "
                                         r"\(size 3 is different from 4\)"):
        gf.vecdot(m, v)
    with pytest.raises(ValueError, match=r"vecdot: Input operand 0 does not have enough "
                                         r"dimensions \(has 0"):
        gf.vecdot(gf.ones((), session=session), v)
    with pytest.raises(TypeError, match=r"Cannot cast ufunc 'vecdot' input 0 from "
                                        r"dtype\('float64'\) to dtype\('int32'\) with casting "
                                        r"rule 'same_kind'"):
        gf.vecdot(m, m, dtype="int32")
    with pytest.raises(ValueError, match=r"matvec: Input operand 1 has a mismatch"):
        gf.matvec(m, v)
    with pytest.raises(ValueError, match=r"matvec: Input operand 0 does not have enough"):
        gf.matvec(v, v)
    with pytest.raises(ValueError, match=r"vecmat: Input operand 1 has a mismatch"):
        gf.vecmat(gf.ones(4, session=session), m)


# ---- bitwise_count -----------------------------------------------------------------


def _popcount(host):
    return np.vectorize(lambda v: bin(abs(int(v))).count("1"), otypes=[np.uint8])(host)


@pytest.mark.parametrize("dtype", ["bool"] + INTS)
def test_bitwise_count_matches_numpy_2(session, dtype):
    if dtype == "bool":
        host = np.array([True, False, True])
    else:
        info = np.iinfo(dtype)
        host = np.concatenate([np.array([info.min, info.max, 0, 1], dtype),
                               RNG.integers(info.min, info.max, 301, dtype=dtype,
                                            endpoint=True)])
    x = session.asarray(host)
    check_all([(gf.bitwise_count(x), _popcount(host)),
               (gf.bitwise_count(x[:0]), np.zeros(0, np.uint8)),
               (gf.bitwise_count(x[0]), _popcount(host[0]))])


def test_bitwise_count_scalars_and_errors(session):
    check_all([(gf.bitwise_count(gf.asarray([-1, 255, 2**40 + 3], session=session)),
                np.array([1, 8, 3], np.uint8))])
    assert gf.bitwise_count.__name__ == "bitwise_count"
    with pytest.raises(TypeError, match=r"ufunc 'bitwise_count' not supported for the input "
                                        r"types"):
        gf.bitwise_count(gf.ones(3, "float32", session=session))
    with pytest.raises(TypeError, match=r"ufunc 'bitwise_count' not supported"):
        gf.bitwise_count(gf.ones(3, "complex64", session=session))


# ---- block -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["bool", "int32", "uint8", "float16", "complex128"])
def test_block_matches_numpy(session, dtype):
    a, b = _data(dtype, (2, 3)), _data(dtype, (2, 1))
    c, d = _data(dtype, (1, 3)), _data(dtype, (1, 1))
    ra, rb, rc, rd = (session.asarray(h) for h in (a, b, c, d))
    v, w = _data(dtype, (3,)), _data("int16", (4,))
    rv, rw = session.asarray(v), session.asarray(w)
    check_all([(gf.block([[ra, rb], [rc, rd]]), np.block([[a, b], [c, d]])),
               (gf.block([rv, rw, 7]), np.block([v, w, 7])),
               (gf.block([[rv], [rv]]), np.block([[v], [v]])),
               (gf.block([[[ra]], [[ra]]]), np.block([[[a]], [[a]]])),
               (gf.block(ra), np.block(a)),
               (gf.block([ra[:, :0], ra]), np.block([a[:, :0], a]))])
    assert gf.block(ra) is not ra


def test_block_errors_as_numpy(session):
    a = gf.ones((2, 2), session=session)
    with pytest.raises(TypeError, match=r"arrays\[1\] is a tuple. Only lists can be used"):
        gf.block([a, (a, a)])
    with pytest.raises(ValueError, match=r"List depths are mismatched. First element was at "
                                         r"depth 2, but there is an element at depth 1 "
                                         r"\(arrays\[1\]\)"):
        gf.block([[a, a], a])
    with pytest.raises(ValueError, match=r"List at arrays\[1\] cannot be empty"):
        gf.block([[a], []])
    with pytest.raises(ValueError, match=r"List at arrays cannot be empty"):
        gf.block([])


# ---- insert, delete ----------------------------------------------------------------

DELETE_OBJS = [0, -1, 2, np.int64(3), slice(None, None, 2), slice(None, None, -3), slice(5, 1),
               [0, 2, 2, 4], [], np.array([1]), np.array([-2, 0]),
               np.array([True, False, True, False, False, True, True])]


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint32", "float32", "complex64"])
@pytest.mark.parametrize("obj", DELETE_OBJS, ids=range(len(DELETE_OBJS)))
def test_delete_matches_numpy(session, dtype, obj):
    h1, h2 = _data(dtype, (7,)), _data(dtype, (3, 7))
    x1, x2 = session.asarray(h1), session.asarray(h2)
    check_all([(gf.delete(x1, obj), np.delete(h1, obj)),
               (gf.delete(x2, obj, axis=1), np.delete(h2, obj, axis=1)),
               (gf.delete(x2, obj, axis=-1), np.delete(h2, obj, axis=-1))])


def test_delete_flattens_remote_obj_and_errors(session):
    h = _data("int64", (3, 4))
    x = session.asarray(h)
    check_all([(gf.delete(x, 5), np.delete(h, 5)),
               (gf.delete(x, session.asarray(np.array([0, 2])), axis=0),
                np.delete(h, [0, 2], axis=0)),
               (gf.delete(x, [0, 1, 2], axis=0), np.delete(h, [0, 1, 2], axis=0)),
               (gf.delete(x[:0], slice(None), axis=0), np.delete(h[:0], slice(None), axis=0))])
    z = session.asarray(np.array(5.5))
    check_all([(gf.delete(z, 0), np.delete(np.array(5.5), 0)),
               (gf.insert(z, 1, 2), np.insert(np.array(5.5), 1, 2))])
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 1 with size 4"):
        gf.delete(x, 4, axis=1)
    with pytest.raises(IndexError):
        gf.delete(x, [0, 9], axis=1)
    with pytest.raises(ValueError, match="boolean array argument obj to delete must be one "
                                         "dimensional and match the axis length of 4"):
        gf.delete(x, np.array([True, False]), axis=1)
    with pytest.raises(IndexError):
        gf.delete(x, [0.5], axis=1)
    with pytest.raises(AxisError):
        gf.delete(x, 0, axis=2)


INSERT_CASES = [(1, 9), (0, [7, 8]), (-1, 5), (5, 9), ([1], [[7], [8], [9]]), ([0, 2, 2], 4),
                ([3, -1, 0], [1, 2, 3]), (slice(1, 4), 6), ([], 3), (np.array([4, 1]), [5, 6])]


@pytest.mark.parametrize("dtype", ["bool", "int16", "uint8", "float64", "complex128"])
@pytest.mark.parametrize("obj,values", INSERT_CASES, ids=range(len(INSERT_CASES)))
def test_insert_matches_numpy(session, dtype, obj, values):
    h1, h2 = _data(dtype, (5,)), _data(dtype, (3, 5))
    x1, x2 = session.asarray(h1), session.asarray(h2)
    pairs = [(gf.insert(x1, obj, np.asarray(values).reshape(-1)[:1]),
              np.insert(h1, obj, np.asarray(values).reshape(-1)[:1]))]
    try:
        want = np.insert(h2, obj, values, axis=1)
    except ValueError:
        with pytest.raises(ValueError):
            gf.insert(x2, obj, values, axis=1)
    else:
        pairs.append((gf.insert(x2, obj, values, axis=1), want))
    pairs.append((gf.insert(x2, obj, 3), np.insert(h2, obj, 3)))
    check_all(pairs)


def test_insert_values_cast_broadcast_and_errors(session):
    h = _data("int32", (2, 3))
    x = session.asarray(h)
    check_all([(gf.insert(x, 1, [1.7, 2.2, -3.5], axis=0),
                np.insert(h, 1, [1.7, 2.2, -3.5], axis=0)),
               (gf.insert(x, [1], [[1], [2]], axis=1), np.insert(h, [1], [[1], [2]], axis=1)),
               (gf.insert(x, 1, session.asarray(np.array([5, 6, 7])), axis=0),
                np.insert(h, 1, [5, 6, 7], axis=0)),
               (gf.insert(x[:, :0], 0, 1, axis=1), np.insert(h[:, :0], 0, 1, axis=1))])
    # A boolean obj: NumPy 1.x casts it to ints with a FutureWarning, NumPy 2
    # reads it as a mask; gpuflow does what the running NumPy does.
    for mask in (np.array([True, False]), np.array([True, False, True])):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            want = np.insert(h, mask, 0, axis=1)
        if any(issubclass(w.category, FutureWarning) for w in seen):
            with pytest.warns(FutureWarning, match="in the future insert will treat boolean"):
                got = gf.insert(x, mask, 0, axis=1)
            with pytest.warns(FutureWarning):
                listed = gf.insert(x, mask.tolist(), 0, axis=1)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                got = gf.insert(x, mask, 0, axis=1)
                # a list as its array (NumPy 2.5's own insert fails on one: obj.ndim)
                listed = gf.insert(x, mask.tolist(), 0, axis=1)
            with pytest.raises(ValueError, match="boolean array argument obj to insert must be "
                                                 "one dimensional"):
                np.insert(h, np.array([[True]]), 0, axis=1)
            with pytest.raises(ValueError, match="boolean array argument obj to insert must be "
                                                 "one dimensional"):
                gf.insert(x, np.array([[True]]), 0, axis=1)
        check_all([(got, want), (listed, want)])


def test_insert_of_a_boolean_mask_is_numpy_2s(session, monkeypatch):
    # NumPy 2's rule (whatever NumPy runs here): the mask's flatnonzero.
    from gpuflow import _compat

    monkeypatch.setattr(_compat, "_insert_takes_masks", lambda: True)
    h = _data("float32", (2, 3))
    x = session.asarray(h)
    pairs = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for mask, axis in [([True, False, True], 1), ([False] * 3, 1), ([True, True], 0),
                           ([False, True, False, False, True, True], None)]:
            want = np.insert(h, np.flatnonzero(mask), -1, axis=axis)
            pairs += [(gf.insert(x, np.array(mask), -1, axis=axis), want),
                      (gf.insert(x, mask, -1, axis=axis), want)]
    check_all(pairs)
    with pytest.raises(ValueError, match="boolean array argument obj to insert must be one "
                                         "dimensional"):
        gf.insert(x, np.array([[True, False]]), 0, axis=1)
    with pytest.raises(OverflowError, match="Python integer 300 out of bounds for uint8"):
        gf.insert(gf.zeros(3, "uint8", session=session), 1, 300)
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 1 with size 3"):
        gf.insert(x, 4, 0, axis=1)
    with pytest.raises(IndexError):
        gf.insert(x, [0, 9], 0, axis=1)
    with pytest.raises(ValueError, match="index array argument obj to insert must be one "
                                         "dimensional or scalar"):
        gf.insert(x, [[0]], 0, axis=1)
    with pytest.raises(ValueError):
        gf.insert(x, 1, [1, 2, 3, 4], axis=0)


# ---- r_, c_ ------------------------------------------------------------------------


def test_r_and_c_match_numpy(session):
    a = np.array([1, 2, 3], np.int8)
    m = _data("float32", (2, 3))
    ra, rm = session.asarray(a), session.asarray(m)
    check_all([(gf.r_[ra, 4, 5], np.r_[a, 4, 5]),
               (gf.r_[0:1:5j], np.r_[0:1:5j]),
               (gf.r_[-1:1:6j, [0] * 3, 5, 6], np.r_[-1:1:6j, [0] * 3, 5, 6]),
               (gf.r_[1:10:3, 2.5], np.r_[1:10:3, 2.5]),
               (gf.r_[:4], np.r_[:4]),
               (gf.r_[rm, rm], np.r_[m, m]),
               (gf.r_["-1", rm, rm], np.r_["-1", m, m]),
               (gf.r_["0,2", ra, ra], np.r_["0,2", a, a]),
               (gf.r_["0,2,0", ra, ra], np.r_["0,2,0", a, a]),
               (gf.r_["1,2,0", ra, ra], np.r_["1,2,0", a, a]),
               (gf.r_["0,3,1", rm, rm], np.r_["0,3,1", m, m]),
               (gf.r_["r", ra, ra], np.asarray(np.r_["r", a, a])),
               (gf.r_["c", ra, ra], np.asarray(np.r_["c", a, a])),
               (gf.r_[ra, np.float32(2)], np.r_[a, np.float32(2)]),
               (gf.r_[True, False], np.r_[True, False]),
               (gf.c_[ra, ra], np.c_[a, a]),
               (gf.c_[rm, rm], np.c_[m, m]),
               (gf.c_[ra, ra[::-1], 0:3], np.c_[a, a[::-1], 0:3]),
               (gf.c_[0:1:3j, ra], np.c_[0:1:3j, a])])
    assert len(gf.r_) == 0 and len(gf.c_) == 0


def test_r_errors_as_numpy(session):
    a = gf.ones(3, session=session)
    with pytest.raises(ValueError, match="special directives must be the first entry."):
        gf.r_[a, "0"]
    with pytest.raises(ValueError, match="unknown special directive 'x,y'"):
        gf.r_["x,y", a]
    with pytest.raises(ValueError, match="unknown special directive"):
        gf.r_["xyz", a]
    with pytest.raises(NotImplementedError, match="matrix"):
        gf.r_["1 2; 3 4"]
    with pytest.raises(ValueError):
        gf.r_[a, gf.ones((2, 2), session=session)]
    with pytest.raises(ValueError, match="need at least one array to concatenate"):
        gf.r_[()]
    with pytest.raises(OverflowError, match="Python integer 1000 out of bounds for int8"):
        gf.r_[gf.ones(2, "int8", session=session), 1000]


# ---- aliases and small helpers -----------------------------------------------------


@pytest.mark.parametrize("dtype", ["int32", "float16", "float64"])
def test_round_msort_and_mask_indices(session, dtype):
    host = (RNG.standard_normal((5, 3)) * 50).astype(dtype)
    x = session.asarray(host)
    with pytest.warns(DeprecationWarning, match="msort is deprecated"):
        got = gf.msort(x)
    want = np.sort(host, axis=0)  # msort's definition
    if hasattr(np, "msort"):  # and NumPy's own msort where it still has one
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            np.testing.assert_array_equal(np.msort(host), want)
    check_all([(gf.round_(x, 1), np.around(host, 1)), (gf.round_(x), np.around(host)),
               (got, want)])
    for n, func, k in [(4, gf.triu, 0), (5, gf.tril, -1), (1, gf.triu, 1), (0, gf.tril, 0)]:
        nfunc = {gf.triu: np.triu, gf.tril: np.tril}[func]
        got = gf.mask_indices(n, func, k, session=session)
        want = np.mask_indices(n, nfunc, k)
        check_all([(g, w.astype(np.int64)) for g, w in zip(got, want)])


# ---- poly, polydiv -----------------------------------------------------------------


@pytest.mark.parametrize("roots", [[], [2.0], [1, 2, 3], [0.5, -1.5, 2.25, 7, -3],
                                   np.array([1, 2], np.int8), np.array([1.5, 2], np.float32),
                                   np.array([1 + 2j, 1 - 2j, 3]), np.array([1 + 2j, 3],
                                                                          np.complex64),
                                   np.array([1j, 2])])
def test_poly_from_roots_matches_numpy(session, roots):
    want = np.poly(roots)
    got = gf.poly(session.asarray(np.asarray(roots)))
    if np.ndim(want) == 0:
        assert got == want
    else:
        check_all([(got, want)])


_MATRICES = [
    np.array([[1, 2], [3, 4]]),  # ints: float64, real eigenvalues
    np.array([[0.0, -1.0], [1.0, 0.0]]),  # a conjugate pair: a real polynomial
    np.array([[2.5]]), np.eye(3), RNG.standard_normal((5, 5)),
    RNG.standard_normal((4, 4)).astype(np.float32),
    (RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))).astype(np.complex64),
    RNG.standard_normal((6, 6)) + 1j * RNG.standard_normal((6, 6)),
]


@pytest.mark.parametrize("m", _MATRICES, ids=lambda m: f"{m.dtype}{m.shape}")
def test_poly_of_a_square_matrix_is_its_characteristic_polynomial(session, m):
    # NumPy's poly of a matrix: the polynomial of its eigenvalues.
    want = np.poly(m)
    got = gf.poly(session.asarray(m))
    check_all([(got, want)], rtol=1e-4 if want.dtype.char in "fF" else 1e-10)


def test_poly_errors(session):
    for shape in ((2, 3), (0, 0), (2, 2, 2)):
        with pytest.raises(ValueError, match="input must be 1d or non-empty square 2d array."):
            np.poly(np.ones(shape))
        with pytest.raises(ValueError, match="input must be 1d or non-empty square 2d array."):
            gf.poly(gf.ones(shape, session=session))


@pytest.mark.parametrize("u,v", [([1, 2, 3], [1, 1]), ([3.0, 5, 2], [2.0]), ([1, 0, 0, -1], [1, -1]),
                                 ([2.0], [1, 2, 3]), ([1.5, 2.5, 3.5, 4.5, 5.5], [0.5, 1, 2]),
                                 (np.array([1, 2, 3], np.float32), np.array([1, 3], np.float32)),
                                 ([1 + 1j, 2, 3], [1j, 1]), (np.array([4], np.int8), [2])])
def test_polydiv_matches_numpy(session, u, v):
    wq, wr = np.polydiv(u, v)
    q, r = gf.polydiv(session.asarray(np.asarray(u)), np.asarray(v))
    check_all([(q, wq), (r, wr)])
    pq, pr = gf.polydiv(gf.poly1d(np.asarray(u)), np.asarray(v))
    assert isinstance(pq, gf.poly1d) and isinstance(pr, gf.poly1d)


# ---- host interop ------------------------------------------------------------------


def test_asnumpy_get_array_module_and_dlpack(session):
    host = _data("float32", (3, 4))
    x = session.asarray(host)
    np.testing.assert_array_equal(gf.asnumpy(x), host)
    f = gf.asnumpy(x, order="F")
    assert f.flags.f_contiguous and not f.flags.c_contiguous
    np.testing.assert_array_equal(f, host)
    np.testing.assert_array_equal(gf.asnumpy([1, 2], stream=None), np.array([1, 2]))
    out = np.zeros((3, 4), np.float32)
    assert gf.asnumpy(x, out=out) is out
    np.testing.assert_array_equal(out, host)
    assert gf.get_array_module(x, host) is gf and gf.get_array_module(host, 1) is np
    assert gf.get_array_module() is np
    for src in (host, np.arange(5, dtype=np.uint16)):
        got = gf.from_dlpack(src, session=session)
        assert isinstance(got, gf.RemoteArray) and got.dtype == src.dtype
        np.testing.assert_array_equal(got.get(), src)
    assert gf.from_dlpack(x) is x
    with pytest.warns(DeprecationWarning, match="from_dlpack"):
        got = gf.fromDlpack(host, session=session)
    np.testing.assert_array_equal(got.get(), host)
    with pytest.raises(TypeError, match="DLPack"):
        gf.from_dlpack([1, 2], session=session)
    with pytest.raises(BufferError):
        gf.from_dlpack(host, copy=False, session=session)


def test_memory_predicates_and_reprs(session):
    host = _data("int32", (2, 3))
    x, y = session.asarray(host), session.asarray(host)
    assert gf.isfortran(x) is False and gf.isfortran(x.T) is False
    assert gf.isfortran(np.asfortranarray(host)) == np.isfortran(np.asfortranarray(host))
    assert gf.shares_memory(x, x) and gf.may_share_memory(x, x)
    assert not gf.shares_memory(x, y) and not gf.may_share_memory(x, x[0])
    empty = x[:0]
    assert not gf.shares_memory(empty, empty)
    assert gf.shares_memory(host, host[0]) and not gf.shares_memory(x, host)
    assert gf.may_share_memory(host, host[:, 1])
    for v in (0, 5, -5, 255):
        assert gf.binary_repr(v) == np.binary_repr(v)
        assert gf.binary_repr(v, width=10) == np.binary_repr(v, width=10)
        assert gf.base_repr(v, 3, 2) == np.base_repr(v, 3, 2)
    assert gf.binary_repr(gf.asarray(np.int64(6), session=session)) == "110"
    assert gf.array_repr(x) == np.array_repr(host)
    assert gf.array_str(x, precision=3) == np.array_str(host, precision=3)
    f = session.asarray(np.array([1.23456, 1e-9]))
    assert gf.array_repr(f, precision=2, suppress_small=True) == np.array_repr(
        np.array([1.23456, 1e-9]), precision=2, suppress_small=True)
    assert list(gf.ndindex(2, 3)) == list(np.ndindex(2, 3))
    with pytest.raises(ValueError):
        gf.base_repr(3, 1)


def test_save_load_savez(session, tmp_path):
    a, b = _data("float64", (3, 5)), _data("int8", (7,))
    x, y = session.asarray(a), session.asarray(b)
    gf.save(tmp_path / "x.npy", x)
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), a)
    got = gf.load(tmp_path / "x.npy", session=session)
    assert isinstance(got, gf.RemoteArray) and got.dtype == a.dtype
    np.testing.assert_array_equal(got.get(), a)
    buf = io.BytesIO()
    gf.save(buf, y)
    buf.seek(0)
    np.testing.assert_array_equal(gf.load(buf, session=session).get(), b)
    for writer in (gf.savez, gf.savez_compressed):
        path = tmp_path / f"{writer.__name__}.npz"
        writer(path, x, named=y, host=b)
        with gf.load(path, session=session) as f:
            assert sorted(f.files) == ["arr_0", "host", "named"]
            assert "named" in f and len(f) == 3 and sorted(f) == sorted(f.keys())
            assert isinstance(f["arr_0"], gf.RemoteArray)
            np.testing.assert_array_equal(f["arr_0"].get(), a)
            np.testing.assert_array_equal(f["named"].get(), b)
            np.testing.assert_array_equal(f["host"].get(), b)
    with pytest.raises(ValueError, match="allow_pickle=True is refused"):
        gf.load(tmp_path / "x.npy", allow_pickle=True, session=session)
    np.save(tmp_path / "obj.npy", np.array([{}, 1], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="allow_pickle=False"):
        gf.load(tmp_path / "obj.npy", session=session)


def test_readers_upload_numpys_result(session, tmp_path):
    text = tmp_path / "data.txt"
    text.write_text("# header\n1 2 3\n4 5 6\n7 8 9.5\n")
    for name, kwargs in [("loadtxt", {}), ("loadtxt", {"dtype": "int32", "usecols": (0, 1)}),
                         ("genfromtxt", {}), ("loadtxt", {"ndmin": 2, "skiprows": 3})]:
        got = getattr(gf, name)(text, session=session, **kwargs)
        want = getattr(np, name)(text, **kwargs)
        check_all([(got, want)])
    check_all([(gf.loadtxt(text, unpack=True, session=session), np.loadtxt(text, unpack=True))])
    raw = np.arange(11, dtype=np.int16)
    raw.tofile(tmp_path / "raw.bin")
    check_all([(gf.fromfile(tmp_path / "raw.bin", dtype=np.int16, session=session), raw),
               (gf.frombuffer(raw.tobytes(), dtype=np.int16, session=session), raw),
               (gf.frombuffer(b"", dtype=np.uint8, session=session), np.zeros(0, np.uint8)),
               (gf.fromiter(range(7), dtype=np.float32, session=session),
                np.arange(7, dtype=np.float32)),
               (gf.fromstring("1 2 3", dtype=np.int64, sep=" ", session=session),
                np.array([1, 2, 3]))])
    with pytest.raises(ValueError):
        gf.fromiter(range(3), dtype=np.int64, count=5, session=session)
    with pytest.raises(NotImplementedError, match="masked"):
        gf.genfromtxt(text, usemask=True, session=session)


# ---- polyfit -----------------------------------------------------------------------


@pytest.mark.parametrize("n,deg", [(1, 0), (3, 2), (7, 2), (50, 5), (301, 7)])
@pytest.mark.parametrize("dtype", ["int16", "float32", "float64"])
def test_polyfit_matches_numpy(session, n, deg, dtype):
    x = np.sort(RNG.uniform(-3, 5, n)) if dtype != "int16" else np.arange(n) - n // 3
    x = x.astype(dtype)
    y = (RNG.standard_normal(n) + 0.5 * x.astype(np.float64) ** 2).astype(dtype)
    y2 = np.stack([y, 2 * y + 1, y[::-1]], axis=1)
    w = np.abs(RNG.standard_normal(n)) + 0.5
    rx, ry = session.asarray(x), session.asarray(y)
    check_all([(gf.polyfit(rx, ry, deg), np.polyfit(x, y, deg)),
               (gf.polyfit(rx, y2, deg), np.polyfit(x, y2, deg)),
               (gf.polyfit(x, ry, deg, w=w), np.polyfit(x, y, deg, w=w))], rtol=1e-9, atol=1e-9)
    if n > deg + 1:
        for cov in (True, "unscaled"):
            gc, gv = gf.polyfit(rx, ry, deg, cov=cov, w=w)
            wc, wv = np.polyfit(x, y, deg, cov=cov, w=w)
            gc2, gv2 = gf.polyfit(rx, y2, deg, cov=cov)
            wc2, wv2 = np.polyfit(x, y2, deg, cov=cov)
            check_all([(gc, wc), (gv, wv), (gc2, wc2), (gv2, wv2)], rtol=1e-8,
                      atol=1e-8 * max(1.0, np.abs(wv).max(), np.abs(wv2).max()))


def test_polyfit_complex_y_and_rcond(session):
    x = np.linspace(-1, 2, 9)
    y = (1 + 2j) * x ** 2 - 3j * x + 0.5
    check_all([(gf.polyfit(session.asarray(x), session.asarray(y), 2), np.polyfit(x, y, 2)),
               (gf.polyfit(x, y, 3, rcond=1e-12), np.polyfit(x, y, 3, rcond=1e-12))],
              rtol=1e-9, atol=1e-9)


def test_polyfit_errors(session):
    x, y = gf.arange(5.0, session=session), gf.ones(5, session=session)
    with pytest.raises(ValueError, match="expected deg >= 0"):
        gf.polyfit(x, y, -1)
    with pytest.raises(TypeError, match="expected 1D vector for x"):
        gf.polyfit(x.reshape(1, 5), y, 1)
    with pytest.raises(TypeError, match="expected non-empty vector for x"):
        gf.polyfit(x[:0], y[:0], 1)
    with pytest.raises(TypeError, match="expected 1D or 2D array for y"):
        gf.polyfit(x, y.reshape(5, 1, 1), 1)
    with pytest.raises(TypeError, match="expected x and y to have same length"):
        gf.polyfit(x, y[:4], 1)
    with pytest.raises(TypeError, match="expected a 1-d array for weights"):
        gf.polyfit(x, y, 1, w=y.reshape(5, 1))
    with pytest.raises(TypeError, match="expected w and y to have the same length"):
        gf.polyfit(x, y, 1, w=y[:3])
    with pytest.raises(TypeError, match="array type float16 is unsupported in linalg"):
        gf.polyfit(x.astype("float16"), y, 1)
    with pytest.raises(ValueError, match="the number of data points must exceed order"):
        gf.polyfit(x, y, 4, cov=True)
    with pytest.raises(NotImplementedError, match="singular values"):
        gf.polyfit(x, y, 1, full=True)
    # Rank-deficient fits: NumPy warns and returns its SVD minimum-norm solution.
    with pytest.raises(np.linalg.LinAlgError, match="rank-deficient"):
        gf.polyfit(x, y, 5)
    with pytest.raises(np.linalg.LinAlgError, match="rank-deficient"):
        gf.polyfit(gf.ones(6, session=session), gf.arange(6.0, session=session), 2)
