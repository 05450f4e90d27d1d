"""gpuflow.linalg.eig/eigvals (Hessenberg reduction and shifted QR,
gpuflow._eig) and gpuflow.roots against NumPy through the real server:
NumPy's result dtypes (real arrays for real input whose eigenvalues are
all real, conjugate pairs side by side otherwise), eigenvalues compared
sorted (neither orders them), eigenvectors by their residuals and unit
norms (and, where they are unique, against NumPy's up to a unit factor),
stacks, float32, complex input, defective and triangular matrices, empty
and 1x1 stacks, and NumPy's errors."""

import numpy as np
import pytest

import gpuflow as gf
from gpuflow import linalg
from gpuflow._eig import pair_conjugates

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

EPS = {np.dtype(np.float32): 1.2e-7, np.dtype(np.float64): 2.3e-16,
       np.dtype(np.complex64): 1.2e-7, np.dtype(np.complex128): 2.3e-16}


def rand(shape, dtype, seed=0):
    rs = np.random.RandomState(seed)
    a = rs.randn(*shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rs.randn(*shape)
    return a.astype(dtype)


def sort_eig(w):
    """Eigenvalues in a canonical order (rounded real parts, then imaginary)."""
    w = np.asarray(w)
    key = np.round(w.real, 6) + 0j
    order = np.lexsort((w.imag, key.real), axis=-1)
    return np.take_along_axis(w, order, axis=-1)


def check_eig(w, v, a, factor=200):
    """Residuals a v = v w and unit columns at a rounding level of a."""
    w, v = w.get(), v.get()
    eps = EPS[np.dtype(v.dtype)]
    scale = max(np.abs(a).max(), 1)
    resid = np.abs(a @ v - v * w[..., None, :]).max()
    assert resid <= factor * eps * scale * a.shape[-1], resid
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, atol=factor * eps)
    return w, v


def check_values(got, want, tol):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    scale = max(np.abs(want).max(), 1) if want.size else 1
    np.testing.assert_allclose(sort_eig(got), sort_eig(want), rtol=0, atol=tol * scale)


def check_real_structure(w):
    """dgeev's layout: real eigenvalues, or conjugate pairs side by side,
    the positive imaginary part first."""
    for lam in w.reshape(-1, w.shape[-1]):
        j = 0
        while j < lam.size:
            if lam[j].imag == 0:
                j += 1
                continue
            assert lam[j].imag > 0 and lam[j + 1] == np.conj(lam[j]), lam
            j += 2


@pytest.mark.parametrize("n", [2, 3, 6])
def test_eig_real_random_matches_numpy(session, n):
    # Seeds chosen so that both all-real spectra and conjugate pairs occur.
    for seed in range(3):
        a = rand((n, n), np.float64, seed)
        wn = np.linalg.eigvals(a)
        w, v = check_eig(*linalg.eig(session.asarray(a)), a)
        check_values(w, wn, 1e-12)
        check_real_structure(w)
        if w.dtype.kind == "c":
            pairs = w.imag != 0
            # A pair's vectors are conjugates; a real eigenvalue's is real.
            assert np.all(v[:, ~pairs].imag == 0)
        check_values(linalg.eigvals(session.asarray(a)).get(), wn, 1e-12)


def test_eig_result_is_a_namedtuple_with_numpy2_fields(session):
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    result = linalg.eig(session.asarray(a))
    assert type(result).__name__ == "EigResult"
    assert result._fields == ("eigenvalues", "eigenvectors")
    w, v = result
    assert w is result.eigenvalues and v is result.eigenvectors
    np.testing.assert_allclose(sorted(w.get()), sorted(np.linalg.eigvals(a)), atol=1e-14)


