"""The Python client's structural keys for prepared graphs (issue 15): what
an op keeps of its structure as it is made (gpuflow._prepared.sub_of, the
operators' own fast way of making it) against the walk that spells the key
out (_prepared.Structure), expressions that must never share a key, and
scalars and arrays bound to the right slots on the real server."""

import random

import numpy as np
import pytest

import gpuflow as gf
from gpuflow import _prepared
from gpuflow.remote_array import _Expr

# ---- keys against the walk (no server) -----------------------------------------------

SCALARS = [2.0, 3.5, -0.0, 0.0, float("nan"), 2, -7, 1 << 63, True, False, 2j, complex(1, -0.0),
           np.float32(2.0), np.float64(2.0), np.int64(2), np.int8(2), np.bool_(True)]
LITERALS = [np.zeros(2, np.float32), np.zeros(2, np.int32), np.ones(2, np.float32),
            np.zeros((1, 2), np.float32), np.array([1.5], np.float64)]
ATTRS = [{}, {"axes": (0,)}, {"axes": (1,)}, {"k": 1}, {"k": True}, {"k": 1.0}, {"k": "1"}]
LEAF_TYPES = [("float32", (4,)), ("float64", (4,)), ("float32", (2, 2))]


def leaf(name, dtype="float32", shape=(4,)):
    return _Expr(None, (), {}, dtype, shape, array_name=name)


def op(name, *inputs, **attrs):
    return _Expr(name, inputs, attrs, "float32", (4,))


def random_exprs(rng, count, max_ops):
    """``count`` random expressions over a few session arrays: shared and
    repeated subexpressions, equal ones made twice, every scalar kind,
    literals and attributes."""
    names = {f"a{i}": LEAF_TYPES[i % len(LEAF_TYPES)] for i in range(3)}
    leaves = {n: leaf(n, *t) for n, t in names.items()}
    exprs = []
    for _ in range(count):
        made = []

        def operand():
            r = rng.random()
            if made and r < 0.45:
                return rng.choice(made)  # shared
            if r < 0.65:
                name = rng.choice(sorted(leaves))
                # Another expr object for the same array now and then.
                return leaves[name] if rng.random() < 0.7 else leaf(name, *names[name])
            if r < 0.9:
                return rng.choice(SCALARS)
            return rng.choice(LITERALS)

        for _ in range(rng.randint(1, max_ops)):
            arity = rng.choice([1, 2, 2, 3])
            made.append(op(rng.choice(["add", "mul", "where"]), *[operand() for _ in range(arity)],
                           **rng.choice(ATTRS)))
        exprs.append(made[-1])
        if rng.random() < 0.3:
            # The same structure once more, made of new exprs (equal ones).
            exprs.append(copy_expr(made[-1], {}))
    return exprs


def copy_expr(e, done):
    """A new expr of the same structure (arrays and scalars as they are)."""
    if not isinstance(e, _Expr) or e.op is None:
        return e
    if id(e) not in done:
        done[id(e)] = _Expr(e.op, [copy_expr(x, done) for x in e.inputs], dict(e.attrs), e.dtype,
                            e.shape)
    return done[id(e)]


def walked(exprs):
    """(key, order, arrays, scalars, values) by the walk."""
    s = _prepared.Structure(exprs)
    return s.key, s.order, s.arrays, s.scalars, s.values


def kept(exprs):
    s = _prepared.structure(exprs)
    assert isinstance(s, _prepared.Sub)
    return s.key, s.order, s.arrays, s.scalars, s.values


def spelled(key):
    """The entry sequence an interned key stands for."""
    inverse = {v: k for k, v in _prepared._keys.items()}
    entries = []
    while key:
        key, entry = inverse[key]
        entries.append(entry)
    return tuple(reversed(entries))


def walk_spelled(key):
    """A Structure's key as the same entry sequence: (op, attributes,
    inputs, the types of the arrays the op reads first)."""
    entries, types = key
    first_read = set()
    spelled_out = []
    for op_name, attrs, inputs in entries:
        new = []
        for i in inputs:
            if type(i) is int and i < 0 and ~i not in first_read:
                assert ~i == len(first_read)
                first_read.add(~i)
                new.append(types[~i])
        spelled_out.append((op_name, attrs, inputs, tuple(new)))
    assert len(first_read) == len(types)
    return tuple(spelled_out)


