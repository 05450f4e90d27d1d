"""Server-level behaviour: info, health, reflection, limits, shutdown."""

import grpc
import numpy as np
import pytest

import gpuflow


def test_server_info(client):
    info = client.info()
    assert info.version == gpuflow.__version__
    from conftest import BACKEND

    assert info.backend == BACKEND
    assert info.healthy
    assert len(info.dtypes) == 15
    assert info.limits.max_array_bytes == 2 << 30
    assert info.limits.max_chunk_bytes >= 1 << 20


def health_check(target, service):
    """grpc.health.v1.Health/Check by hand (Debian has no grpcio-health-checking):
    the request is field 1 (string service), the reply field 1 (enum status)."""
    encoded = service.encode()
    request = b"\x0a" + bytes([len(encoded)]) + encoded if encoded else b""
    with grpc.insecure_channel(target) as ch:
        check = ch.unary_unary("/grpc.health.v1.Health/Check")
        reply = check(request, timeout=5)
    return {b"": 0, b"\x08\x01": 1, b"\x08\x02": 2}.get(reply, reply)


SERVING = 1


def test_health_check_serving(server):
    for service in ("", "gpuflow.v1.GpuFlow"):
        assert health_check(server.target, service) == SERVING


def test_health_check_unknown_service_is_not_found(server):
    with pytest.raises(grpc.RpcError) as e:
        health_check(server.target, "no.such.Service")
    assert e.value.code() == grpc.StatusCode.NOT_FOUND


def test_reflection_lists_the_service(server):
    # grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo with
    # list_services (field 7, string ""): the reply names gpuflow.v1.GpuFlow.
    with grpc.insecure_channel(server.target) as ch:
        call = ch.stream_stream("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
        replies = list(call(iter([b"\x3a\x00"]), timeout=5))
    assert len(replies) == 1
    assert b"gpuflow.v1.GpuFlow" in replies[0]
    assert b"grpc.health.v1.Health" in replies[0]


def test_max_sessions(make_server):
    srv = make_server("--max_sessions=2")
    with gpuflow.connect(srv.target) as c:
        a, b = c.session(), c.session()
        with pytest.raises(gpuflow.ResourceExhaustedError, match="too many sessions"):
            c.session()
        a.close()
        c.session().close()  # room again
        b.close()


def test_environment_variables_set_flags(make_server):
    srv = make_server(env={"GPUFLOW_MAX_ARRAY_BYTES": "1KiB", "GPUFLOW_MAX_SESSIONS": "3"})
    with gpuflow.connect(srv.target) as c:
        limits = c.info().limits
        assert limits.max_array_bytes == 1024
        assert limits.max_sessions == 3


def test_command_line_beats_environment(make_server):
    srv = make_server("--max_sessions=5", env={"GPUFLOW_MAX_SESSIONS": "3"})
    with gpuflow.connect(srv.target) as c:
        assert c.info().limits.max_sessions == 5


def test_bad_environment_value_fails_start(make_server):
    with pytest.raises(RuntimeError, match="GPUFLOW_MAX_ARRAY_BYTES"):
        make_server(env={"GPUFLOW_MAX_ARRAY_BYTES": "lots"})


def test_sigterm_shuts_down_cleanly_with_sessions_open(make_server):
    srv = make_server()
    c = gpuflow.connect(srv.target)
    s = c.session()
    s.upload(np.ones(1000), name="x")
    assert srv.stop() == 0
    assert "shutting down" in srv.final_log and "stopped" in srv.final_log
    c.close()


def test_connect_to_nothing_is_unavailable():
    with pytest.raises(gpuflow.UnavailableError, match="no gpuflow server"):
        gpuflow.connect("localhost:1", timeout=0.5)