def test_eig_symmetric_and_rotation(session):
    a = rand((5, 5), np.float64, 3)
    sym = a + a.T
    w, v = check_eig(*linalg.eig(session.asarray(sym)), sym)
    assert w.dtype == v.dtype == np.linalg.eigvals(sym).dtype
    assert np.all(w.imag == 0) and np.all(v.imag == 0)
    np.testing.assert_allclose(np.sort(w), np.linalg.eigvalsh(sym), atol=1e-13)
    # Orthonormal eigenvectors: NumPy's up to sign for distinct eigenvalues.
    np.testing.assert_allclose(v.T @ v, np.eye(5), atol=1e-12)
    rot = np.array([[0.0, -1.0], [1.0, 0.0]])
    w, v = linalg.eig(session.asarray(rot))
    wn, vn = np.linalg.eig(rot)
    np.testing.assert_allclose(w.get(), wn, rtol=0, atol=1e-15)  # [i, -i], that order
    np.testing.assert_allclose(np.abs(np.sum(v.get().conj() * vn, axis=0)), 1, atol=1e-14)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_eig_complex_matches_numpy_vectors_up_to_rounding(session, dtype):
    a = rand((2, 4, 4), dtype, 5)
    w, v = check_eig(*linalg.eig(session.asarray(a)), a.astype(np.complex128))
    wn, vn = np.linalg.eig(a)
    assert w.dtype == wn.dtype and v.dtype == vn.dtype
    tol = 1e-4 if dtype == np.complex64 else 1e-12
    check_values(w, wn, tol)
    # Distinct eigenvalues: each vector is NumPy's (zgeev's normalisation:
    # unit norm, largest component real and positive).
    for b in range(2):
        for j in range(4):
            k = np.argmin(np.abs(wn[b] - w[b, j]))
            np.testing.assert_allclose(v[b, :, j], vn[b, :, k], atol=20 * tol)
            top = np.argmax(np.abs(v[b, :, j]))
            assert v[b, top, j].imag == 0 and v[b, top, j].real > 0


def test_eig_float32_and_stacks(session):
    # A stack in which one matrix has complex eigenvalues makes all complex.
    a = np.stack([np.diag([1.0, 2.0, 3.0]) + np.triu(np.ones((3, 3)), 1),
                  [[0.0, -2.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 1.0]]])
    a = np.stack([a, a[::-1] * 2])  # (2, 2, 3, 3)
    for dtype, tol in ((np.float32, 2e-5), (np.float64, 1e-13)):
        x = a.astype(dtype)
        w, v = check_eig(*linalg.eig(session.asarray(x)), x.astype(np.float64))
        wn, vn = np.linalg.eig(x)
        assert w.dtype == wn.dtype and v.dtype == vn.dtype, (w.dtype, wn.dtype)
        check_values(w, wn, tol)
        check_real_structure(w)
        # All real: real arrays, as NumPy's.
        w0 = linalg.eigvals(session.asarray(x[0, 0]))
        assert w0.dtype == np.linalg.eigvals(x[0, 0]).dtype
        assert np.all(w0.get().imag == 0)
        check_values(w0.get(), np.linalg.eigvals(x[0, 0]), tol)
    a = rand((3, 5, 5), np.float32, 7)
    w, v = check_eig(*linalg.eig(session.asarray(a)), a.astype(np.float64))
    check_values(w, np.linalg.eigvals(a), 2e-5)


def test_eig_triangular_defective_and_cyclic(session):
    # Triangular: the diagonal, exactly.
    t = np.triu(rand((5, 5), np.float64, 2))
    w, _ = check_eig(*linalg.eig(session.asarray(t)), t)
    np.testing.assert_allclose(np.sort(w), np.sort(np.diag(t)), atol=1e-14)
    # A Jordan block under a similarity: eigenvalues to about eps^(1/3);
    # making them one real and a conjugate pair moves them by their
    # rounding (~1e-8 here), and the residuals with them.
    rs = np.random.RandomState(1)
    s = rs.randn(3, 3) + 3 * np.eye(3)
    j = np.array([[2.0, 1.0, 0.0], [0.0, 2.0, 1.0], [0.0, 0.0, 2.0]])
    a = s @ j @ np.linalg.inv(s)
    w, v = check_eig(*linalg.eig(session.asarray(a)), a, factor=1e9)
    np.testing.assert_allclose(w, 2, atol=1e-4)
    check_real_structure(w)
    # The cyclic permutation (the Wilkinson shift alone stalls on it; the
    # exceptional shift breaks the cycle): the cube roots of unity.
    p = np.roll(np.eye(3), 1, axis=0)
    w, v = check_eig(*linalg.eig(session.asarray(p)), p)
    check_values(w, np.linalg.eigvals(p), 1e-13)
    check_real_structure(w)
    # A zero matrix and a nilpotent one.
    z = np.zeros((3, 3))
    w, v = check_eig(*linalg.eig(session.asarray(z)), z)
    assert w.dtype == np.linalg.eigvals(z).dtype and np.all(w == 0)
    nil = np.diag([1.0, 1.0], 1)
    w, _ = check_eig(*linalg.eig(session.asarray(nil)), nil)
    np.testing.assert_allclose(w, 0, atol=1e-5)


