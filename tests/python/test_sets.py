"""intersect1d, union1d, setdiff1d, setxor1d, in1d and isin against NumPy 2,
through the real server (GPUFLOW_TEST_BACKEND=cuda runs it unchanged): every
real dtype, NaN, mixed dtypes, duplicates, empty and 0-d operands, both of
isin's paths (one reduction over few test elements, a sort and a
searchsorted over many), NumPy's errors."""

import warnings

import numpy as np
import pytest

import gpuflow as gf
from numpy_check import check_all

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"]
RNG = np.random.default_rng(29)
# (len(ar1), len(ar2)): empty, one, few test elements (isin's reduction) and
# many (its sort), odd sizes.
SIZES = [(0, 5), (5, 0), (0, 0), (1, 1), (7, 3), (7, 40), (301, 2003), (2003, 301)]


def _data(dtype, n, nan=False):
    values = RNG.integers(-20, 21, n)
    if dtype == "bool":
        return values > 0
    if np.dtype(dtype).kind == "u":
        values = np.abs(values)
    host = values.astype(dtype)
    if nan and host.size:
        host[RNG.integers(0, n, max(1, n // 5))] = np.nan
    return host


def _pairs(session, host1, host2):
    return session.asarray(host1), session.asarray(host2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n1,n2", SIZES)
def test_set_functions_match_numpy(session, dtype, n1, n2):
    nan = np.dtype(dtype).kind == "f"
    h1, h2 = _data(dtype, n1, nan), _data(dtype, n2, nan)
    a, b = _pairs(session, h1, h2)
    values, i1, i2 = gf.intersect1d(a, b, return_indices=True)
    w = np.intersect1d(h1, h2, return_indices=True)
    check_all([(values, w[0]), (i1, w[1]), (i2, w[2]),
               (gf.intersect1d(a, b), np.intersect1d(h1, h2)),
               (gf.union1d(a, b), np.union1d(h1, h2)),
               (gf.setdiff1d(a, b), np.setdiff1d(h1, h2)),
               (gf.setdiff1d(b, a), np.setdiff1d(h2, h1)),
               (gf.setxor1d(a, b), np.setxor1d(h1, h2)),
               (gf.isin(a, b), np.isin(h1, h2)),
               (gf.isin(b, a, invert=True), np.isin(h2, h1, invert=True))])


@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32", "float64"])
def test_assume_unique_takes_numpys_paths(session, dtype):
    h1 = RNG.permutation(np.arange(0, 60, 2)).astype(dtype)
    h2 = RNG.permutation(np.arange(0, 90, 3)).astype(dtype)
    a, b = _pairs(session, h1, h2)
    values, i1, i2 = gf.intersect1d(a, b, assume_unique=True, return_indices=True)
    w = np.intersect1d(h1, h2, assume_unique=True, return_indices=True)
    check_all([(values, w[0]), (i1, w[1]), (i2, w[2]),
               (gf.setdiff1d(a, b, assume_unique=True), np.setdiff1d(h1, h2, assume_unique=True)),
               (gf.setxor1d(a, b, assume_unique=True), np.setxor1d(h1, h2, assume_unique=True)),
               (gf.isin(a, b, assume_unique=True), np.isin(h1, h2, assume_unique=True))])


def test_nan_is_never_a_member_and_equal_nans_collapse(session):
    h1 = np.array([np.nan, 1.0, np.nan, 2.0, 2.0, np.inf, -np.inf], np.float64)
    h2 = np.array([np.nan, 2.0, np.inf, 5.0] * 10, np.float64)
    a, b = _pairs(session, h1, h2)
    check_all([(gf.intersect1d(a, b), np.intersect1d(h1, h2)),
               (gf.union1d(a, b), np.union1d(h1, h2)),
               (gf.setdiff1d(a, b), np.setdiff1d(h1, h2)),
               (gf.setxor1d(a, b), np.setxor1d(h1, h2)),  # two NaNs, as NumPy's
               (gf.isin(a, b), np.isin(h1, h2)),
               (gf.isin(b, a), np.isin(h2, h1))])


@pytest.mark.parametrize("d1,d2", [("int8", "uint8"), ("int32", "float32"), ("uint16", "int8"),
                                   ("uint64", "float32"), ("bool", "int16"), ("float16", "float64")])
def test_mixed_dtypes_promote_as_numpy(session, d1, d2):
    h1, h2 = _data(d1, 50), _data(d2, 70)
    a, b = _pairs(session, h1, h2)
    values, i1, i2 = gf.intersect1d(a, b, return_indices=True)
    w = np.intersect1d(h1, h2, return_indices=True)
    check_all([(values, w[0]), (i1, w[1]), (i2, w[2]),
               (gf.union1d(a, b), np.union1d(h1, h2)),
               (gf.setdiff1d(a, b), np.setdiff1d(h1, h2)),  # ar1's dtype
               (gf.setxor1d(a, b), np.setxor1d(h1, h2)),
               (gf.isin(a, b), np.isin(h1, h2))])


def test_shapes_0d_and_host_operands(session):
    h1 = RNG.integers(0, 9, (4, 6)).astype(np.int16)
    h2 = RNG.integers(0, 9, (3, 5)).astype(np.int16)
    a, b = _pairs(session, h1, h2)
    s = session.asarray(np.int64(4))
    check_all([(gf.isin(a, b), np.isin(h1, h2)),  # element's shape
               (gf.isin(s, b), np.isin(np.int64(4), h2)),  # 0-d stays 0-d
               (gf.isin(a, [1, 2, 3]), np.isin(h1, [1, 2, 3])),
               (gf.isin(a, 3), np.isin(h1, 3)),
               (gf.intersect1d(a, b), np.intersect1d(h1, h2)),
               (gf.intersect1d(s, b), np.intersect1d(np.int64(4), h2)),
               (gf.union1d(s, s), np.union1d(np.int64(4), np.int64(4))),
               (gf.setdiff1d(a, s), np.setdiff1d(h1, np.int64(4))),
               (gf.setxor1d(a, [1, 2]), np.setxor1d(h1, [1, 2]))])


def test_in1d_is_the_flattened_isin_and_warns(session):
    h1, h2 = RNG.integers(0, 9, (3, 4)), RNG.integers(0, 9, 20)
    a, b = _pairs(session, h1, h2)
    with pytest.warns(DeprecationWarning, match="`in1d` is deprecated"):
        got = gf.in1d(a, b, invert=True)
    want = np.isin(h1, h2, invert=True).ravel()  # in1d's definition
    if hasattr(np, "in1d"):  # and NumPy's own in1d where it still has one (gone in 2.4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            np.testing.assert_array_equal(np.in1d(h1, h2, invert=True), want)
    check_all([(got, want)])


def test_isin_kinds_are_checked_as_numpy(session):
    hi, hf = np.arange(10), np.linspace(0, 1, 10)
    for kind in ("sort", "table", None):
        check_all([(gf.isin(session.asarray(hi), session.asarray(hi[::3]), kind=kind),
                    np.isin(hi, hi[::3], kind=kind))])
    for args in ((hi, hi, "quick"), (hf, hf, "table"), (hi, hf, "table")):
        with pytest.raises(ValueError) as want:
            np.isin(*args[:2], kind=args[2])
        with pytest.raises(ValueError) as got:
            gf.isin(session.asarray(args[0]), session.asarray(args[1]), kind=args[2])
        assert str(got.value) == str(want.value)


def test_each_data_dependent_result_evaluates_once(session, monkeypatch):
    from gpuflow import remote_array

    calls = []
    real = remote_array._execute
    monkeypatch.setattr(remote_array, "_execute",
                        lambda *args, **kw: calls.append(1) or real(*args, **kw))
    h1, h2 = _data("int32", 500), _data("int32", 700)
    a, b = _pairs(session, h1, h2)
    results = [gf.intersect1d(a, b, return_indices=True)[2], gf.setdiff1d(a, b),
               gf.setxor1d(a, b), gf.isin(a, b)]
    assert len(calls) == 3  # one count each; isin none
    del calls[:]
    check_all([(results[0], np.intersect1d(h1, h2, return_indices=True)[2]),
               (results[1], np.setdiff1d(h1, h2)), (results[2], np.setxor1d(h1, h2)),
               (results[3], np.isin(h1, h2))])
