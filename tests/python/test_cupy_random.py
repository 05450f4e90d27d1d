"""gpuflow.random (CuPy's cupy.random API on the server's Philox draws),
through the real server: seeding and reproducibility, shapes and dtypes,
ranges, NumPy's errors, and each distribution's moments on many draws
(within five standard errors)."""

import math

import numpy as np
import pytest

import gpuflow as gf

N = 40_000


def moments_close(values, mean, var):
    values = np.asarray(values, np.float64)
    assert abs(values.mean() - mean) < 5 * math.sqrt(var / values.size), (values.mean(), mean)
    if var > 0:
        assert abs(values.var() / var - 1) < 0.06, (values.var(), var)


def test_seeding_reproduces_and_successive_draws_differ(session):
    gf.random.seed(123)
    a, b = gf.random.rand(5), gf.random.rand(5)
    gf.random.seed(123)
    c = gf.random.rand(5)
    rs1, rs2, rs3 = gf.random.RandomState(7), gf.random.RandomState(7), gf.random.RandomState(8)
    va, vb, vc, r1, r2, r3 = gf.evaluate(a, b, c, rs1.randn(6), rs2.randn(6), rs3.randn(6))
    assert np.array_equal(va, vc) and not np.array_equal(va, vb)
    assert np.array_equal(r1, r2) and not np.array_equal(r1, r3)
    rs1.seed(7)
    assert np.array_equal(rs1.randn(6).get(), r1)
    assert gf.random.get_random_state() is gf.random.get_random_state()
    big = gf.random.RandomState(2 ** 100 + 5).rand(3).get()
    assert big.shape == (3,)


def test_shapes_dtypes_and_ranges(session):
    rs = gf.random.RandomState(1)
    cases = [
        (rs.rand(2, 3), (2, 3), np.float64), (rs.rand(), (), np.float64),
        (rs.randn(4, dtype=np.float32), (4,), np.float32), (rs.random_sample((2, 2)), (2, 2),
                                                            np.float64),
        (gf.random.random(3), (3,), np.float64), (gf.random.ranf(), (), np.float64),
        (gf.random.sample(2), (2,), np.float64),
        (rs.uniform(-2, 3, size=N), (N,), np.float64),
        (rs.uniform(size=5, dtype=np.float32), (5,), np.float32),
        (rs.normal(size=(3, 1)), (3, 1), np.float64), (rs.standard_normal(7), (7,), np.float64),
        (rs.randint(5, size=N), (N,), np.int64), (rs.randint(-3, 4, size=N, dtype=np.int8), (N,),
                                                  np.int8),
        (rs.randint(250, 256, size=100, dtype=np.uint8), (100,), np.uint8),
        (rs.random_integers(3, size=N), (N,), np.int64), (rs.choice(4, size=9), (9,), np.int64),
    ]
    values = gf.evaluate(*(c[0] for c in cases))
    for (remote, shape, dtype), v in zip(cases, values):
        assert remote.shape == shape and remote.dtype == dtype and v.shape == shape, remote
        assert v.dtype == dtype
    assert values[0].min() >= 0 and values[0].max() < 1
    u = values[7]
    assert u.min() >= -2 and u.max() < 3
    assert set(np.unique(values[11])) == set(range(5))
    assert set(np.unique(values[12])) == set(range(-3, 4))
    assert set(np.unique(values[13])) <= set(range(250, 256))
    assert set(np.unique(values[14])) == {1, 2, 3}
    assert rs.rand(1).writable


def test_parameter_arrays_broadcast(session):
    rs = gf.random.RandomState(3)
    loc = session.asarray(np.array([0.0, 100.0, -50.0]))
    n = rs.normal(loc, 2.0)
    u = rs.uniform(np.array([[0.0], [10.0]]), np.array([1.0, 2.0, 3.0]))
    e = rs.exponential(np.array([1.0, 5.0]), size=(N, 2))
    vn, vu, ve = gf.evaluate(n, u, e)
    assert vn.shape == (3,) and np.all(np.abs(vn - [0, 100, -50]) < 12)
    assert vu.shape == (2, 3) and vu[1].min() >= 1.0  # high < low draws in (high, low]
    moments_close(ve[:, 1], 5.0, 25.0)


