"""gpuflow.testing: CuPy's ``cupy.testing`` for gpuflow.

The assertions take RemoteArrays, numpy arrays and scalars (RemoteArrays
are fetched, several in one Execute where they share a session) and
delegate to ``numpy.testing``. The decorators run a test function twice,
with ``xp=numpy`` and with ``xp=gpuflow``, and compare what the two return
(or that they raise the same kind of error)::

    from gpuflow import testing

    @testing.for_float_dtypes()
    @testing.numpy_cupy_allclose(rtol=1e-6)
    def test_mean(xp, dtype):
        return testing.shaped_arange((2, 3), xp, dtype).mean(axis=1)

gpuflow arrays live in a session: the gpuflow call makes its arrays in the
current session (:func:`gpuflow.current_session`), so the caller runs the
test inside ``with client.session():`` (an autouse pytest fixture does it
for a whole file). Without one the decorators raise ``RuntimeError``.

gpuflow arrays are C-ordered: ``contiguous_check`` checks C-contiguity
only (a NumPy result that is F-ordered is not a mismatch), and
``order='F'`` in the array helpers gives the same C-ordered array.
"""

import contextlib
import functools
import importlib.metadata
import inspect
import itertools
import os
import random as _random
import sys
import traceback
import types
import unittest
import warnings

import numpy
import numpy.testing as _npt

import gpuflow
from gpuflow._inference import AxisError
from gpuflow._poly import poly1d as _poly1d
from gpuflow.remote_array import RemoteArray



def _skip_classes():
    """The exceptions that skip a test: unittest's, and pytest's once pytest
    runs (gpuflow.testing does not import pytest itself: `import gpuflow`
    stays light)."""
    outcomes = sys.modules.get("_pytest.outcomes")
    return (unittest.SkipTest,) + ((outcomes.Skipped,) if outcomes is not None else ())


def _pytest():
    try:
        import pytest
    except ImportError:
        return None
    return pytest


# numpy.testing's own, as CuPy users import them from cupy.testing.
from numpy.testing import (  # noqa: E402,F401
    assert_approx_equal,
    assert_no_warnings,
    assert_raises,
    assert_raises_regex,
    assert_string_equal,
    suppress_warnings,
)

# ---- converting ---------------------------------------------------------------------


def _host(x):
    """``x`` with every RemoteArray in it (also inside lists, tuples and
    dicts) replaced by its numpy value; RemoteArrays of one session are
    fetched in one Execute."""
    found = []

    def collect(v):
        if isinstance(v, RemoteArray):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            for item in v:
                collect(item)
        elif isinstance(v, dict):
            for item in v.values():
                collect(item)

    collect(x)
    if not found:
        return x
    values = {}
    by_session = {}
    for a in found:
        by_session.setdefault(id(a.session), []).append(a)
    for arrays in by_session.values():
        for a, value in zip(arrays, gpuflow.evaluate(*arrays)):
            # bfloat16 arrives as raw words: compare its values.
            values[id(a)] = gpuflow.bfloat16_to_float32(value) if a.dtype == "bfloat16" else value

    def replace(v):
        if isinstance(v, RemoteArray):
            return values[id(v)]
        if isinstance(v, (list, tuple)):
            items = [replace(item) for item in v]
            return type(v)(*items) if hasattr(v, "_fields") else type(v)(items)
        if isinstance(v, dict):
            return type(v)((k, replace(item)) for k, item in v.items())
        return v

    return replace(x)


# ---- assertions -----------------------------------------------------------------------


def assert_allclose(actual, desired, rtol=1e-7, atol=0, err_msg="", verbose=True):
    """numpy.testing.assert_allclose of RemoteArrays, numpy arrays or scalars."""
    actual, desired = _host((actual, desired))
    _npt.assert_allclose(actual, desired, rtol=rtol, atol=atol, err_msg=err_msg,
                         verbose=verbose)


def assert_array_almost_equal(x, y, decimal=6, err_msg="", verbose=True):
    """numpy.testing.assert_array_almost_equal of RemoteArrays or numpy arrays."""
    x, y = _host((x, y))
    _npt.assert_array_almost_equal(x, y, decimal=decimal, err_msg=err_msg, verbose=verbose)


def assert_array_almost_equal_nulp(x, y, nulp=1):
    """numpy.testing.assert_array_almost_equal_nulp of RemoteArrays or numpy arrays."""
    x, y = _host((x, y))
    _npt.assert_array_almost_equal_nulp(x, y, nulp=nulp)


def assert_array_max_ulp(a, b, maxulp=1, dtype=None):
    """numpy.testing.assert_array_max_ulp of RemoteArrays or numpy arrays."""
    a, b = _host((a, b))
    _npt.assert_array_max_ulp(a, b, maxulp=maxulp, dtype=dtype)


def assert_array_equal(x, y, err_msg="", verbose=True, strict=False, strides_check=False):
    """numpy.testing.assert_array_equal of RemoteArrays or numpy arrays;
    ``strides_check`` also compares ``strides`` (a RemoteArray's are C
    order's)."""
    hx, hy = _host((x, y))
    _npt.assert_array_equal(hx, hy, err_msg=err_msg, verbose=verbose, strict=strict)
    if strides_check:
        sx, sy = (v.strides if isinstance(v, RemoteArray) else numpy.asarray(v).strides
                  for v in (x, y))
        if sx != sy:
            msg = ["Strides are not equal:" + (" " + err_msg if err_msg else "")]
            if verbose:
                msg += [f" x: {sx}", f" y: {sy}"]
            raise AssertionError("\n".join(msg))


