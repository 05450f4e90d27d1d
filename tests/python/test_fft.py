"""gpuflow.fft against numpy.fft, through the real server
(GPUFLOW_TEST_BACKEND=cuda runs it unchanged): every function, sizes with
one to three factors and primes (Bluestein), batched inputs along each axis,
every norm, n= / s= crops and pads, empty batches, out=, the dtypes NumPy 2
and CuPy give, and NumPy's errors.

NumPy 1.24 computes every transform in complex128: values are compared with
it relative to the largest magnitude (1e-5 for single precision, 1e-12 for
double), and the dtype rule is asserted on its own.
"""

import math

import numpy as np
import pytest

import gpuflow as gf
from gpuflow import fft as gfft

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

AxisError = np.exceptions.AxisError if hasattr(np, "exceptions") else np.AxisError
RNG = np.random.default_rng(23)
SIZES = [1, 2, 3, 5, 7, 8, 12, 16, 17, 64, 97, 100, 128, 1000, 4096]
NORMS = [None, "backward", "ortho", "forward"]
SINGLE = ("float16", "float32", "complex64", "bfloat16")


def complex_dtype(dtype):
    """The dtype NumPy 2 and CuPy give a complex transform of ``dtype``."""
    return np.dtype("complex64" if np.dtype(dtype).name in SINGLE else "complex128")


def real_dtype(dtype):
    return np.dtype("float32" if complex_dtype(dtype) == np.complex64 else "float64")


def data(shape, dtype="complex128"):
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    if dtype.kind == "f":
        return RNG.standard_normal(shape).astype(dtype)
    if dtype.kind == "b":
        return RNG.integers(0, 2, shape).astype(bool)
    return RNG.integers(0, 50, shape).astype(dtype)


def check(pairs, dtype=None):
    """[(RemoteArray, numpy.fft result, expected dtype)], evaluated in one
    Execute: the dtype, the shape and the values (relative to the largest
    magnitude of the expected array) must match."""
    got = gf.evaluate(*(r for r, _, _ in pairs))
    for (remote, want, want_dtype), value in zip(pairs, got):
        want = np.asarray(want)
        assert remote.dtype == want_dtype and value.dtype == want_dtype, (remote, want_dtype)
        assert remote.shape == want.shape and value.shape == want.shape, (remote, want.shape)
        tol = 1e-5 if want_dtype in (np.complex64, np.float32) else 1e-12
        scale = max(float(np.abs(want).max(initial=0.0)), 1e-30)
        err = float(np.abs(value - want).max(initial=0.0)) / scale
        assert err <= tol, (remote, err)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_fft_and_ifft_match_numpy_for_every_size(session, dtype):
    pairs = []
    for n in SIZES:
        x_np = data((3, n), dtype)
        x = session.asarray(x_np)
        pairs += [(gfft.fft(x), np.fft.fft(x_np), np.dtype(dtype)),
                  (gfft.ifft(x), np.fft.ifft(x_np), np.dtype(dtype))]
    check(pairs)


@pytest.mark.parametrize("n", [1 << 16, 65537, 2 * 1009])
def test_large_transforms_match_numpy(session, n):
    # 2^16: three factors; 65537 (prime) and 2 * 1009: Bluestein.
    x_np = data(n)
    x = session.asarray(x_np)
    check([(gfft.fft(x), np.fft.fft(x_np), np.complex128),
           (gfft.ifft(x.astype(np.complex64)), np.fft.ifft(x_np), np.complex64),
           (gfft.rfft(x.real), np.fft.rfft(x_np.real), np.complex128)])


def test_fft_of_2_16_is_one_execute_of_three_matmuls(session):
    x = session.asarray(data(1 << 16, "complex64"))
    result = gf.evaluate(gfft.fft(x), profile=True)
    kinds = [step.kind for step in result.timings.steps]
    assert kinds.count("matmul") == 3, kinds
    assert len(kinds) <= 10, kinds


