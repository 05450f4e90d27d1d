"""Execute, Benchmark and Precompile: outputs, limits, timings, validation errors."""

import grpc
import numpy as np
import pytest

import gpuflow
from conftest import BACKEND
from gpuflow.v1 import graph_pb2, service_pb2


def test_outputs_stored_and_inline(session):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    session.upload(x, name="x")
    g = gpuflow.Graph()
    y = g.mul(g.array("x"), 2)
    s = g.sum(y, axes=[1])
    stored = session.execute(g, outputs={"y": y, "s": s})
    assert [info.name for info in stored] == ["y", "s"]
    assert stored[0].shape == (3, 4) and stored[0].dtype == "float32"
    np.testing.assert_array_equal(session.download("y"), x * 2)
    np.testing.assert_array_equal(session.download("s"), (x * 2).sum(axis=1))
    assert session.memory_used == x.nbytes * 2 + 12
    # Stored arrays feed later graphs.
    g2 = gpuflow.Graph()
    (z,) = session.execute(g2, outputs=[g2.add(g2.array("y"), g2.array("x"))])
    np.testing.assert_array_equal(z, x * 3)


def test_timings_and_plan_cache_hit(session):
    session.upload(np.ones(100, np.float64), name="x")

    def graph():
        g = gpuflow.Graph()
        return g, g.exp(g.array("x"))

    g, y = graph()
    first = session.execute(g, outputs=[y], profile=True)
    g, y = graph()
    second = session.execute(g, outputs=[y], profile=True)
    assert second.timings.plan_cache_hit
    t = second.timings
    assert t.total_seconds > 0 and t.run_seconds > 0
    # The first is converted, validated and planned; the repeat reuses all
    # three from the request cache (issue 15).
    assert first.timings.validate_seconds > 0 and first.timings.convert_seconds > 0
    assert not first.timings.request_cache_hit
    assert t.request_cache_hit
    assert t.validate_seconds == 0 and t.plan_seconds == 0 and t.convert_seconds == 0
    assert t.total_seconds >= t.queue_seconds + t.run_seconds + t.transfer_seconds
    # GPU time is present exactly when the backend has a GPU.
    assert t.HasField("gpu_seconds") == (BACKEND == "cuda")
    assert [s.kind for s in t.steps] == ["elementwise"]
    np.testing.assert_allclose(first[0], np.exp(np.ones(100)))


def test_plan_cache_ignores_names_and_literal_values(session, client):
    before = client.info().plan_cache
    for name, k in (("p", 2), ("q", 3)):
        session.upload(np.ones(17, np.int32) * k, name=name)
        g = gpuflow.Graph()
        (out,) = session.execute(g, outputs=[g.add(g.array(name), k)])
        np.testing.assert_array_equal(out, np.full(17, 2 * k, np.int32))
    after = client.info().plan_cache
    assert after.misses - before.misses == 1
    assert after.memory_hits - before.memory_hits == 1


def test_fusion_is_visible_in_profiles(session):
    a = np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32)
    session.upload(a, name="a")
    g = gpuflow.Graph()
    x = g.array("a")
    y = g.sqrt(g.sum(g.mul(x, x), axes=[-1]))
    z = g.add(g.mul(g.sqrt(g.add(g.mul(x, x), 1)), 2), 1)
    result = session.execute(g, outputs=[y, z], profile=True)
    kinds = [s.kind for s in result.timings.steps]
    descriptions = [s.description for s in result.timings.steps]
    assert kinds.count("reduction") == 1 and kinds.count("elementwise") == 1, descriptions
    assert any("prologue [mul]" in d and "epilogue [sqrt]" in d for d in descriptions), descriptions
    assert any(d.startswith("fused elementwise [") for d in descriptions), descriptions


def test_inline_output_over_the_limit(make_server):
    srv = make_server("--max_inline_bytes=1KiB")
    with gpuflow.connect(srv.target) as c, c.session() as s:
        g = gpuflow.Graph()
        big = g.full(1.0, shape=[1000])  # 8000 bytes
        with pytest.raises(gpuflow.InvalidArgumentError, match="inline limit"):
            s.execute(g, outputs=[big])
        s.execute(g, outputs={"big": big})  # storing it is fine
        assert s.info("big").nbytes == 8000


def test_results_over_the_quota(client):
    with client.session(memory_limit=4096) as s:
        g = gpuflow.Graph()
        with pytest.raises(gpuflow.ResourceExhaustedError, match="storing output"):
            s.execute(g, outputs={"y": g.full(0.0, shape=[1000])})
        assert s.list() == [] and s.memory_used == 0


def test_too_many_nodes(make_server):
    srv = make_server("--max_graph_nodes=3")
    with gpuflow.connect(srv.target) as c, c.session() as s:
        g = gpuflow.Graph()
        x = g.full(1, shape=[2])
        for _ in range(3):
            x = g.add(x, 1)
        with pytest.raises(gpuflow.ResourceExhaustedError, match="max_graph_nodes"):
            s.execute(g, outputs=[x])


def raw_execute(session, nodes, outputs):
    request = service_pb2.ExecuteRequest(session_id=session.id)
    for node in nodes:
        request.graph.nodes.append(node)
    for out in outputs:
        request.outputs.add(node=out, return_inline=True)
    try:
        return session._stub.Execute(request)
    except grpc.RpcError as err:
        raise gpuflow.errors.from_rpc_error(err) from None


