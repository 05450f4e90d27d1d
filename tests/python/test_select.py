"""Boolean-mask reads, writes through integer arrays and masks, JAX's .at,
and the selection functions (nonzero, flatnonzero, argwhere, where(cond),
compress, extract, put, put_along_axis, place, putmask, bincount) against
NumPy 2, through the real server (GPUFLOW_TEST_BACKEND=cuda runs it
unchanged)."""

import numpy as np
import pytest

import gpuflow as gf
from numpy_check import check_all

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float16", "float32", "float64"]

RNG = np.random.default_rng(23)
X = RNG.standard_normal((5, 7, 3)).astype(np.float32)


def _data(dtype, shape):
    values = RNG.integers(-3, 4, size=shape)
    if dtype == "bool":
        return values > 0
    if np.dtype(dtype).kind == "u":
        values = np.abs(values)
    return values.astype(dtype)


# ---- reading through masks ------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
def test_mask_reads_match_numpy_for_every_dtype(session, dtype):
    host = _data(dtype, (5, 7))
    x = session.asarray(host)
    check_all([(x[x != 0], host[host != 0]), (gf.flatnonzero(x), np.flatnonzero(host))])


MASK_KEYS = [
    lambda m: (m,), lambda m: (m[:, 0, 0],), lambda m: (slice(None), m[0]),
    lambda m: (m[:, :, 0], 1), lambda m: (Ellipsis, m[0, 0]),
    lambda m: (m[:, 0, 0], slice(None), [[0], [2]]), lambda m: (0, m[0]),
    lambda m: (slice(1, None, 2), m[0, :, 0], None), lambda m: ([True, False, True, True, False],),
]


@pytest.mark.parametrize("make", MASK_KEYS, ids=range(len(MASK_KEYS)))
@pytest.mark.parametrize("remote", [True, False], ids=["remote", "host"])
def test_masks_mixed_with_other_indices(session, make, remote):
    mask = X > 0.2
    key = make(mask)
    x = session.asarray(X)
    rkey = tuple(session.asarray(k) if remote and isinstance(k, np.ndarray) and k.dtype == bool
                 else k for k in key)
    check_all([(x[rkey], X[key])])


def test_empty_all_true_and_odd_sizes(session):
    for n in (1, 13, 1031, 4099):
        host = np.arange(n, dtype=np.float64) - n // 2
        x = session.asarray(host)
        check_all([(x[x > n], host[host > n]), (x[x > -n], host[host > -n]),
                   (x[x % 3 == 1], host[host % 3 == 1])])
    empty = session.asarray(np.zeros((0, 3), np.int8))
    check_all([(empty[empty > 0], np.zeros(0, np.int8))])


def test_the_mask_is_evaluated_once_and_kept(session):
    x = session.asarray(X)
    mask = x > 0
    y = x[mask]
    assert mask._expr.op is None  # rebound to the stored mask
    check_all([(y, X[X > 0]), (mask, X > 0)])


def test_mask_shape_errors_are_numpys(session):
    x = session.asarray(X)
    with pytest.raises(IndexError, match="boolean index did not match indexed array along axis 1; "
                                         "size of axis is 7 but size of corresponding boolean "
                                         "axis is 3"):
        x[:, np.ones(3, bool)]
    with pytest.raises(IndexError, match="too many indices for array"):
        x[np.ones((5, 7, 3), bool), 0]
    with pytest.raises(IndexError, match="scalar boolean index"):
        x[True]


# ---- nonzero and friends ----------------------------------------------------------------


@pytest.mark.parametrize("shape", [(6,), (4, 5), (2, 3, 4), (3, 0)])
def test_nonzero_argwhere_where(session, shape):
    host = _data("int16", shape)
    x = session.asarray(host)
    pairs = list(zip(gf.nonzero(x), np.nonzero(host)))
    pairs += list(zip(gf.where(x > 0), np.where(host > 0)))
    pairs.append((gf.argwhere(x), np.argwhere(host)))
    check_all(pairs)


