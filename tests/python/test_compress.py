"""x[mask] as one compress step: take(x, flatnonzero(mask, size)) with the
mask's elementwise producers fused (on the CUDA backend one stream
compaction writing x's elements, no index array). Values against NumPy on
both backends; the plan's one step is checked too (the planner is shared).
"""

import numpy as np
import pytest

import gpuflow as gf

RNG = np.random.default_rng(3)


def run(expr):
    result = gf.evaluate(expr, profile=True)
    return result[0], list(result.timings.steps)


@pytest.mark.parametrize("n", [1, 2047, 2048, 2049, 100_003])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "uint64", "bool", "float64"])
def test_boolean_mask_selection(session, dtype, n):
    x = (RNG.standard_normal(n) * 4).astype(dtype)
    y = (RNG.standard_normal(n) * 4).astype(dtype)
    a, b = session.asarray(x), session.asarray(y)
    got, steps = run(a[(a > b) | (a == 0)])
    want = x[(x > y) | (x == 0)]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert [s.description for s in steps][-1].startswith("compress ["), steps
    assert not any(s.description.startswith("host:") for s in steps), steps


@pytest.mark.parametrize("keep", ["none", "all"])
def test_empty_and_full_selections(session, keep):
    x = RNG.standard_normal(5000).astype(np.float32)
    a = session.asarray(x)
    got, steps = run(a[a > 100] if keep == "none" else a[a < 100])
    np.testing.assert_array_equal(got, x[x > 100] if keep == "none" else x[x < 100])


def test_a_mask_array_and_a_multidimensional_x(session):
    x = RNG.standard_normal((31, 17)).astype(np.float32)
    m = RNG.integers(0, 2, (31, 17)).astype(bool)
    got, steps = run(session.asarray(x)[session.asarray(m)])
    np.testing.assert_array_equal(got, x[m])
    assert steps[-1].description == "compress [flatnonzero, take]", steps


def test_the_count_is_checked_in_the_fused_step(session):
    x = session.asarray(np.array([1, 0, 2], np.int32))
    wrong = gf.remote_array.apply("flatnonzero", (x > 0,), {"size": 1})
    with pytest.raises(gf.InvalidArgumentError, match="the input has 2 nonzero elements, but the "
                       "node's size is 1"):
        gf.take(x, wrong).get()
