"""gpuflow.random: CuPy's ``cupy.random`` API on the server's Philox draws.

    import gpuflow as gf
    gf.random.seed(0)
    x = gf.random.rand(3, 4)                   # uniform [0, 1), float64
    n = gf.random.normal(2.0, 0.5, size=1000, dtype=gf.float32)
    k = gf.random.randint(0, 10, size=(5,))
    rs = gf.random.RandomState(42); rs.randn(8)
    rng = gf.random.default_rng(7); rng.integers(0, 6, size=10, endpoint=True)

The server's ``random_uniform`` and ``random_normal`` ops draw element i of
a node from Philox4x32-10 keyed by the node's seed (docs/ops.md), so one
seed gives one fixed array on every backend. A RandomState turns its seed
into a new key for every draw (SplitMix64 of the seed and a draw counter):
draws differ from each other and the sequence repeats for the same seed.
The numbers are gpuflow's, not CuPy's or NumPy's streams. Draws are made in
the current session (``with client.session():``). Distributions are NumPy's
formulas (inverse CDFs of uniform draws, functions of normal ones);
``choice`` without replacement, ``shuffle`` and ``permutation`` need a sort
the server does not have.
"""

import math
import operator
import os
import threading

import numpy as np

from gpuflow import _inference
from gpuflow.remote_array import RemoteArray, apply, dtype_name, session_of

_MASK64 = (1 << 64) - 1


def _splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def _seed_value(seed):
    if seed is None:
        return int.from_bytes(os.urandom(8), "little")
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
        seed = int(seed)
        if seed < 0:
            raise ValueError("Seed must be non-negative")
        value = 0
        while True:  # fold seeds wider than 64 bits
            value = _splitmix64(value ^ (seed & _MASK64))
            seed >>= 64
            if not seed:
                return value
    words = np.asarray(seed).astype(np.uint64).ravel().tolist()
    value = 0
    for w in words:
        value = _splitmix64(value ^ w)
    return value


def _size(size):
    if size is None:
        return ()
    if isinstance(size, (int, np.integer)):
        return (operator.index(size),)
    return tuple(operator.index(d) for d in size)


def _float_dtype(dtype):
    name = dtype_name(dtype)
    if not _inference.is_float(name):
        raise TypeError(f"Unsupported dtype {np.dtype(name).name if name != 'bfloat16' else name} "
                        "for this distribution (a float dtype)")
    return name


def _shape_of(*params):
    shapes = [p.shape if isinstance(p, RemoteArray) else np.shape(p) for p in params]
    return _inference.broadcast_shapes(*shapes)


def _is_scalar(v):
    return isinstance(v, (bool, int, float, np.generic))