def assert_same_classes(groups, exact=True):
    """``groups``: (walk key, kept key) pairs. Equal kept keys only for
    equal walk keys (no two structures share a key) and, when ``exact``,
    equal walk keys only for equal kept keys (a structure seen before is
    known again)."""
    by_walk, by_kept = {}, {}
    for walk_key, kept_key in groups:
        by_walk.setdefault(walk_key, set()).add(kept_key)
        by_kept.setdefault(kept_key, set()).add(walk_key)
    assert all(len(v) == 1 for v in by_kept.values())
    if exact:
        assert all(len(v) == 1 for v in by_walk.values())


def check_against_walk(exprs, roots_per_case=1, exact=True):
    groups = []
    for i in range(0, len(exprs), roots_per_case):
        roots = exprs[i:i + roots_per_case]
        w_key, w_order, w_arrays, w_scalars, w_values = walked(roots)
        k_key, k_order, k_arrays, k_scalars, k_values = kept(roots)
        assert len(w_order) == len(k_order) and all(a is b for a, b in zip(w_order, k_order))
        assert w_arrays == k_arrays
        assert len(w_scalars) == len(k_scalars)
        assert all(a is b for a, b in zip(w_scalars, k_scalars))
        assert w_values == k_values
        s = _prepared.structure(roots)
        for root in roots:
            assert s.order[s.position(root)] is root
        if exact:  # no key table cleared meanwhile: the key spelled out
            assert spelled(k_key) == walk_spelled(w_key)
        groups.append((w_key, k_key))
    assert_same_classes(groups, exact)
    return groups


@pytest.mark.parametrize("seed", range(6))
def test_kept_structures_are_the_walks(seed):
    rng = random.Random(seed)
    exprs = random_exprs(rng, 300, 8)
    groups = check_against_walk(exprs)
    # Not all distinct, not all the same: the check compares something.
    assert 1 < len({k for _, k in groups}) < len(groups)


@pytest.mark.parametrize("seed", range(3))
def test_several_roots_merge_as_the_walk_lists_them(seed):
    rng = random.Random(100 + seed)
    exprs = random_exprs(rng, 240, 6)
    check_against_walk(exprs, roots_per_case=3)
    # Roots that are among each other's ops, and one root twice.
    a = op("add", leaf("x"), 1.0)
    b = op("mul", a, a)
    check_against_walk([b, a, a, b, op("neg", b), b])


def test_a_full_key_table_starts_again_without_sharing_keys(monkeypatch):
    monkeypatch.setattr(_prepared, "_keys", {})
    monkeypatch.setattr(_prepared, "_MAX_KEYS", 5)
    rng = random.Random(7)
    exprs = random_exprs(rng, 200, 5)
    # Equal structures made after a new start get new keys (the server
    # prepares them again); different ones never share one.
    groups = check_against_walk(exprs, exact=False)
    assert len({w for w, _ in groups}) < len({k for _, k in groups})
    assert len(_prepared._keys) <= 5


def test_literal_bytes_bound_the_key_table(monkeypatch):
    monkeypatch.setattr(_prepared, "_keys", {})
    monkeypatch.setattr(_prepared, "_key_bytes", 0)
    monkeypatch.setattr(_prepared, "_MAX_KEY_BYTES", 64)
    x = leaf("x")
    exprs = [op("add", x, np.full(4, float(i), np.float64)) for i in range(20)]  # 32 bytes each
    exprs += [op("add", x, np.full(4, float(i), np.float64)) for i in range(20)]
    check_against_walk(exprs, exact=False)
    assert _prepared._key_bytes <= 64