def test_zero_d(session):
    x = session.asarray(np.float32(2.5))
    check_all([(gf.flatnonzero(x), np.flatnonzero(np.float32(2.5))),
               (gf.argwhere(x), np.argwhere(np.float32(2.5)))])
    with pytest.raises(ValueError, match="Calling nonzero on 0d arrays is not allowed"):
        gf.nonzero(x)


def test_nan_is_nonzero_and_negative_zero_is_not(session):
    host = np.array([0.0, -0.0, np.nan, 1.0, np.inf], np.float16)
    x = session.asarray(host)
    check_all([(gf.flatnonzero(x), np.flatnonzero(host))])


def test_compress_and_extract(session):
    x = session.asarray(X)
    c = np.array([1, 0, 1, 1, 0], bool)
    check_all([(gf.compress(session.asarray(c), x, axis=0), np.compress(c, X, axis=0)),
               (gf.compress(c[:3], x, axis=2), np.compress(c[:3], X, axis=2)),
               (gf.compress(session.asarray(c), x), np.compress(c, X)),
               (gf.extract(x > 0.5, x), np.extract(X > 0.5, X))])
    with pytest.raises(ValueError, match="condition must be a 1-d array"):
        gf.compress(np.ones((2, 2), bool), x)


def test_server_checks_the_count_it_was_told(session):
    x = session.asarray(np.array([1, 0, 2], np.int32))
    wrong = gf.remote_array.apply("flatnonzero", (x,), {"size": 1})
    with pytest.raises(gf.InvalidArgumentError, match="the input has 2 nonzero elements, but the "
                                                      "node's size is 1"):
        wrong.get()


# ---- writes through integer arrays and masks -------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
def test_setitem_with_duplicates_keeps_the_last_for_every_dtype(session, dtype):
    host = _data(dtype, (4, 5))
    values = _data(dtype, (6,))
    idx = np.array([3, -1, 0, 3, 2, -4])
    x = session.asarray(host)
    x[idx] = session.asarray(values[:, None])  # broadcast along the rows
    want = host.copy()
    want[idx] = values[:, None]
    check_all([(x, want)])


SET_KEYS = [
    (np.array([1, 1, -2]),), (slice(None), [0, 4, 0]), ([0, 2], slice(None), [1, 1]),
    ([[0], [3]], [1, 2]), (Ellipsis, [2, 0]), (1, [0, 0, 1]),
]


@pytest.mark.parametrize("key", SET_KEYS, ids=repr)
def test_setitem_keys_scalars_arrays_and_remote_indices(session, key):
    want = X.copy()
    want[key] = 7
    x = session.asarray(X)
    x[key] = 7
    sel = X[key]
    values = np.arange(sel.size, dtype=np.float64).reshape(sel.shape)
    want2 = X.copy()
    want2[key] = values
    y = session.asarray(X)
    rkey = tuple(session.asarray(np.asarray(k)) if isinstance(k, (list, np.ndarray)) else k
                 for k in key)
    y[rkey] = values
    check_all([(x, want), (y, want2)])


def test_augmented_assignment_is_buffered_as_numpy(session):
    idx = np.array([0, 0, 2])
    want = X[:, 0, 0].copy()
    want[idx] += 1
    x = session.asarray(X[:, 0, 0].copy())
    x[idx] += 1
    check_all([(x, want)])


@pytest.mark.parametrize("dtype", ALL)
def test_mask_assignment_with_one_value_per_element(session, dtype):
    host = _data(dtype, (6, 4))
    mask = _data("bool", (6, 4))
    values = _data(dtype, (int(mask.sum()),))
    want = host.copy()
    want[mask] = values
    x = session.asarray(host)
    x[session.asarray(mask)] = values
    rows = _data(dtype, (int(mask[:, 0].sum()), 4))
    y = session.asarray(host)
    y[mask[:, 0]] = rows
    want_y = host.copy()
    want_y[mask[:, 0]] = rows
    check_all([(x, want), (y, want_y)])
    with pytest.raises(ValueError, match="cannot assign 1000 input values"):
        x[mask] = np.zeros(1000, dtype)


