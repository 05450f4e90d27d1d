"""The conformance suite: every op against NumPy, through the real server.

Backend-agnostic: it runs against whatever backend the `server` fixture
started ($GPUFLOW_TEST_BACKEND, default cpu), so the CUDA backend runs it
unchanged. NumPy is the reference, with NumPy 2's promotion rules (weak
Python scalars); where NumPy has no such function (rsqrt, sigmoid, relu,
gelu, erf, logsumexp, softmax) the reference is computed in float64.
"""

import math
import warnings
import zlib

import numpy as np
import pytest

import gpuflow

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float16", "float32", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "float32", "float64"]
SHAPES = [(), (0,), (7,), (3, 5), (2, 1, 1023)]

RTOL = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 2e-6, "float64": 1e-13}
# Transcendentals: implementations differ by a few ulps.
RTOL_TRANSCENDENTAL = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 1e-5, "float64": 1e-12}


def seed(*parts):
    """A stable seed (Python's hash() of strings changes per process)."""
    return zlib.crc32(repr(parts).encode())


def make(dtype, shape, rng, kind="any"):
    """Test data: random, never all zeros; kind narrows the range."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if dtype == np.bool_:
        return (rng.integers(0, 2, size=n) == 1).reshape(shape)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = info.min, info.max
        if kind == "positive":
            lo = 1
        elif kind == "small":
            lo, hi = max(lo, -9), min(hi, 9)
        elif kind == "exponent":
            lo, hi = 0, 5
        return rng.integers(lo, hi, size=n, endpoint=True, dtype=dtype).reshape(shape)
    if kind == "positive":
        x = rng.uniform(0.05, 20, size=n)
    elif kind == "unit":
        x = rng.uniform(-0.99, 0.99, size=n)
    elif kind == "exponent":
        x = rng.uniform(-2, 3, size=n)
    elif kind == "small":
        x = rng.uniform(-9, 9, size=n)
    else:
        x = rng.standard_normal(size=n) * 10
    return x.astype(dtype).reshape(shape)


def run(session, inputs, build, outputs=1, stored=False):
    """Uploads inputs as a0, a1, ...; build(g, *nodes) returns the output node(s).
    ``stored``: the outputs are stored in the session and downloaded (for
    outputs over the inline limit)."""
    g = gpuflow.Graph()
    nodes = []
    for i, x in enumerate(inputs):
        session.upload(x, name=f"a{i}")
        nodes.append(g.array(f"a{i}"))
    out = build(g, *nodes)
    out = list(out) if isinstance(out, (list, tuple)) else [out]
    if stored:
        session.execute(g, outputs={f"out{i}": node for i, node in enumerate(out)})
        result = [session.download(f"out{i}") for i in range(len(out))]
    else:
        result = session.execute(g, outputs=out)
    return result if outputs > 1 else result[0]


def check(got, want, rtol=None, atol=0.0, exact_dtype=True):
    want = np.asarray(want)
    if exact_dtype:
        assert got.dtype == want.dtype, f"dtype {got.dtype}, NumPy {want.dtype}"
    assert got.shape == want.shape, f"shape {got.shape}, NumPy {want.shape}"
    if want.dtype.kind == "f":
        tol = rtol if rtol is not None else RTOL[want.dtype.name]
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=tol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def numpy_or_error(fn, *args):
    """NumPy's answer, or the exception type NumPy raises."""
    with np.errstate(all="ignore"):
        try:
            return fn(*args)
        except (TypeError, ValueError, OverflowError) as e:
            return e


# ------------------------------------------------------------------ unary

def float_of(x):
    """The dtype NumPy's float ufuncs pick for x (np.sqrt's loop)."""
    return np.sqrt(np.zeros(1, x.dtype)).dtype


def erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


UNARY = {
    "neg": (np.negative, "any"),
    "abs": (np.abs, "any"),
    "sign": (np.sign, "any"),
    "square": (np.square, "small"),
    "sqrt": (np.sqrt, "positive"),
    "exp": (np.exp, "small"),
    "log": (np.log, "positive"),
    "log1p": (np.log1p, "positive"),
    "expm1": (np.expm1, "small"),
    "sin": (np.sin, "any"),
    "cos": (np.cos, "any"),
    "tanh": (np.tanh, "any"),
    "floor": (np.floor, "any"),
    "ceil": (np.ceil, "any"),
    "round": (np.round, "any"),
    "isnan": (np.isnan, "any"),
    "isinf": (np.isinf, "any"),
    "logical_not": (np.logical_not, "any"),
    "bitwise_not": (np.invert, "any"),
    "rsqrt": (lambda x: (1 / np.sqrt(x.astype(np.float64))).astype(float_of(x)), "positive"),
    "sigmoid": (lambda x: (1 / (1 + np.exp(-x.astype(np.float64)))).astype(float_of(x)), "any"),
    "erf": (lambda x: erf(x.astype(np.float64)).astype(float_of(x)), "unit"),
    "gelu": (lambda x: (0.5 * x.astype(np.float64) * (1 + erf(x.astype(np.float64) / math.sqrt(2))))
             .astype(float_of(x)), "any"),
    "relu": (lambda x: x if x.dtype == np.bool_ else np.maximum(x, np.zeros((), x.dtype)), "any"),
    "reciprocal": (np.reciprocal, "positive"),
}
TRANSCENDENTAL = {"sqrt", "exp", "log", "log1p", "expm1", "sin", "cos", "tanh", "rsqrt",
                  "sigmoid", "erf", "gelu"}