def assert_array_list_equal(xlist, ylist, err_msg="", verbose=True, strict=False):
    """Compares two lists (or two tuples) of arrays pairwise with
    :func:`assert_array_equal`."""
    if type(xlist) is not type(ylist):
        raise AssertionError("Matching types of list or tuple are expected, but were different "
                             f"types (xlist:{type(xlist)} ylist:{type(ylist)})")
    if type(xlist) not in (list, tuple):
        raise AssertionError(f"List or tuple is expected, but was {type(xlist)}")
    if len(xlist) != len(ylist):
        raise AssertionError("List size is different")
    xlist, ylist = _host((xlist, ylist))
    for x, y in zip(xlist, ylist):
        _npt.assert_array_equal(x, y, err_msg=err_msg, verbose=verbose, strict=strict)


def assert_array_less(x, y, err_msg="", verbose=True):
    """numpy.testing.assert_array_less of RemoteArrays or numpy arrays."""
    x, y = _host((x, y))
    _npt.assert_array_less(x, y, err_msg=err_msg, verbose=verbose)


def assert_equal(actual, desired, err_msg="", verbose=True):
    """numpy.testing.assert_equal; RemoteArrays (also in lists, tuples and
    dicts) are compared by value."""
    actual, desired = _host((actual, desired))
    _npt.assert_equal(actual, desired, err_msg=err_msg, verbose=verbose)


def assert_almost_equal(actual, desired, decimal=7, err_msg="", verbose=True):
    """numpy.testing.assert_almost_equal of RemoteArrays, numpy arrays or scalars."""
    actual, desired = _host((actual, desired))
    _npt.assert_almost_equal(actual, desired, decimal=decimal, err_msg=err_msg,
                             verbose=verbose)


def assert_warns(expected, *args, **kwargs):
    """A context manager (CuPy's form) that fails unless a warning of class
    ``expected`` is issued inside it; ``assert_warns(cls, func, *args)``
    calls ``func`` instead (numpy.testing's form) and returns its result."""
    if args:
        func, args = args[0], args[1:]
        with _warns(expected):
            return func(*args, **kwargs)
    return _warns(expected)


@contextlib.contextmanager
def _warns(expected):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    if not any(isinstance(w.message, expected) for w in caught):
        raise AssertionError(f"{getattr(expected, '__name__', expected)} not triggered")


# ---- arrays ---------------------------------------------------------------------------


def _make(xp, host, order):
    if xp is numpy:
        return numpy.array(host, order="C" if order is None else order)
    return xp.array(host)  # gpuflow: C order whatever `order` is


def shaped_arange(shape, xp=gpuflow, dtype=numpy.float32, order="C"):
    """An array of ``shape`` holding 1 ... N (bool: True at the even
    numbers; complex: k + kj) in ``xp`` (numpy or gpuflow)."""
    dtype = numpy.dtype(dtype)
    a = numpy.arange(1, int(numpy.prod(shape, dtype=numpy.int64)) + 1)
    if dtype == numpy.bool_:
        a = a % 2 == 0
    elif dtype.kind == "c":
        a = a + a * 1j
    return _make(xp, a.astype(dtype).reshape(shape), order)


def shaped_reverse_arange(shape, xp=gpuflow, dtype=numpy.float32):
    """As :func:`shaped_arange`, holding N ... 1."""
    dtype = numpy.dtype(dtype)
    a = numpy.arange(int(numpy.prod(shape, dtype=numpy.int64)), 0, -1)
    if dtype == numpy.bool_:
        a = a % 2 == 0
    elif dtype.kind == "c":
        a = a + a * 1j
    return _make(xp, a.astype(dtype).reshape(shape), "C")


def shaped_random(shape, xp=gpuflow, dtype=numpy.float32, scale=10, seed=0, order="C"):
    """An array of ``shape`` of uniform numbers in [0, scale) (bool: fair
    coin flips) drawn by numpy's RandomState(seed): the same numbers for
    numpy and gpuflow (and as CuPy's shaped_random)."""
    rs = numpy.random.RandomState(seed)
    dtype = numpy.dtype(dtype)
    if dtype == numpy.bool_:
        a = rs.randint(2, size=shape)
    elif dtype.kind == "c":
        a = rs.rand(*shape) + 1j * rs.rand(*shape)
        a *= scale
    else:
        a = rs.rand(*shape) * scale
    return _make(xp, numpy.asarray(a, dtype=dtype), order)


def shaped_linspace(start, stop, shape, xp=gpuflow, dtype=numpy.float32):
    """``numpy.linspace(start, stop)`` of ``shape`` (unsigned and bool
    ranges clipped as CuPy's)."""
    dtype = numpy.dtype(dtype)
    if dtype == numpy.bool_:
        start, stop = max(start, 0), min(stop, 1)
    elif dtype.kind == "u":
        start = max(start, 0)
    a = numpy.linspace(start, stop, int(numpy.prod(shape, dtype=numpy.int64)))
    return _make(xp, a.astype(dtype).reshape(shape), "C")


def generate_matrix(shape, xp=gpuflow, dtype=numpy.float32, *, singular_values=None):
    """A random (stack of) matrix of ``shape`` (..., M, N) with the given
    singular values (broadcast to (..., min(M, N))), made with numpy's
    global random state and numpy.linalg.svd on the client."""
    if len(shape) <= 1:
        raise ValueError(f"shape {shape} is invalid for matrices: too few axes")
    if singular_values is None:
        raise TypeError("singular_values is not given")
    singular_values = numpy.asarray(_host(singular_values))
    dtype = numpy.dtype(dtype)
    if dtype.kind not in "fc":
        raise TypeError(f"dtype {dtype} is not supported")
    if numpy.iscomplexobj(singular_values):
        raise TypeError("singular_values is not real")
    if (singular_values < 0).any():
        raise ValueError("negative singular value is given")
    a = numpy.random.randn(*shape)
    if dtype.kind == "c":
        a = a + 1j * numpy.random.randn(*shape)
    u, s, vh = numpy.linalg.svd(a, full_matrices=False)
    sv = numpy.broadcast_to(singular_values, s.shape)
    a = numpy.einsum("...ik,...k,...kj->...ij", u, sv, vh).astype(dtype)
    return a if xp is numpy else xp.array(a)


