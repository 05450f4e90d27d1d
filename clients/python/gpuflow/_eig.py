"""The general (non-Hermitian) eigenproblem behind gpuflow.linalg.eig and
eigvals, composed of the server's ops as the rest of gpuflow.linalg:

    w, v = gf.linalg.eig(a)      # a: (..., n, n), real or complex
    w = gf.linalg.eigvals(a)

The whole stack goes through each graph. In complex arithmetic (real
input too, as complex with zero imaginary parts):

1. Householder reduction to upper Hessenberg form H = Z^H A Z, n - 2
   reflections (each two rank-one updates of H and one of Z);
2. the single-shift QR algorithm on H: each iteration rotates the
   adjacent rows k, k + 1 of [H | I] (k = 0 .. n - 2, one Givens rotation
   of H - mu I per step) into [P H | P] and forms H := P H P^H and
   Z := Z P^H with two matmuls. Every iteration first sets subdiagonal
   entries below LAPACK's (zlahqr's) threshold ulp (|h_kk| + |h_k+1,k+1|)
   to zero and takes mu, the Wilkinson shift, from the 2x2 block at the
   bottom of the lowest unreduced block of each matrix (an exceptional
   shift every 10 iterations without a deflation, as zlahqr). Rotations
   across a zero subdiagonal are exactly the identity, so converged parts
   stay as they are and the top blocks get a (valid) QR step too. One
   Execute every ``_ITERATIONS_PER_EXECUTE(n)`` iterations reads whether
   every subdiagonal of the stack is zero;
3. eigenvectors (eig): back substitution on the triangular Schur form T
   (one row of all the columns per step, denominators below ulp ||T||
   replaced by it as LAPACK's ztrevc; columns rescaled so that nothing
   overflows), times Z, normalised to unit 2-norm with the largest
   component real and positive (zgeev's convention).

For real input NumPy returns real arrays when every eigenvalue is real and
conjugate pairs otherwise, which real (LAPACK's dgeev) arithmetic gives
exactly. Here one more Execute downloads the eigenvalues and the client
pairs them: an eigenvalue with an imaginary part at the rounding level of
the matrix, or whose conjugate no other eigenvalue is close to, is real
(its imaginary part dropped, its vector made real); the others pair up
with the eigenvalue nearest their conjugate and become exact conjugates
(the one with the positive imaginary part first, the pair side by side, as
dgeev's), their vectors conjugates of each other.
"""

import numpy as np

from gpuflow import _inference


def _f():
    from gpuflow import functions

    return functions


def _la():
    from gpuflow import linalg

    return linalg


def _cabs1(z):
    return abs(z.real) + abs(z.imag)


def _iterations_per_execute(n):
    # About 2 to 4 QR iterations per eigenvalue in all; reading the
    # convergence flag every n iterations keeps the Executes few and the
    # iterations run after convergence (exact no-ops) fewer than n.
    return max(4, n)


def _max_iterations(n):
    return 30 * max(10, n)  # zlahqr's ITMAX


class _State:
    """The arrays of a loop, stored on the server together when the graph
    would grow past the server's limit (see linalg._chunk)."""

    def __init__(self, session, **arrays):
        self.arrays = arrays
        self.steps = 0
        self.chunk = _la()._chunk(session, "eig")

    def step(self, count=1):
        self.steps += count
        if self.steps >= self.chunk:
            self.store()

    def store(self, download=()):
        names = [k for k, v in self.arrays.items() if v is not None]
        stored, values = _la()._store([self.arrays[k] for k in names], list(download))
        self.arrays.update(zip(names, stored))
        self.steps = 0
        return values


