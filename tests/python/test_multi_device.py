"""One server driving several devices (--devices, docs/multi-gpu.md).

On the CPU backend --devices=3 makes three independent virtual devices, so
placement, per-device failure and cross-device copies are tested without
GPUs; --testonly_device_faults lets a raw kernel named
gpuflow_injected_device_fault fail its session's device as a sticky CUDA
error would. On the CUDA backend (GPUFLOW_TEST_BACKEND=cuda) the tests that
need one GPU only run with --devices=all and --devices=0.
"""

import re
import socket
import subprocess
import time
import urllib.request

import grpc
import numpy as np
import pytest

import gpuflow
from conftest import BACKEND, Server, server_binary
from deploy_testing import health_status

cpu_only = pytest.mark.skipif(BACKEND != "cpu", reason="virtual devices are the CPU backend's")

FAULT = "gpuflow_injected_device_fault"


@pytest.fixture(scope="module")
def three():
    if BACKEND != "cpu":
        pytest.skip("virtual devices are the CPU backend's")
    srv = Server("--devices=3", "--allow_raw_kernels", "--testonly_device_faults",
                 "--exit_on_device_error=false", "--health_check_interval=100ms",
                 *metrics_flags())
    yield srv
    srv.stop()


def serving(target):
    with grpc.insecure_channel(target) as channel:
        return health_status(channel, "") == "SERVING"


def inject_fault(session):
    session.upload(np.zeros(4, np.float32), name="fault_input")
    g = gpuflow.Graph()
    out = g.raw_kernel(g.array("fault_input"), code="// injected", name=FAULT, grid=[1],
                       block=[1], output=0)
    with pytest.raises(gpuflow.Error) as err:
        session.execute(g, outputs=[out])
    assert err.value.code == grpc.StatusCode.UNAVAILABLE, err.value


@cpu_only
def test_server_info_lists_every_device(three):
    with gpuflow.connect(three.target) as client:
        info = client.info()
        assert [d.id for d in info.devices] == [0, 1, 2]
        for d in info.devices:
            assert d.healthy
            assert f"virtual device {d.id}" in d.description
            assert not d.HasField("device_total_bytes")  # the CPU backend has no device memory
        assert info.healthy
        assert info.device == info.devices[0].description


@cpu_only
def test_sessions_go_to_the_least_loaded_device(three):
    with gpuflow.connect(three.target) as client:
        with client.session() as a, client.session() as b, client.session() as c:
            assert sorted([a.device, b.device, c.device]) == [0, 1, 2]
            loads = {d.id: d.sessions for d in client.devices()}
            assert loads == {0: 1, 1: 1, 2: 1}
            # One session each: the next goes where the sessions hold fewest bytes.
            by_device = {s.device: s for s in (a, b, c)}
            by_device[0].upload(np.ones(1 << 16, np.float64), name="big")
            by_device[2].upload(np.ones(1 << 10, np.float64), name="small")
            with client.session() as d:
                assert d.device == 1
                held = {x.id: x.bytes_held for x in client.devices()}
                assert held[0] > held[2] > held[1] >= 0


@cpu_only
def test_a_session_may_ask_for_its_device(three):
    with gpuflow.connect(three.target) as client:
        with client.session(device=2) as s, client.session(device=2) as t:
            assert (s.device, t.device) == (2, 2)
            s.upload(np.arange(5, dtype=np.int32), name="x")
            np.testing.assert_array_equal(s.download("x"), np.arange(5, dtype=np.int32))
        with pytest.raises(gpuflow.Error) as err:
            client.session(device=7)
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert "device 7 does not exist" in str(err.value)