def test_large_constants_upload_once_per_session(client):
    # 65537 points: Bluestein's chirp and kernel are over 64 KiB, uploaded
    # the first time and read from the session after.
    x_np = data(65537)
    with client.session() as s:
        x = s.asarray(x_np)
        first = gfft.fft(x)
        count = len(s.list())
        second = gfft.fft(x * 2)
        assert len(s.list()) == count
        check([(first, np.fft.fft(x_np), np.complex128),
               (second, np.fft.fft(x_np * 2), np.complex128)])
    with client.session() as s:  # a new session uploads its own
        check([(gfft.fft(s.asarray(x_np)), np.fft.fft(x_np), np.complex128)])


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 12, 17, 97, 100, 128, 1000])
def test_real_transforms_match_numpy(session, n):
    x_np = data((2, n), "float64")
    z_np = data((2, n // 2 + 1), "complex128")
    x, z = session.asarray(x_np), session.asarray(z_np)
    pairs = [(gfft.rfft(x), np.fft.rfft(x_np), np.complex128),
             (gfft.ihfft(x), np.fft.ihfft(x_np), np.complex128),
             (gfft.irfft(z, n), np.fft.irfft(z_np, n), np.float64),
             (gfft.hfft(z, n), np.fft.hfft(z_np, n), np.float64)]
    if n > 1:
        pairs += [(gfft.irfft(z), np.fft.irfft(z_np), np.float64),
                  (gfft.hfft(z), np.fft.hfft(z_np), np.float64)]
    check(pairs)


@pytest.mark.parametrize("norm", NORMS)
def test_every_norm_matches_numpy(session, norm):
    x_np = data((2, 12))
    r_np = x_np.real.copy()
    x, r = session.asarray(x_np), session.asarray(r_np)
    f = np.fft
    pairs = [(gfft.fft(x, norm=norm), f.fft(x_np, norm=norm), np.complex128),
             (gfft.ifft(x, norm=norm), f.ifft(x_np, norm=norm), np.complex128),
             (gfft.fft(x, 97, norm=norm), f.fft(x_np, 97, norm=norm), np.complex128),
             (gfft.rfft(r, norm=norm), f.rfft(r_np, norm=norm), np.complex128),
             (gfft.irfft(x, norm=norm), f.irfft(x_np, norm=norm), np.float64),
             (gfft.hfft(x, norm=norm), f.hfft(x_np, norm=norm), np.float64),
             (gfft.ihfft(r, norm=norm), f.ihfft(r_np, norm=norm), np.complex128),
             (gfft.fft2(x, norm=norm), f.fft2(x_np, norm=norm), np.complex128),
             (gfft.ifftn(x, norm=norm), f.ifftn(x_np, norm=norm), np.complex128),
             (gfft.rfftn(r, norm=norm), f.rfftn(r_np, norm=norm), np.complex128),
             (gfft.irfftn(x, norm=norm), f.irfftn(x_np, norm=norm), np.float64)]
    check(pairs)


def test_n_crops_and_zero_pads(session):
    x_np = data((3, 10))
    r_np = x_np.real.copy()
    x, r = session.asarray(x_np), session.asarray(r_np)
    f = np.fft
    pairs = []
    for n in (1, 4, 7, 10, 16, 17, 100):
        pairs += [(gfft.fft(x, n), f.fft(x_np, n), np.complex128),
                  (gfft.ifft(x, n, axis=0), f.ifft(x_np, n, axis=0), np.complex128),
                  (gfft.rfft(r, n), f.rfft(r_np, n), np.complex128),
                  (gfft.irfft(x, n), f.irfft(x_np, n), np.float64),
                  (gfft.hfft(x, n), f.hfft(x_np, n), np.float64),
                  (gfft.ihfft(r, n), f.ihfft(r_np, n), np.complex128)]
    check(pairs)


@pytest.mark.parametrize("shape", [(4, 6, 5), (97, 3, 2), (3, 130, 4), (130, 2), (4096, 3)])
def test_batched_transforms_along_each_axis(session, shape):
    x_np = data(shape)
    r_np = x_np.real.copy()
    x, r = session.asarray(x_np), session.asarray(r_np)
    f = np.fft
    pairs = []
    for axis in range(-len(shape), len(shape)):
        pairs += [(gfft.fft(x, axis=axis), f.fft(x_np, axis=axis), np.complex128),
                  (gfft.ifft(x, axis=axis), f.ifft(x_np, axis=axis), np.complex128),
                  (gfft.rfft(r, axis=axis), f.rfft(r_np, axis=axis), np.complex128),
                  (gfft.irfft(x, axis=axis), f.irfft(x_np, axis=axis), np.float64)]
    check(pairs)


@pytest.mark.parametrize("dtype", ["complex64", "float32", "float16"])
def test_single_precision_along_each_axis(session, dtype):
    x_np = data((5, 100, 3), dtype)
    x = session.asarray(x_np)
    pairs = [(gfft.fft(x, axis=a), np.fft.fft(x_np, axis=a), np.complex64) for a in range(3)]
    check(pairs)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int32", "int64", "float16", "float32",
                                   "float64", "complex64", "complex128"])