# ---- running a test with numpy and with gpuflow ------------------------------------------


def _call(impl, args, kw):
    """(result, None) or (None, the exception impl raised); an exception
    raised before impl ran (a bad keyword) propagates."""
    try:
        return impl(*args, **kw), None
    except (Exception, *_skip_classes()) as e:
        if e.__traceback__.tb_next is None:
            raise
        return None, e


def _scipy_module(sparse):
    try:
        import scipy
        import scipy.sparse  # noqa: F401
        import scipy.special  # noqa: F401
    except ImportError:
        raise unittest.SkipTest("scipy is not installed") from None
    return scipy.sparse if sparse else scipy


# gpuflow has no sparse matrices; these are what it has of scipy.special.
_SCIPY_STAND_IN = types.SimpleNamespace(special=types.SimpleNamespace(
    erf=gpuflow.erf, expit=gpuflow.sigmoid, logsumexp=gpuflow.logsumexp,
    softmax=gpuflow.softmax, log_softmax=gpuflow.log_softmax))


def _call_both(impl, args, kw, name, sp_name, scipy_name):
    """Runs impl with gpuflow, then with numpy: (gpuflow result, error,
    numpy result, error)."""
    if gpuflow.current_session() is None:
        raise RuntimeError(
            "gpuflow.testing: no current session; run the test inside `with client.session():` "
            "(for example from an autouse pytest fixture)")
    nkw = dict(kw)
    nkw[name] = numpy
    if sp_name:
        nkw[sp_name] = _scipy_module(True)
    if scipy_name:
        nkw[scipy_name] = _scipy_module(False)
    g_result, g_error = _call(impl, args, _gpuflow_kwargs(kw, name, sp_name, scipy_name))
    n_result, n_error = _call(impl, args, nkw)
    return g_result, g_error, n_result, n_error


def _results_or_errors(impl, args, kw, name, sp_name, scipy_name, accept_error):
    """(gpuflow result, numpy result) of impl, or None once the errors
    either raised were checked against each other (_check_errors)."""
    g_result, g_error, n_result, n_error = _call_both(impl, args, kw, name, sp_name, scipy_name)
    if g_error is not None or n_error is not None:
        _check_errors(g_error, n_error, accept_error=accept_error)
        return None
    return g_result, n_result


def _gpuflow_kwargs(kw, name, sp_name, scipy_name):
    gkw = dict(kw)
    gkw[name] = gpuflow
    if sp_name:
        gkw[sp_name] = None
    if scipy_name:
        gkw[scipy_name] = _SCIPY_STAND_IN
    return gkw


# The public error classes a gpuflow error must match numpy's in.
_NUMPY_ERRORS = (AttributeError, Exception, IndexError, TypeError, ValueError,
                 NotImplementedError, DeprecationWarning, AxisError, numpy.linalg.LinAlgError)


def _format(e):
    return "".join(traceback.TracebackException.from_exception(e).format())


def _fail(e, msg):
    raise AssertionError(msg).with_traceback(e.__traceback__)


def _check_errors(g_error, n_error, accept_error=False):
    """Passes when both raised errors of the same public classes that
    ``accept_error`` accepts (True: any Exception); re-raises a skip both
    raised; else AssertionError."""
    if isinstance(g_error, _skip_classes()) and isinstance(n_error, _skip_classes()):
        if type(g_error) is not type(n_error) or g_error.args != n_error.args:
            raise AssertionError("numpy and gpuflow were both skipped, but differently")
        raise n_error
    if accept_error is True:
        accept_error = Exception
    elif not accept_error:
        accept_error = ()
    if g_error is None and n_error is None:
        raise AssertionError("Both gpuflow and numpy are expected to raise errors, but not")
    if g_error is None:
        _fail(n_error, f"Only numpy raises error\n\n{_format(n_error)}")
    if n_error is None:
        _fail(g_error, f"Only gpuflow raises error\n\n{_format(g_error)}")
    if not all(isinstance(g_error, t) == isinstance(n_error, t) for t in _NUMPY_ERRORS):
        _fail(g_error, f"Different types of errors occurred\n\ngpuflow\n{_format(g_error)}\n"
                       f"numpy\n{_format(n_error)}")
    if not (isinstance(g_error, accept_error) and isinstance(n_error, accept_error)):
        _fail(g_error, f"Both gpuflow and numpy raise exceptions\n\ngpuflow\n"
                       f"{_format(g_error)}\nnumpy\n{_format(n_error)}")


def _wraps_partial(wrapped, *names):
    """functools.wraps, with the signature lacking ``names`` (the arguments
    the decorator fills in: pytest must not look for fixtures of them)."""

    def decorator(impl):
        impl = functools.wraps(wrapped)(impl)
        try:
            impl.__signature__ = inspect.signature(
                functools.partial(wrapped, **{n: None for n in names}))
        except (TypeError, ValueError):
            # A test that takes no ``xp`` (an error the call then shows, as
            # in CuPy) keeps its own signature.
            impl.__signature__ = inspect.signature(wrapped)
        return impl

    return decorator