# gpuflow deviates from NumPy here on purpose (docs/ops.md): floor/ceil of ints
# keep the int dtype; neg/sign/relu/floor/ceil/round of bool are errors.
BOOL_ERRORS = {"neg", "sign", "relu", "floor", "ceil", "round"}


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(session, op, dtype, shape):
    fn, kind = UNARY[op]
    x = make(dtype, shape, np.random.default_rng(seed(op, dtype)), kind)
    if op in ("floor", "ceil") and dtype in INTS:
        want = x.copy()
    elif op in BOOL_ERRORS and dtype == "bool":
        want = TypeError()
    else:
        want = numpy_or_error(fn, x)
    if isinstance(want, Exception):
        with pytest.raises(gpuflow.InvalidArgumentError, match=f"\\({op}\\)"):
            run(session, [x], lambda g, a: g.op(op, a))
        return
    got = run(session, [x], lambda g, a: g.op(op, a))
    if op == "reciprocal" and dtype in INTS:
        want = np.where(x == 0, 0, want).astype(x.dtype)
    rtol = RTOL_TRANSCENDENTAL.get(want.dtype.name) if op in TRANSCENDENTAL else None
    check(got, want, rtol=rtol, atol=1e-6 if op in ("sin", "cos", "tanh", "erf", "gelu") else 0)


# ------------------------------------------------------------------ binary

BINARY = {
    "add": (np.add, "any", "any"),
    "sub": (np.subtract, "any", "any"),
    "mul": (np.multiply, "any", "any"),
    "div": (np.true_divide, "any", "positive"),
    "floordiv": (np.floor_divide, "any", "any"),
    "mod": (np.remainder, "any", "any"),
    "pow": (np.power, "small", "exponent"),
    "maximum": (np.maximum, "any", "any"),
    "minimum": (np.minimum, "any", "any"),
    "atan2": (np.arctan2, "any", "any"),
    "eq": (np.equal, "small", "small"),
    "ne": (np.not_equal, "small", "small"),
    "lt": (np.less, "any", "any"),
    "le": (np.less_equal, "small", "small"),
    "gt": (np.greater, "any", "any"),
    "ge": (np.greater_equal, "small", "small"),
    "logical_and": (np.logical_and, "any", "any"),
    "logical_or": (np.logical_or, "any", "any"),
    "logical_xor": (np.logical_xor, "any", "any"),
    "bitwise_and": (np.bitwise_and, "any", "any"),
    "bitwise_or": (np.bitwise_or, "any", "any"),
    "bitwise_xor": (np.bitwise_xor, "any", "any"),
}
PAIRS = [(d, d) for d in ALL] + [
    ("int8", "uint8"), ("int64", "uint64"), ("int16", "float16"), ("float32", "float64"),
    ("bool", "int8"), ("uint8", "int64"), ("int32", "float32"), ("uint16", "float16"),
]


def binary_reference(op, fn, x, y):
    if op == "floordiv" or op == "mod":
        # Integer division by zero is 0 in gpuflow (NumPy: 0 with a warning).
        return numpy_or_error(fn, x, y)
    return numpy_or_error(fn, x, y)


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}-{p[1]}")
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary(session, op, pair):
    fn, kx, ky = BINARY[op]
    rng = np.random.default_rng(seed(op, *pair))
    x = make(pair[0], (4, 33), rng, kx)
    y = make(pair[1], (33,), rng, ky)  # broadcast along the leading axis
    want = binary_reference(op, fn, x, y)
    if isinstance(want, Exception):
        with pytest.raises(gpuflow.InvalidArgumentError, match=f"\\({op}\\)"):
            run(session, [x, y], lambda g, a, b: g.op(op, a, b))
        return
    got = run(session, [x, y], lambda g, a, b: g.op(op, a, b))
    check(got, want, rtol=RTOL_TRANSCENDENTAL.get(want.dtype.name) if op in ("pow", "atan2") else None)


@pytest.mark.parametrize("scalar", [2, -3, 2.5, True], ids=repr)
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", ["add", "mul", "sub", "div", "maximum", "lt"])
def test_weak_scalar_promotion(session, op, dtype, scalar):
    fn = BINARY[op][0]
    x = make(dtype, (9,), np.random.default_rng(3), "small")
    want = numpy_or_error(fn, x, scalar)
    if op == "lt" and isinstance(want, Exception) and dtype in INTS:
        # NumPy 2 compares an out-of-range Python int exactly (NumPy 1.24
        # raised): compare as Python ints.
        want = np.array([int(v) < scalar for v in x], dtype=bool)
    if isinstance(want, Exception):
        with pytest.raises(gpuflow.InvalidArgumentError):
            run(session, [x], lambda g, a: g.op(op, a, scalar))
        return
    got = run(session, [x], lambda g, a: g.op(op, a, scalar))
    check(got, want)


def test_one_plan_with_other_scalars_uses_each_graphs_values(session):
    """Graphs that differ only in a scalar share a plan; each runs with its own
    value, and a value that changes the compute dtype (lt(uint8, -3)) gets its
    own plan."""
    x = make("uint8", (4, 33), np.random.default_rng(4), "small")
    for scalar in (2, -3, 300, 7):
        check(run(session, [x], lambda g, a: g.lt(a, scalar)),
              np.array([[int(v) < scalar for v in row] for row in x], dtype=bool))
    y = make("float32", (8, 1000), np.random.default_rng(5))
    for scalar in (3.0, -0.5, 11.0):
        got = run(session, [y], lambda g, a: g.sum(g.mul(g.add(a, scalar), scalar), axes=[1]))
        check(got, np.sum((y + np.float32(scalar)) * np.float32(scalar), axis=1), rtol=1e-5)


def test_weak_int_out_of_bounds_is_rejected(session):
    x = np.arange(5, dtype=np.int8)
    with pytest.raises(gpuflow.InvalidArgumentError, match="300"):
        run(session, [x], lambda g, a: g.add(a, 300))


