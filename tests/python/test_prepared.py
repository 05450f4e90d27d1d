"""Prepared graphs through the real server (issue 15): the PrepareGraph and
ReleaseGraph RPCs, Execute by handle, and the Python client's use of them
without being asked (a structure seen before goes by handle, with its
arrays and scalars bound), plus gpuflow.fuse."""

import concurrent.futures as cf

import numpy as np
import pytest

import gpuflow as gf
from gpuflow.v1 import service_pb2

TIMEOUT = 60


def chain(x, a=1.0001, b=0.5):
    for i in range(6):
        x = x * a if i % 2 == 0 else x + b
    return x


def host_chain(x, a=1.0001, b=0.5):
    for i in range(6):
        x = x * np.float32(a) if i % 2 == 0 else x + np.float32(b)
    return x


def timings_of(session, array):
    """The server's Timings of evaluating ``array``."""
    return gf.evaluate(array).timings


def test_a_repeated_structure_goes_by_handle(session):
    x_host = np.linspace(0, 1, 257, dtype=np.float32)
    x = session.asarray(x_host)
    first = timings_of(session, chain(x))
    assert not first.prepared_graph
    assert len(session._prepared_cache()) == 1
    for _ in range(3):
        again = gf.evaluate(chain(x))
        assert again.timings.prepared_graph
        assert again.timings.validate_seconds == 0
        np.testing.assert_allclose(again[0], host_chain(x_host), rtol=1e-6)
    assert len(session._prepared_cache()) == 1


def test_new_scalars_and_arrays_bind_to_the_same_handle(session):
    xs = [np.arange(10, dtype=np.float32) * k for k in range(1, 4)]
    arrays = [session.asarray(h) for h in xs]
    gf.evaluate(chain(arrays[0]))
    for h, x in zip(xs, arrays):
        for a, b in [(2.0, -1.0), (0.5, 3.25), (1.0001, 0.5)]:
            out = gf.evaluate(chain(x, a, b))
            assert out.timings.prepared_graph
            np.testing.assert_allclose(out[0], host_chain(h, a, b), rtol=1e-6)
    assert len(session._prepared_cache()) == 1


def test_types_and_structure_make_new_entries(session):
    x32 = session.asarray(np.arange(4, dtype=np.float32))
    y32 = session.asarray(np.arange(4, dtype=np.float32) + 10)
    x64 = session.asarray(np.arange(4, dtype=np.float64))
    np.testing.assert_array_equal((x32 * x32).get(), np.arange(4) ** 2)
    # x * y has two arrays where x * x has one: another structure.
    np.testing.assert_array_equal((x32 * y32).get(), np.arange(4) * (np.arange(4) + 10))
    np.testing.assert_array_equal((y32 * y32).get(), (np.arange(4) + 10) ** 2)
    assert (x64 * x64).get().dtype == np.float64
    # A weak int where a float was, a strong scalar where a weak one was.
    assert (x32 * 2).get().dtype == np.float32
    assert (x32 * 2.0).get().dtype == np.float32
    assert (x32 * np.float64(2.0)).get().dtype == np.float64
    assert (x32 * np.float64(3.0)).get()[1] == 3.0
    assert len(session._prepared_cache()) == 6


def test_the_sign_of_zero_is_a_value(session):
    x = session.asarray(np.ones(3, dtype=np.float32))
    assert not np.signbit((x * 0.0).get()).any()
    assert np.signbit((x * -0.0).get()).all()
    assert not np.signbit((x * 0.0).get()).any()
    nan = (x * float("nan")).get()
    assert np.isnan(nan).all()


def test_a_changed_integer_is_checked_again(session):
    small = session.asarray(np.array([1, 2, 3], dtype=np.int8))
    np.testing.assert_array_equal((small + 1).get(), [2, 3, 4])
    np.testing.assert_array_equal((small + 5).get(), [6, 7, 8])
    # Out of int8's range: refused as an unprepared request would be.
    with pytest.raises((OverflowError, gf.InvalidArgumentError)):
        (small + 300).get()
    # A comparison runs in int64 for an int out of range (NumPy 2).
    u8 = session.asarray(np.array([0, 5, 255], dtype=np.uint8))
    np.testing.assert_array_equal((u8 < 3).get(), [True, False, False])
    np.testing.assert_array_equal((u8 < -3).get(), [False, False, False])
    np.testing.assert_array_equal((u8 < 1000).get(), [True, True, True])


