"""einsum and einsum_path (gpuflow._einsum) against NumPy 2, through the real
server: explicit and implicit outputs, ellipses, diagonals, sums, chains of
operands, size-1 broadcasting, the sublist form, empty and 0-d operands,
every kind of dtype, ``dtype``/``casting``/``out``/``optimize``, and NumPy's
ValueErrors for bad subscripts."""

import numpy as np
import pytest

import gpuflow as gf
import numpy_check

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

RNG = np.random.default_rng(23)
DTYPES = ["bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64", "complex64",
          "complex128"]
RTOL = dict(numpy_check.RTOL, float16=4e-3, float32=1e-5, complex64=1e-5)


def _data(shape, dtype):
    kind = np.dtype(dtype).kind
    if kind == "b":
        return RNG.integers(0, 2, shape).astype(bool)
    if kind in "iu":
        return RNG.integers(0 if kind == "u" else -4, 5, shape).astype(dtype)
    if kind == "c":
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def check_all(pairs):
    """Dtypes and shapes exactly; inexact values within the dtype's rtol of
    the largest magnitude (sums cancel: a small entry carries the rounding of
    the large products it sums)."""
    values = gf.evaluate(*(got for got, _ in pairs))
    for (got, want), value in zip(pairs, values):
        want = np.asarray(want)
        assert got.dtype == want.dtype and got.shape == want.shape, (got, want.dtype, want.shape)
        assert value.dtype == want.dtype and value.shape == want.shape, (got, value)
        if want.dtype.kind in "fc":
            rtol = RTOL[want.dtype.name]
            scale = max(1.0, float(np.abs(want).max(initial=0)))
            np.testing.assert_allclose(value, want, rtol=rtol, atol=rtol * scale, err_msg=repr(got))
        else:
            np.testing.assert_array_equal(value, want, err_msg=repr(got))


CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(5, 7), (7, 3)]),
    ("ij,kj->ik", [(3, 5), (4, 5)]),
    ("ii", [(3, 3)]),
    ("ii->i", [(4, 4)]),
    ("iii->i", [(3, 3, 3)]),
    ("iij->j", [(3, 3, 2)]),
    ("ij->ji", [(2, 3)]),
    ("ij", [(2, 3)]),
    ("ji", [(2, 3)]),
    ("ijk->", [(2, 3, 4)]),
    ("ijk->j", [(2, 3, 4)]),
    ("i,i", [(5,), (5,)]),
    ("i,i->i", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,j", [(3,), (4,)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bjk->kib", [(2, 3, 4), (2, 4, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ij,jk,kl,lm", [(2, 3), (3, 4), (4, 5), (5, 2)]),
    ("abc,cb->a", [(2, 3, 4), (4, 3)]),
    ("ba,ab->", [(3, 2), (2, 3)]),
    ("ab,ab,ab->a", [(3, 4), (3, 4), (3, 4)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ii,i->i", [(3, 3), (3,)]),
    ("ij,k->", [(2, 3), (4,)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("i...,...->...", [(3, 2), (2,)]),
    ("...", [(2, 3)]),
    ("...i->...", [(2, 3, 4)]),
    ("ij,j->i", [(2, 3), (1,)]),
    ("ij,jk->ik", [(2, 1), (3, 4)]),
    ("Ab,bC->AC", [(2, 3), (3, 2)]),
    (" i j , j k -> i k ", [(2, 3), (3, 4)]),
    (",i->i", [(), (3,)]),
    (",->", [(), ()]),
    ("", [()]),
    ("ij,jk->ik", [(0, 3), (3, 4)]),
    ("ij,jk->ik", [(2, 0), (0, 4)]),
    ("ij->", [(0, 5)]),
    ("ii->i", [(0, 0)]),
    ("i,i", [(0,), (0,)]),
]


@pytest.mark.parametrize("dtype", DTYPES)
def test_subscripts_match_numpy(session, dtype):
    pairs = []
    for subscripts, shapes in CASES:
        hosts = [_data(s, dtype) for s in shapes]
        got = gf.einsum(subscripts, *[session.asarray(h) for h in hosts])
        pairs.append((got, np.einsum(subscripts, *hosts)))
    check_all(pairs)


def test_odd_sizes_and_mixed_dtypes_take_numpys_result_type(session):
    pairs = []
    for da, db in [("int8", "float32"), ("uint8", "int8"), ("bool", "int16"),
                   ("float32", "float64"), ("int64", "complex64"), ("float16", "int8"),
                   ("uint64", "int64")]:
        a, b = _data((33, 65), da), _data((65, 17), db)
        pairs.append((gf.einsum("ij,jk->ik", session.asarray(a), session.asarray(b)),
                      np.einsum("ij,jk->ik", a, b)))
        v = _data((7, 65), db)
        pairs.append((gf.einsum("ij,kj->ki", session.asarray(a), session.asarray(v)),
                      np.einsum("ij,kj->ki", a, v)))
    check_all(pairs)


def test_integer_sums_wrap_in_the_operands_dtype(session):
    a = np.full((4, 50), 100, np.int8)
    b = np.full(50, 3, np.int8)
    check_all([(gf.einsum("ij->", session.asarray(a)), np.einsum("ij->", a)),
               (gf.einsum("ij,j->i", session.asarray(a), session.asarray(b)),
                np.einsum("ij,j->i", a, b))])


def test_host_operands_and_scalars_are_strong_arrays(session):
    a = _data((3,), "float32")
    x = session.asarray(a)
    check_all([(gf.einsum(",i->i", 2.5, x), np.einsum(",i->i", 2.5, a)),
               (gf.einsum("i,i", x, [1, 2, 3]), np.einsum("i,i", a, [1, 2, 3])),
               (gf.einsum("ij->j", [[1, 2], [3, 4]]), np.einsum("ij->j", [[1, 2], [3, 4]]))])


def test_sublist_form(session):
    a, b = _data((2, 3), "float64"), _data((3, 4), "float64")
    x, y = session.asarray(a), session.asarray(b)
    e = _data((5, 2, 2), "int32")
    check_all([
        (gf.einsum(x, [0, 1], y, [1, 2], [0, 2]), np.einsum(a, [0, 1], b, [1, 2], [0, 2])),
        (gf.einsum(x, [0, 1], y, [1, 2]), np.einsum(a, [0, 1], b, [1, 2])),
        (gf.einsum(x, [1, 0]), np.einsum(a, [1, 0])),
        (gf.einsum(session.asarray(e), [Ellipsis, 0, 0], [Ellipsis, 0]),
         np.einsum(e, [Ellipsis, 0, 0], [Ellipsis, 0])),
        (gf.einsum(x, [26, 51], [51]), np.einsum(a, [26, 51], [51])),
    ])
    with pytest.raises(ValueError, match=r"subscript is not within the valid range \[0, 52\)"):
        gf.einsum(x, [0, 60])
    with pytest.raises(ValueError, match="must provide at least an operand and a subscripts list"):
        gf.einsum(x)


def test_dtype_casting_and_out(session):
    i8 = _data((3, 4), "int8")
    f64 = _data((4,), "float64")
    x, v = session.asarray(i8), session.asarray(f64)
    check_all([
        (gf.einsum("ij,j->i", x, session.asarray(i8[0]), dtype=np.float32),
         np.einsum("ij,j->i", i8, i8[0], dtype=np.float32)),
        (gf.einsum("ij->i", x, dtype="int64"), np.einsum("ij->i", i8, dtype="int64")),
        (gf.einsum("i->", v, dtype=np.complex128), np.einsum("i->", f64, dtype=np.complex128)),
        (gf.einsum("i,i", v, v, dtype=np.float32, casting="unsafe"),
         np.einsum("i,i", f64, f64, dtype=np.float32, casting="unsafe")),
        # A lone operand only transposed is NumPy's view: dtype is ignored.
        (gf.einsum("ij->ji", x, dtype=np.float64), np.einsum("ij->ji", i8, dtype=np.float64)),
    ])
    with pytest.raises(TypeError, match="Iterator operand 0 dtype could not be cast from "
                       r"dtype\('float64'\) to dtype\('float32'\) according to the rule 'safe'"):
        gf.einsum("i,i", v, v, dtype=np.float32)
    out = gf.zeros(3, np.float64, session=session)
    got = gf.einsum("ij,j->i", x, v, out=out)
    assert got is out
    np.testing.assert_allclose(out.get(), np.einsum("ij,j->i", i8, f64))


def test_optimize_values_and_explicit_paths(session):
    hosts = [_data(s, "float64") for s in [(2, 3), (3, 4), (4, 5)]]
    xs = [session.asarray(h) for h in hosts]
    want = np.einsum("ij,jk,kl->il", *hosts)
    pairs = [(gf.einsum("ij,jk,kl->il", *xs, optimize=opt), want)
             for opt in (False, True, "greedy", "optimal", ["einsum_path", (0, 1, 2)],
                         ["einsum_path", (1, 2), (0, 1)], ["einsum_path", (0, 2), (0, 1)])]
    check_all(pairs)
    with pytest.raises(TypeError, match="Did not understand the path"):
        gf.einsum("ij,jk,kl->il", *xs, optimize=["greedy"])
    with pytest.raises(TypeError, match="Did not understand the path"):
        gf.einsum("ij,jk,kl->il", *xs, optimize="fast")


def test_einsum_path_is_the_left_to_right_path_in_numpys_format(session):
    hosts = [_data(s, "float64") for s in [(2, 3), (3, 4), (4, 5)]]
    xs = [session.asarray(h) for h in hosts]
    path, report = gf.einsum_path("ij,jk,kl->il", *xs)
    assert path == ["einsum_path", (0, 1, 2)]
    assert path == np.einsum_path("ij,jk,kl->il", *hosts, optimize=False)[0]
    assert "Complete contraction:  ij,jk,kl->il" in report
    path, report = gf.einsum_path("...ii", session.asarray(np.ones((2, 3, 3))))
    assert path == ["einsum_path", (0,)] and "...ii->..." in report
    # The path einsum_path gives is one einsum takes.
    check_all([(gf.einsum("ij,jk,kl->il", *xs, optimize=path[:1] + [(0, 1, 2)]),
                np.einsum("ij,jk,kl->il", *hosts))])
    with pytest.raises(ValueError, match="too many subscripts for operand 0"):
        gf.einsum_path("ijk", xs[0])


BAD = [
    ("ij", [(3,)]),
    ("i", [(2, 3)]),
    ("i.j", [(2, 3)]),
    ("i$", [(3,)]),
    ("ij,jk", [(2, 3)]),
    ("ij", [(2, 3), (2, 3)]),
    ("ij,->ij", [(2, 3)]),
    ("ij->ii", [(2, 3)]),
    ("ij->k", [(2, 3)]),
    ("...ij->ij", [(4, 2, 3)]),
    ("ij-ji", [(2, 3)]),
    ("ij->.i", [(2, 3)]),
    ("ij->i$", [(2, 3)]),
    ("i...j...", [(2, 3)]),
    ("ij->j->i", [(2, 3)]),
    ("->", [(2, 3)]),
    ("ii", [(2, 3)]),
    ("ij,jk", [(2, 3), (4, 5)]),
    ("i,i", [(3,), (0,)]),
    ("i...->i", [(2, 3, 4)]),
]


@pytest.mark.parametrize("subscripts,shapes", BAD)
def test_bad_subscripts_raise_numpys_value_errors(session, subscripts, shapes):
    hosts = [np.ones(s) for s in shapes]
    with pytest.raises(ValueError) as expected:
        np.einsum(subscripts, *hosts)
    message = str(expected.value)
    if message.startswith("operands could not be broadcast together"):
        message = "operands could not be broadcast together with remapped shapes"
    with pytest.raises(ValueError) as got:
        gf.einsum(subscripts, *[session.asarray(h) for h in hosts])
    assert str(got.value).startswith(message), (str(got.value), message)


def test_no_operands(session):
    with pytest.raises(ValueError, match="must specify the einstein sum subscripts string and at "
                       "least one operand"):
        gf.einsum()
    with pytest.raises(ValueError, match="must specify the einstein sum subscripts string and at "
                       "least one operand"):
        gf.einsum("i")


def test_a_contraction_is_one_matmul_per_pair(session):
    a, b, c = (session.asarray(_data(s, "float32")) for s in [(2, 3), (3, 4), (4, 5)])
    graph, _ = gf.to_graph(gf.einsum("ij,jk,kl->il", a, b, c))
    ops = [n.op for n in graph.proto.nodes]
    assert ops == ["matmul", "matmul"], ops
    # Operands already in matmul's layout take no transpose or reshape (each
    # would be a copy step on the server).
    graph, _ = gf.to_graph(gf.einsum("bij,bjk->bik", session.asarray(np.ones((2, 3, 4))),
                                     session.asarray(np.ones((2, 4, 5)))))
    assert [n.op for n in graph.proto.nodes] == ["matmul"]


@pytest.mark.parametrize("dtype", ["bool", "int8", "float32", "float64", "complex64"])
def test_random_subscripts_match_numpy(session, dtype):
    # Seeded random expressions: 1-3 operands of up to 4 labels from "abcd"
    # (repeats within an operand allowed), sizes 1-4 (a size-1 axis of one
    # operand broadcasting against another's), implicit or random explicit
    # outputs.
    rng = np.random.default_rng(5)
    sizes = {"a": 2, "b": 3, "c": 1, "d": 4}
    pairs = []
    for _ in range(80):
        terms = ["".join(rng.choice(list("abcd"), rng.integers(0, 5)))
                 for _ in range(rng.integers(1, 4))]
        used = sorted(set("".join(terms)))
        subscripts = ",".join(terms)
        if rng.random() < 0.6:
            subscripts += "->" + "".join(rng.permutation(used)[:rng.integers(0, len(used) + 1)])
        shapes = [[sizes[c] if rng.random() < 0.8 else 1 for c in t] for t in terms]
        for t, s in zip(terms, shapes):  # repeated labels need equal sizes
            for i, c in enumerate(t):
                if t.index(c) != i:
                    s[i] = s[t.index(c)]
        hosts = [_data(s, dtype) for s in shapes]
        pairs.append((gf.einsum(subscripts, *[session.asarray(h) for h in hosts]),
                      np.einsum(subscripts, *hosts)))
    check_all(pairs)