def test_strong_scalar_promotes(session):
    x = np.arange(5, dtype=np.int8)
    got = run(session, [x], lambda g, a: g.add(a, np.int64(1)))
    check(got, x + np.int64(1))
    got = run(session, [x], lambda g, a: g.mul(a, np.float32(0.5)))
    check(got, x * np.float32(0.5))


def test_integer_overflow_wraps(session):
    x = np.array([127, -128, 100], dtype=np.int8)
    check(run(session, [x], lambda g, a: g.add(a, a)), x + x)
    u = np.array([0, 1, 255], dtype=np.uint8)
    check(run(session, [u], lambda g, a: g.sub(a, 2)), u - np.uint8(2))


def test_nan_propagates_through_maximum_minimum(session):
    x = np.array([1.0, np.nan, 3.0, np.nan], dtype=np.float32)
    y = np.array([np.nan, 2.0, 1.0, np.nan], dtype=np.float32)
    out = run(session, [x, y], lambda g, a, b: [g.maximum(a, b), g.minimum(a, b)], outputs=2)
    check(out[0], np.maximum(x, y))
    check(out[1], np.minimum(x, y))


def test_where_clip_cast(session):
    rng = np.random.default_rng(5)
    c = make("bool", (6, 7), rng)
    x = make("float32", (6, 7), rng)
    y = make("int16", (7,), rng, "small")
    check(run(session, [c, x, y], lambda g, c_, a, b: g.where(c_, a, b)), np.where(c, x, y))
    check(run(session, [x], lambda g, a: g.clip(a, -1.5, 2)), np.clip(x, -1.5, 2))
    z = np.array([np.nan, -5, 0.5, 9], dtype=np.float64)
    check(run(session, [z], lambda g, a: g.clip(a, -1, 1)), np.clip(z, -1, 1))


@pytest.mark.parametrize("src", ALL)
@pytest.mark.parametrize("dst", ALL)
def test_cast(session, src, dst):
    # Out-of-range float -> int conversions are unspecified (as in NumPy), so
    # the data stays in range of every destination.
    x = make(src, (37,), np.random.default_rng(11), "small")
    if np.dtype(dst).kind == "u" and x.dtype.kind in "if":
        x = np.abs(x)
    got = run(session, [x], lambda g, a: g.cast(a, dtype=dst))
    check(got, x.astype(dst))


# ------------------------------------------------------------------ reductions

REDUCTIONS = {
    "sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max, "mean": np.mean,
    "var": np.var, "std": np.std, "any": np.any, "all": np.all,
}
AXES = [None, (0,), (-1,), (0, 2), (1,), ()]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axes", AXES, ids=str)
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", sorted(REDUCTIONS))
def test_reduction(session, op, dtype, axes, keepdims):
    kind = "small" if op == "prod" else "any"
    x = make(dtype, (3, 4, 5), np.random.default_rng(seed(op, dtype)), kind)
    if op == "prod" and dtype in FLOATS:
        x = (x / 8).astype(dtype)
    want = numpy_or_error(lambda a: REDUCTIONS[op](a, axis=axes, keepdims=keepdims), x)
    if dtype == "float16" and not isinstance(want, Exception):
        # NumPy accumulates float16 in float16; gpuflow accumulates wider, so
        # the reference is the float32 result rounded to float16.
        want = np.asarray(REDUCTIONS[op](x.astype(np.float32), axis=axes, keepdims=keepdims)).astype(
            np.asarray(want).dtype)
    attrs = {"keepdims": keepdims}
    if axes is not None:
        attrs["axes"] = list(axes)
    if isinstance(want, Exception):
        with pytest.raises(gpuflow.InvalidArgumentError):
            run(session, [x], lambda g, a: g.op(op, a, **attrs))
        return
    got = run(session, [x], lambda g, a: g.op(op, a, **attrs))
    # NumPy sums float16 in float16; gpuflow accumulates wider, so compare loosely.
    rtol = {"float16": 1e-2, "float32": 1e-5, "float64": 1e-12}.get(np.asarray(want).dtype.name)
    check(got, want, rtol=rtol, atol=1e-3 if dtype == "float16" else 1e-9)


# Large enough that the GPU splits the reduced range over many blocks and
# combines them in a second kernel (regression: the combine kernel once
# never ran, returning the first block's partial sum).
@pytest.mark.parametrize("shape,axes", [(((1 << 20) + 3,), None), ((4096, 300), [0]),
                                        ((3, 1 << 18), [1]), ((64, 2048, 2), [0, 1]),
                                        ((600, 1000), [0])], ids=str)
