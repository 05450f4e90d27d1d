"""Every step of every op family runs on the device: with profile=True the
CUDA backend names a step it ran on the host "host: ..." (staging its inputs
through host memory), and none may. Values are checked too, so on the CPU
backend (CI) these graphs still test the reference.

Complex values run on the device in every family but selection (a scatter
into or a flatnonzero of a complex array) and a take of complex128
elements, which take the host path.
"""

import numpy as np
import pytest

import gpuflow
from conftest import BACKEND

RNG = np.random.default_rng(21)
X = RNG.standard_normal((6, 50, 7)).astype(np.float32)
LONG = RNG.standard_normal((3, 40000)).astype(np.float32)
I = RNG.integers(-50, 50, size=(2, 1, 3, 4)).astype(np.int32)
J = RNG.integers(-50, 50, size=(1, 5, 4, 2)).astype(np.int32)
Z = (RNG.standard_normal((6, 50, 7)) + 1j * RNG.standard_normal((6, 50, 7))).astype(np.complex64)
W = RNG.standard_normal((4, 9)) + 1j * RNG.standard_normal((4, 9))  # complex128


def softmax(x, axis):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _scattered():
    out = X.copy().reshape(-1)
    out[I.reshape(24)] = I.reshape(24).astype(np.float32)  # the last duplicate wins
    return out.reshape(X.shape)