def _hessenberg(state, n, vectors):
    """Reduces state's 'h' to upper Hessenberg form by n - 2 Householder
    reflections Q = I - tau v v^H (Hermitian and unitary), H := Q H Q,
    accumulating Z := Z Q when ``vectors``."""
    f = _f()
    rows = np.arange(n)
    for k in range(n - 2):
        h, z = state.arrays["h"], state.arrays["z"]
        x = f.where(rows > k + 1, h[..., :, k], 0)
        alpha = h[..., k + 1, k]
        mag = abs(alpha)
        xnorm = f.sqrt(_la()._sum(_la()._abs2(x), -1) + mag * mag)
        phase = f.where(mag > 0, alpha / f.where(mag > 0, mag, 1), 1)
        # v = x + phase ||x|| e_{k+1}: v^H v = 2 ||x|| (||x|| + |alpha|).
        v = f.where(rows == k + 1, (alpha + phase * xnorm)[..., None], x).astype(h.dtype)
        vv = 2 * xnorm * (xnorm + mag)
        tau = f.where(vv > 0, 2 / f.where(vv > 0, vv, 1), 0).astype(h.dtype)
        vh = v.conj()
        w = f.matmul(vh[..., None, :], h)[..., 0, :]
        h = h - (tau[..., None] * v)[..., :, None] * w[..., None, :]
        u = f.matmul(h, v[..., :, None])[..., :, 0]
        h = h - (tau[..., None] * u)[..., :, None] * vh[..., None, :]
        state.arrays["h"] = h
        if vectors:
            zv = f.matmul(z, v[..., :, None])[..., :, 0]
            state.arrays["z"] = z - (tau[..., None] * zv)[..., :, None] * vh[..., None, :]
        state.step()
    state.arrays["h"] = f.where(rows[:, None] > rows[None, :] + 1, 0, state.arrays["h"])


def _deflate(h, n, ulp, smlnum):
    """(h with its negligible subdiagonal entries set to 0, the row of the
    bottom of each matrix's lowest unreduced block: 0 when h is
    triangular)."""
    f = _f()
    rows = np.arange(n)
    sub = f.diagonal(h, -1, -2, -1)
    dg = f.diagonal(h, 0, -2, -1)
    size = _cabs1(sub)
    small = (size <= ulp * (_cabs1(dg[..., :-1]) + _cabs1(dg[..., 1:]))) | (size <= smlnum)
    small_full = f.concatenate([small, f.zeros(small.shape[:-1] + (1,), np.bool_,
                                                 session=h.session)], axis=-1)
    h = f.where((rows[:, None] == rows[None, :] + 1) & small_full[..., None, :], 0, h)
    hi = (f.where(small, 0, np.arange(1, n))).max(axis=-1)
    return h, hi


def _shift(h, hi, its):
    """The Wilkinson shift of each matrix (the eigenvalue of the 2x2 block
    at rows hi - 1, hi nearer its bottom corner), or zlahqr's exceptional
    shift h_ii + 3/4 |Re h_i,i-1| after 10, 20 ... iterations without a
    deflation."""
    f = _f()
    idx = f.maximum(hi - 1, 0)[..., None]
    dg = f.diagonal(h, 0, -2, -1)
    a = f.take_along_axis(dg, idx, axis=-1)[..., 0]
    d = f.take_along_axis(dg, idx + 1, axis=-1)[..., 0]
    b = f.take_along_axis(f.diagonal(h, 1, -2, -1), idx, axis=-1)[..., 0]
    c = f.take_along_axis(f.diagonal(h, -1, -2, -1), idx, axis=-1)[..., 0]
    half = (a - d) * 0.5
    disc = f.sqrt(half * half + b * c)
    mid = (a + d) * 0.5
    l1, l2 = mid + disc, mid - disc
    mu = f.where(abs(l1 - d) <= abs(l2 - d), l1, l2)
    exceptional = (its > 0) & (its % 10 == 0)
    return f.where(exceptional, d + 0.75 * abs(c.real), mu).astype(h.dtype)


def _qr_sweep(state, n, vectors):
    """One shifted QR iteration of state's 'h' (shift 'mu'), accumulated
    into 'z'."""
    f = _f()
    rows = np.arange(n)
    h = state.arrays["h"]
    eye = f.broadcast_to(f.eye(n, dtype=h.dtype, session=h.session), h.shape)
    state.arrays["w"] = f.concatenate([h, eye], axis=-1)
    state.arrays["h"] = None
    for k in range(n - 1):
        w, mu = state.arrays["w"], state.arrays["mu"]
        rk, rk1 = w[..., k, :], w[..., k + 1, :]
        a = rk[..., k] - mu * rk[..., n + k]
        b = rk1[..., k]
        mag_a = abs(a)
        r = f.sqrt(mag_a * mag_a + _la()._abs2(b))
        rotate = r > 0
        safe_r = f.where(rotate, r, 1)
        phase = f.where(mag_a > 0, a / f.where(mag_a > 0, mag_a, 1), 1)
        c = f.where(rotate, mag_a / safe_r, 1)
        s = f.where(rotate, phase * b.conj() / safe_r, 0).astype(w.dtype)
        new_k = c[..., None] * rk + s[..., None] * rk1
        new_k1 = c[..., None] * rk1 - s.conj()[..., None] * rk
        w = f.where(rows[:, None] == k, new_k[..., None, :],
                    f.where(rows[:, None] == k + 1, new_k1[..., None, :], w))
        state.arrays["w"] = w.astype(h.dtype)
        state.step()
    w = state.arrays.pop("w")
    ph = w[..., :, :n]
    back = w[..., :, n:].swapaxes(-1, -2).conj()
    h = f.matmul(ph, back)
    state.arrays["h"] = f.where(rows[:, None] > rows[None, :] + 1, 0, h)
    if vectors:
        state.arrays["z"] = f.matmul(state.arrays["z"], back)