def test_out_of_bounds_writes_raise_numpys_errors(session):
    x = session.asarray(np.zeros(5, np.float32))
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 5"):
        x[[5]] = 1
    with pytest.raises(IndexError, match="index -6 is out of bounds"):
        gf.put(x, [-6], 1)
    with pytest.raises(ValueError, match="shape mismatch: value array of shape \\(3,\\) could not "
                                         "be broadcast to indexing result of shape \\(2,\\)"):
        x[[0, 1]] = np.ones(3)
    far = session.asarray(np.array([1, 9], np.int64))
    y = x.at[far].set(2.0)
    with pytest.raises(gf.InvalidArgumentError, match="out of bounds"):
        y.get()


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                                   "uint64", "float16", "bfloat16", "float32", "float64", "bool"])
def test_at_add_min_max_accumulate_duplicates(session, dtype):
    npd = "float32" if dtype == "bfloat16" else dtype
    host = _data(npd, (9,))
    idx = np.array([1, 1, 1, -1, 4, 4, 0])
    upd = _data(npd, (7,))
    x = session.asarray(host, dtype=dtype) if dtype == "bfloat16" else session.asarray(host)
    pairs = []
    for name, ufunc in (("add", np.add), ("min", np.minimum), ("max", np.maximum),
                        ("multiply", np.multiply)):
        want = host.copy()
        ufunc.at(want, idx, upd)
        got = getattr(x.at[idx], name)(upd)
        if dtype == "bfloat16":
            got = got.astype("float32")
        pairs.append((got, want))
    want = host.copy()
    want[idx] = upd
    pairs.append((x.at[session.asarray(idx)].set(upd).astype(npd), want))
    check_all(pairs)


def test_put_place_putmask_put_along_axis(session):
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    x = session.asarray(a)
    gf.put(x, [0, -1, 5], [9, 8])
    want = a.copy()
    np.put(want, [0, -1, 5], [9, 8])
    y = session.asarray(a)
    gf.put(y, session.asarray(np.array([13, -20])), [1, 2], mode="wrap")
    want_y = a.copy()
    np.put(want_y, [13, -20], [1, 2], mode="wrap")
    z = session.asarray(a)
    gf.place(z, z % 3 == 0, [100, 200, 300])
    want_z = a.copy()
    np.place(want_z, want_z % 3 == 0, [100, 200, 300])
    p = session.asarray(a)
    gf.putmask(p, p > 6, [-1, -2, -3])
    want_p = a.copy()
    np.putmask(want_p, want_p > 6, [-1, -2, -3])
    q = session.asarray(a)
    idx = np.array([[0], [3], [1]])
    gf.put_along_axis(q, idx, 50, axis=1)
    want_q = a.copy()
    np.put_along_axis(want_q, idx, 50, axis=1)
    check_all([(x, want), (y, want_y), (z, want_z), (p, want_p), (q, want_q)])
    with pytest.raises(ValueError, match="Cannot insert from an empty array!"):
        gf.place(z, np.ones((3, 4), bool), [])
    with pytest.raises(ValueError, match="place: mask and data must be the same size"):
        gf.place(z, np.ones(3, bool), [1])


# ---- bincount -------------------------------------------------------------------------