def test_a_forgotten_handle_is_prepared_again(session, client):
    x = session.asarray(np.arange(5, dtype=np.float32))
    (x + 1).get()
    (entry,) = session._prepared_cache()._entries.values()
    client.stub.ReleaseGraph(service_pb2.ReleaseGraphRequest(session_id=session.id,
                                                             handle=entry.handle))
    np.testing.assert_array_equal((x + 2).get(), np.arange(5) + 2)
    (again,) = session._prepared_cache()._entries.values()
    assert again.handle != entry.handle
    client.stub.ReleaseGraph(service_pb2.ReleaseGraphRequest(session_id=session.id,
                                                             handle=again.handle))
    future = (x + 3).get_async()
    np.testing.assert_array_equal(future.result(TIMEOUT), np.arange(5) + 3)
    assert len(session._prepared_cache()) == 1


def test_async_and_threads_share_the_handles(session):
    x_host = np.arange(64, dtype=np.float32)
    x = session.asarray(x_host)
    futures = [chain(x, 1.0 + i, float(i)).get_async() for i in range(16)]
    for i, f in enumerate(futures):
        np.testing.assert_allclose(f.result(TIMEOUT), host_chain(x_host, 1.0 + i, float(i)),
                                   rtol=1e-6)
    with cf.ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda i: chain(x, 2.0, float(i)).get(), range(16)))
    for i, value in enumerate(got):
        np.testing.assert_allclose(value, host_chain(x_host, 2.0, float(i)), rtol=1e-6)
    assert len(session._prepared_cache()) == 1


def test_stored_and_temporary_outputs_by_handle(session):
    x = session.asarray(np.arange(6, dtype=np.float32))
    for k in range(3):
        y = x * float(k) + 1.0
        info = y.persist(f"stored{k}")
        assert info is y
        np.testing.assert_array_equal(session.download(f"stored{k}"), np.arange(6) * k + 1.0)
    assert len(session._prepared_cache()) == 1


def test_a_server_without_prepared_graphs(make_server):
    srv = make_server("--max_prepared_graphs=0")
    with gf.connect(srv.target) as client, client.session() as s:
        assert client.limits.max_prepared_graphs == 0
        x = s.asarray(np.arange(3, dtype=np.float32))
        for k in range(3):
            out = gf.evaluate(x + float(k))
            assert not out.timings.prepared_graph
            np.testing.assert_array_equal(out[0], np.arange(3) + k)
        assert len(s._prepared_cache()) == 0
        with pytest.raises(gf.FailedPreconditionError, match="max_prepared_graphs"):
            gf.client._rpc(client.stub.PrepareGraph,
                           service_pb2.PrepareGraphRequest(session_id=s.id, graph=gf.Graph().proto))


def test_the_client_keeps_at_most_the_servers_limit(make_server):
    srv = make_server("--max_prepared_graphs=2")
    with gf.connect(srv.target) as client, client.session() as s:
        x = s.asarray(np.arange(3, dtype=np.float32))
        ops = [lambda v: v + 1.0, lambda v: v * 2.0, lambda v: v - 1.0, lambda v: v / 2.0]
        for _ in range(2):
            for op in ops:
                np.testing.assert_array_equal(op(x).get(), op(np.arange(3, dtype=np.float32)))
        assert len(s._prepared_cache()) == 2