class RandomState:
    """cupy.random.RandomState: a seeded source of draws (see the module doc)."""

    def __init__(self, seed=None):
        self._lock = threading.Lock()
        self.seed(seed)

    def seed(self, seed=None):
        """Resets the state: the same seed gives the same draws again."""
        with self._lock:
            self._key = _seed_value(seed)
            self._count = 0

    def _next_seed(self):
        with self._lock:
            self._count += 1
            return _splitmix64(self._key ^ _splitmix64(self._count)) >> 1  # fits int64

    # -- the two server draws --------------------------------------------------------------

    def _uniform(self, shape, dtype="float64", low=0.0, high=1.0):
        attrs = {"shape": list(shape), "seed": self._next_seed(), "low": float(low),
                 "high": float(high), "dtype": dtype}
        return apply("random_uniform", (), attrs, session=session_of(()), writable=True)

    def _normal(self, shape, dtype="float64", mean=0.0, std=1.0):
        attrs = {"shape": list(shape), "seed": self._next_seed(), "mean": float(mean),
                 "std": float(std), "dtype": dtype}
        return apply("random_normal", (), attrs, session=session_of(()), writable=True)

    def _finish(self, values, dtype):
        if values._expr.dtype != dtype:
            values = values.astype(dtype)
        values._writable = True
        return values

    # -- uniform and normal ----------------------------------------------------------------

    def random_sample(self, size=None, dtype=float):
        """Uniform floats in [0, 1)."""
        return self._uniform(_size(size), _float_dtype(dtype))

    random = random_sample

    def rand(self, *size, dtype=float):
        """Uniform floats in [0, 1) of shape ``size``."""
        return self.random_sample(size, dtype)

    def uniform(self, low=0.0, high=1.0, size=None, dtype=float):
        """Uniform floats in [low, high); arrays of bounds broadcast."""
        dtype = _float_dtype(dtype)
        if _is_scalar(low) and _is_scalar(high):
            if not math.isfinite(float(high) - float(low)):
                raise OverflowError("Range exceeds valid bounds")
            shape = _size(size)
            if float(low) < float(high):
                return self._uniform(shape, dtype, low, high)
            return self._finish(low + (high - low) * self._uniform(shape), dtype)
        shape = _size(size) if size is not None else _shape_of(low, high)
        return self._finish(low + (high - low) * self._uniform(shape), dtype)

    def standard_normal(self, size=None, dtype=float):
        """Standard normal floats."""
        return self._normal(_size(size), _float_dtype(dtype))

    def randn(self, *size, dtype=float):
        """Standard normal floats of shape ``size``."""
        return self.standard_normal(size, dtype)

    def normal(self, loc=0.0, scale=1.0, size=None, dtype=float):
        """Normal floats; arrays of parameters broadcast."""
        dtype = _float_dtype(dtype)
        if _is_scalar(loc) and _is_scalar(scale):
            if scale < 0:
                raise ValueError("scale < 0")
            return self._normal(_size(size), dtype, loc, scale)
        shape = _size(size) if size is not None else _shape_of(loc, scale)
        return self._finish(loc + scale * self._normal(shape), dtype)

    def lognormal(self, mean=0.0, sigma=1.0, size=None, dtype=float):
        """exp of normal draws."""
        return self._finish(apply("exp", (self.normal(mean, sigma, size),)), _float_dtype(dtype))

    # -- integers --------------------------------------------------------------------------

    def randint(self, low, high=None, size=None, dtype=int):
        """Integers in [low, high) (``randint(n)``: [0, n)), uniform within
        float64's resolution (ranges up to 2**53)."""
        if high is None:
            low, high = 0, low
        target = dtype_name(dtype)
        if _inference.kind(target) not in "iu":
            raise TypeError(f"Unsupported dtype {target!r} for randint")
        low, high = int(low), int(high)
        info = np.iinfo(target)
        if low < info.min:
            raise ValueError(f"low is out of bounds for {target}")
        if high - 1 > info.max:
            raise ValueError(f"high is out of bounds for {target}")
        if low >= high:
            raise ValueError("high <= low")
        span = high - low
        if span > 1 << 53:
            raise NotImplementedError("randint over more than 2**53 values needs an integer draw "
                                      "op the server does not have")
        u = self._uniform(_size(size))
        k = apply("minimum", (apply("floor", (u * float(span),)), float(span - 1)))
        ints = apply("cast", (k,), {"dtype": target})
        if low:
            ints = ints + np.dtype(target).type(low)  # stays in [low, high): no wrapping
        return self._finish(ints, target)

    def random_integers(self, low, high=None, size=None):
        """Integers in [low, high] (``random_integers(n)``: [1, n])."""
        if high is None:
            low, high = 1, low
        return self.randint(low, int(high) + 1, size)

    def choice(self, a, size=None, replace=True, p=None):
        """Uniform draws from range(a) with replacement (others need a gather
        or a sort the server does not have)."""
        if not isinstance(a, (int, np.integer)) or isinstance(a, (bool, np.bool_)):
            raise NotImplementedError("choice from an array needs a gather op the server does "
                                      "not have; choose indices with choice(len(a))")
        if a <= 0:
            raise ValueError("a must be greater than 0 unless no samples are taken")
        if not replace or p is not None:
            raise NotImplementedError("choice without replacement or with p needs a sort or a "
                                      "search op the server does not have")
        return self.randint(0, int(a), size)

    def shuffle(self, a):
        raise NotImplementedError("shuffle needs a sort op the server does not have")

    def permutation(self, num):
        raise NotImplementedError("permutation needs a sort op the server does not have")

    # -- other distributions (NumPy's formulas) --------------------------------------------

    def _exp_draw(self, shape):
        return -apply("log1p", (-self._uniform(shape),))  # -log(1 - U), U in [0, 1)

    def _shape(self, size, *params):
        return _size(size) if size is not None else _shape_of(*params)

    def standard_exponential(self, size=None, dtype=float):
        """Exponential draws of scale 1."""
        return self._finish(self._exp_draw(_size(size)), _float_dtype(dtype))

    def exponential(self, scale=1.0, size=None, dtype=float):
        """Exponential draws of mean ``scale``."""
        if _is_scalar(scale) and scale < 0:
            raise ValueError("scale < 0")
        return self._finish(scale * self._exp_draw(self._shape(size, scale)), _float_dtype(dtype))

    def gumbel(self, loc=0.0, scale=1.0, size=None, dtype=float):
        """Gumbel draws: loc - scale * log(-log(1 - U))."""
        e = self._exp_draw(self._shape(size, loc, scale))
        return self._finish(loc - scale * apply("log", (e,)), _float_dtype(dtype))

    def laplace(self, loc=0.0, scale=1.0, size=None, dtype=float):
        """Laplace draws (NumPy's inverse CDF)."""
        u = self._uniform(self._shape(size, loc, scale))
        low = loc + scale * apply("log", (u * 2.0,))
        high = loc - scale * apply("log", (2.0 - u * 2.0,))
        return self._finish(apply("where", (u >= 0.5, high, low)), _float_dtype(dtype))

    def logistic(self, loc=0.0, scale=1.0, size=None, dtype=float):
        """Logistic draws: loc + scale * log(U / (1 - U))."""
        u = self._uniform(self._shape(size, loc, scale))
        return self._finish(loc + scale * apply("log", (u / (1.0 - u),)), _float_dtype(dtype))

    def rayleigh(self, scale=1.0, size=None, dtype=float):
        """Rayleigh draws: scale * sqrt(2 * E)."""
        e = self._exp_draw(self._shape(size, scale))
        return self._finish(scale * apply("sqrt", (e * 2.0,)), _float_dtype(dtype))

    def standard_cauchy(self, size=None, dtype=float):
        """Cauchy draws: the ratio of two normal draws."""
        shape = _size(size)
        return self._finish(self._normal(shape) / self._normal(shape), _float_dtype(dtype))

    def weibull(self, a, size=None, dtype=float):
        """Weibull draws: E ** (1 / a)."""
        if _is_scalar(a) and a < 0:
            raise ValueError("a < 0")
        e = self._exp_draw(self._shape(size, a))
        return self._finish(apply("pow", (e, 1.0 / a)), _float_dtype(dtype))

    def pareto(self, a, size=None, dtype=float):
        """Pareto (Lomax) draws: exp(E / a) - 1."""
        if _is_scalar(a) and a <= 0:
            raise ValueError("a <= 0")
        e = self._exp_draw(self._shape(size, a))
        return self._finish(apply("expm1", (e / a,)), _float_dtype(dtype))

    def power(self, a, size=None, dtype=float):
        """Power-function draws: (1 - exp(-E)) ** (1 / a)."""
        if _is_scalar(a) and a <= 0:
            raise ValueError("a <= 0")
        e = self._exp_draw(self._shape(size, a))
        return self._finish(apply("pow", (-apply("expm1", (-e,)), 1.0 / a)), _float_dtype(dtype))

    def triangular(self, left, mode, right, size=None, dtype=float):
        """Triangular draws (the inverse CDF)."""
        if all(_is_scalar(v) for v in (left, mode, right)):
            if left > mode:
                raise ValueError("left > mode")
            if mode > right:
                raise ValueError("mode > right")
            if left == right:
                raise ValueError("left == right")
        u = self._uniform(self._shape(size, left, mode, right))
        base, span = left, right - left
        cut = (mode - left) / span
        low = base + apply("sqrt", (u * span * (mode - left),))
        high = right - apply("sqrt", ((1.0 - u) * span * (right - mode),))
        return self._finish(apply("where", (u <= cut, low, high)), _float_dtype(dtype))

    def geometric(self, p, size=None, dtype=int):
        """Geometric draws (trials to the first success), int64."""
        if _is_scalar(p) and not 0 < p <= 1:
            raise ValueError("p <= 0, p > 1 or p contains NaNs")
        u = self._uniform(self._shape(size, p))
        if _is_scalar(p):
            with np.errstate(divide="ignore"):
                denominator = float(np.log1p(-float(p)))
        else:
            denominator = apply("log1p", (-p,))
        k = apply("maximum", (apply("ceil", (apply("log1p", (-u,)) / denominator,)), 1.0))
        return self._finish(apply("cast", (k,), {"dtype": dtype_name(dtype)}), dtype_name(dtype))