@pytest.mark.parametrize("op", ["sum", "max", "mean", "any"])
def test_large_reductions(session, op, shape, axes):
    x = make("float32", shape, np.random.default_rng(seed(op, shape)))
    if op == "any":
        x = (x > 25).astype(np.float32)  # mostly zeros
    attrs = {} if axes is None else {"axes": axes}
    got = run(session, [x], lambda g, a: g.op(op, a, **attrs))
    want = REDUCTIONS[op](x.astype(np.float64), axis=None if axes is None else tuple(axes))
    check(got, np.asarray(want).astype(got.dtype), rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("ddof", [0, 1, 2.5])
def test_var_std_ddof(session, ddof):
    x = make("float64", (4, 9), np.random.default_rng(2))
    out = run(session, [x], lambda g, a: [g.var(a, axes=[1], ddof=ddof), g.std(a, ddof=ddof)],
              outputs=2)
    check(out[0], np.var(x, axis=1, ddof=ddof))
    check(out[1], np.std(x, ddof=ddof))


@pytest.mark.parametrize("op", ["argmin", "argmax"])
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("axis", [None, 0, -1, 1])
def test_arg_reductions(session, op, dtype, axis):
    x = make(dtype, (5, 6, 3), np.random.default_rng(4), "small")  # small values: many ties
    fn = getattr(np, op)
    attrs = {} if axis is None else {"axis": axis}
    check(run(session, [x], lambda g, a: g.op(op, a, **attrs)), fn(x, axis=axis))
    want = fn(x, axis=axis, keepdims=True)
    check(run(session, [x], lambda g, a: g.op(op, a, keepdims=True, **attrs)), want)


def test_arg_reductions_find_nan_first(session):
    x = np.array([[1.0, np.nan, 0.0], [3.0, 2.0, np.nan]], dtype=np.float32)
    out = run(session, [x], lambda g, a: [g.argmax(a, axis=1), g.argmin(a, axis=1), g.max(a, axes=[1])],
              outputs=3)
    check(out[0], np.argmax(x, axis=1))
    check(out[1], np.argmin(x, axis=1))
    check(out[2], np.max(x, axis=1))


# Shapes that give the GPU each reduction layout (inner, outer, general),
# with the reduced range split over many blocks where the outputs are few.
LARGE_REDUCTIONS = [(((1 << 20) + 3,), None), ((4096, 300), [0]), ((3, 1 << 18), [1]),
                    ((64, 2048, 2), [0, 1]), ((600, 1000), [0]), ((700, 900), [1]),
                    ((20, 300, 30), [0, 2])]


@pytest.mark.parametrize("shape,axes", LARGE_REDUCTIONS, ids=str)
@pytest.mark.parametrize("op", ["var", "std", "logsumexp"])
def test_large_statistic_reductions(session, op, shape, axes):
    # A mean far from zero: the variance must not lose it to cancellation.
    x = (make("float32", shape, np.random.default_rng(seed(op, shape))) + 1000).astype(np.float32)
    if op == "logsumexp":
        x = x - np.float32(1000)
    attrs = {} if axes is None else {"axes": axes}
    got = run(session, [x], lambda g, a: g.op(op, a, **attrs))
    axis = None if axes is None else tuple(axes)
    x64 = x.astype(np.float64)
    want = logsumexp(x64, axis) if op == "logsumexp" else REDUCTIONS[op](x64, axis=axis)
    check(got, np.asarray(want).astype(got.dtype), rtol=1e-5)


@pytest.mark.parametrize("shape,axis", [(((1 << 20) + 3,), None), ((4096, 300), 0),
                                        ((3, 1 << 18), 1), ((600, 1000), 0), ((64, 2048, 2), 1)],
                         ids=str)
@pytest.mark.parametrize("dtype", ["int8", "float32"])
@pytest.mark.parametrize("op", ["argmin", "argmax"])
def test_large_arg_reductions(session, op, dtype, shape, axis):
    # Few distinct values: ties everywhere, across the GPU's split parts;
    # float32 also has NaNs (the first one wins) in a few rows.
    x = make(dtype, shape, np.random.default_rng(seed(op, dtype, shape)), "small")
    if dtype == "float32":
        x = np.round(x)
        flat = x.reshape(-1)
        rng = np.random.default_rng(seed("nan", shape))
        flat[rng.integers(0, flat.size, size=3)] = np.nan
    attrs = {} if axis is None else {"axis": axis}
    check(run(session, [x], lambda g, a: g.op(op, a, **attrs)), getattr(np, op)(x, axis=axis))


def test_large_arg_reductions_find_the_first_nan_of_a_long_row(session):
    x = np.zeros((1 << 20) + 3, np.float32)
    x[[900000, 5000, 700000]] = [np.nan, np.nan, np.inf]
    out = run(session, [x], lambda g, a: [g.argmax(a), g.argmin(a)], outputs=2)
    check(out[0], np.argmax(x))
    check(out[1], np.argmin(x))
    assert out[0] == 5000 and out[1] == 5000


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_statistic_reductions_of_non_finite_values(session, dtype):
    inf, nan = np.inf, np.nan
    x = np.array([[-inf, -inf, -inf], [1, inf, 2], [nan, 1, 2], [1, 2, 3], [-inf, 0, -inf],
                  [inf, nan, 1], [inf, -inf, 0]], dtype=dtype)
    out = run(session, [x], lambda g, a: [g.logsumexp(a, axes=[1]), g.var(a, axes=[1]),
                                          g.std(a, axes=[1], ddof=3)], outputs=3)
    with np.errstate(all="ignore"):
        # scipy.special.logsumexp: a non-finite maximum shifts by 0.
        m = np.max(x.astype(np.float64), axis=1, keepdims=True)
        shift = np.where(np.isfinite(m), m, 0)
        lse = np.log(np.sum(np.exp(x - shift), axis=1)) + shift[:, 0]
        check(out[0], lse.astype(dtype), rtol=RTOL_TRANSCENDENTAL[dtype])
        check(out[1], np.var(x, axis=1))
        check(out[2], np.std(x, axis=1, ddof=3))


def test_empty_min_is_an_error(session):
    with pytest.raises(gpuflow.InvalidArgumentError, match="min"):
        run(session, [np.zeros((0, 3), np.float32)], lambda g, a: g.min(a, axes=[0]))


EMPTY_REDUCTIONS = ["sum", "prod", "mean", "var", "std", "any", "all", "logsumexp"]


@pytest.mark.parametrize("shape,axis", [((0, 3), 0), ((3, 0), 1), ((3, 0), 0), ((0,), None)],
                         ids=str)
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
@pytest.mark.parametrize("op", EMPTY_REDUCTIONS)
def test_empty_reductions_give_the_identity(session, op, dtype, shape, axis):
    """Reducing no elements gives NumPy's identity (sum 0, prod 1, any False,
    all True), NaN for mean/var/std, -inf for logsumexp; fused with an epilogue."""
    x = np.zeros(shape, dtype)
    attrs = {} if axis is None else {"axes": [axis]}
    if op == "logsumexp":
        if dtype != "float32":
            pytest.skip("logsumexp takes floats")
        want = np.full(np.sum(x, axis=axis).shape, -np.inf, np.float32)
    else:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = np.asarray(getattr(np, op)(x, axis=axis))
    if op in ("var", "std") and dtype == "bool":
        pytest.skip("var of bool is an error")
    got = run(session, [x], lambda g, a: g.op(op, a, **attrs))
    check(got, want)
    # The same through a fused epilogue.
    if want.dtype.kind == "f":
        got = run(session, [x], lambda g, a: g.mul(g.op(op, a, **attrs), 2))
        check(got, want * want.dtype.type(2))


def test_small_int_sum_accumulates_in_int64(session):
    x = np.full(1000, 100, dtype=np.int8)
    got = run(session, [x], lambda g, a: g.sum(a))
    check(got, np.sum(x))
    assert got == 100000


def logsumexp(x, axis, keepdims=False):
    x = x.astype(np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32"])
@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_family(session, dtype, axis):
    x = make(dtype, (6, 1025), np.random.default_rng(8), "small")
    ft = float_of(x)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - np.max(x64, axis=axis, keepdims=True))
    softmax = e / np.sum(e, axis=axis, keepdims=True)
    out = run(session, [x], lambda g, a: [g.softmax(a, axis=axis), g.log_softmax(a, axis=axis),
                                          g.logsumexp(a, axes=[axis])], outputs=3)
    tol = RTOL_TRANSCENDENTAL[ft.name]
    check(out[0], softmax.astype(ft), rtol=tol, atol=1e-7)
    check(out[1], np.log(softmax).astype(ft), rtol=tol, atol=1e-6)
    check(out[2], logsumexp(x, axis).astype(ft), rtol=tol)


@pytest.mark.parametrize("shape,axis", [((3, 70001), -1), ((2, 1100000), -1), ((2, 3, 5000), 1),
                                         ((40, 3, 2), 0), ((700, 37), 0)], ids=str)
def test_softmax_long_rows_and_other_axes(session, shape, axis):
    """Rows too long for one block's registers (on the GPU held by several
    blocks, or past 1M elements cut into parts) and axes that are not the
    last, with -inf, a NaN row and a fused prologue/epilogue."""
    rng = np.random.default_rng(9)
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    flat = np.moveaxis(x, axis, -1)  # a view: rows along the last axis
    flat[0, ..., 1] = -np.inf
    flat[-1, ..., 0] = np.nan
    y = rng.standard_normal(shape).astype(np.float32)
    x64 = x.astype(np.float64) * 2
    with np.errstate(invalid="ignore", divide="ignore"):
        e = np.exp(x64 - np.max(x64, axis=axis, keepdims=True))
        want = e / np.sum(e, axis=axis, keepdims=True)
        want_log = np.log(want)
    out = run(session, [x, y], lambda g, a, b: [g.add(g.softmax(g.mul(a, 2), axis=axis), b),
                                                g.log_softmax(g.mul(a, 2), axis=axis)], outputs=2,
              stored=x.size > 2**20)
    check(out[0], (want + y).astype(np.float32), rtol=1e-5, atol=1e-6)
    check(out[1], want_log.astype(np.float32), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,axis", [((6, 300), -1), ((6, 70001), -1), ((9, 6, 4), 0),
                                         ((6, 40, 3), 1), ((700, 37), 0), ((6, 1100000), -1)],
                         ids=str)