def test_large_graphs_are_walked():
    x = leaf("x")
    e = x
    chain = []
    for i in range(_prepared.MAX_SUB_OPS + 5):
        e = op("add", e, float(i))
        chain.append(e)
    assert all(c._sub is not None for c in chain[:_prepared.MAX_SUB_OPS])
    assert all(c._sub is None for c in chain[_prepared.MAX_SUB_OPS:])
    assert isinstance(_prepared.structure([e]), _prepared.Structure)
    assert isinstance(_prepared.structure([chain[0], e]), _prepared.Structure)
    # Built on a large one, merged past the bound: walked too.
    assert op("mul", e, 2.0)._sub is None
    merged = op("add", chain[40], op("neg", chain[30]))
    assert merged._sub is not None  # chain[30]'s ops are among chain[40]'s
    wide = op("add", chain[40], copy_expr(chain[30], {}))
    assert wide._sub is None  # 41 + 31 + 1 ops
    assert isinstance(_prepared.structure([wide]), _prepared.Structure)
    check_against_walk([chain[20], chain[63], merged, op("mul", chain[62], 1.0)])
    check_against_walk([chain[10], chain[20], chain[40]], roots_per_case=3)


def test_ops_are_freed_by_reference_counting():
    # What an op keeps refers to the ops it reads, never to itself: a
    # graph nothing references goes at once (its temporaries with it), not
    # at the next cycle collection.
    import gc
    import weakref

    gc.disable()
    try:
        x = leaf("x")
        a = op("mul", x, 2.0)
        b = op("add", a, op("neg", a))  # merged
        c = op("where", b, a, op("mul", leaf("y"), 3.0))  # merged, new ops
        refs = [weakref.ref(e) for e in (a, b, c)]
        del a, b, c
        assert all(r() is None for r in refs)
    finally:
        gc.enable()


def pairs_that_differ():
    """Expressions that must never share a key, as (name, a, b)."""
    x, y = leaf("x"), leaf("y")
    x64, x22 = leaf("x", "float64"), leaf("x", "float32", (2, 2))
    a = op("mul", x, 2.0)
    return [
        ("op", op("add", x, 2.0), op("mul", x, 2.0)),
        ("attribute value", op("sum", x, axes=(0,)), op("sum", x, axes=(1,))),
        ("attribute True/1/1.0", op("f", x, k=True), op("f", x, k=1)),
        ("attribute 1/1.0", op("f", x, k=1), op("f", x, k=1.0)),
        ("attribute present", op("f", x, k=1), op("f", x)),
        ("attribute -0.0/0.0", op("f", x, k=-0.0), op("f", x, k=0.0)),
        ("attribute numpy -0.0/0.0", op("f", x, k=np.float32(-0.0)), op("f", x, k=np.float32(0))),
        ("attribute list -0.0/0.0", op("f", x, k=(1.0, -0.0)), op("f", x, k=(1.0, 0.0))),
        ("attribute nan/0.0", op("f", x, k=float("nan")), op("f", x, k=0.0)),
        ("array dtype", op("neg", x), op("neg", x64)),
        ("array shape", op("neg", x), op("neg", x22)),
        ("weak float / weak int", op("add", x, 2.0), op("add", x, 2)),
        ("weak int / weak bool", op("add", x, 1), op("add", x, True)),
        ("weak / strong", op("add", x, 2.0), op("add", x, np.float64(2.0))),
        ("strong dtypes", op("add", x, np.float32(2.0)), op("add", x, np.float64(2.0))),
        ("int / uint range", op("add", x, 1), op("add", x, 1 << 63)),
        ("float / complex", op("add", x, 2.0), op("add", x, 2j)),
        ("scalar / literal", op("add", x, 2.0), op("add", x, np.array(2.0))),
        ("literal bytes", op("add", x, np.zeros(2, np.float32)),
         op("add", x, np.ones(2, np.float32))),
        ("literal dtype", op("add", x, np.zeros(2, np.float32)),
         op("add", x, np.zeros(2, np.int32))),
        ("literal shape", op("add", x, np.zeros(2, np.float32)),
         op("add", x, np.zeros((1, 2), np.float32))),
        ("shared / equal twice", op("add", a, a), op("add", op("mul", x, 2.0), op("mul", x, 2.0))),
        ("input order", op("sub", x, a), op("sub", a, x)),
        ("input order of scalars", op("where", x, 1.0, 2), op("where", x, 2, 1.0)),
        ("same array / two arrays", op("add", x, x), op("add", x, y)),
        ("same array deeper", op("add", op("neg", x), x), op("add", op("neg", x), y)),
        ("scalar slot", op("add", op("mul", x, 2.0), 3), op("add", op("mul", x, 2), 3.0)),
        ("arity", op("add", x), op("add", x, x)),
        ("depth", op("neg", op("neg", x)), op("neg", x)),
    ]