@cpu_only
def test_copies_between_devices_keep_the_values(three):
    rng = np.random.default_rng(22)
    with gpuflow.connect(three.target) as client:
        with client.session(device=0) as a, client.session(device=1) as b:
            for dtype in (np.float32, np.int64, np.complex128, np.bool_):
                x = (rng.standard_normal((7, 13)) * 100).astype(dtype)
                a.upload(x, name="x")
                info, transfer = b.copy_from(a, "x", "y")
                assert transfer == "host"
                assert info.name == "y" and tuple(info.shape) == (7, 13)
                np.testing.assert_array_equal(b.download("y"), x)
            # Empty and 0-d arrays, and a copy within one session.
            a.upload(np.zeros((0, 3), np.float32), name="empty")
            b.copy_from(a, "empty")
            assert b.download("empty").shape == (0, 3)
            a.upload(np.array(2.5), name="scalar")
            a.copy_from(a, "scalar", "scalar2")
            assert a.download("scalar2") == 2.5
            # A graph on the destination's device reads the copy.
            x = np.arange(12, dtype=np.float32)
            a.upload(x, name="x")
            b.copy_from(a, "x", "z")
            g = gpuflow.Graph()
            out = g.add(g.array("z"), 1)
            np.testing.assert_array_equal(b.execute(g, outputs=[out])[0], x + 1)


@cpu_only
def test_copy_errors(three):
    with gpuflow.connect(three.target) as client:
        with client.session(device=0, memory_limit=1 << 20) as a, \
                client.session(device=1, memory_limit=1 << 16) as b:
            with pytest.raises(gpuflow.Error) as err:
                b.copy_from(a, "missing")
            assert err.value.code == grpc.StatusCode.NOT_FOUND
            a.upload(np.zeros(1 << 15, np.float32), name="x")  # 128 KiB > b's quota
            with pytest.raises(gpuflow.Error) as err:
                b.copy_from(a, "x")
            assert err.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert b.list() == []
            with pytest.raises(gpuflow.Error) as err:
                b.copy_from(a, "x", "bad/name")
            assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT


def metric_lines(port, name):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {line.split(" ")[0]: float(line.split(" ")[1])
            for line in text.splitlines() if line.startswith(name)}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metrics_flags():
    return [f"--metrics_port={free_port()}", "--metrics_address=127.0.0.1"]


def metrics_port(srv):
    match = re.search(r"metrics on http://[^:]+:(\d+)/metrics", srv.log())
    assert match, srv.log()
    return int(match.group(1))


def test_per_device_failure_fails_only_that_devices_sessions():
    if BACKEND != "cpu":
        pytest.skip("fault injection is the CPU backend's")
    srv = Server("--devices=3", "--allow_raw_kernels", "--testonly_device_faults",
                 "--exit_on_device_error=true", "--health_check_interval=100ms",
                 "--shutdown_grace=1s", *metrics_flags())
    try:
        port = metrics_port(srv)
        client = gpuflow.connect(srv.target)
        sessions = {d: client.session(device=d) for d in (0, 1, 2)}
        for d, s in sessions.items():
            s.upload(np.full(3, d, np.float32), name="x")
        inject_fault(sessions[1])
        # Device 1's session is lost; the others carry on.
        with pytest.raises(gpuflow.Error) as err:
            sessions[1].download("x")
        assert err.value.code == grpc.StatusCode.UNAVAILABLE
        assert "device 1 (cpu) is unhealthy" in str(err.value)
        for d in (0, 2):
            np.testing.assert_array_equal(sessions[d].download("x"), np.full(3, d, np.float32))
        # Copies from or into a lost session fail; between the others they work.
        with pytest.raises(gpuflow.Error) as err:
            sessions[0].copy_from(sessions[1], "x", "from_lost")
        assert err.value.code == grpc.StatusCode.UNAVAILABLE
        assert sessions[2].copy_from(sessions[0], "x", "y")[1] == "host"
        info = client.info()
        assert [d.healthy for d in info.devices] == [True, False, True]
        assert info.healthy
        # New sessions avoid the failed device; asking for it is UNAVAILABLE.
        with client.session() as s:
            assert s.device in (0, 2)
        with pytest.raises(gpuflow.Error) as err:
            client.session(device=1)
        assert err.value.code == grpc.StatusCode.UNAVAILABLE
        time.sleep(0.5)  # a few health polls
        assert serving(srv.target)
        assert srv.proc.poll() is None
        healthy = metric_lines(port, "gpuflow_device_healthy{")
        assert healthy == {'gpuflow_device_healthy{device="0"}': 1.0,
                           'gpuflow_device_healthy{device="1"}': 0.0,
                           'gpuflow_device_healthy{device="2"}': 1.0}
        assert "device unhealthy" in srv.log()
        # When the last devices fail, the server stops serving and exits with 3.
        inject_fault(sessions[0])
        time.sleep(0.5)
        assert serving(srv.target)
        inject_fault(sessions[2])
        assert srv.proc.wait(timeout=15) == 3, srv.log()
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
            srv.proc.wait()


