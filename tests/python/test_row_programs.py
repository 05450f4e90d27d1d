"""Row programs: reductions over the trailing axes fused with the
elementwise work around them into one step (StepKind "rows"; on the CUDA
backend one kernel, a block per row). Values are checked against NumPy on
both backends; the plan's shape (one step of kind "rows", none on the host)
is checked too, since the planner is the same for both.
"""

import numpy as np
import pytest

import gpuflow

RNG = np.random.default_rng(7)


def layer_norm(xp, x, g, b):
    c = x - x.mean(axis=-1, keepdims=True)
    return c / xp.sqrt((c * c).mean(axis=-1, keepdims=True) + 1e-5) * g + b


def run(expr):
    result = gpuflow.evaluate(expr, profile=True)
    return result[0], list(result.timings.steps)


def assert_one_row_step(steps):
    assert [s.kind for s in steps] == ["rows"], [s.description for s in steps]
    assert not steps[0].description.startswith("host:"), steps[0].description
    assert steps[0].description.startswith("rows ["), steps[0].description


@pytest.mark.parametrize("shape", [(16, 4096), (7, 999), (3, 40), (2, 16384), (4, 3, 2)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_layer_norm(session, shape, dtype):
    # Inputs of their own per case (the order of cases varies under xdist).
    rng = np.random.default_rng([len(shape), *shape, len(dtype)])
    x = rng.uniform(-4, 4, shape).astype(dtype)
    g = rng.uniform(0.5, 2, shape[-1:]).astype(dtype)
    b = rng.uniform(-1, 1, shape[-1:]).astype(dtype)
    got, steps = run(layer_norm(gpuflow, session.asarray(x), session.asarray(g),
                                session.asarray(b)))
    assert got.dtype == np.dtype(dtype) and got.shape == shape
    if dtype == "float16":
        # Each op rounded to float16, as NumPy computes it: rows of two
        # nearly equal values make the float64 answer differ by far more.
        want = layer_norm(np, x, g, b).astype(np.float64)
        tol = 1e-2
    else:
        want = layer_norm(np, x.astype(np.float64), g.astype(np.float64), b.astype(np.float64))
        tol = {"float32": 1e-4, "float64": 1e-10}[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)
    assert_one_row_step(steps)


@pytest.mark.parametrize("ddof", [0, 1, 5])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("op", ["std", "var"])
def test_std_and_var_rows(session, op, dtype, ddof):
    # A mean far from zero: two passes keep the precision Welford keeps.
    x = (1000 + RNG.standard_normal((33, 513))).astype(dtype)
    got, steps = run(getattr(session.asarray(x), op)(axis=-1, ddof=ddof))
    want = getattr(x.astype(np.float64), op)(axis=-1, ddof=ddof)
    assert got.dtype == np.dtype(dtype) and got.shape == (33,)
    tol = {"float16": 2e-2, "float32": 1e-5, "float64": 1e-12}[dtype]
    if dtype == "float16":
        want = getattr(x, op)(axis=-1, ddof=ddof, dtype=np.float32)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol)
    assert_one_row_step(steps)


@pytest.mark.filterwarnings("ignore:Degrees of freedom")
def test_ddof_beyond_the_row_and_non_finite_values(session):
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    x[1, 2] = np.nan
    x[2, 0] = np.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        for ddof in (6, 7):
            got, steps = run(session.asarray(x).var(axis=-1, ddof=ddof))
            want = x.astype(np.float64).var(axis=-1, ddof=ddof)
            np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-5)
            assert_one_row_step(steps)
        got, _ = run(session.asarray(x) - session.asarray(x).mean(axis=-1, keepdims=True))
        np.testing.assert_allclose(got, x - x.mean(axis=-1, keepdims=True), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64", "bool"])
@pytest.mark.parametrize("op", ["sum", "prod", "min", "max", "any", "all", "mean"])
def test_integer_reductions_read_back_into_rows(session, op, dtype):
    if dtype == "bool":
        x = RNG.integers(0, 2, (5, 77)).astype(bool)
    else:
        x = RNG.integers(0, 4, (5, 77)).astype(dtype)
    g = RNG.integers(0, 9, (77,)).astype(dtype if dtype != "bool" else "int8")

    def program(xp, a, h):
        r = getattr(xp, op)(a, axis=-1, keepdims=True)
        return xp.where(a >= r, a, h).sum(axis=-1)

    got, steps = run(program(gpuflow, session.asarray(x), session.asarray(g)))
    want = program(np, x, g)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)
    assert_one_row_step(steps)


def test_several_trailing_axes_and_broadcast_inputs(session):
    x = RNG.standard_normal((3, 5, 7, 11)).astype(np.float32)
    cols = RNG.standard_normal((7, 11)).astype(np.float32)
    rows = RNG.standard_normal((5, 1, 1)).astype(np.float32)
    mixed = RNG.standard_normal((3, 1, 7, 1))  # float64: promotes what it touches

    def program(xp, a, c, r, m):
        u = (a - (a.mean(axis=(2, 3), keepdims=True) + r)) * c + m
        return u / xp.abs(u).max(axis=(2, 3), keepdims=True)

    arrays = [session.asarray(v) for v in (x, cols, rows, mixed)]
    got, steps = run(program(gpuflow, *arrays))
    want = program(np, x, cols, rows, mixed)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert_one_row_step(steps)


def test_a_row_result_without_keepdims(session):
    x = RNG.standard_normal((9, 130)).astype(np.float32)
    a = session.asarray(x)
    got, steps = run(gpuflow.abs(a - a.mean(axis=-1, keepdims=True)).sum(axis=-1))
    want = np.abs(x - x.mean(axis=-1, keepdims=True)).sum(axis=-1)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert_one_row_step(steps)


def test_repeated_rounds_are_one_step(session):
    x = RNG.standard_normal((64, 256)).astype(np.float32)
    a, want = session.asarray(x), x
    for _ in range(10):
        a = a - 0.001 * a.sum(axis=-1, keepdims=True)
        want = want - np.float32(0.001) * want.sum(axis=-1, keepdims=True)
    got, steps = run(a)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert_one_row_step(steps)


@pytest.mark.parametrize("shape", [(0, 8), (8, 1), (1, 1), (3, 16385)])
def test_shapes_outside_row_programs_still_compute(session, shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    a = session.asarray(x)
    got, steps = run(a - a.mean(axis=-1, keepdims=True))
    with np.errstate(invalid="ignore"):
        want = x - x.mean(axis=-1, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert "rows" not in [s.kind for s in steps]