@pytest.mark.parametrize("name,a,b", pairs_that_differ(), ids=[p[0] for p in pairs_that_differ()])
def test_what_changes_the_prepared_graph_changes_the_key(name, a, b):
    assert _prepared.structure([a]).key != _prepared.structure([b]).key
    assert walked([a])[0] != walked([b])[0]


def test_values_and_names_are_not_structure():
    def expr(x, s, t):
        return op("add", op("mul", x, s), t)

    keys = {_prepared.structure([expr(leaf(n), s, t)]).key
            for n in ("x", "y") for s, t in [(2.0, 3.0), (-0.0, float("nan")), (1e300, 5.5)]}
    assert len(keys) == 1


# ---- on the real server --------------------------------------------------------------


def test_operators_keep_what_sub_of_makes(session):
    # The operators make an op's structure themselves (remote_array._binop):
    # it must be what the general way makes from the same inputs.
    x = session.asarray(np.arange(4, dtype=np.float32))
    y = session.asarray(np.ones(4, dtype=np.float32))
    chains = []
    for scalar in [2.0, -0.0, float("nan"), True, 1.5j, 3]:
        e = x * 2.0
        for _ in range(2):  # the second time, types are inferred before
            e = e + scalar
            e = scalar - e
            e = e * y
            e = (e * scalar) / 3.0
            e = 1.0 / e
            chains.append(e)
    for chain in chains:
        order = _prepared.structure([chain._expr]).order
        for e in order:
            assert e._sub == _prepared.sub_of(e)
    check_against_walk([c._expr for c in chains])


def test_every_scalar_binds_to_its_slot(session):
    x_host = np.linspace(1, 2, 33)
    x = session.asarray(x_host)
    cases = [(2.0, 3.0, 5.0), (3.0, 2.0, 5.0), (5.0, 3.0, 2.0), (-1.5, 0.25, 7.0), (2.0, 3.0, 5.0)]
    for a, b, c in cases:
        got = gf.evaluate(((x * a) - b) / c + (b - x) * (c - a))
        np.testing.assert_allclose(got[0], ((x_host * a) - b) / c + (b - x_host) * (c - a))
    assert got.timings.prepared_graph
    assert len(session._prepared_cache()) == 1


def test_shared_and_repeated_subexpressions_run_their_own_graphs(session):
    x_host = np.arange(5, dtype=np.float64)
    x = session.asarray(x_host)
    for s, t in [(2.0, 3.0), (4.0, -1.0), (2.0, 3.0)]:
        shared = x * s
        np.testing.assert_array_equal((shared + shared).get(), x_host * s * 2)
        # Equal subexpressions made twice: one scalar slot each.
        np.testing.assert_array_equal(((x * s) + (x * t)).get(), x_host * s + x_host * t)
    assert len(session._prepared_cache()) == 2


def test_which_arrays_are_the_same_array(session):
    x_host = np.arange(6, dtype=np.float32)
    y_host = x_host * 10
    x, y = session.asarray(x_host), session.asarray(y_host)
    for _ in range(2):
        np.testing.assert_array_equal((x - y).get(), x_host - y_host)
        np.testing.assert_array_equal((y - x).get(), y_host - x_host)
        np.testing.assert_array_equal((x - x).get(), np.zeros(6))
        np.testing.assert_array_equal((y - y + x).get(), x_host)
        np.testing.assert_array_equal((y - x + x).get(), y_host)
    # x - y and y - x: one structure; x - x, y - y + x and y - x + x: one each.
    assert len(session._prepared_cache()) == 4


def test_a_numpy_operand_is_taken_when_the_op_is_made(session):
    x = session.asarray(np.zeros(3, dtype=np.float32))
    values = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    y = x + values
    values[:] = [7.0, 8.0, 9.0]
    np.testing.assert_array_equal(y.get(), [1.0, 2.0, 3.0])
    # The same structure as first made, then the changed bytes: each its own.
    np.testing.assert_array_equal((x + np.array([1.0, 2.0, 3.0], np.float32)).get(), [1, 2, 3])
    np.testing.assert_array_equal((x + values).get(), [7.0, 8.0, 9.0])
    assert len(session._prepared_cache()) == 2