@cpu_only
def test_metrics_carry_one_device_label_per_device(three):
    port = metrics_port(three)
    with gpuflow.connect(three.target) as client:
        with client.session(device=2) as s:
            s.upload(np.ones(256, np.float32), name="x")
            sessions = metric_lines(port, "gpuflow_device_sessions_active{")
            assert sessions['gpuflow_device_sessions_active{device="2"}'] >= 1
            assert set(sessions) == {f'gpuflow_device_sessions_active{{device="{d}"}}'
                                     for d in range(3)}
            held = metric_lines(port, "gpuflow_device_session_bytes{")
            assert held['gpuflow_device_session_bytes{device="2"}'] >= 1024
            g = gpuflow.Graph()
            s.execute(g, outputs=[g.mul(g.array("x"), 2)], profile=True)
    compiles = metric_lines(port, "gpuflow_kernel_compiles_total{")
    assert set(compiles) == {f'gpuflow_kernel_compiles_total{{device="{d}"}}' for d in range(3)}
    promtool = subprocess.run(["which", "promtool"], capture_output=True, text=True).stdout.strip()
    if promtool:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
        check = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True)
        assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("flag, message", [
    ("--devices=0", "count of virtual devices"),
    ("--devices=65", "count of virtual devices"),
    ("--devices=0,1", "count of virtual devices"),
    ("--devices=two", "count of virtual devices"),
])
def test_bad_device_flags_stop_the_server_at_start(flag, message):
    if BACKEND != "cpu":
        pytest.skip("the CPU backend's counts")
    proc = subprocess.run([server_binary(), "--backend=cpu", "--port=0", "--metrics_port=0", flag],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr


@pytest.mark.skipif(BACKEND != "cuda", reason="needs a GPU")
@pytest.mark.parametrize("flag", ["--devices=all", "--devices=0"])
def test_cuda_devices_flag_on_one_gpu(flag):
    srv = Server(flag)
    try:
        with gpuflow.connect(srv.target) as client:
            info = client.info()
            assert len(info.devices) >= 1 and info.devices[0].id == 0
            assert info.devices[0].uuid == info.device_uuid
            assert info.devices[0].HasField("device_total_bytes")
            with client.session() as a, client.session(device=0) as b:
                x = np.arange(1 << 20, dtype=np.float32)
                a.upload(x, name="x")
                _, transfer = b.copy_from(a, "x")
                assert transfer == ("device" if a.device == b.device else "peer")
                np.testing.assert_array_equal(b.download("x"), x)
    finally:
        srv.stop()


@cpu_only
def test_copies_stay_within_a_tenant(make_server, tmp_path):
    import hashlib
    import json
    tokens = {"team-a": "a" * 40, "team-b": "b" * 40}
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"tenants": [
        {"name": name, "token_sha256": hashlib.sha256(token.encode()).hexdigest()}
        for name, token in tokens.items()]}))
    srv = make_server("--devices=2", f"--auth_tokens_file={path}")
    with gpuflow.connect(srv.target, token=tokens["team-a"]) as a, \
            gpuflow.connect(srv.target, token=tokens["team-b"]) as b:
        with a.session(device=0) as mine, a.session(device=1) as also_mine, \
                b.session(device=1) as theirs:
            mine.upload(np.arange(6, dtype=np.int16), name="x")
            also_mine.copy_from(mine, "x")
            np.testing.assert_array_equal(also_mine.download("x"), np.arange(6, dtype=np.int16))
            # Another tenant's session is NOT_FOUND either way, as an unknown one.
            with pytest.raises(gpuflow.Error) as err:
                theirs.copy_from(mine, "x")
            assert err.value.code == grpc.StatusCode.NOT_FOUND
            with pytest.raises(gpuflow.Error) as err:
                mine.copy_from(theirs, "x")
            assert err.value.code == grpc.StatusCode.NOT_FOUND
            assert theirs.list() == []