def test_softmax_rows_of_infinities(session, shape, axis):
    """Rows with +inf (softmax NaN throughout, as exp(x - max) gives;
    log_softmax x - inf), all -inf (NaN), one finite value among -inf
    (exactly 1 there), -inf first, a NaN last, and +inf beside -inf, in each
    GPU layout (a block's registers, several blocks' registers, parts of
    long rows, other axes): parts' maxima and sums combined keep the host
    kernel's two-pass results."""
    rng = np.random.default_rng(12)
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    flat = np.moveaxis(x, axis, -1)  # a view: rows along the last axis
    flat[0, ..., 5] = np.inf
    flat[1, ...] = -np.inf
    flat[2, ...] = -np.inf
    flat[2, ..., 7] = 0.5
    flat[3, ..., 0] = -np.inf
    flat[4, ..., -1] = np.nan
    flat[5, ..., 3] = np.inf
    flat[5, ..., 4] = -np.inf
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        m = np.max(x64, axis=axis, keepdims=True)
        e = np.exp(x64 - m)
        want = e / np.sum(e, axis=axis, keepdims=True)
        # log_softmax as scipy.special's: shifted by 0 where the maximum is
        # not finite (a row with +inf and no NaN gives x - inf).
        shift = np.where(np.isfinite(m), m, 0)
        want_log = (x64 - shift) - np.log(np.sum(np.exp(x64 - shift), axis=axis, keepdims=True))
    out = run(session, [x], lambda g, a: [g.softmax(a, axis=axis), g.log_softmax(a, axis=axis)],
              outputs=2, stored=x.size > 2**20)
    check(out[0], want.astype(np.float32), rtol=1e-5, atol=1e-6)
    check(out[1], want_log.astype(np.float32), rtol=1e-5, atol=1e-5)
    rows, log_rows = np.moveaxis(out[0], axis, -1), np.moveaxis(out[1], axis, -1)
    assert np.isnan(rows[[0, 1, 4, 5]]).all() and np.isnan(log_rows[[1, 4]]).all()
    assert (rows[2, ..., 7] == 1.0).all() and (log_rows[2, ..., 7] == 0.0).all()
    assert (log_rows[0, ..., :5] == -np.inf).all() and np.isnan(log_rows[0, ..., 5]).all()


# ------------------------------------------------------------------ scans

