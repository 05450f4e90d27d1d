"""float16 and bfloat16 scans round every partial result to the dtype, as
NumPy's float16 add.accumulate / multiply.accumulate do (each step in float,
rounded to half before the next): gpuflow.cumsum, cumprod, nancumsum,
nancumprod and cumulative_sum equal NumPy's exactly, for sizes that give
each GPU layout (one element, short rows a thread each, long contiguous rows
a block each, the flattened array, strided axes)."""

import numpy as np
import pytest

import gpuflow as gf

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

# (shape, axis): 1-D odd sizes, a 2-D array along each axis and flattened,
# few long strided columns, and a long 1-D row (several GPU tiles).
CASES = [((1,), 0), ((7,), 0), ((1000,), 0), ((5000,), 0), ((37, 301), 0), ((37, 301), 1),
         ((37, 301), None), ((3001, 3), 0), ((64, 5, 3), 1), ((70001,), None)]


def data(shape, op, dtype=np.float16, seed=0):
    rng = np.random.default_rng(seed)
    if op == "cumprod":
        # Near 1, so that products neither vanish nor overflow quickly.
        return rng.uniform(0.97, 1.03, size=shape).astype(dtype)
    return rng.uniform(-3, 3, size=shape).astype(dtype)


@pytest.mark.parametrize("shape,axis", CASES, ids=str)
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_float16_scans_equal_numpy_exactly(session, op, shape, axis):
    x = data(shape, op)
    want = getattr(np, op)(x, axis=axis)
    assert want.dtype == np.float16
    got = getattr(gf, op)(session.asarray(x), axis=axis).get()
    assert got.dtype == np.float16 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_float16_cumsum_rounds_every_step(session):
    # 2048 + 1 rounds back to 2048 in float16: NumPy's running sum of 3000
    # ones stops there (one rounding at the end would give 3000).
    x = np.ones(3000, np.float16)
    got = gf.cumsum(session.asarray(x)).get()
    np.testing.assert_array_equal(got, np.cumsum(x))
    assert got[-1] == 2048


@pytest.mark.parametrize("op", ["nancumsum", "nancumprod"])
@pytest.mark.parametrize("shape,axis", [((5001,), 0), ((37, 301), 1), ((301, 37), 0)], ids=str)
def test_float16_nan_scans_equal_numpy_exactly(session, op, shape, axis):
    x = data(shape, op.replace("nan", ""), seed=3)
    x.reshape(-1)[::17] = np.nan
    want = getattr(np, op)(x, axis=axis)
    got = getattr(gf, op)(session.asarray(x), axis=axis).get()
    np.testing.assert_array_equal(got, want)


def test_float16_accumulators_from_dtype_and_cumulative_sum(session):
    # dtype=float16 scans other dtypes in float16 too (the input converted
    # first, as NumPy's); cumulative_sum shares the scan.
    x = np.random.default_rng(5).uniform(-3, 3, size=(9, 1001)).astype(np.float32)
    for axis in (0, 1):
        want = np.cumsum(x, axis=axis, dtype=np.float16)
        got = gf.cumsum(session.asarray(x), axis=axis, dtype=np.float16).get()
        np.testing.assert_array_equal(got, want)
    h = x.astype(np.float16)
    got = gf.cumulative_sum(session.asarray(h), axis=1, include_initial=True).get()
    np.testing.assert_array_equal(got[:, 1:], np.cumsum(h, axis=1))
    assert np.all(got[:, 0] == 0)
    # float16 input with dtype=float32: float32's scan, not float16's.
    got = gf.cumsum(session.asarray(np.ones(3000, np.float16)), dtype=np.float32).get()
    assert got.dtype == np.float32 and got[-1] == 3000


def bfloat16_scan(words, op, axis):
    """The reference: float32 steps rounded to bfloat16 after each one."""
    x = np.moveaxis(gf.bfloat16_to_float32(words), axis, 0)
    acc = np.full((1,) + x.shape[1:], 1.0 if op == "cumprod" else 0.0, np.float32)
    out = np.empty(x.shape, np.uint16)
    for j in range(x.shape[0]):
        step = acc * x[j:j + 1] if op == "cumprod" else acc + x[j:j + 1]
        out[j:j + 1] = gf.float32_to_bfloat16(step)
        acc = gf.bfloat16_to_float32(out[j:j + 1])
    return np.moveaxis(out, 0, axis)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("shape,axis", [((3001,), 0), ((9, 1001), 0), ((9, 1001), 1)], ids=str)
def test_bfloat16_scans_round_every_step(session, op, shape, axis):
    words = gf.float32_to_bfloat16(data(shape, op, np.float32, seed=7))
    got = getattr(gf, op)(session.asarray(words, dtype="bfloat16"), axis=axis).get()
    assert got.dtype == np.uint16  # raw bfloat16 words
    np.testing.assert_array_equal(got, bfloat16_scan(words, op, axis))