class Philox4x3210:
    """cupy.random.Philox4x3210: names a seed for :class:`Generator` (the
    server's draws are Philox4x32-10 whatever the bit generator)."""

    def __init__(self, seed=None):
        self.seed = seed


XORWOW = MRG32k3a = Philox4x3210


class Generator:
    """numpy.random.Generator's API (cupy.random.Generator) over a
    :class:`RandomState`."""

    def __init__(self, bit_generator=None):
        seed = bit_generator.seed if isinstance(bit_generator, Philox4x3210) else bit_generator
        self._state = RandomState(seed)
        self.bit_generator = bit_generator

    def random(self, size=None, dtype=np.float64, out=None):
        return _out(self._state.random_sample(size, dtype), out)

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        return _out(self._state.standard_normal(size, dtype), out)

    def standard_exponential(self, size=None, dtype=np.float64, method=None, out=None):
        return _out(self._state.standard_exponential(size, dtype), out)

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        if high is None:
            low, high = 0, low
        return self._state.randint(low, int(high) + 1 if endpoint else high, size, dtype)

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True):
        return self._state.choice(a, size, replace, p)

    def __getattr__(self, name):
        if name in ("normal", "uniform", "exponential", "lognormal", "gumbel", "laplace",
                    "logistic", "rayleigh", "standard_cauchy", "weibull", "pareto", "power",
                    "triangular", "geometric", "shuffle", "permutation"):
            return getattr(self._state, name)
        raise AttributeError(name)