def schur(m, vectors, check_finite):
    """(T, Z or None, finite) for the complex (..., n, n) stack m, n >= 2:
    the upper triangular Schur form T = Z^H m Z (Z unitary, when
    ``vectors``); ``check_finite`` raises NumPy's LinAlgError for infs and
    NaNs at the first Execute."""
    f = _f()
    n = m.shape[-1]
    real = _inference.real_dtype(np.dtype(m.dtype).name)
    ulp = float(np.finfo(real).eps)
    smlnum = float(np.finfo(real).tiny) * (n / ulp)
    batch = m.shape[:-2]
    z = f.broadcast_to(f.eye(n, dtype=m.dtype, session=m.session), m.shape).copy() \
        if vectors else None
    state = _State(m.session, h=m, z=z)
    bad = ~f.isfinite(m).all() if check_finite else None
    _hessenberg(state, n, vectors)
    h, hi = _deflate(state.arrays["h"], n, ulp, smlnum)
    state.arrays.update(h=h, hi=hi, its=f.zeros(batch, np.int64, session=m.session))
    per_execute = _iterations_per_execute(n)
    for it in range(_max_iterations(n)):
        hi, its = state.arrays["hi"], state.arrays["its"]
        state.arrays["mu"] = _shift(state.arrays["h"], hi, its)
        _qr_sweep(state, n, vectors)
        h, new_hi = _deflate(state.arrays["h"], n, ulp, smlnum)
        state.arrays.update(h=h, hi=new_hi, its=f.where(new_hi == hi, its + 1, 0))
        state.arrays.pop("mu")
        state.step(2)  # the deflation, shift and matmuls: about 110 nodes
        if (it + 1) % per_execute == 0:
            download = [(new_hi > 0).any()] + ([bad] if bad is not None else [])
            values = state.store(download)
            if bad is not None:
                if bool(values[1]):
                    raise _la().LinAlgError("Array must not contain infs or NaNs")
                bad = None
            if not bool(values[0]):
                return state.arrays["h"], state.arrays["z"]
    raise _la().LinAlgError("Eigenvalues did not converge")


def triangular_eigenvectors(t):
    """The eigenvectors of the upper triangular stack t, columns of an
    upper triangular X with unit diagonal (up to a positive factor per
    column), by back substitution one row at a time."""
    f = _f()
    n = t.shape[-1]
    real = _inference.real_dtype(np.dtype(t.dtype).name)
    ulp = float(np.finfo(real).eps)
    smlnum = float(np.finfo(real).tiny) * (n / ulp)
    cols = np.arange(n)
    diag = f.diagonal(t, 0, -2, -1)
    smin = f.maximum(ulp * _cabs1(t).max(axis=(-2, -1)), smlnum)[..., None]
    x = f.broadcast_to(f.eye(n, dtype=t.dtype, session=t.session), t.shape)
    state = _State(t.session, x=x, t=t, diag=diag, smin=smin)
    for i in range(n - 2, -1, -1):
        x, t, diag, smin = (state.arrays[k] for k in ("x", "t", "diag", "smin"))
        row = f.where(cols > i, t[..., i, :], 0)
        num = -f.matmul(row[..., None, :], x)[..., 0, :]
        d = t[..., i, i][..., None] - diag
        d = f.where(_cabs1(d) < smin, smin, d)
        xi = f.where(cols > i, num / d, x[..., i, :])
        x = f.where(cols[:, None] == i, xi[..., None, :], x)
        # Scaling a column keeps it an eigenvector; it keeps the next
        # rows' sums of products finite for defective matrices.
        top = _cabs1(x).max(axis=-2)
        state.arrays["x"] = (x / f.maximum(top, 1)[..., None, :]).astype(t.dtype)
        state.step()
    return state.arrays["x"]