def _added():
    t = I.reshape(24).astype(np.int8)
    np.add.at(t, (I.reshape(24) + 50) // 5, I.reshape(24).astype(np.int8))
    return t


def _maxed():
    out = X.astype(np.float16).reshape(-1)
    np.maximum.at(out, I.reshape(24), I.reshape(24).astype(np.float16))
    return out.reshape(X.shape)


# (name, build(g, x, long, i, j) -> node, expected value or None, rtol)
CASES = [
    ("elementwise", lambda g, x, *_: g.add(g.mul(g.sqrt(g.abs(x)), 2), 1),
     np.sqrt(np.abs(X)) * 2 + 1, 1e-6),
    ("sum", lambda g, x, *_: g.sum(g.mul(x, x), axes=[1]), np.sum(X * X, axis=1), 1e-5),
    ("var", lambda g, x, *_: g.var(x, axes=[0, 2]), np.var(X, axis=(0, 2)), 1e-5),
    ("argmax", lambda g, x, *_: g.argmax(x, axis=1), np.argmax(X, axis=1), None),
    ("softmax last axis", lambda g, x, *_: g.softmax(x, axis=-1), softmax(X, -1), 1e-5),
    ("softmax middle axis", lambda g, x, *_: g.mul(g.softmax(g.add(x, 1), axis=1), 3),
     softmax(X + 1, 1) * 3, 1e-5),
    ("log_softmax first axis", lambda g, x, *_: g.log_softmax(x, axis=0),
     np.log(softmax(X, 0)), 1e-5),
    ("softmax of long rows", lambda g, x, long, *_: g.softmax(long, axis=-1),
     softmax(LONG, -1), 1e-5),
    ("cumsum", lambda g, x, *_: g.cumsum(x, axis=1), np.cumsum(X, axis=1), 1e-5),
    ("transpose", lambda g, x, *_: g.transpose(x, axes=[2, 0, 1]), X.transpose(2, 0, 1), None),
    ("full", lambda g, *_: g.full(2.5, shape=[3, 4]), np.full((3, 4), 2.5), None),
    ("take", lambda g, x, long, i, j: g.take(x, g.reshape(i, shape=[24]), axis=1),
     np.take(X, I.reshape(24), axis=1), None),
    ("take_along_axis", lambda g, x, long, i, j: g.take_along_axis(
        x, g.reshape(g.floordiv(g.add(i, 50), 2), shape=[1, 24, 1]), axis=1),
     np.take_along_axis(X, ((I + 50) // 2).reshape(1, 24, 1), axis=1), None),
    ("scatter set, duplicates", lambda g, x, long, i, j: g.scatter(
        x, g.reshape(i, shape=[24]), g.cast(g.reshape(i, shape=[24]), dtype="float32")),
     _scattered(), None),
    ("scatter add int8 (compare-and-swap)", lambda g, x, long, i, j: g.scatter(
        g.cast(g.reshape(i, shape=[24]), dtype="int8"),
        g.floordiv(g.add(g.reshape(i, shape=[24]), 50), 5),
        g.cast(g.reshape(i, shape=[24]), dtype="int8"), mode="add"), _added(), None),
    ("scatter max float16", lambda g, x, long, i, j: g.scatter(
        g.cast(x, dtype="float16"), g.reshape(i, shape=[24]),
        g.cast(g.reshape(i, shape=[24]), dtype="float16"), mode="max"), _maxed(), None),
    ("flatnonzero", lambda g, x, *_: g.flatnonzero(g.gt(x, 0.5), size=int((X > 0.5).sum())),
     np.flatnonzero(X > 0.5), None),
    ("sort", lambda g, x, long, *_: g.sort(long), np.sort(LONG.reshape(-1)), None),
    ("histogram uniform", lambda g, x, long, *_: g.histogram(
        long, np.linspace(-2, 2, 257).astype(np.float32), uniform=True, first_edge=-2.0,
        norm_denom=4.0, sub_dtype="float32", div_dtype="float64"),
     np.histogram(LONG, 256, range=(-2.0, 2.0))[0], None),
    ("histogram edges, many bins", lambda g, x, long, *_: g.histogram(
        long, np.linspace(-3, 3, 3001)), np.histogram(LONG, np.linspace(-3, 3, 3001))[0], None),
    ("histogram uniform weighted", lambda g, x, long, *_: g.histogram(
        long, np.linspace(-2, 2, 17).astype(np.float32), g.abs(long), uniform=True,
        first_edge=-2.0, norm_denom=4.0, sub_dtype="float32", div_dtype="float64"),
     np.histogram(LONG, 16, range=(-2.0, 2.0), weights=np.abs(LONG))[0], 1e-6),
    ("argsort rows", lambda g, x, *_: g.argsort(x, axis=-1), np.argsort(X, -1, kind="stable"),
     None),
    ("argsort middle axis", lambda g, x, *_: g.argsort(x, axis=1),
     np.argsort(X, 1, kind="stable"), None),
    ("searchsorted", lambda g, x, long, *_: g.searchsorted(g.sort(long), x, side="right"),
     np.searchsorted(np.sort(LONG.reshape(-1)), X, side="right"), None),
    ("sort int32 first axis", lambda g, x, long, i, j: g.sort(j, axis=1), np.sort(J, 1), None),
    ("arange", lambda g, *_: g.arange(start=3, stop=40, step=3), np.arange(3, 40, 3), None),
    ("random_normal", lambda g, *_: g.random_normal(shape=[1000], seed=5), None, None),
    ("matmul float32", lambda g, x, *_: g.matmul(x, g.transpose(x, axes=[0, 2, 1])),
     X @ X.transpose(0, 2, 1), 1e-5),
    ("matmul int32 broadcast batch", lambda g, x, long, i, j: g.matmul(i, j), I @ J, None),
    ("dot of vectors", lambda g, x, long, i, j: g.dot(g.reshape(i, shape=[24]),
                                                      g.reshape(i, shape=[24])),
     np.dot(I.reshape(24), I.reshape(24)), None),
    ("complex64 elementwise", lambda g, *_: g.add(g.mul(g.exp(g.array("z")), 1j),
                                                  g.conj(g.array("z"))),
     np.exp(Z) * np.complex64(1j) + np.conj(Z), 1e-5),
    ("complex128 and a complex literal", lambda g, *_: g.mul(g.sqrt(g.array("w")), 0.5 - 2j),
     np.sqrt(W) * (0.5 - 2j), 1e-12),
    ("complex inverse functions", lambda g, *_: g.add(g.asin(g.array("w")),
                                                      g.atanh(g.array("w"))),
     np.arcsin(W) + np.arctanh(W), 1e-12),
    ("complex order and parts", lambda g, *_: g.logical_and(
        g.gt(g.array("z"), g.conj(g.array("z"))), g.lt(g.real(g.array("z")), 0)),
     (Z > np.conj(Z)) & (Z.real < 0), None),
    ("complex sum", lambda g, *_: g.sum(g.array("z"), axes=[1]), Z.sum(axis=1), 1e-5),
    ("complex mean of squares", lambda g, *_: g.mean(g.mul(g.array("w"), g.array("w")),
                                                     axes=[0]), (W * W).mean(axis=0), 1e-12),
    ("complex prod", lambda g, *_: g.prod(g.array("w"), axes=[1]), W.prod(axis=1), 1e-12),
    ("complex max", lambda g, *_: g.max(g.array("z"), axes=[0, 2]), Z.max(axis=(0, 2)), None),
    ("complex std", lambda g, *_: g.std(g.array("w"), axes=[1], ddof=1.0),
     W.std(axis=1, ddof=1), 1e-12),
    ("complex64 var", lambda g, *_: g.var(g.array("z"), axes=[0, 2]), Z.var(axis=(0, 2)), 1e-5),
    ("complex argmax", lambda g, *_: g.argmax(g.array("w"), axis=1), W.argmax(axis=1), None),
    ("complex cumsum", lambda g, *_: g.cumsum(g.array("z"), axis=1), np.cumsum(Z, axis=1), 1e-5),
    ("complex transpose of a cast", lambda g, x, *_: g.transpose(g.cast(x, dtype="complex64"),
                                                                 axes=[2, 0, 1]),
     X.astype(np.complex64).transpose(2, 0, 1), None),
    ("complex full", lambda g, *_: g.full(1 - 2j, shape=[3, 4]), np.full((3, 4), 1 - 2j), None),
    ("complex concatenate", lambda g, *_: g.concatenate(g.array("w"), g.real(g.array("w")),
                                                        axis=0),
     np.concatenate([W, W.real]), None),
    ("complex64 matmul float32", lambda g, x, *_: g.matmul(g.array("z"),
                                                           g.transpose(x, axes=[0, 2, 1])),
     Z @ X.transpose(0, 2, 1), 1e-5),
    ("complex dot with a 0-d operand", lambda g, *_: g.dot(g.array("w"), np.float64(-1.5)),
     np.dot(W, np.float64(-1.5)), 1e-12),
    ("complex to float32", lambda g, *_: g.cast(g.array("z"), dtype="float32"), Z.real, None),
    ("dot with a 0-d operand",
     lambda g, x, *_: g.dot(np.float32(2.5), g.reshape(x, shape=[6, 350])),
     2.5 * X.reshape(6, 350), None),
    ("dot int32 by a 0-d int8", lambda g, x, long, i, j: g.dot(g.reshape(i, shape=[6, 4]),
                                                               np.int8(-3)),
     np.dot(I.reshape(6, 4), np.int8(-3)), None),
    ("empty sum", lambda g, x, *_: g.sum(g.slice(x, starts=[0, 0, 0], stops=[6, 0, 7],
                                                 steps=[1, 1, 1]), axes=[1]),
     np.zeros((6, 7), np.float32), None),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_step_runs_on_the_device(session, case):
    name, build, want, rtol = case
    for n, v in (("x", X), ("long", LONG), ("i", I), ("j", J), ("z", Z), ("w", W)):
        session.upload(v, name=n)
    g = gpuflow.Graph()
    out = build(g, g.array("x"), g.array("long"), g.array("i"), g.array("j"))
    result = session.execute(g, outputs=[out], profile=True)
    steps = list(result.timings.steps)
    assert steps, "profile=True reports every step"
    on_host = [s.description for s in steps if s.description.startswith("host:")]
    assert not on_host, f"{name}: steps run on the host: {on_host}"
    if want is not None:
        got = result[0]
        if rtol is None:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)


def test_short_work_reserved_sms_runs_every_kind_of_step(make_server):
    """--short_work_reserved_sms: the sessions' own streams in a green
    context of the other SMs, the priority streams in the primary context.
    Small requests (priority stream) and large ones (the session's stream:
    past 64 MiB, cuBLAS and CUB) give NumPy's answers either way, and
    ServerInfo says how the SMs are split. The CPU backend takes the flag
    and ignores it."""
    srv = make_server("--short_work_reserved_sms=4", "--default_session_memory_limit=2GiB",
                      "--max_session_memory_limit=2GiB")
    rng = np.random.default_rng(9)
    n = 4096 if BACKEND == "cuda" else 256
    a = rng.integers(-4, 5, size=(n, n)).astype(np.float32)
    small = rng.standard_normal(1000).astype(np.float32)
    c = gpuflow.connect(srv.target)
    try:
        info = c.info()
        if BACKEND == "cuda":
            assert "kept for short requests" in info.device, info.device
        with c.session(label="partition") as s:
            s.upload(a, name="a")
            s.upload(small, name="v")
            g = gpuflow.Graph()
            x = g.array("a")
            big = s.execute(g, outputs=[g.matmul(x, x), g.sum(g.mul(x, x), axes=[1]),
                                        g.sort(g.reshape(x, shape=[n * n]))])
            np.testing.assert_array_equal(big[0], a @ a)  # small integers: exact
            np.testing.assert_array_equal(big[1], (a * a).sum(axis=1))
            np.testing.assert_array_equal(big[2], np.sort(a.reshape(-1)))
            g2 = gpuflow.Graph()
            v = g2.array("v")
            r = s.execute(g2, outputs=[g2.exp(v), g2.max(v, axes=[0])])
            np.testing.assert_allclose(r[0], np.exp(small), rtol=1e-6)
            assert r[1] == small.max()
    finally:
        c.close()