def _pair(g, n):
    """The (gpuflow, numpy) results as numpy values to compare, or
    AssertionError when their kinds differ."""
    if isinstance(g, RemoteArray) and isinstance(n, (numpy.ndarray, numpy.generic)):
        return g, n
    if isinstance(g, _poly1d) and isinstance(n, numpy.poly1d):
        assert g.variable == n.variable
        return g.coeffs, n.coeffs
    if isinstance(g, numpy.generic) and isinstance(n, numpy.generic):
        return g, n
    if numpy.isscalar(g) and numpy.isscalar(n):
        return numpy.array(g), numpy.array(n)
    raise AssertionError("numpy and gpuflow return different types of value:\n"
                         f"gpuflow: {type(g)}\nnumpy: {type(n)}")


def _signed(dtype):
    return numpy.dtype(numpy.dtype(dtype).char.lower()).type


_complex_dtypes = (numpy.complex64, numpy.complex128)
_regular_float_dtypes = (numpy.float64, numpy.float32)
_float_dtypes = _regular_float_dtypes + (numpy.float16,)
_signed_dtypes = (numpy.int8, numpy.int16, numpy.int32, numpy.int64)
_unsigned_dtypes = (numpy.uint8, numpy.uint16, numpy.uint32, numpy.uint64)
_int_dtypes = _signed_dtypes + _unsigned_dtypes
_int_bool_dtypes = _int_dtypes + (numpy.bool_,)


def _dtype_type(v):
    """The numpy scalar type a keyword value names (a dtype, a scalar type
    or a type code), else None: a string parameter that is no dtype (an
    expression such as ``"array([1], uint8) + int64(1)"``) is None however
    numpy's parser refuses it (TypeError, ValueError or SyntaxError, or a
    deprecation warning that the test's filters may make an error)."""
    if not (isinstance(v, (numpy.dtype, str)) or (isinstance(v, type)
                                                   and issubclass(v, numpy.generic))):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return numpy.dtype(v).type
    except (TypeError, ValueError, SyntaxError, Warning):
        return None


def _mixes_signed_and_unsigned(kw):
    vs = {_dtype_type(v) for v in kw.values()}
    return (any(d in vs for d in _unsigned_dtypes)
            and any(d in vs for d in _float_dtypes + _signed_dtypes))


def _make_decorator(check_func, name, type_check, contiguous_check, accept_error, sp_name=None,
                    scipy_name=None):
    def decorator(impl):
        @_wraps_partial(impl, *[n for n in (name, sp_name, scipy_name) if n])
        def test_func(*args, **kw):
            results = _results_or_errors(impl, args, kw, name, sp_name, scipy_name, accept_error)
            if results is None:
                return
            g_result, n_result = results
            if not isinstance(g_result, (tuple, list)):
                g_result = (g_result,)
            if not isinstance(n_result, (tuple, list)):
                n_result = (n_result,)
            if len(g_result) != len(n_result):
                raise AssertionError(f"gpuflow returned {len(g_result)} results, numpy "
                                     f"{len(n_result)}")
            pairs = [_pair(g, n) for g, n in zip(g_result, n_result)]
            if type_check:
                for g, n in pairs:
                    if g.dtype != n.dtype:
                        raise AssertionError("ndarrays of different dtypes are returned.\n"
                                             f"gpuflow: {g.dtype}\nnumpy: {n.dtype}")
            if contiguous_check:
                for g, n in zip(g_result, n_result):
                    if (isinstance(n, numpy.ndarray) and n.flags.c_contiguous
                            and not g.flags.c_contiguous):
                        raise AssertionError("The state of c_contiguous flag is false.")
            for g, n in pairs:
                if g.shape != n.shape:
                    raise AssertionError(f"ndarrays of different shapes are returned.\n"
                                         f"gpuflow: {g.shape}\nnumpy: {n.shape}")
            masks = [None] * len(pairs)
            if _mixes_signed_and_unsigned(kw):
                # A negative value cast to an unsigned type is undefined in
                # C; compare only where the signed run is non-negative.
                needs = [_dtype_type(g.dtype) in _unsigned_dtypes for g, _ in pairs]
                if any(needs):
                    skw = {k: _signed(v) if _dtype_type(v) in _unsigned_dtypes else v
                           for k, v in kw.items()}
                    signed, error = _call(impl, args,
                                          _gpuflow_kwargs(skw, name, sp_name, scipy_name))
                    assert error is None, error
                    if not isinstance(signed, (tuple, list)):
                        signed = (signed,)
                    signed = _host(list(signed))
                    masks = [numpy.asarray(s) >= 0 if need else None
                             for s, need in zip(signed, needs)]
            hosts = _host([g for g, _ in pairs])
            for (g, n), h, mask in zip(pairs, hosts, masks):
                if mask is not None:
                    if h.shape == ():
                        if not mask.all():
                            continue
                    else:
                        h, n = h[mask], numpy.asarray(n)[mask]
                check_func(h, n, g)

        return test_func

    return decorator


def _check_tolerance_keys(*tols):
    for tol in tols:
        if isinstance(tol, dict):
            for k in tol:
                if not (type(k) is type or k == "default"):
                    raise TypeError("Keys of the tolerance dictionary need to be type objects as "
                                    "`numpy.float32` and `gpuflow.float32` or `'default'` string.")


def _resolve_tolerance(dtype, tol):
    if not isinstance(tol, dict):
        return tol
    found = tol.get(numpy.dtype(dtype).type)
    if found is None:
        found = tol.get("default")
        if found is None:
            raise TypeError(f"Can not find tolerance for {numpy.dtype(dtype).type}")
    return found