def test_eig_ints_bool_empty_and_one_by_one(session):
    a = np.array([[1, 2], [3, 4]], np.int32)
    w, v = check_eig(*linalg.eig(session.asarray(a)), a.astype(np.float64))
    assert w.dtype == v.dtype == np.linalg.eig(a)[0].dtype
    check_values(w, np.linalg.eigvals(a), 1e-13)
    b = np.eye(2, dtype=bool)
    assert linalg.eigvals(session.asarray(b)).get().tolist() == [1.0, 1.0]
    for shape, dtype in (((0, 0), np.float64), ((2, 0, 0), np.float32), ((0, 3, 3), np.float64),
                         ((0, 0), np.complex64), ((2, 1, 1), np.float32),
                         ((1, 1), np.complex128), ((1, 1), np.int64)):
        x = rand(shape, dtype, 4) if np.dtype(dtype).kind != "i" else np.full(shape, 7, dtype)
        wn, vn = np.linalg.eig(x)
        w, v = linalg.eig(session.asarray(x))
        for got, want in ((w.get(), wn), (v.get(), vn), (linalg.eigvals(session.asarray(x)).get(),
                                                         wn)):
            assert got.dtype == want.dtype and got.shape == want.shape, (shape, got.dtype,
                                                                        want.dtype)
            np.testing.assert_allclose(got, want, atol=1e-6)


def test_eig_errors_as_numpy(session):
    with pytest.raises(linalg.LinAlgError, match="must be square"):
        linalg.eig(session.asarray(np.ones((2, 3))))
    with pytest.raises(linalg.LinAlgError, match="at least two-dimensional"):
        linalg.eigvals(session.asarray(np.ones(3)))
    with pytest.raises(TypeError, match="float16 is unsupported"):
        linalg.eig(session.asarray(np.ones((2, 2), np.float16)))
    for bad in (np.nan, np.inf):
        for n in (1, 3):
            a = np.eye(n)
            a[0, -1] = bad
            with pytest.raises(linalg.LinAlgError, match="must not contain infs or NaNs"):
                np.linalg.eig(a)
            with pytest.raises(linalg.LinAlgError, match="must not contain infs or NaNs"):
                linalg.eig(session.asarray(a))
            with pytest.raises(linalg.LinAlgError, match="must not contain infs or NaNs"):
                linalg.eigvals(session.asarray(a))


@pytest.mark.parametrize("always_complex", [False, True])
def test_eig_result_dtype_follows_numpys_rule(session, monkeypatch, always_complex):
    # Real input with a real spectrum: real arrays where NumPy's eig returns
    # them (NumPy < 2.5), complex ones with exactly zero imaginary parts and
    # real vectors where it always returns complex (NumPy 2.5), whichever
    # NumPy runs here; complex pairs are complex either way. roots stays
    # real for real roots (numpy.roots' rule) in both.
    monkeypatch.setattr(linalg, "_numpy_eig_always_complex", lambda: always_complex)
    real_spectrum = np.array([[1.0, 2.0], [3.0, 4.0]])
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    for x, dtype in ((real_spectrum, np.float64), (real_spectrum, np.float32),
                     (np.full((2, 1, 1), 7.0), np.float64), (np.zeros((0, 3, 3)), np.float32),
                     (np.array([[1, 2], [3, 4]]), np.int64)):
        x = x.astype(dtype)
        w, v = linalg.eig(session.asarray(x))
        ev = linalg.eigvals(session.asarray(x))
        single = dtype == np.float32
        want = (np.complex64 if single else np.complex128) if always_complex else (
            np.float32 if single else np.float64)
        assert w.dtype == v.dtype == ev.dtype == want, (x.shape, dtype, w.dtype)
        w, v = w.get(), v.get()
        assert np.all(w.imag == 0) and np.all(v.imag == 0)
        check_values(ev.get(), np.linalg.eigvals(x).astype(want), 1e-5)
    w = linalg.eigvals(session.asarray(rotation))
    assert w.dtype == np.complex128
    np.testing.assert_allclose(w.get(), [1j, -1j], atol=1e-15)
    roots = gf.roots(session.asarray(np.array([1.0, -3.0, 2.0])))
    assert roots.dtype == np.float64
    np.testing.assert_allclose(np.sort(roots.get()), [1.0, 2.0], atol=1e-12)


# ---- roots ------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [[1, -3, 2], [1, 0, 1], [2.0, -1.0, 0.5, 3.0, -2.0],
                               [0, 0, 1, 2, 0, 0], [0, 3, 0], [1, 0, 0], [5], [0, 4],
                               [1, 1j, -2], [1e-3, 1.0, 1.0]])