def normalize_columns(v):
    """Columns of unit 2-norm whose largest component (by modulus) is real
    and positive."""
    f = _f()
    real = _inference.real_dtype(np.dtype(v.dtype).name)
    size = _la()._abs2(v)
    norm = f.sqrt(size.sum(axis=-2)).astype(real)
    v = v / f.where(norm > 0, norm, 1)[..., None, :]
    k = f.argmax(size, axis=-2)
    top = f.take_along_axis(v, k[..., None, :], axis=-2)
    mag = abs(top)
    phase = f.where(mag > 0, top / f.where(mag > 0, mag, 1), 1)
    v = (v * phase.conj()).astype(v.dtype)
    # That component exactly real, as zgeev sets it.
    at_top = np.arange(v.shape[-2])[:, None] == k[..., None, :]
    return f.where(at_top, v.real, v).astype(v.dtype)


# LAPACK's dgeev (real arithmetic) gives a real matrix's real eigenvalues
# exactly zero imaginary parts; complex arithmetic leaves them rounding
# noise, whose size depends on the backend (float64 sums on the CPU, float32
# ones in cuBLAS for complex64, other orders of summation) and grows with
# the QR iterations. An imaginary part up to _REAL_TOLERANCE n eps ||T||_F
# is taken for such noise: a wide margin over the few n eps ||T|| that a
# well-conditioned eigenvalue's error is.
_REAL_TOLERANCE = 100
# Two eigenvalues pair up when each is nearer the other's conjugate than
# 1 / _PAIR_RATIO of its imaginary part. A double real eigenvalue split by
# noise above the tolerance gives two whose mismatch is of the order of
# their imaginary parts, so they stay real; a true pair's mismatch is
# rounding, far below its imaginary parts.
_PAIR_RATIO = 4


def pair_conjugates(w, scale, eps):
    """The client's reading of the eigenvalues w (..., n) (numpy, complex)
    of real matrices whose Schur forms have the Frobenius norms ``scale``
    (...), computed in complex arithmetic of machine epsilon ``eps``:
    (values (..., n), src (..., n), conj (..., n), real (..., n)): output j
    is the conjugate (conj) or real part (real) of input column src[j], and
    values are the eigenvalues in that order: real ones with an imaginary
    part of exactly 0, pairs as exact conjugates side by side, the positive
    imaginary part first (dgeev's layout). An eigenvalue is real when its
    imaginary part is rounding noise (_REAL_TOLERANCE) or no other is near
    its conjugate (_PAIR_RATIO); a 1x1 matrix's always is."""
    n = w.shape[-1]
    flat = w.reshape(-1, n)
    scales = np.broadcast_to(np.asarray(scale), w.shape[:-1]).reshape(-1)
    values = np.empty_like(flat)
    src = np.empty(flat.shape, np.int64)
    conj = np.zeros(flat.shape, bool)
    real = np.zeros(flat.shape, bool)
    for b in range(flat.shape[0]):
        lam = flat[b].astype(np.complex128)
        im = lam.imag
        is_real = np.abs(im) <= _REAL_TOLERANCE * n * eps * scales[b]
        partner = np.full(n, -1)
        dist = np.abs(lam[:, None] - lam.conj()[None, :])
        for j in np.argsort(-np.abs(im), kind="stable"):
            if is_real[j] or partner[j] >= 0:
                continue
            free = (~is_real) & (partner < 0) & (np.sign(im) == -np.sign(im[j]))
            free[j] = False
            if free.any():
                cand = np.where(free, dist[:, j], np.inf)
                k = int(np.argmin(cand))
                if _PAIR_RATIO * cand[k] < min(abs(im[j]), abs(im[k])):
                    partner[j], partner[k] = k, j
                    continue
            is_real[j] = True
        out = 0
        for j in range(n):
            if is_real[j]:
                values[b, out], src[b, out], real[b, out] = lam[j].real, j, True
                out += 1
            elif partner[j] > j:
                p, q = (j, partner[j]) if im[j] > 0 else (partner[j], j)
                value = (lam[p] + np.conj(lam[q])) / 2
                values[b, out], src[b, out] = value, p
                values[b, out + 1], src[b, out + 1], conj[b, out + 1] = np.conj(value), p, True
                out += 2
    shape = w.shape
    return (values.reshape(shape), src.reshape(shape), conj.reshape(shape),
            real.reshape(shape))