def numpy_cupy_allclose(rtol=1e-7, atol=0, err_msg="", verbose=True, name="xp", type_check=True,
                        accept_error=False, sp_name=None, scipy_name=None, contiguous_check=True,
                        *, _check_sparse_format=True):
    """Checks that the function returns close results with ``xp=numpy``
    and ``xp=gpuflow`` (:func:`assert_allclose`); ``rtol``/``atol`` may be
    dicts of dtype -> tolerance (with a ``'default'``), read for the
    gpuflow result's dtype. ``type_check``: dtypes must be equal.
    ``accept_error``: errors both raise (of the same public classes) that
    pass (True: any). ``sp_name``: gpuflow has no sparse matrices, the
    gpuflow run gets None; ``scipy_name``: the gpuflow run gets a stand-in
    whose ``special`` has erf, expit, logsumexp, softmax, log_softmax."""
    del _check_sparse_format
    _check_tolerance_keys(rtol, atol)
    if not type_check and (isinstance(rtol, dict) or isinstance(atol, dict)):
        raise TypeError("When `type_check` is `False`, `rtol` and `atol` must be supplied as "
                        "float.")

    def check_func(h, n, g):
        dtype = g.dtype
        assert_allclose(h, n, _resolve_tolerance(dtype, rtol), _resolve_tolerance(dtype, atol),
                        err_msg, verbose)

    return _make_decorator(check_func, name, type_check, contiguous_check, accept_error, sp_name,
                           scipy_name)


def numpy_cupy_array_almost_equal(decimal=6, err_msg="", verbose=True, name="xp",
                                  type_check=True, accept_error=False, sp_name=None,
                                  scipy_name=None):
    """As :func:`numpy_cupy_allclose`, with :func:`assert_array_almost_equal`."""

    def check_func(h, n, g):
        assert_array_almost_equal(h, n, decimal, err_msg, verbose)

    return _make_decorator(check_func, name, type_check, False, accept_error, sp_name,
                           scipy_name)


def numpy_cupy_array_almost_equal_nulp(nulp=1, name="xp", type_check=True, accept_error=False,
                                       sp_name=None, scipy_name=None):
    """As :func:`numpy_cupy_allclose`, with :func:`assert_array_almost_equal_nulp`."""

    def check_func(h, n, g):
        assert_array_almost_equal_nulp(h, n, nulp)

    return _make_decorator(check_func, name, type_check, False, accept_error, sp_name,
                           scipy_name)


def numpy_cupy_array_max_ulp(maxulp=1, dtype=None, name="xp", type_check=True,
                             accept_error=False, sp_name=None, scipy_name=None):
    """As :func:`numpy_cupy_allclose`, with :func:`assert_array_max_ulp`."""

    def check_func(h, n, g):
        assert_array_max_ulp(h, n, maxulp, dtype)

    return _make_decorator(check_func, name, type_check, False, accept_error, sp_name,
                           scipy_name)


def numpy_cupy_array_equal(err_msg="", verbose=True, name="xp", type_check=True,
                           accept_error=False, sp_name=None, scipy_name=None,
                           strides_check=False):
    """As :func:`numpy_cupy_allclose`, with :func:`assert_array_equal`
    (``strides_check``: a RemoteArray's C strides against numpy's)."""

    def check_func(h, n, g):
        assert_array_equal(h, n, err_msg, verbose)
        if strides_check and isinstance(g, RemoteArray) and isinstance(n, numpy.ndarray):
            if g.strides != n.strides:
                raise AssertionError(f"Strides are not equal: {err_msg}\n x: {g.strides}\n"
                                     f" y: {n.strides}")

    return _make_decorator(check_func, name, type_check, False, accept_error, sp_name,
                           scipy_name)


def numpy_cupy_array_list_equal(err_msg="", verbose=True, name="xp", sp_name=None,
                                scipy_name=None):
    """Deprecated in CuPy: :func:`numpy_cupy_array_equal` without the dtype check."""
    warnings.warn("numpy_cupy_array_list_equal is deprecated. Use numpy_cupy_array_equal "
                  "instead.", DeprecationWarning, stacklevel=2)

    def check_func(h, n, g):
        assert_array_equal(h, n, err_msg, verbose)

    return _make_decorator(check_func, name, False, False, False, sp_name, scipy_name)


def numpy_cupy_array_less(err_msg="", verbose=True, name="xp", type_check=True,
                          accept_error=False, sp_name=None, scipy_name=None):
    """Checks that the gpuflow result is less than numpy's
    (:func:`assert_array_less`)."""

    def check_func(h, n, g):
        assert_array_less(h, n, err_msg, verbose)

    return _make_decorator(check_func, name, type_check, False, accept_error, sp_name,
                           scipy_name)


def _equal(a, b):
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, numpy.ndarray) or isinstance(b, numpy.ndarray):
        return numpy.shape(a) == numpy.shape(b) and bool(numpy.array_equal(a, b))
    return bool(a == b)


def numpy_cupy_equal(name="xp", sp_name=None, scipy_name=None):
    """Checks that the function returns equal results (``==``; RemoteArrays
    are compared by value) with ``xp=numpy`` and ``xp=gpuflow``."""

    def decorator(impl):
        @_wraps_partial(impl, *[n for n in (name, sp_name, scipy_name) if n])
        def test_func(*args, **kw):
            results = _results_or_errors(impl, args, kw, name, sp_name, scipy_name, False)
            if results is None:
                return
            g_result, n_result = results
            g_host = _host(g_result)
            if not _equal(g_host, n_result):
                raise AssertionError(f"Results are not equal:\ngpuflow: {g_host}\n"
                                     f"numpy: {n_result}")

        return test_func

    return decorator


