"""Comparing RemoteArrays with NumPy's results, shared by the CuPy
compatibility tests (test_cupy_*.py)."""

import numpy as np

import gpuflow as gf

# float16 results rounded once from float64 may sit a unit in the last place
# from NumPy's (computed in float32); transcendental functions differ by a few.
RTOL = {"float16": 2e-3, "float32": 1e-5, "float64": 1e-12, "complex64": 1e-5,
        "complex128": 1e-12}


def check_all(pairs, rtol=None, exact=False, atol=None, rtols=RTOL):
    """pairs: [(RemoteArray, numpy result)], evaluated in one Execute; the
    dtype and shape inferred client-side, the server's array and its values
    must all match NumPy's."""
    got = gf.evaluate(*(r for r, _ in pairs))
    for (remote, expected), value in zip(pairs, got):
        expected = np.asarray(expected)
        assert remote.dtype == expected.dtype, (remote, expected.dtype)
        assert remote.shape == expected.shape, (remote, expected.shape)
        assert value.dtype == expected.dtype and value.shape == expected.shape, (remote, value)
        if expected.dtype.kind in "fc" and not exact:
            tolerance = rtol or rtols[expected.dtype.name]
            floor = np.finfo(expected.dtype).tiny if atol is None else atol
            np.testing.assert_allclose(value, expected, rtol=tolerance, atol=floor,
                                       err_msg=repr(remote))
        else:
            np.testing.assert_array_equal(value, expected, err_msg=repr(remote))