def _out(values, out):
    from gpuflow.remote_array import rebind_out

    return rebind_out(out, values, "random", casting="same_kind")


def default_rng(seed=None):
    """numpy.random.default_rng: a :class:`Generator` (a Generator given is
    returned as is)."""
    return seed if isinstance(seed, Generator) else Generator(seed)


_global = RandomState()


def get_random_state():
    """The RandomState behind the module functions."""
    return _global


def set_random_state(rs):
    """Replaces the RandomState behind the module functions."""
    global _global
    _global = rs


def seed(seed=None):
    """Reseeds the module functions' RandomState."""
    _global.seed(seed)


def reset_states():
    """A fresh (randomly seeded) RandomState for the module functions."""
    set_random_state(RandomState())


def _module_function(name):
    def f(*args, **kwargs):
        return getattr(_global, name)(*args, **kwargs)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = getattr(RandomState, name).__doc__
    return f


_FUNCTIONS = ["rand", "randn", "random_sample", "uniform", "normal", "standard_normal",
              "lognormal", "randint", "random_integers", "choice", "shuffle", "permutation",
              "standard_exponential", "exponential", "gumbel", "laplace", "logistic", "rayleigh",
              "standard_cauchy", "weibull", "pareto", "power", "triangular", "geometric"]
for _name in _FUNCTIONS:
    globals()[_name] = _module_function(_name)
random = ranf = sample = _module_function("random_sample")

__all__ = _FUNCTIONS + ["Generator", "MRG32k3a", "Philox4x3210", "RandomState", "XORWOW",
                        "default_rng", "get_random_state", "random", "ranf", "reset_states",
                        "sample", "seed", "set_random_state"]