def numpy_cupy_raises(name="xp", sp_name=None, scipy_name=None, accept_error=Exception):
    """Checks that the function raises errors of the same public classes
    (ValueError, TypeError, IndexError, AxisError, LinAlgError, ...) with
    ``xp=numpy`` and ``xp=gpuflow``. Deprecated, as in CuPy (a
    DeprecationWarning, which CuPy's own tests expect)."""
    warnings.warn("numpy_cupy_raises is deprecated.", DeprecationWarning, stacklevel=2)

    def decorator(impl):
        @_wraps_partial(impl, *[n for n in (name, sp_name, scipy_name) if n])
        def test_func(*args, **kw):
            _, g_error, _, n_error = _call_both(impl, args, kw, name, sp_name, scipy_name)
            _check_errors(g_error, n_error, accept_error=accept_error)

        return test_func

    return decorator


# ---- looping over dtypes and orders ---------------------------------------------------------


def for_dtypes(dtypes, name="dtype"):
    """Calls the function once per dtype in ``dtypes`` (as its numpy type,
    in keyword ``name``)."""

    def decorator(impl):
        @_wraps_partial(impl, name)
        def test_func(*args, **kw):
            for dtype in dtypes:
                try:
                    kw[name] = numpy.dtype(dtype).type
                    impl(*args, **kw)
                except _skip_classes() as e:
                    print(f"skipped: {name} = {dtype} ({e})")
                except Exception:
                    print(name, "is", dtype)
                    raise

        return test_func

    return decorator


def _make_all_dtypes(no_float16, no_bool, no_complex):
    dtypes = _regular_float_dtypes if no_float16 else _float_dtypes
    dtypes += _int_dtypes if no_bool else _int_bool_dtypes
    if not no_complex:
        dtypes += _complex_dtypes
    return dtypes


def for_all_dtypes(name="dtype", no_float16=False, no_bool=False, no_complex=False):
    """:func:`for_dtypes` of float64, float32, float16, int8 ... int64,
    uint8 ... uint64, bool, complex64, complex128 (the no_ ones left out)."""
    return for_dtypes(_make_all_dtypes(no_float16, no_bool, no_complex), name=name)


def for_float_dtypes(name="dtype", no_float16=False):
    """:func:`for_dtypes` of float64, float32 and (unless no_float16) float16."""
    return for_dtypes(_regular_float_dtypes if no_float16 else _float_dtypes, name=name)


def for_signed_dtypes(name="dtype"):
    """:func:`for_dtypes` of int8, int16, int32, int64."""
    return for_dtypes(_signed_dtypes, name=name)


def for_unsigned_dtypes(name="dtype"):
    """:func:`for_dtypes` of uint8, uint16, uint32, uint64."""
    return for_dtypes(_unsigned_dtypes, name=name)


def for_int_dtypes(name="dtype", no_bool=False):
    """:func:`for_dtypes` of the signed and unsigned ints and (unless no_bool) bool."""
    return for_dtypes(_int_dtypes if no_bool else _int_bool_dtypes, name=name)


def for_complex_dtypes(name="dtype"):
    """:func:`for_dtypes` of complex64 and complex128."""
    return for_dtypes(_complex_dtypes, name=name)


def _full_combination(full):
    if full is not None:
        return full
    env = os.environ.get("GPUFLOW_TEST_FULL_COMBINATION",
                         os.environ.get("CUPY_TEST_FULL_COMBINATION", "0"))
    return int(env) != 0


def for_dtypes_combination(types, names=("dtype",), full=None):
    """Calls the function with dtypes for each of ``names``: every
    combination when ``full`` (None: $GPUFLOW_TEST_FULL_COMBINATION or
    $CUPY_TEST_FULL_COMBINATION is 1), else a subset in which each dtype
    appears for each name (a fixed shuffle: the same subset every run)."""
    types = list(types)
    if len(types) == 1:
        (name,) = names
        return for_dtypes(types, name)
    if _full_combination(full):
        combination = product({n: types for n in names})
    else:
        rng = _random.Random(0)
        ts = []
        for _ in names:
            shuffled = types[:]
            rng.shuffle(shuffled)
            ts.append(types + shuffled)
        seen = []
        for typs in zip(*ts):
            entry = dict(zip(names, typs))
            if entry not in seen:
                seen.append(entry)
        combination = seen

    def decorator(impl):
        @_wraps_partial(impl, *names)
        def test_func(*args, **kw):
            for dtypes in combination:
                kw_copy = dict(kw, **dtypes)
                try:
                    impl(*args, **kw_copy)
                except _skip_classes() as e:
                    print(f"skipped: {dtypes} ({e})")
                except Exception:
                    print(dtypes)
                    raise

        return test_func

    return decorator


def for_all_dtypes_combination(names=("dtyes",), no_float16=False, no_bool=False, full=None,
                               no_complex=False):
    """:func:`for_dtypes_combination` of :func:`for_all_dtypes`' dtypes."""
    return for_dtypes_combination(_make_all_dtypes(no_float16, no_bool, no_complex), names, full)


def for_signed_dtypes_combination(names=("dtype",), full=None):
    return for_dtypes_combination(_signed_dtypes, names=names, full=full)


def for_unsigned_dtypes_combination(names=("dtype",), full=None):
    return for_dtypes_combination(_unsigned_dtypes, names=names, full=full)


def for_int_dtypes_combination(names=("dtype",), no_bool=False, full=None):
    return for_dtypes_combination(_int_dtypes if no_bool else _int_bool_dtypes, names, full)


def for_orders(orders, name="order"):
    """Calls the function once per order in ``orders`` (keyword ``name``)."""

    def decorator(impl):
        @_wraps_partial(impl, name)
        def test_func(*args, **kw):
            for order in orders:
                try:
                    kw[name] = order
                    impl(*args, **kw)
                except Exception:
                    print(name, "is", order)
                    raise

        return test_func

    return decorator