def test_bincount_matches_numpy(session):
    labels = RNG.integers(0, 17, size=1001)
    w = RNG.standard_normal(1001)
    x = session.asarray(labels)
    check_all([(gf.bincount(x), np.bincount(labels)),
               (gf.bincount(x, minlength=40), np.bincount(labels, minlength=40)),
               (gf.bincount(x, weights=session.asarray(w)), np.bincount(labels, weights=w)),
               (gf.bincount(session.asarray(np.zeros(0, np.int64)), minlength=3),
                np.bincount(np.zeros(0, np.int64), minlength=3)),
               (gf.bincount(session.asarray(np.array([True, False, True]))),
                np.bincount(np.array([True, False, True])))], rtol=1e-12)
    # Few bins run as a histogram, many as a scatter-add; several numpy blocks.
    assert gf.bincount(x)._expr.op == "histogram"
    assert gf.bincount(session.asarray(np.array([0, 4000])))._expr.op == "scatter"
    for top, dtype in ((2046, "uint16"), (2047, "int32"), (5000, "int64"), (200, "uint8")):
        big = RNG.integers(0, top + 1, size=65536 * 2 + 11).astype(dtype)
        bw = RNG.random(big.size)
        check_all([(gf.bincount(session.asarray(big)), np.bincount(big)),
                   (gf.bincount(session.asarray(big), weights=session.asarray(bw)),
                    np.bincount(big, weights=bw))], rtol=1e-12)
    with pytest.raises(ValueError, match="'list' argument must have no negative elements"):
        gf.bincount(session.asarray(np.array([1, -1])))
    with pytest.raises(TypeError, match="Cannot cast array data from dtype\\('float32'\\)"):
        gf.bincount(session.asarray(np.ones(2, np.float32)))
    with pytest.raises(ValueError, match="'minlength' must not be negative"):
        gf.bincount(x, minlength=-1)
    with pytest.raises(ValueError, match="object too deep"):
        gf.bincount(session.asarray(np.zeros((2, 2), np.int64)))


# ---- unique -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
def test_unique_matches_numpy_for_every_dtype(session, dtype):
    host = _data(dtype, (4, 9))
    x = session.asarray(host)
    got = gf.unique(x, return_index=True, return_inverse=True, return_counts=True)
    want = np.unique(host, return_index=True, return_inverse=True, return_counts=True)
    check_all([(got[0], want[0]), (got[1], want[1]), (got[2], want[2].reshape(host.shape)),
               (got[3], want[3]), (gf.unique(x), np.unique(host))])


def test_unique_collapses_nans_and_signed_zeros(session):
    host = np.array([np.nan, 1.0, -0.0, np.nan, 0.0, 1.0, -np.nan], np.float32)
    x = session.asarray(host)
    values, counts = gf.unique(x, return_counts=True)
    got = gf.evaluate(values, counts)
    np.testing.assert_array_equal(got[0], np.array([0.0, 1.0, np.nan], np.float32))
    np.testing.assert_array_equal(got[1], [2, 2, 3])
    check_all([(gf.unique(x, equal_nan=False), np.array([0.0, 1.0, np.nan, np.nan, np.nan],
                                                         np.float32))])


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_unique_collapses_every_complex_nan_into_one(session, dtype):
    # NumPy: with equal_nan (the default) every complex value with a NaN part
    # is one NaN, kept as the first of them in its sort order.
    nan = np.nan
    host = np.array([nan + 1j, 2, complex(1, nan), 2, nan, 1, complex(nan, nan), 1 - 1j], dtype)
    x = session.asarray(host)
    got = gf.unique(x, return_index=True, return_inverse=True, return_counts=True)
    want = np.unique(host, return_index=True, return_inverse=True, return_counts=True)
    assert want[0].shape == (4,)
    check_all([(got[0], want[0]), (got[1], want[1]), (got[2], want[2].reshape(host.shape)),
               (got[3], want[3])])
    check_all([(gf.unique(x, equal_nan=False), np.unique(host, equal_nan=False))])


def test_unique_of_empty_and_0d(session):
    e = session.asarray(np.zeros((0, 2), np.int16))
    v, i, inv, c = gf.unique(e, return_index=True, return_inverse=True, return_counts=True)
    check_all([(v, np.zeros(0, np.int16)), (i, np.zeros(0, np.int64)),
               (inv, np.zeros((0, 2), np.int64)), (c, np.zeros(0, np.int64))])
    check_all([(gf.unique(session.asarray(np.int8(3))), np.array([3], np.int8))])