def test_dtypes_are_numpy2s(session, dtype):
    x = session.asarray(data((2, 9), dtype))
    c, r = complex_dtype(dtype), real_dtype(dtype)
    # float16 transforms in float32 (complex64 out, as NumPy 2's dtypes):
    # the reference from the same values in float32, whatever precision the
    # NumPy beside us computes float16 in.
    x_np = x.get().astype(np.float32) if dtype == "float16" else x.get()
    pairs = [(gfft.fft(x), np.fft.fft(x_np), c), (gfft.ifft(x), np.fft.ifft(x_np), c),
             (gfft.fftn(x), np.fft.fftn(x_np), c),
             (gfft.irfft(x), np.fft.irfft(x_np), r), (gfft.hfft(x), np.fft.hfft(x_np), r),
             (gfft.irfftn(x), np.fft.irfftn(x_np), r)]
    if np.dtype(dtype).kind != "c":
        pairs += [(gfft.rfft(x), np.fft.rfft(x_np), c), (gfft.ihfft(x), np.fft.ihfft(x_np), c),
                  (gfft.rfft2(x), np.fft.rfft2(x_np), c)]
    check(pairs)


def test_bfloat16_transforms_in_complex64(session):
    x_np = data(24, "float32")
    x = session.asarray(x_np, dtype="bfloat16")
    rounded = gf.bfloat16_to_float32(x.get())
    check([(gfft.fft(x), np.fft.fft(rounded), np.complex64),
           (gfft.rfft(x), np.fft.rfft(rounded), np.complex64)])


@pytest.mark.parametrize("fn", [gfft.rfft, gfft.ihfft, gfft.rfftn, gfft.rfft2])
def test_real_transforms_of_complex_input_raise_type_error(session, fn):
    z = session.asarray(data((2, 4)))
    with pytest.raises(TypeError, match="not supported for the input types"):
        fn(z)