@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "float16", "float32", "float64"])
@pytest.mark.parametrize("axis", [None, 0, -1])
def test_scans(session, op, dtype, axis):
    x = make(dtype, (4, 7), np.random.default_rng(9), "small")
    if op == "cumprod" and dtype in FLOATS:
        x = (x / 8).astype(dtype)
    attrs = {} if axis is None else {"axis": axis}
    want = getattr(np, op)(x, axis=axis)
    got = run(session, [x], lambda g, a: g.op(op, a, **attrs))
    if dtype == "float16":
        # Every step rounds to float16, as NumPy's: exactly NumPy's result.
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        return
    check(got, want, rtol={"float32": 1e-5, "float64": 1e-12}.get(want.dtype.name))


# Shapes that give the GPU each scan layout: long contiguous rows (split
# into parts when they are few), short ones, and strided axes (a thread per
# column, the columns cut into parts when they are few). Outputs stay under
# the 4 MiB inline limit.
LARGE_SCANS = [((300003,), None), ((3, 100000), 1), ((1000, 300), 1), ((5, 70), 1),
               ((100000, 3), 0), ((300, 1000), 0), ((64, 33, 2), 1)]


@pytest.mark.parametrize("shape,axis", LARGE_SCANS, ids=str)
@pytest.mark.parametrize("op,dtype,out_dtype", [
    ("cumsum", "float32", None), ("cumsum", "float64", None), ("cumsum", "int32", None),
    ("cumsum", "int64", None), ("cumsum", "bool", None), ("cumprod", "float32", None),
    ("cumprod", "uint8", "uint8"), ("cumsum", "int16", "int8"), ("cumsum", "float16", None),
    ("cumprod", "float16", None)], ids=str)
def test_large_scans(session, op, dtype, out_dtype, shape, axis):
    rng = np.random.default_rng(seed(op, dtype, shape))
    if dtype == "float16":
        # Rounded at every step, as NumPy's (each row in order on the GPU).
        x = (rng.uniform(0.99, 1.01, size=shape) if op == "cumprod"
             else rng.uniform(-3, 3, size=shape)).astype(np.float16)
        attrs = {} if axis is None else {"axis": axis}
        got = run(session, [x], lambda g, a: g.op(op, a, **attrs))
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got, getattr(np, op)(x, axis=axis))
        return
    if op == "cumprod" and dtype == "float32":
        x = rng.uniform(0.999, 1.001, size=shape).astype(np.float32)
    elif dtype == "float64":
        x = make(dtype, shape, rng, "positive")  # no cancellation: tight tolerance
    else:
        x = make(dtype, shape, rng)  # int64: wraps
    attrs = {} if axis is None else {"axis": axis}
    if out_dtype is not None:
        attrs["dtype"] = out_dtype
    got = run(session, [x], lambda g, a: g.op(op, a, **attrs))
    if dtype in FLOATS:
        # The reference accumulates in float64 and rounds each result.
        want = getattr(np, op)(x.astype(np.float64), axis=axis).astype(dtype)
        check(got, want, rtol={"float32": 1e-5, "float64": 1e-12}[dtype],
              atol=1e-3 if dtype == "float32" else 0)
    else:
        with np.errstate(all="ignore"):
            check(got, getattr(np, op)(x, axis=axis, dtype=out_dtype))


# ------------------------------------------------------------------ linear algebra

MATMUL_SHAPES = [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((1, 3, 4), (2, 4, 5)), ((4,), (4, 5)),
                 ((3, 4), (4,)), ((4,), (4,)), ((2, 1, 3, 4), (5, 4, 2)), ((0, 4), (4, 3)),
                 ((3, 0), (0, 2)),
                 # Batches of the same size but not the same shape broadcast to
                 # (2, 2) (cuBLAS's strided batching once took them as equal).
                 ((2, 1, 3, 4), (2, 4, 5)), ((1, 2, 3, 4), (2, 1, 4, 5)), ((3, 2, 2), (1, 3, 2, 2))]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", ["bool", "int32", "int8", "float16", "float32", "float64"])
def test_matmul(session, dtype, shapes):
    rng = np.random.default_rng(12)
    a = make(dtype, shapes[0], rng, "small")
    b = make(dtype, shapes[1], rng, "small")
    want = np.matmul(a, b)
    got = run(session, [a, b], lambda g, x, y: g.matmul(x, y))
    check(got, want, rtol={"float16": 1e-2, "float32": 1e-5, "float64": 1e-12}.get(want.dtype.name),
          atol=1e-2 if dtype == "float16" else 1e-6)


def test_matmul_shape_mismatch(session):
    with pytest.raises(gpuflow.InvalidArgumentError, match=r"\(matmul\)"):
        run(session, [np.ones((3, 4)), np.ones((5, 6))], lambda g, a, b: g.matmul(a, b))


@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((4,), (4,)), ((4,), (4, 2)), ((3, 4), (4,)), ((), (3,))],
                         ids=str)
def test_dot(session, shapes):
    rng = np.random.default_rng(13)
    a, b = make("float64", shapes[0], rng), make("float64", shapes[1], rng)
    check(run(session, [a, b], lambda g, x, y: g.dot(x, y)), np.dot(a, b))