def test_roots_matches_numpy(session, p):
    want = np.roots(p)
    got = gf.roots(session.asarray(np.asarray(p)))
    value = got.get() if isinstance(got, gf.RemoteArray) else np.asarray(got)
    assert value.dtype == want.dtype and value.shape == want.shape, (value.dtype, want.dtype)
    np.testing.assert_allclose(sort_eig(value), sort_eig(want), atol=1e-10)
    # A list (no session given: the current one).
    listed = gf.roots(p).get()
    np.testing.assert_allclose(sort_eig(listed), sort_eig(want), atol=1e-10)


def test_roots_dtypes_empty_and_errors(session):
    p32 = np.array([1, -3, 2], np.float32)
    got = gf.roots(session.asarray(p32)).get()
    assert got.dtype == np.roots(p32).dtype == np.float32
    for p in ([], [0, 0], [0]):
        want = np.roots(p)
        got = gf.roots(session.asarray(np.asarray(p, np.float64))).get()
        assert got.dtype == want.dtype and got.shape == want.shape == (0,)
    with pytest.raises(ValueError, match="rank-1"):
        gf.roots(session.asarray(np.ones((2, 2))))
    with pytest.raises(TypeError, match="float16 is unsupported"):
        gf.roots(session.asarray(np.array([1, 2], np.float16)))


# ---- the client's real/complex decision (gpuflow._eig.pair_conjugates) ------------------


def noisy(lam, level, eps, seed):
    """lam with noise of ``level`` eps ||lam|| in both parts, as complex
    arithmetic on another backend (float32 accumulation, other sums'
    orders) leaves on a real matrix's eigenvalues."""
    rng = np.random.default_rng(seed)
    scale = np.sqrt(np.sum(np.abs(lam) ** 2, axis=-1))
    noise = rng.standard_normal(lam.shape) + 1j * rng.standard_normal(lam.shape)
    return lam + level * eps * scale[..., None] * noise, scale


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("level", [0, 1, 10, 20])
def test_pair_conjugates_real_spectra_with_rounding_noise_stay_real(dtype, level):
    # Distinct, repeated (the identity's, a double and a triple root) and
    # 1x1 real spectra: every eigenvalue real, its imaginary part exactly 0.
    eps = float(np.finfo(np.float32 if dtype == np.complex64 else np.float64).eps)
    for lam in ([1.0, 2.0, 3.0], [1.0, 1.0], [2.0, 2.0, 5.0], [7.0, 7.0, 7.0, -1.0], [7.0],
                [-0.372, 5.372], [0.0, 0.0, 0.0]):
        lam = np.asarray(lam, np.complex128)
        for seed in range(20):
            w, scale = noisy(lam, level, eps, seed)
            scale = np.maximum(scale, 1)
            values, src, conj, real = pair_conjugates(w.astype(dtype)[None], scale[None], eps)
            assert real.all() and not conj.any(), (lam, level, seed, w)
            assert np.all(values.imag == 0)
            np.testing.assert_allclose(np.sort(values.real[0]), np.sort(lam.real),
                                       atol=10 * level * eps * scale + 1e-300)


@pytest.mark.parametrize("level", [0, 1, 20])
def test_pair_conjugates_makes_noisy_pairs_exact_conjugates(level):
    # Conjugate pairs (small and large imaginary parts) next to real
    # eigenvalues, in a stack: pairs side by side, positive imaginary part
    # first, exact conjugates; the real ones exactly real.
    eps = float(np.finfo(np.float64).eps)
    lam = np.array([[2j, 1.0, -2j, 3.0], [0.5 - 1e-3j, 4.0, 0.5 + 1e-3j, 4.0]])
    for seed in range(20):
        w, scale = noisy(lam, level, eps, seed)
        values, src, conj, real = pair_conjugates(w, scale, eps)
        check_real_structure(values)
        for b in range(2):
            got = values[b]
            assert np.sum(got.imag != 0) == 2 and np.sum(real[b]) == 2
            np.testing.assert_allclose(sort_eig(got), sort_eig(lam[b]), atol=1e-12)
            # src/conj/real: where each output came from.
            back = np.where(conj[b], np.conj(w[b][src[b]]), w[b][src[b]])
            back = np.where(real[b], back.real, back)
            np.testing.assert_allclose(back, got, atol=1e-12)