def test_nd_transforms_match_numpy(session):
    x_np = data((3, 4, 6))
    r_np = x_np.real.copy()
    x, r = session.asarray(x_np), session.asarray(r_np)
    f = np.fft
    c = np.complex128
    pairs = [(gfft.fft2(x), f.fft2(x_np), c), (gfft.ifft2(x), f.ifft2(x_np), c),
             (gfft.fftn(x), f.fftn(x_np), c), (gfft.ifftn(x), f.ifftn(x_np), c),
             (gfft.fftn(x, axes=(0, 2)), f.fftn(x_np, axes=(0, 2)), c),
             (gfft.fftn(x, s=(5, 3)), f.fftn(x_np, s=(5, 3)), c),
             (gfft.fftn(x, s=(2, 7), axes=(2, 0)), f.fftn(x_np, s=(2, 7), axes=(2, 0)), c),
             (gfft.fftn(x, axes=(1, 1)), f.fftn(x_np, axes=(1, 1)), c),
             (gfft.ifft2(x, s=(8, 3), axes=(0, 1)), f.ifft2(x_np, s=(8, 3), axes=(0, 1)), c),
             (gfft.rfft2(r), f.rfft2(r_np), c), (gfft.rfftn(r), f.rfftn(r_np), c),
             (gfft.rfftn(r, s=(5, 9)), f.rfftn(r_np, s=(5, 9)), c),
             (gfft.rfftn(r, axes=(2, 0)), f.rfftn(r_np, axes=(2, 0)), c),
             (gfft.irfft2(x), f.irfft2(x_np), np.float64),
             (gfft.irfftn(x), f.irfftn(x_np), np.float64),
             (gfft.irfftn(x, s=(3, 5, 7)), f.irfftn(x_np, s=(3, 5, 7)), np.float64),
             (gfft.irfftn(x, axes=(0, 1)), f.irfftn(x_np, axes=(0, 1)), np.float64),
             (gfft.irfft2(x, s=(4, 11)), f.irfft2(x_np, s=(4, 11)), np.float64),
             # NumPy 2: -1 or None in s keeps the axis's length.
             (gfft.fftn(x, s=(-1, 5), axes=(0, 1)), f.fftn(x_np, s=(3, 5), axes=(0, 1)), c),
             (gfft.rfftn(r, s=(None, 4), axes=(1, 2)), f.rfftn(r_np, s=(4, 4), axes=(1, 2)), c),
             (gfft.irfftn(x, s=(-1, -1), axes=(0, 2)), f.irfftn(x_np, s=(3, 6), axes=(0, 2)),
              np.float64)]
    check(pairs)


def test_empty_batches_and_padded_empty_axes(session):
    f = np.fft
    e_np = np.zeros((0, 8), np.complex64)
    e = session.asarray(e_np)
    z_np = np.zeros((3, 0))
    z = session.asarray(z_np)
    c64, c128 = np.complex64, np.complex128
    check([(gfft.fft(e), f.fft(e_np), c64), (gfft.ifft(e, 5), f.ifft(e_np, 5), c64),
           (gfft.rfft(e.real), f.rfft(e_np.real), c64),
           (gfft.irfft(e), f.irfft(e_np), np.float32),
           (gfft.fft(e, axis=0, n=3), f.fft(e_np, axis=0, n=3), c64),
           (gfft.fft2(session.asarray(np.zeros((0, 4, 4)))), f.fft2(np.zeros((0, 4, 4))), c128),
           (gfft.fft(z, 4), f.fft(z_np, 4), c128), (gfft.irfft(z, 6), f.irfft(z_np, 6),
                                                      np.float64)])


def test_numpy_input_uses_the_current_session(session):
    x_np = data(16)
    check([(gfft.fft(x_np), np.fft.fft(x_np), np.complex128)])


def test_out_rebinds_the_array(session):
    x_np = data((2, 8))
    x = session.asarray(x_np)
    out = gf.zeros((2, 8), np.complex64, session=session)
    result = gfft.fft(x, out=out)
    assert result is out and out.dtype == np.complex64
    check([(out, np.fft.fft(x_np), np.complex64)])
    real_out = gf.zeros((2, 14), np.float64, session=session)
    gfft.irfft(x, out=real_out)
    check([(real_out, np.fft.irfft(x_np), np.float64)])
    with pytest.raises(ValueError, match="shape"):
        gfft.fft(x, 4, out=out)
    with pytest.raises(TypeError):
        gfft.irfft(x, out=gf.zeros((2, 14), np.int64, session=session))