def test_prepare_graph_rpc(session, client):
    session.upload(np.arange(4, dtype=np.float32), name="x")
    g = gf.Graph()
    y = g.add(g.mul(g.array("x"), 2.0), 1)
    info = client.stub.PrepareGraph(service_pb2.PrepareGraphRequest(
        session_id=session.id, graph=g.proto, output_nodes=[y.id]))
    assert info.handle != 0
    assert list(info.arrays) == ["x"]
    assert info.num_scalars == 2
    assert list(info.output_nodes) == [y.id]
    request = service_pb2.ExecuteRequest(session_id=session.id, prepared_graph=info.handle)
    request.outputs.add(node=y.id, return_inline=True)
    request.scalars.add(float_value=3.0)
    request.scalars.add(int_value=-1)
    reply = client.stub.Execute(request)
    assert reply.timings.prepared_graph
    np.testing.assert_array_equal(gf.graph.inline_to_numpy(reply.outputs[0].value),
                                  np.arange(4) * 3.0 - 1)
    freed = client.stub.ReleaseGraph(service_pb2.ReleaseGraphRequest(session_id=session.id,
                                                                     handle=info.handle))
    assert freed.freed_bytes == info.metadata_bytes
    with pytest.raises(gf.FailedPreconditionError, match="prepare it again"):
        gf.client._rpc(client.stub.Execute, request)
    with pytest.raises(gf.NotFoundError):
        gf.client._rpc(client.stub.ReleaseGraph, service_pb2.ReleaseGraphRequest(
            session_id=session.id, handle=info.handle))


# ---- gpuflow.fuse ------------------------------------------------------------------


def test_fuse_traces_once_per_signature(session):
    calls = []

    @gf.fuse()
    def squared_diff(x, y):
        calls.append(1)
        return (x - y) * (x - y)

    a_host = np.arange(8, dtype=np.float32)
    b_host = np.ones(8, dtype=np.float32)
    a, b = session.asarray(a_host), session.asarray(b_host)
    for k in range(3):
        out = squared_diff(a, b * float(k))
        assert isinstance(out, gf.RemoteArray)
        np.testing.assert_array_equal(out.get(), (a_host - b_host * k) ** 2)
    assert len(calls) == 1  # b * k is a new array of the same type each time
    c = session.asarray(np.arange(8, dtype=np.float64))
    np.testing.assert_array_equal(squared_diff(c, c).get(), np.zeros(8))
    assert len(calls) == 2
    assert squared_diff.__name__ == "squared_diff"


def test_fuse_scalars_tuples_and_forms(session):
    @gf.fuse
    def scale_shift(x, a, b):
        return x * a + b, x.sum()

    @gf.fuse(kernel_name="not_array")
    def not_array(x):
        return x.shape

    x_host = np.arange(5, dtype=np.float32)
    x = session.asarray(x_host)
    for a, b in [(2.0, 1.0), (-1.5, 0.25), (2.0, 1.0)]:
        y, s = scale_shift(x, a, b)
        np.testing.assert_allclose(y.get(), x_host * np.float32(a) + np.float32(b))
        assert s.get() == x_host.sum()
    assert len(scale_shift._traces) == 2
    assert not_array(x) == (5,)
    with pytest.raises(TypeError, match="RemoteArrays and scalars"):
        scale_shift(x, "a", 1.0)
    with pytest.raises(TypeError, match="positional"):
        scale_shift(x, a=1.0, b=2.0)


def test_the_docs_example_runs(server, capsys):
    import re

    from conftest import ROOT

    text = (ROOT / "docs" / "python.md").read_text()
    section = text[text.index("## Repeated computations"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert '"localhost:50051"' in code
    exec(compile(code.replace("localhost:50051", server.target), "docs/python.md", "exec"), {})
    assert capsys.readouterr().out.split("\n")[:2] == ["True", "[1. 0. 1.]"]


def test_repeated_inference_gives_what_fresh_inference_gives(session):
    # apply() remembers the types an attribute-free op infers from its input
    # types; errors are never remembered, and other types infer afresh.
    a = session.asarray(np.arange(3, dtype=np.float32))
    b = session.asarray(np.arange(4, dtype=np.float32))
    for _ in range(2):
        with pytest.raises(ValueError, match="broadcast"):
            a + b
    for dtype, scalar, want in [(np.float32, 2.0, np.float32), (np.int8, 2, np.int8),
                                (np.int8, 2.0, np.float64), (np.uint8, -1, None)]:
        x = session.asarray(np.arange(3, dtype=dtype))
        for _ in range(2):
            if want is None:
                with pytest.raises(OverflowError):
                    x + scalar
            else:
                assert (x + scalar).dtype == want
