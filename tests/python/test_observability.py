"""Observability end to end: the /metrics endpoint (checked by promtool and
scraped by a real Prometheus), exact counter movements for a scripted
sequence of calls, the request log, and health during shutdown.

promtool and prometheus come from Debian's `prometheus` package, which
scripts/install_deps.sh installs; without them those tests are skipped.
"""

import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import grpc
import numpy as np
import pytest

import gpuflow
from conftest import BACKEND
from gpuflow import dtypes
from gpuflow.v1 import service_pb2, service_pb2_grpc
from prometheus_testing import real_prometheus

SERVING, NOT_SERVING = b"\x08\x01", b"\x08\x02"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metrics_server(make_server, *args):
    """A gpuflowd with its metrics endpoint on a free loopback port."""
    port = free_port()
    srv = make_server(f"--metrics_port={port}", "--metrics_address=127.0.0.1",
                      "--kernel_cache_dir=none", *args)
    srv.metrics_url = f"http://127.0.0.1:{port}/metrics"
    srv.metrics_port = port
    return srv


def fetch(url):
    with urllib.request.urlopen(url, timeout=10) as reply:
        return reply.headers.get("Content-Type"), reply.read().decode()


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


def parse(text):
    """{(name, ((label, value), ...)): float} for every sample line."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        labels = tuple(sorted(_LABEL.findall(m.group(2) or "")))
        samples[(m.group(1), labels)] = float(m.group(3))
    return samples


def scrape(srv):
    return parse(fetch(srv.metrics_url)[1])


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def series(samples, name):
    """{labels dict as a sorted tuple: value} of one metric."""
    return {labels: v for (n, labels), v in samples.items() if n == name}


def delta(before, after, name):
    """Series of `name` that changed, with how much."""
    b, a = series(before, name), series(after, name)
    return {labels: a[labels] - b.get(labels, 0.0) for labels in a if a[labels] != b.get(labels, 0.0)}


def requests_of(method, code):
    return (("code", code), ("method", method))


# ---------------------------------------------------------------- raw calls
# The scripted tests call the stub directly, so that every RPC they count is
# one they made (the client library may add calls of its own).


def create_session(stub, label):
    return stub.CreateSession(service_pb2.CreateSessionRequest(label=label)).session_id


def upload(stub, session_id, name, array):
    header = service_pb2.UploadHeader(session_id=session_id, name=name,
                                      dtype=dtypes.to_proto(array.dtype.name), shape=array.shape)
    return stub.UploadArray(iter([service_pb2.UploadArrayRequest(header=header),
                                  service_pb2.UploadArrayRequest(chunk=array.tobytes())]))


def exp_request(session_id, *, profile=False, op="exp"):
    g = gpuflow.Graph()
    y = g.op(op, g.array("x"), id="y")
    request = service_pb2.ExecuteRequest(session_id=session_id, graph=g.proto, profile=profile)
    request.outputs.add(node=y.id, return_inline=True)
    return request


def code_of(call):
    try:
        call()
    except grpc.RpcError as e:
        return e.code()
    return grpc.StatusCode.OK


# ---------------------------------------------------------------- tests


def test_metrics_endpoint_serves_text_format_that_promtool_accepts(make_server):
    promtool = shutil.which("promtool")
    srv = metrics_server(make_server)
    content_type, _ = fetch(srv.metrics_url)
    # prometheus-cpp 1.0 sends text/plain without a version, which Prometheus
    # reads as the text format 0.0.4.
    assert content_type.startswith("text/plain"), content_type

    # A mixed workload: every RPC, successes and failures.
    with gpuflow.connect(srv.target) as c:
        c.info()
        with c.session(label="mixed") as s:
            s.upload(np.arange(1000, dtype=np.float32), name="x")
            g = gpuflow.Graph()
            y = g.mul(g.exp(g.array("x")), 2)
            s.execute(g, outputs=[g.sum(y)], profile=True)
            s.execute(g, outputs={"y": y})
            s.download("y")
            s.list()
            s.info("y")
            s.delete("y")
            s.keep_alive()
            bench = service_pb2.BenchmarkRequest(session_id=s.id, graph=g.proto, n_warmup=1,
                                                 n_repeat=3)
            c.stub.Benchmark(bench)
            with pytest.raises(gpuflow.Error):
                s.info("missing")
        pre = service_pb2.PrecompileRequest()
        pre.graphs.append(g.proto)
        pre.array_types["x"].dtype = dtypes.to_proto("float32")
        pre.array_types["x"].shape.extend([1000])
        c.stub.Precompile(pre)

    _, text = fetch(srv.metrics_url)
    names = {name for name, _ in parse(text)}
    expected = {
        "gpuflow_rpc_requests_total", "gpuflow_rpc_duration_seconds_bucket",
        "gpuflow_rpc_duration_seconds_sum", "gpuflow_rpc_duration_seconds_count",
        "gpuflow_execute_phase_seconds_bucket", "gpuflow_gpu_time_seconds_bucket",
        "gpuflow_kernel_compiles_total", "gpuflow_kernel_compile_seconds_bucket",
        "gpuflow_kernel_cache_lookups_total", "gpuflow_kernel_cache_evictions_total",
        "gpuflow_plan_cache_lookups_total", "gpuflow_session_bytes", "gpuflow_sessions_active",
        "gpuflow_sessions_expired_total", "gpuflow_arrays_active", "gpuflow_transfer_bytes_total",
        "gpuflow_device_healthy", "gpuflow_build_info",
    }
    if BACKEND == "cuda":
        expected |= {"gpuflow_memory_pool_bytes", "gpuflow_device_memory_bytes"}
    assert expected <= names, expected - names
    info = [labels for (name, labels) in parse(text) if name == "gpuflow_build_info"]
    assert dict(info[0])["version"] == gpuflow.__version__
    assert dict(info[0])["backend"] == BACKEND
    for line in text.splitlines():
        assert "mixed" not in line, "a session label leaked into a metric label"

    if promtool is None:
        pytest.skip("promtool not installed (Debian package prometheus; scripts/install_deps.sh)")
    check = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                           text=True, timeout=30)
    assert check.returncode == 0, check.stdout + check.stderr


def test_counters_move_exactly_for_a_scripted_sequence(make_server):
    srv = metrics_server(make_server, "--max_array_bytes=1MiB")
    with gpuflow.connect(srv.target) as c:
        stub = c.stub
        before = scrape(srv)
        x = np.arange(1000, dtype=np.float32)
        expected = {}

        def expect(method, code, n=1):
            key = requests_of(method, code)
            expected[key] = expected.get(key, 0) + n

        stub.GetServerInfo(service_pb2.GetServerInfoRequest())
        expect("GetServerInfo", "OK")
        sid = create_session(stub, "scripted")
        expect("CreateSession", "OK")
        upload(stub, sid, "x", x)
        expect("UploadArray", "OK")
        stub.Execute(exp_request(sid))  # plans and (cuda) compiles
        stub.Execute(exp_request(sid, profile=True))  # plan and kernel from the caches
        expect("Execute", "OK", 2)
        list(stub.DownloadArray(service_pb2.DownloadArrayRequest(session_id=sid, name="x")))
        expect("DownloadArray", "OK")

        # One failure of each kind the server can be made to give.
        assert code_of(lambda: stub.KeepAlive(service_pb2.KeepAliveRequest(session_id="0" * 32))) \
            == grpc.StatusCode.NOT_FOUND
        expect("KeepAlive", "NOT_FOUND")
        assert code_of(lambda: stub.Execute(exp_request(sid, op="no_such_op"))) \
            == grpc.StatusCode.INVALID_ARGUMENT
        expect("Execute", "INVALID_ARGUMENT")
        big = np.zeros(1 << 19, np.float32)  # 2 MiB > --max_array_bytes
        assert code_of(lambda: upload(stub, sid, "big", big)) == grpc.StatusCode.RESOURCE_EXHAUSTED
        expect("UploadArray", "RESOURCE_EXHAUSTED")
        if BACKEND == "cpu":
            g = gpuflow.Graph()
            k = g.elementwise_kernel(g.array("x"), in_params="T x", out_params="T y",
                                     operation="y = x * 2", name="double_it")
            request = service_pb2.ExecuteRequest(session_id=sid, graph=g.proto)
            request.outputs.add(node=k.id, return_inline=True)
            assert code_of(lambda: stub.Execute(request)) == grpc.StatusCode.FAILED_PRECONDITION
            expect("Execute", "FAILED_PRECONDITION")
        assert code_of(lambda: stub.GetArrayInfo(
            service_pb2.GetArrayInfoRequest(session_id=sid, name="nope"))) == grpc.StatusCode.NOT_FOUND
        expect("GetArrayInfo", "NOT_FOUND")

        stub.DeleteArray(service_pb2.DeleteArrayRequest(session_id=sid, name="x"))
        expect("DeleteArray", "OK")
        stub.CloseSession(service_pb2.CloseSessionRequest(session_id=sid))
        expect("CloseSession", "OK")
        assert code_of(lambda: stub.CloseSession(service_pb2.CloseSessionRequest(session_id=sid))) \
            == grpc.StatusCode.NOT_FOUND
        expect("CloseSession", "NOT_FOUND")

        after = scrape(srv)

    assert delta(before, after, "gpuflow_rpc_requests_total") == expected
    # One duration observation per request.
    durations = delta(before, after, "gpuflow_rpc_duration_seconds_count")
    per_method = {}
    for (code, method), n in expected.items():
        per_method[(("method", method[1]),)] = per_method.get((("method", method[1]),), 0) + n
    assert durations == per_method

    assert delta(before, after, "gpuflow_transfer_bytes_total") == {
        (("direction", "upload"),): x.nbytes,  # the rejected upload sent no accepted bytes
        (("direction", "download"),): 3 * x.nbytes,  # two inline results, one download
    }
    # exp(x) is planned once, and its repeat comes from the request cache
    # without a plan lookup; the custom kernel (CPU only) is planned before
    # the backend refuses it.
    assert delta(before, after, "gpuflow_plan_cache_lookups_total") == {
        (("result", "miss"),): 2 if BACKEND == "cpu" else 1,
    }
    assert delta(before, after, "gpuflow_request_cache_lookups_total") == {
        (("result", "hit"),): 1, (("result", "miss"),): 1,
    }
    phases = delta(before, after, "gpuflow_execute_phase_seconds_count")
    assert phases[(("phase", "queue"),)] == 2
    assert phases[(("phase", "validate"),)] == 1
    assert phases[(("phase", "convert"),)] == 1
    assert phases[(("phase", "launch"),)] == 2
    assert phases.get((("phase", "gpu"),), 0) == (2 if BACKEND == "cuda" else 0)
    steps = delta(before, after, "gpuflow_gpu_time_seconds_count")
    assert steps == ({(("device", "0"), ("step", "elementwise")): 1} if BACKEND == "cuda" else {})
    # One compile, then hits (nothing to compile on the CPU backend).
    compiles = delta(before, after, "gpuflow_kernel_compiles_total")
    lookups = delta(before, after, "gpuflow_kernel_cache_lookups_total")
    if BACKEND == "cuda":
        assert compiles == {(("device", "0"),): 1}
        assert lookups[(("device", "0"), ("result", "miss"))] == 1
        assert lookups[(("device", "0"), ("result", "memory_hit"))] >= 1
        assert delta(before, after, "gpuflow_kernel_compile_seconds_count") == {(): 1}
    else:
        assert compiles == {} and lookups == {}
    assert value(after, "gpuflow_sessions_active") == 0
    assert value(after, "gpuflow_arrays_active") == 0
    assert value(after, "gpuflow_session_bytes") == 0
    assert value(after, "gpuflow_sessions_expired_total") == 0
    assert value(after, "gpuflow_device_healthy", device="0") == 1


def test_session_gauges_and_expiry(make_server):
    srv = metrics_server(make_server, "--session_reap_interval=50ms")
    with gpuflow.connect(srv.target) as c:
        s = c.session(label="short", idle_ttl=0.3)
        s.upload(np.ones(256, np.float64), name="a")
        s.upload(np.ones(16, np.int8), name="b")
        m = scrape(srv)
        assert value(m, "gpuflow_sessions_active") == 1
        assert value(m, "gpuflow_arrays_active") == 2
        assert value(m, "gpuflow_session_bytes") == 256 * 8 + 16
        deadline = time.monotonic() + 10
        while value(scrape(srv), "gpuflow_sessions_expired_total") < 1:
            assert time.monotonic() < deadline, "the session never expired"
            time.sleep(0.05)
        m = scrape(srv)
        assert value(m, "gpuflow_sessions_active") == 0
        assert value(m, "gpuflow_session_bytes") == 0


def test_prometheus_scrapes_the_exact_request_count(make_server, tmp_path):
    srv = metrics_server(make_server)
    with real_prometheus(tmp_path, "gpuflowd", srv.metrics_port) as (base, proc, log):
        n = 17
        with gpuflow.connect(srv.target) as c:
            for _ in range(n):
                c.stub.GetServerInfo(service_pb2.GetServerInfoRequest())

        def query(promql):
            url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
            try:
                reply = json.loads(fetch(url)[1])
            except OSError:
                return None  # not listening yet
            assert reply["status"] == "success", reply
            results = reply["data"]["result"]
            return float(results[0]["value"][1]) if results else None

        # Prometheus hands new targets to its scraper after up to 5 s; a
        # scrape may in principle land before the last request, so wait for
        # the count to reach n, and never pass it.
        promql = 'gpuflow_rpc_requests_total{job="gpuflowd",method="GetServerInfo",code="OK"}'
        deadline = time.monotonic() + 30
        seen = query(promql)
        while seen != n:
            assert seen is None or seen < n, seen
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
            seen = query(promql)
        time.sleep(0.5)  # a few more scrapes: still exactly n
        assert query(promql) == n
        assert query('up{job="gpuflowd"}') == 1
        assert query('sum(gpuflow_rpc_duration_seconds_count{method="GetServerInfo"})') == n


def test_metrics_port_in_use_fails_start(make_server):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(RuntimeError, match="--metrics_port: cannot serve metrics"):
            make_server(f"--metrics_port={port}", "--metrics_address=127.0.0.1")


def test_metrics_port_zero_serves_no_metrics(make_server):
    srv = make_server("--metrics_port=0", "--log_format=json")
    srv.stop()
    assert "metrics on http" not in srv.final_log


def test_request_log_json_lines(make_server):
    srv = make_server("--log_format=json", "--log_level=debug", "--kernel_cache_dir=none")
    with gpuflow.connect(srv.target) as c:
        sid = create_session(c.stub, "logtest")
        upload(c.stub, sid, "x", np.ones(10, np.float32))
        c.stub.Execute(exp_request(sid))
        assert code_of(lambda: c.stub.GetArrayInfo(
            service_pb2.GetArrayInfoRequest(session_id=sid, name="nope"))) == grpc.StatusCode.NOT_FOUND
        assert code_of(lambda: c.stub.KeepAlive(service_pb2.KeepAliveRequest(session_id="f" * 32))) \
            == grpc.StatusCode.NOT_FOUND
        c.stub.CloseSession(service_pb2.CloseSessionRequest(session_id=sid))
    assert srv.stop() == 0
    lines = [json.loads(line) for line in srv.final_log.splitlines()]  # every line is JSON
    assert all({"time", "level", "msg"} <= line.keys() for line in lines)
    rpcs = [line for line in lines if line["msg"] == "rpc"]
    assert [(r["method"], r["session_label"], r["code"]) for r in rpcs] == [
        ("CreateSession", "logtest", "OK"),
        ("UploadArray", "logtest", "OK"),
        ("Execute", "logtest", "OK"),
        ("GetArrayInfo", "logtest", "NOT_FOUND"),
        ("KeepAlive", "", "NOT_FOUND"),
        ("CloseSession", "logtest", "OK"),
    ]
    assert all(r["level"] == "info" and r["duration_ms"] >= 0 for r in rpcs)
    assert "nope" in rpcs[3]["error"]
    # Session ids are credentials: never in the log.
    assert sid not in srv.final_log and "f" * 32 not in srv.final_log
    debug = [line["msg"] for line in lines if line["level"] == "debug"]
    assert "plan cache miss" in debug
    assert ("kernels compiled" in debug) == (BACKEND == "cuda")
    assert any(line["msg"].startswith("serving on") for line in lines)


def test_request_log_text_is_the_default(make_server):
    srv = make_server()
    with gpuflow.connect(srv.target) as c:
        create_session(c.stub, "plain text")
    srv.stop()
    assert re.search(r"gpuflowd: rpc method=CreateSession session_label=\"plain text\" code=OK "
                     r"duration_ms=[0-9.e-]+\n", srv.final_log), srv.final_log
    assert "debug:" not in srv.final_log


def test_bad_log_flags_fail_start(make_server):
    with pytest.raises(RuntimeError, match="log format 'xml'"):
        make_server("--log_format=xml")
    with pytest.raises(RuntimeError, match="log level 'loud'"):
        make_server("--log_level=loud")


def test_health_watch_turns_not_serving_on_shutdown(make_server):
    srv = make_server("--shutdown_grace=1s")
    channel = grpc.insecure_channel(srv.target)
    watch = channel.unary_stream("/grpc.health.v1.Health/Watch")
    replies = watch(b"", timeout=30)  # service "" (the whole server)
    assert next(replies) == SERVING
    stopper = threading.Thread(target=srv.stop)
    stopper.start()
    try:
        assert next(replies) == NOT_SERVING
    finally:
        stopper.join()
        channel.close()
    assert srv.proc.returncode == 0


def test_server_info_counts_kernels_in_memory_and_on_disk(make_server, tmp_path):
    """ServerInfo.kernel_cache: entries (kernels in memory), bytes and
    disk_entries (the on-disk cache); all 0 on the CPU backend."""
    srv = make_server(f"--kernel_cache_dir={tmp_path}")
    with gpuflow.connect(srv.target) as c, c.session() as s:
        s.upload(np.arange(64, dtype=np.float32), name="x")
        g = gpuflow.Graph()
        s.execute(g, outputs=[g.exp(g.array("x"))])
        kc = c.info().kernel_cache
    if BACKEND == "cuda":
        assert kc.entries >= 1 and kc.disk_entries >= 1 and kc.bytes > 0
        assert kc.misses >= 1
    else:
        assert (kc.entries, kc.disk_entries, kc.bytes, kc.misses) == (0, 0, 0, 0)


# ---------------------------------------------------------------- trace context

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_traceparent_is_logged_and_echoed(make_server):
    srv = make_server()
    stub = service_pb2_grpc.GpuFlowStub(grpc.insecure_channel(srv.target))
    # A unary call, a call that fails and a server stream all echo it.
    _, call = stub.GetServerInfo.with_call(service_pb2.GetServerInfoRequest(),
                                          metadata=(("traceparent", TRACEPARENT),), timeout=10)
    assert ("traceparent", TRACEPARENT) in call.initial_metadata()
    with pytest.raises(grpc.RpcError) as e:
        stub.KeepAlive(service_pb2.KeepAliveRequest(session_id="0" * 32),
                       metadata=(("traceparent", TRACEPARENT),), timeout=10)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    assert ("traceparent", TRACEPARENT) in e.value.initial_metadata()
    stream = stub.DownloadArray(service_pb2.DownloadArrayRequest(session_id="0" * 32, name="x"),
                                metadata=(("traceparent", TRACEPARENT),), timeout=10)
    with pytest.raises(grpc.RpcError):
        list(stream)
    assert ("traceparent", TRACEPARENT) in stream.initial_metadata()
    srv.stop()
    lines = [l for l in srv.final_log.splitlines() if f"traceparent={TRACEPARENT}" in l]
    assert any("method=GetServerInfo" in l for l in lines), srv.final_log
    assert any("method=KeepAlive" in l and "code=NOT_FOUND" in l for l in lines), srv.final_log
    assert any("method=DownloadArray" in l for l in lines), srv.final_log


def test_a_malformed_traceparent_is_ignored(make_server):
    srv = make_server()
    stub = service_pb2_grpc.GpuFlowStub(grpc.insecure_channel(srv.target))
    bad = TRACEPARENT.upper()
    _, call = stub.GetServerInfo.with_call(service_pb2.GetServerInfoRequest(),
                                          metadata=(("traceparent", bad),), timeout=10)
    assert all(key != "traceparent" for key, _ in call.initial_metadata())
    srv.stop()
    assert "traceparent" not in srv.final_log