# Steps cuBLAS does not take (integer and bool operands, mixed dtypes, batch
# broadcasts on both sides, dot): on the CUDA backend, a generated kernel.
# Integers wrap as NumPy's do ("any" values overflow); the output dtype is
# the server's promotion, which must be NumPy's.
# (id, op, a dtype, a shape, b dtype, b shape, value kind)
MATMUL_CASES = [
    ("int32-wraps", "matmul", "int32", (5, 7), "int32", (7, 3), "any"),
    ("int64-wraps", "matmul", "int64", (2, 5, 7), "int64", (7, 3), "any"),
    ("uint8", "matmul", "uint8", (6, 9), "uint8", (9, 4), "any"),
    ("bool", "matmul", "bool", (6, 9), "bool", (9, 4), "any"),
    ("int8@float32", "matmul", "int8", (6, 9), "float32", (9, 4), "small"),
    ("float16@float32", "matmul", "float16", (6, 9), "float32", (9, 4), "small"),
    ("batch-broadcast-int32", "matmul", "int32", (2, 1, 3, 4), "int32", (1, 5, 4, 2), "any"),
    ("batch-broadcast-float32", "matmul", "float32", (2, 1, 3, 4), "float32", (1, 5, 4, 2),
     "small"),
    ("1d@3d-int32", "matmul", "int32", (4,), "int32", (3, 4, 5), "any"),
    ("1d@3d-float64", "matmul", "float64", (4,), "float64", (3, 4, 5), "any"),
    ("dot-1d-1d-int32", "dot", "int32", (17,), "int32", (17,), "any"),
    ("dot-2d-1d-int32", "dot", "int32", (5, 17), "int32", (17,), "any"),
    ("k0-int32", "matmul", "int32", (3, 0), "int32", (0, 4), "any"),
    ("k0-float32", "matmul", "float32", (3, 0), "float32", (0, 4), "any"),
    ("large-int32", "matmul", "int32", (129, 257), "int32", (257, 65), "any"),
]


@pytest.mark.parametrize("case", MATMUL_CASES, ids=[c[0] for c in MATMUL_CASES])
def test_matmul_integer_bool_mixed_and_broadcast(session, case):
    _, op, a_dtype, a_shape, b_dtype, b_shape, kind = case
    rng = np.random.default_rng(seed("matmul", case[0]))
    a = make(a_dtype, a_shape, rng, kind)
    b = make(b_dtype, b_shape, rng, kind)
    with np.errstate(all="ignore"):
        want = np.matmul(a, b) if op == "matmul" else np.dot(a, b)
    got = run(session, [a, b], lambda g, x, y: getattr(g, op)(x, y))
    if case[0].endswith("wraps"):
        # The inputs span the dtype's range: the exact sums overflow.
        exact = np.matmul(a.astype(object), b.astype(object))
        assert (exact != want.astype(object)).any()
    if a_shape[-1] == 0:
        assert not want.any() and want.shape == (3, 4)
    check(got, want, rtol=1e-5, atol=1e-4)


# ------------------------------------------------------------------ shape ops

@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "float16", "float64"])
def test_shape_ops(session, dtype):
    x = make(dtype, (2, 3, 4), np.random.default_rng(14))
    cases = [
        (lambda g, a: g.reshape(a, shape=[4, -1]), x.reshape(4, -1)),
        (lambda g, a: g.reshape(a, shape=[24]), x.reshape(24)),
        (lambda g, a: g.transpose(a), x.transpose()),
        (lambda g, a: g.transpose(a, axes=[1, 0, 2]), x.transpose(1, 0, 2)),
        (lambda g, a: g.broadcast_to(a, shape=[5, 2, 3, 4]), np.broadcast_to(x, (5, 2, 3, 4))),
        (lambda g, a: g.expand_dims(a, axes=[0, -1]), np.expand_dims(x, (0, -1))),
        (lambda g, a: g.squeeze(g.reshape(a, shape=[1, 2, 1, 12])), x.reshape(1, 2, 1, 12).squeeze()),
        (lambda g, a: g.squeeze(g.reshape(a, shape=[1, 2, 1, 12]), axes=[2]),
         x.reshape(1, 2, 1, 12).squeeze(2)),
        (lambda g, a: g.concatenate(a, a, axis=1), np.concatenate([x, x], axis=1)),
        (lambda g, a: g.stack(a, a, a, axis=-1), np.stack([x, x, x], axis=-1)),
    ]
    for build, want in cases:
        check(run(session, [x], build), want)


INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)
SLICES = [
    ((slice(None), slice(1, 3)), [0, 1], [INT64_MAX, 3], [1, 1]),
    ((slice(None, None, -1),), [INT64_MAX], [INT64_MIN], [-1]),
    ((slice(-1, 0, -2), slice(None, None, 3)), [-1, 0], [0, INT64_MAX], [-2, 3]),
    ((slice(5, 100),), [5], [100], [1]),
    ((slice(-100, -2),), [-100], [-2], [1]),
    ((slice(3, 1),), [3], [1], [1]),
]


@pytest.mark.parametrize("case", range(len(SLICES)))
def test_slice(session, case):
    key, starts, stops, steps = SLICES[case]
    x = make("int32", (6, 8), np.random.default_rng(15))
    got = run(session, [x], lambda g, a: g.slice(a, starts=starts, stops=stops, steps=steps))
    check(got, x[key])


def test_slice_step_zero_is_an_error(session):
    with pytest.raises(gpuflow.InvalidArgumentError, match="step"):
        run(session, [np.ones(4)], lambda g, a: g.slice(a, starts=[0], stops=[4], steps=[0]))


# ------------------------------------------------------------------ creation

def test_full_and_arange(session):
    g = gpuflow.Graph()
    outs = [g.full(7, shape=[2, 3]), g.full(2.5, shape=[4], dtype="float16"),
            g.arange(stop=10), g.arange(start=1.0, stop=2.0, step=0.25),
            g.arange(start=10, stop=0, step=-3, dtype="int8")]
    got = session.execute(g, outputs=outs)
    check(got[0], np.full((2, 3), 7))
    check(got[1], np.full(4, 2.5, dtype=np.float16))
    check(got[2], np.arange(10))
    check(got[3], np.arange(1.0, 2.0, 0.25))
    check(got[4], np.arange(10, 0, -3, dtype=np.int8))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_random_is_seeded_and_plausible(session, dtype):
    g = gpuflow.Graph()
    u1 = g.random_uniform(shape=[20000], seed=42, low=-1, high=3, dtype=dtype)
    u2 = g.random_uniform(shape=[20000], seed=42, low=-1, high=3, dtype=dtype)
    u3 = g.random_uniform(shape=[20000], seed=43, low=-1, high=3, dtype=dtype)
    n = g.random_normal(shape=[20000], seed=7, mean=2, std=0.5, dtype=dtype)
    a, b, c, z = session.execute(g, outputs=[u1, u2, u3, n])
    assert a.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert a.min() >= -1 and a.max() <= 3
    assert abs(a.astype(np.float64).mean() - 1) < 0.05
    assert abs(z.astype(np.float64).mean() - 2) < 0.02
    assert abs(z.astype(np.float64).std() - 0.5) < 0.02