def test_array_methods_and_zero_d_writes(session):
    host = _data("int32", (3, 4))
    x = session.asarray(host)
    pairs = list(zip(x.nonzero(), host.nonzero()))
    pairs.append((x.compress([True, False, True], axis=0), host.compress([True, False, True],
                                                                         axis=0)))
    y = session.asarray(host)
    y.put([1, -1], [7, 8])
    want = host.copy()
    want.put([1, -1], [7, 8])
    z = session.asarray(np.float64(1.5))
    gf.put(z, [0, -1], [2.5, 3.5])  # a 0-d array is one element
    pairs += [(y, want), (z, np.float64(3.5))]
    check_all(pairs)


def test_remote_indices_out_of_bounds_name_the_axis(session):
    x = session.asarray(np.zeros((4, 3), np.float32))
    x[session.asarray(np.array([0, 7]))] = 1
    with pytest.raises(gf.InvalidArgumentError, match="index 7 is out of bounds for axis 0 with "
                                                      "size 4"):
        x.get()
    y = session.asarray(np.zeros(4, np.int16))
    y[session.asarray(np.array([-5], np.int8))] = 1
    with pytest.raises(gf.InvalidArgumentError, match="index -5 is out of bounds for axis 0 with "
                                                      "size 4"):
        y.get()


@pytest.mark.parametrize("dtype", ["int8", "uint32", "int64", "float32", "float64"])
def test_ufunc_at_and_cupy_scatter_methods(session, dtype):
    host = _data(dtype, (4, 5))
    idx = np.array([0, 3, 0, -1])
    vals = _data(dtype, (4, 5))
    pairs = []
    for ufunc, gfunc in ((np.add, gf.add), (np.multiply, gf.multiply),
                         (np.maximum, gf.maximum), (np.minimum, gf.minimum)):
        want = host.copy()
        ufunc.at(want, idx, vals)
        x = session.asarray(host)
        gfunc.at(x, idx, vals)
        pairs.append((x, want))
    for method, ufunc in (("scatter_add", np.add), ("scatter_max", np.maximum),
                          ("scatter_min", np.minimum)):
        want = host.copy()
        ufunc.at(want, (slice(None), [1, 1, 4]), 2)
        y = session.asarray(host)
        getattr(y, method)((slice(None), [1, 1, 4]), 2)
        pairs.append((y, want))
    check_all(pairs)


def test_ufunc_at_refuses_what_numpy_refuses(session):
    x = session.asarray(np.zeros(3, np.int16))
    with pytest.raises(TypeError, match="Cannot cast ufunc 'add' output from dtype\\('float64'\\) "
                                        "to dtype\\('int16'\\) with casting rule 'same_kind'"):
        gf.add.at(x, [0], 1.5)
    with pytest.raises(ValueError, match="second operand needed for ufunc"):
        gf.add.at(x, [0])
    with pytest.raises(NotImplementedError, match="subtract.at"):
        gf.subtract.at(x, [0], 1)


def test_large_selections_and_heavy_duplicates(session):
    # Many tiles for the device compaction, and thousands of updates per
    # target for the device atomics and the last-wins claim.
    big = RNG.standard_normal(1_000_003).astype(np.float32)
    x = session.asarray(big)
    idx = RNG.integers(-1000, 1000, size=200_000)
    order = np.arange(200_000, dtype=np.float64)
    want_set = big[:1000].copy()
    want_set[idx] = order
    s = session.asarray(big[:1000].copy())
    s[idx] = order
    small = RNG.integers(-100, 100, size=200_000).astype(np.int8)
    want_i8 = np.zeros(1000, np.int8)
    np.add.at(want_i8, idx, small)
    want_f16 = np.full(1000, -np.inf, np.float16)
    np.maximum.at(want_f16, idx, small.astype(np.float16))
    i8 = gf.zeros(1000, "int8", session=session).at[idx].add(small)
    f16 = gf.full(1000, -np.inf, "float16", session=session).at[idx].max(small)
    check_all([(x[x > 0.3], big[big > 0.3]), (gf.flatnonzero(x < -2), np.flatnonzero(big < -2)),
               (s, want_set), (i8, want_i8), (f16, want_f16),
               (gf.bincount(session.asarray(idx + 1000)), np.bincount(idx + 1000))])