def for_CF_orders(name="order"):  # noqa: N802 - CuPy's name
    """:func:`for_orders` of None, 'C', 'F', 'c', 'f'."""
    return for_orders([None, "C", "F", "c", "f"], name)


def for_contiguous_axes(name="axis"):
    """For a test method of a class with ``shape`` and ``order``
    attributes: calls it with each tuple of axes that is contiguous in that
    order ((n-1,), (n-2, n-1), ... for C)."""

    def decorator(impl):
        @_wraps_partial(impl, name)
        def test_func(self, *args, **kw):
            ndim, order = len(self.shape), self.order
            for i in range(ndim):
                if order in ("c", "C"):
                    axes = tuple(range(i, ndim))
                elif order in ("f", "F"):
                    axes = tuple(range(0, ndim - i))
                else:
                    raise ValueError("Please specify the array order.")
                try:
                    kw[name] = axes
                    impl(self, *args, **kw)
                except Exception:
                    print(name, "is", axes, ", shape is", self.shape, ", order is", order)
                    raise

        return test_func

    return decorator


# ---- parameterized test classes --------------------------------------------------------------


def product(parameter):
    """Every combination of a dict of lists: ``product({'a': [1, 2], 'b':
    [3]})`` is ``[{'a': 1, 'b': 3}, {'a': 2, 'b': 3}]`` (keys sorted)."""
    assert isinstance(parameter, dict)
    keys = sorted(parameter)
    return [dict(zip(keys, values)) for values in itertools.product(*(parameter[k] for k in keys))]


def product_dict(*parameters):
    """Every combination of one dict from each list, merged."""
    return [{k: v for d in dicts for k, v in d.items()} for dicts in itertools.product(*parameters)]


def _param_str(v):
    if isinstance(v, type) or (hasattr(v, "__name__") and isinstance(v.__name__, str)):
        return v.__name__
    s = repr(v)
    return s if len(s) <= 100 else s[:48] + "..." + s[-49:]


def _param_name(base, i, param):
    body = ", ".join(f"{k}={_param_str(v)}" for k, v in sorted(param.items()))
    return f"{base}_param_{i}_{{{body}}}"


class _ParameterizedCases:
    """What ``parameterize`` leaves under a unittest.TestCase's name: the
    generated classes (in the module as their own names), so that a second
    ``parameterize`` expands each of them."""

    def __init__(self, cases):
        self.cases = cases  # [(class, module, name)]


def _members(param):
    members = {}
    for k, v in param.items():
        if isinstance(v, types.FunctionType):
            members[k] = staticmethod(v)
        else:
            members[k] = v
    return members


def _parameterize_unittest(cases, params):
    if isinstance(cases, _ParameterizedCases):
        cases = cases.cases
    else:
        cases = [(cases, None, None)]
    generated = []
    for base, module_name, cls_name in cases:
        if module_name is not None:
            delattr(sys.modules[module_name], cls_name)
        module = sys.modules[base.__module__ if module_name is None else module_name]
        for i, param in enumerate(params):
            name = _param_name(base.__name__, i, param)
            members = _members(param)
            members["__repr__"] = (lambda p: lambda self: f"<{unittest.TestCase.__repr__(self)}"
                                                          f"  parameter: {p}>")(param)
            cls = type(name, (base,), members)
            cls.__module__ = module.__name__
            setattr(module, name, cls)
            generated.append((cls, module.__name__, name))
    return _ParameterizedCases(generated)


def parameterize(*params, _ids=True):
    """A class decorator: one copy of the test class per dict in ``params``,
    with the dict's items as attributes (``self.shape``...). A
    unittest.TestCase becomes classes named ``TestX_param_0_{...}`` in its
    module; a plain pytest class is parametrized (``[_param_0_{...}]``
    ids). Use with :func:`product`."""

    def f(cls):
        if isinstance(cls, _ParameterizedCases) or (isinstance(cls, type)
                                                    and issubclass(cls, unittest.TestCase)):
            return _parameterize_unittest(cls, params)
        pytest = _pytest()
        if pytest is None:
            raise RuntimeError("gpuflow.testing.parameterize of a plain class needs pytest")
        mixin = _parameterize_mixin(pytest)
        if issubclass(cls, mixin):
            raise RuntimeError("do not `@testing.parameterize` twice")
        ids = [_param_name("", i, p) if _ids else str(i) for i, p in enumerate(params)]
        marked = [pytest.param(p, id=ident) for p, ident in zip(params, ids)]
        new = type(cls.__name__, (mixin, cls), {})
        new.__module__ = cls.__module__
        new.__qualname__ = cls.__qualname__
        return pytest.mark.parametrize("_gpuflow_testing_param", marked)(new)

    return f


_MIXIN = []


def _parameterize_mixin(pytest):
    """The base a parameterized plain class gets: an autouse fixture that
    sets the parameters as instance attributes (made once, on first use)."""
    if not _MIXIN:

        class ParameterizeMixin:
            def __repr__(self):
                return f"<{super().__repr__()}  parameter: {self.__dict__}>"

            @pytest.fixture(autouse=True)
            def _gpuflow_testing_parameterize(self, _gpuflow_testing_param):
                self.__dict__.update(_members(_gpuflow_testing_param))

        _MIXIN.append(ParameterizeMixin)
    return _MIXIN[0]


# ---- test marks (CuPy's attr marks) --------------------------------------------------------


def _mark(name):
    pytest = _pytest()
    return getattr(pytest.mark, name) if pytest is not None else (lambda target: target)


def gpu(target):
    """Marks a test as needing a device (pytest mark ``gpu``); gpuflow
    tests always have one, the server's."""
    return _mark("gpu")(target)


def slow(target):
    """Marks a slow test (pytest mark ``slow``; ``-m 'not slow'`` skips)."""
    return _mark("slow")(target)