def test_errors_are_numpys(session):
    x = session.asarray(data((2, 4)))
    r = x.real
    for fn in (gfft.fft, gfft.ifft, gfft.irfft, gfft.hfft):
        with pytest.raises(ValueError, match=r"Invalid number of FFT data points \(0\) specified"):
            fn(x, 0)
        with pytest.raises(ValueError, match=r"Invalid number of FFT data points \(-3\)"):
            fn(x, -3)
    with pytest.raises(ValueError, match=r"Invalid number of FFT data points \(0\)"):
        gfft.rfft(r, 0)
    with pytest.raises(ValueError, match=r"Invalid number of FFT data points \(0\)"):
        gfft.irfft(session.asarray(np.ones((2, 1), complex)))  # default n = 2 * (1 - 1)
    with pytest.raises(ValueError, match=r"Invalid number of FFT data points \(0\)"):
        gfft.fft(session.asarray(np.ones((2, 0), complex)))
    for fn in (gfft.fft, gfft.ifft, gfft.irfft, gfft.hfft, gfft.fft2, gfft.fftn):
        with pytest.raises(ValueError, match="Invalid norm value bad"):
            fn(x, norm="bad")
    for fn in (gfft.rfft, gfft.ihfft, gfft.rfftn):
        with pytest.raises(ValueError, match="Invalid norm value"):
            fn(r, norm="bad")
    for fn in (gfft.fft, gfft.rfft, gfft.irfft, gfft.ihfft):
        with pytest.raises(AxisError):
            fn(r, axis=2)
        with pytest.raises(AxisError):
            fn(r, axis=-3)
    with pytest.raises(AxisError):
        gfft.fft(session.asarray(np.complex128(1)))
    with pytest.raises(AxisError):
        gfft.fftn(x, axes=(0, 5))
    for fn in (gfft.fftn, gfft.ifftn, gfft.rfftn, gfft.irfftn, gfft.fft2, gfft.irfft2):
        with pytest.raises(ValueError, match="Shape and axes have different lengths"):
            fn(r, s=(2,), axes=(0, 1))


@pytest.mark.parametrize("n", [1, 2, 7, 8, 33])
def test_fftfreq_and_rfftfreq(session, n):
    for d in (1.0, 0.1, 3):
        a, b = gfft.fftfreq(n, d), gfft.rfftfreq(n, d=d)
        assert a.dtype == np.float64 and b.dtype == np.float64
        np.testing.assert_array_equal(a.get(), np.fft.fftfreq(n, d))
        np.testing.assert_array_equal(b.get(), np.fft.rfftfreq(n, d))


def test_fftshift_and_ifftshift(session):
    for shape in [(7,), (8,), (3, 4), (5, 2, 3), (0, 3)]:
        x_np = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
        x = session.asarray(x_np)
        axes_list = [None, 0, -1, (0,), (0, -1), [1, 0, 1]] if len(shape) > 1 else [None, 0, -1]
        for axes in axes_list:
            for g, f in ((gfft.fftshift, np.fft.fftshift), (gfft.ifftshift, np.fft.ifftshift)):
                got = g(x, axes)
                want = f(x_np, axes)
                assert got.dtype == want.dtype and got.shape == want.shape
                np.testing.assert_array_equal(got.get(), want)
    y_np = np.fft.fftfreq(10)
    np.testing.assert_array_equal(
        gfft.ifftshift(gfft.fftshift(session.asarray(y_np))).get(), y_np)


def test_round_trips_recover_the_input(session):
    x_np = data((4, 97), "float32")
    x = session.asarray(x_np)
    back = gfft.irfft(gfft.rfft(x), 97)
    assert back.dtype == np.float32
    np.testing.assert_allclose(back.get(), x_np, atol=1e-5)
    z = gfft.ifftn(gfft.fftn(x.astype(np.complex128)))
    np.testing.assert_allclose(z.get(), x_np, atol=1e-12)


def test_gpuflow_fft_is_the_module():
    assert gf.fft is gfft
    assert set(gfft.__all__) >= {"fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2",
                                 "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn",
                                 "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"}