def node(id, op, inputs=(), **attrs):
    n = graph_pb2.Node(id=id, op=op)
    for i in inputs:
        if isinstance(i, str) and i.startswith("@"):
            n.inputs.add(array=i[1:])
        elif isinstance(i, str):
            n.inputs.add(node=i)
        else:
            n.inputs.add(scalar=graph_pb2.Scalar(int_value=i))
    for k, v in attrs.items():
        if isinstance(v, bool):
            n.attrs[k].bool_value = v
        elif isinstance(v, int):
            n.attrs[k].int_value = v
        elif isinstance(v, list):
            n.attrs[k].ints.values.extend(v)
        else:
            n.attrs[k].string_value = v
    return n


VALIDATION_ERRORS = [
    ([node("a", "frobnicate", [1])], ["a"], "node 'a' (frobnicate): unknown op"),
    ([node("a", "add", [1])], ["a"], "node 'a' (add):"),
    ([node("a", "neg", ["b"])], ["a"], "node 'a' (neg):"),
    ([node("a", "neg", ["a"])], ["a"], "node 'a' (neg):"),
    ([node("a", "neg", [1]), node("a", "neg", [2])], ["a"], "node 'a' (neg):"),
    ([node("a", "neg", ["@missing"])], ["a"], "missing"),
    ([node("a", "sum", ["@m"], axes=[5])], ["a"], "node 'a' (sum):"),
    ([node("a", "sum", ["@m"], axes=[0, 0])], ["a"], "node 'a' (sum):"),
    ([node("a", "add", ["@m", "@v"])], ["a"], "node 'a' (add):"),
    ([node("a", "sum", ["@m"], keepdims="yes")], ["a"], "node 'a' (sum):"),
    ([node("a", "sum", ["@m"], colour=1)], ["a"], "node 'a' (sum):"),
    ([node("a", "reshape", ["@m"], shape=[7, -1])], ["a"], "node 'a' (reshape):"),
    ([node("a", "reshape", ["@m"])], ["a"], "node 'a' (reshape):"),
    ([node("a", "transpose", ["@m"], axes=[0, 0])], ["a"], "node 'a' (transpose):"),
    ([node("a", "neg", [1])], ["b"], "output names node 'b'"),
    ([], ["a"], "graph has no nodes"),
]


@pytest.mark.parametrize("case", range(len(VALIDATION_ERRORS)))
def test_validation_errors(session, case):
    nodes, outputs, message = VALIDATION_ERRORS[case]
    session.upload(np.ones((2, 3), np.float32), name="m")
    session.upload(np.ones(4, np.float32), name="v")
    expected = gpuflow.NotFoundError if "missing" in message else gpuflow.InvalidArgumentError
    with pytest.raises(expected) as e:
        raw_execute(session, nodes, outputs)
    assert message in e.value.details


def test_output_needs_a_destination(session):
    request = service_pb2.ExecuteRequest(session_id=session.id)
    request.graph.nodes.append(node("a", "neg", [1]))
    request.outputs.add(node="a")
    with pytest.raises(grpc.RpcError) as e:
        session._stub.Execute(request)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "neither stored" in e.value.details()


def test_custom_kernels_need_cuda(session, client):
    if client.info().backend != "cpu":
        pytest.skip("CPU-backend behaviour")
    g = gpuflow.Graph()
    session.upload(np.ones(4, np.float32), name="x")
    k = g.elementwise_kernel(g.array("x"), in_params="T x", out_params="T y",
                             operation="y = x * 2", name="double_it")
    with pytest.raises(gpuflow.FailedPreconditionError, match="cuda"):
        session.execute(g, outputs=[k])


def test_benchmark_repeats_and_duration(session):
    session.upload(np.ones(1000, np.float32), name="x")
    g = gpuflow.Graph()
    g.exp(g.array("x"))
    request = service_pb2.BenchmarkRequest(session_id=session.id, graph=g.proto, n_warmup=2,
                                           n_repeat=7, name="exp")
    reply = session._stub.Benchmark(request)
    assert reply.name == "exp"
    assert len(reply.cpu_seconds) == 7
    assert all(t > 0 for t in reply.cpu_seconds)
    # Absent on the CPU backend (not zero); one per repeat on the GPU.
    assert len(reply.gpu_seconds) == (7 if BACKEND == "cuda" else 0)
    request.n_repeat = 100000
    request.max_duration.FromMilliseconds(200)
    reply = session._stub.Benchmark(request)
    assert 0 < len(reply.cpu_seconds) < 100000
    assert sum(reply.cpu_seconds) < 1.0


def test_precompile_validates_against_declared_types(client):
    g = gpuflow.Graph()
    g.sum(g.mul(g.array("x"), 2), axes=[0])
    request = service_pb2.PrecompileRequest()
    request.graphs.append(g.proto)
    request.array_types["x"].dtype = gpuflow.dtypes.to_proto("float32")
    request.array_types["x"].shape.extend([4, 5])
    client.stub.Precompile(request)
    del request.array_types["x"]
    with pytest.raises(grpc.RpcError) as e:
        client.stub.Precompile(request)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    assert "graph 0" in e.value.details()