def multi_gpu(gpu_num):
    """Marks a test as needing ``gpu_num`` devices; skipped where
    ``gpu_num > 1`` (a gpuflow session runs on one device)."""
    reason = f"needs {gpu_num} devices; a gpuflow session has one"
    pytest = _pytest()
    if pytest is not None:
        return pytest.mark.skipif(gpu_num > 1, reason=reason)
    return unittest.skipIf(gpu_num > 1, reason)


class NumpyError:
    """``with NumpyError(divide='ignore'):`` runs the block under
    ``numpy.seterr(**kw)``, restoring the previous settings after."""

    def __init__(self, **kw):
        self.kw = kw

    def __enter__(self):
        self.err = numpy.seterr(**self.kw)
        return self

    def __exit__(self, *exc):
        numpy.seterr(**self.err)


# ---- test bases for gpuflow's own versions of NumPy functions ------------------------------


class NumpyAliasTestBase(unittest.TestCase):
    """CuPy's base for tests of a function that has NumPy's name and
    signature: a subclass sets ``func`` (the name); ``cupy_func`` is
    gpuflow's function of that name, ``numpy_func`` numpy's."""

    @property
    def func(self):
        raise NotImplementedError()

    @property
    def cupy_func(self):
        return getattr(gpuflow, self.func)

    @property
    def numpy_func(self):
        return getattr(numpy, self.func)


class NumpyAliasBasicTestBase(NumpyAliasTestBase):
    """The function has numpy's signature and a docstring of its own (not
    numpy's object: a re-export of numpy's function fails)."""

    def test_argspec(self):
        assert inspect.signature(self.cupy_func) == inspect.signature(self.numpy_func)

    def test_docstring(self):
        doc = getattr(self.cupy_func, "__doc__", None)
        assert doc is not None and doc != ""
        assert doc is not self.numpy_func.__doc__


class NumpyAliasValuesTestBase(NumpyAliasTestBase):
    """``cupy_func(*self.args) == numpy_func(*self.args)``: a subclass (or
    its ``parameterize``) sets ``args``."""

    def test_values(self):
        assert self.cupy_func(*self.args) == self.numpy_func(*self.args)


# ---- requirements and random seeds ----------------------------------------------------------


def installed(*specifiers):
    """Whether the installed packages satisfy every specifier
    (``'numpy>=1.20'``)."""
    from packaging.requirements import Requirement

    for spec in specifiers:
        req = Requirement(spec)
        try:
            found = importlib.metadata.version(req.name)
        except importlib.metadata.PackageNotFoundError:
            return False
        if req.specifier and not req.specifier.contains(found, prereleases=True):
            return False
    return True


def numpy_satisfies(version_range):
    """Whether numpy's version is in ``version_range`` (``'>=1.24'``)."""
    return installed(f"numpy{version_range}")


def with_requires(*requirements):
    """Skips the test unless :func:`installed` of ``requirements``."""
    reason = f"requires: {','.join(requirements)}"
    pytest = _pytest()
    if pytest is not None:
        return pytest.mark.skipif(not installed(*requirements), reason=reason)
    return unittest.skipIf(not installed(*requirements), reason)


#: CuPy's other name for :func:`with_requires`.
requires = with_requires


def fix_random(seed=0):
    """Runs the decorated test function (or each test method of the
    decorated class) with numpy's and Python's global random states seeded
    with ``seed``, restoring them afterwards."""

    def wrap(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            np_state, py_state = numpy.random.get_state(), _random.getstate()
            numpy.random.seed(seed)
            _random.seed(seed)
            try:
                return f(*args, **kwargs)
            finally:
                numpy.random.set_state(np_state)
                _random.setstate(py_state)

        return wrapper

    def decorator(target):
        if isinstance(target, type):
            for k, v in list(vars(target).items()):
                if k.startswith("test") and callable(v):
                    setattr(target, k, wrap(v))
            return target
        return wrap(target)

    return decorator


__all__ = [
    "assert_allclose", "assert_almost_equal", "assert_approx_equal", "assert_array_almost_equal",
    "assert_array_almost_equal_nulp", "assert_array_equal", "assert_array_less",
    "assert_array_list_equal", "assert_array_max_ulp", "assert_equal", "assert_no_warnings",
    "assert_raises", "assert_raises_regex", "assert_string_equal", "assert_warns", "fix_random",
    "for_CF_orders", "for_all_dtypes", "for_all_dtypes_combination", "for_complex_dtypes",
    "for_contiguous_axes", "for_dtypes", "for_dtypes_combination", "for_float_dtypes",
    "for_int_dtypes", "for_int_dtypes_combination", "for_orders", "for_signed_dtypes",
    "for_signed_dtypes_combination", "for_unsigned_dtypes", "for_unsigned_dtypes_combination",
    "generate_matrix", "installed", "numpy_cupy_allclose", "numpy_cupy_array_almost_equal",
    "numpy_cupy_array_almost_equal_nulp", "numpy_cupy_array_equal", "numpy_cupy_array_less",
    "numpy_cupy_array_list_equal", "numpy_cupy_array_max_ulp", "numpy_cupy_equal",
    "numpy_cupy_raises", "numpy_satisfies", "parameterize", "product", "product_dict",
    "shaped_arange", "shaped_linspace", "shaped_random", "shaped_reverse_arange",
    "suppress_warnings", "with_requires",
    # CuPy's marks and helpers kept for its own test files (issue 23)
    "NumpyError", "gpu", "multi_gpu", "requires", "slow",
]
# The NumpyAlias*TestBase classes stay out of __all__: a star import would put
# them in a test module, where pytest collects (and runs) unittest classes.