def test_distribution_moments(session):
    rs = gf.random.RandomState(20240)
    euler = 0.5772156649015329
    draws = {
        "uniform": (rs.uniform(2, 5, N), 3.5, 9 / 12),
        "normal": (rs.normal(1.5, 3.0, N), 1.5, 9.0),
        "normal32": (rs.normal(-1, 0.5, N, dtype=np.float32), -1, 0.25),
        "lognormal": (rs.lognormal(0.0, 0.5, N), math.exp(0.125), (math.exp(0.25) - 1)
                      * math.exp(0.25)),
        "exponential": (rs.exponential(2.0, N), 2.0, 4.0),
        "standard_exponential": (rs.standard_exponential(N), 1.0, 1.0),
        "gumbel": (rs.gumbel(1.0, 2.0, N), 1.0 + 2.0 * euler, math.pi ** 2 / 6 * 4),
        "laplace": (rs.laplace(-1.0, 1.5, N), -1.0, 2 * 1.5 ** 2),
        "logistic": (rs.logistic(0.5, 1.0, N), 0.5, math.pi ** 2 / 3),
        "rayleigh": (rs.rayleigh(2.0, N), 2.0 * math.sqrt(math.pi / 2), (4 - math.pi) / 2 * 4),
        "weibull": (rs.weibull(2.0, N), math.gamma(1.5), math.gamma(2.0) - math.gamma(1.5) ** 2),
        "pareto": (rs.pareto(5.0, N), 1 / 4, 5 / (16 * 3)),
        "power": (rs.power(3.0, N), 3 / 4, 3 / (16 * 5)),
        "triangular": (rs.triangular(0.0, 1.0, 4.0, N), 5 / 3, (16 + 1 - 4) / 18),
        "geometric": (rs.geometric(0.25, N), 4.0, 0.75 / 0.0625),
        "randint": (rs.randint(0, 10, N), 4.5, 99 / 12),
    }
    values = gf.evaluate(*(d[0] for d in draws.values()))
    for (name, (_, mean, var)), v in zip(draws.items(), values):
        moments_close(v, mean, var)
    cauchy = rs.standard_cauchy(N).get()
    assert abs(np.median(cauchy)) < 0.05 and np.mean(np.abs(cauchy) < 1) == pytest.approx(0.5,
                                                                                       abs=0.02)


def test_generator_api(session):
    rng = gf.random.default_rng(7)
    assert gf.random.default_rng(rng) is rng
    dice = rng.integers(1, 6, size=N, endpoint=True)
    r = rng.random(4, dtype=np.float32)
    out = gf.zeros(3, session=session)
    rng.standard_normal(3, out=out)
    p = gf.random.Generator(gf.random.Philox4x3210(5))
    q = gf.random.Generator(gf.random.Philox4x3210(5))
    vd, vr, vp, vq, vo = gf.evaluate(dice, r, p.normal(size=4), q.normal(size=4), out)
    assert set(np.unique(vd)) == set(range(1, 7)) and vr.dtype == np.float32
    assert np.array_equal(vp, vq) and vo.shape == (3,)
    moments_close(vd, 3.5, 35 / 12)
    assert rng.integers(3, size=2).dtype == np.int64
    assert rng.uniform(0, 1, 2).shape == (2,)


def test_errors_are_numpys(session):
    rs = gf.random.RandomState(0)
    with pytest.raises(ValueError, match="high <= low"):
        rs.randint(5, 5)
    with pytest.raises(ValueError, match="high is out of bounds for int8"):
        rs.randint(0, 300, dtype=np.int8)
    with pytest.raises(ValueError, match="low is out of bounds for uint8"):
        rs.randint(-1, 3, dtype=np.uint8)
    with pytest.raises(ValueError, match="scale < 0"):
        rs.normal(0, -1)
    with pytest.raises(ValueError, match="Seed must be non-negative"):
        gf.random.RandomState(-1)
    with pytest.raises(TypeError, match="Unsupported dtype"):
        rs.rand(3, dtype=np.int32)
    with pytest.raises(NotImplementedError, match="sort"):
        rs.choice(5, 3, replace=False)
    with pytest.raises(NotImplementedError, match="sort"):
        rs.permutation(5)
    with pytest.raises(ValueError, match="left > mode"):
        rs.triangular(2, 1, 3)
    with pytest.raises(ValueError):
        np.random.RandomState(0).randint(5, 5)