@pytest.mark.parametrize("dtype,start,stop,step", [
    ("float32", 0.1, 30000.0, 0.37), ("float64", -5.0, 3000.0, 0.013), ("float16", 0.5, 900.0, 0.75),
    ("int8", 100, -100, -3), ("uint16", 7, 150000, 5), ("int64", -(1 << 40), 1 << 40, 1 << 26),
    ("int32", 0, 300000, 1)], ids=str)
def test_arange_matches_numpy(session, dtype, start, stop, step):
    g = gpuflow.Graph()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.arange(start, stop, step, dtype=dtype)
    (got,) = session.execute(g, outputs=[g.arange(start=start, stop=stop, step=step, dtype=dtype)])
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype


def philox4x32_10(counter, seed):
    """Philox4x32-10 (engine/ir/philox.h) in NumPy: four uint64 arrays of 32-bit words."""
    m32 = np.uint64(0xFFFFFFFF)
    counter = counter.astype(np.uint64)
    c0, c1 = counter & m32, counter >> np.uint64(32)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    seed = np.uint64(seed % (1 << 64))
    k0, k1 = seed & m32, seed >> np.uint64(32)
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c0
        p1 = np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & m32,
                          (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & m32)
        k0 = (k0 + np.uint64(0x9E3779B9)) & m32
        k1 = (k1 + np.uint64(0xBB67AE85)) & m32
    return c0, c1, c2, c3


def uniform24(w):
    return ((w >> np.uint64(8)).astype(np.float32) * np.float32(2.0 ** -24)).astype(np.float64)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("seed", [0, 12345, -3, (1 << 40) + 5])
def test_random_draws_are_philox(session, dtype, seed):
    """Every backend draws philox.h's numbers: uniform bit for bit, normal
    within a few ulps (log and cos may round differently)."""
    n = 4099
    w0, w1, w2, w3 = philox4x32_10(np.arange(n), seed)
    wide = dtype == "float64"

    def u53(hi, lo):
        return (((hi << np.uint64(32)) | lo) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53

    low, high = -1.5, 2.25
    u = u53(w0, w1) if wide else uniform24(w0)
    v = low + (high - low) * u
    rounded = v.astype(dtype)
    top = np.nextafter(np.asarray(high, dtype), np.asarray(-np.inf, dtype))
    want_uniform = np.where(rounded.astype(np.float64) >= high, top, rounded).astype(dtype)
    u1 = 1.0 - (u53(w0, w1) if wide else uniform24(w0))
    u2 = u53(w2, w3) if wide else uniform24(w1)
    want_normal = (0.5 + 2.0 * np.sqrt(-2.0 * np.log(u1)) * np.cos(2 * np.pi * u2)).astype(dtype)

    g = gpuflow.Graph()
    got_u, got_n = session.execute(g, outputs=[
        g.random_uniform(shape=[n], seed=seed, low=low, high=high, dtype=dtype),
        g.random_normal(shape=[n], seed=seed, mean=0.5, std=2.0, dtype=dtype)])
    np.testing.assert_array_equal(got_u, want_uniform)
    # Within a few ulps of the largest term (log and cos may round apart, and
    # mean + std * ... cancels near zero, so ulps of the result say little).
    scale = 0.5 + 2.0 * np.sqrt(-2.0 * np.log(u1))
    error = np.abs(got_n.astype(np.float64) - want_normal.astype(np.float64))
    assert np.all(error <= 4 * np.finfo(dtype).eps * scale), error.max()


# ------------------------------------------------------------------ bfloat16

def test_bfloat16_arithmetic(session):
    rng = np.random.default_rng(16)
    x = rng.standard_normal(100).astype(np.float32)
    words = gpuflow.float32_to_bfloat16(x)
    session.upload(words, name="bx", dtype="bfloat16")
    g = gpuflow.Graph()
    a = g.array("bx")
    out = session.execute(g, outputs=[g.mul(g.add(a, 1), 2), g.cast(a, dtype="float32"), g.sum(a)])
    xb = gpuflow.bfloat16_to_float32(words)
    np.testing.assert_allclose(gpuflow.bfloat16_to_float32(out[0]), (xb + 1) * 2, rtol=1e-2)
    np.testing.assert_array_equal(out[1], xb)
    np.testing.assert_allclose(gpuflow.bfloat16_to_float32(out[2]), xb.sum(), rtol=2e-2, atol=0.1)


# ------------------------------------------------------------------ fused chains

def test_readme_graphs(session):
    rng = np.random.default_rng(17)
    a = rng.standard_normal((64, 129)).astype(np.float32)
    b = rng.standard_normal((64, 129)).astype(np.float32)

    def build(g, x, y):
        h = g.sqrt(g.add(g.mul(x, x), g.mul(y, y)))
        return [g.add(g.mul(h, 2), 1), g.softmax(x, axis=-1),
                g.sqrt(g.sum(g.mul(x, x), axes=[-1]))]

    out = run(session, [a, b], build, outputs=3)
    check(out[0], np.sqrt(a * a + b * b) * 2 + 1, rtol=1e-6)
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    check(out[1], e / e.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-8)
    check(out[2], np.sqrt(np.sum(a * a, axis=-1)), rtol=1e-5)