def test_the_sign_of_a_zero_attribute_is_structure(session):
    # arange's start is an attribute: -0.0 and 0.0 are two prepared graphs
    # (they shared one: arange(0.0, 3.0) after arange(-0.0, 3.0) began at -0.0).
    for _ in range(2):
        for start in (-0.0, 0.0):
            got = gf.arange(start, 3.0, session=session).get()
            want = np.arange(start, 3.0)
            np.testing.assert_array_equal(got, want)
            assert np.signbit(got[0]) == np.signbit(want[0])


def test_attribute_lists_are_taken_when_the_op_is_made():
    axes = [0]
    e = _Expr("sum", [leaf("x")], {"axes": axes}, "float32", ())
    key = e._sub[0]
    axes.append(1)
    assert e.attrs == {"axes": (0,)}
    assert _prepared.sub_of(e)[0] == key


def test_temporaries_go_with_their_last_expression(session):
    import gc

    big = np.arange(1 << 15, dtype=np.float32)  # past the literal limit: uploaded
    gc.disable()
    try:
        y = gf.sin(session.asarray(big)) * 2.0 + 1.0
        y = y * 3.0  # operators' own way too
        np.testing.assert_allclose(y.get(), (np.sin(big) * 2 + 1) * 3, rtol=1e-5, atol=1e-5)
        assert not session._released
        del y
        assert len(session._released) == 1  # no cycle collection needed
        name = session._released[0]
    finally:
        gc.enable()
    session._delete_released()
    assert name not in {a.name for a in session.list()}


def test_requests_by_handle_are_kept_per_outputs_and_profile(session):
    x_host = np.arange(8, dtype=np.float32)
    x = session.asarray(x_host)
    y = x * 2.0 + 1.0
    y.get()
    for _ in range(3):
        np.testing.assert_array_equal(y.get(), x_host * 2 + 1)
        assert gf.evaluate(y, profile=True).timings.prepared_graph
        np.testing.assert_array_equal((x * 3.0 + 1.0).get(), x_host * 3 + 1)  # scalars sent
    (entry,) = session._prepared_cache()._entries.values()
    assert sorted(profile for _, profile in entry.requests) == [False, True]
    y.persist("stored")
    np.testing.assert_array_equal(session.download("stored"), x_host * 2 + 1)
    assert len(session._prepared_cache()) == 1


def test_large_and_merged_graphs_go_by_handle(session):
    x_host = np.linspace(0, 1, 16)
    x = session.asarray(x_host)

    def long_chain(v, k):
        for i in range(_prepared.MAX_SUB_OPS + 10):
            v = v + k if i % 2 else v * 0.5
        return v

    def host_long_chain(v, k):
        for i in range(_prepared.MAX_SUB_OPS + 10):
            v = v + k if i % 2 else v * 0.5
        return v

    for k in (1.0, 2.0):
        out = gf.evaluate(long_chain(x, k))
        np.testing.assert_allclose(out[0], host_long_chain(x_host, k))
    assert out.timings.prepared_graph
    for k in (1.0, 2.0):
        a = x * k
        b = a + 1.0
        out = gf.evaluate(b, a, a * b)
        for got, want in zip(out, [x_host * k + 1, x_host * k, x_host * k * (x_host * k + 1)]):
            np.testing.assert_allclose(got, want)
    assert out.timings.prepared_graph


def test_the_get_overhead_bench_runs(server):
    import sys

    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "bench"))
    import get_overhead

    result = get_overhead.measure(server.target, n=20, warmup=5)
    assert result["answer_ok"]
    assert set(result["p50_us"]) == {"execute_raw", "execute_raw_prepared", "remote_array_get",
                                     "remote_array_get_prebuilt"}
    assert all(v > 0 for v in result["p50_us"].values())
    assert all(v > 0 for v in result["client_only_us"].values())
    assert len(result["client_only_us"]) == 4
