"""Starts the real gpuflowd for the Python tests.

The binary comes from $GPUFLOW_SERVER_BIN or build/bin/gpuflowd. Each server
listens on a free loopback port (--port=0 --port_file) and is stopped with
SIGTERM at the end; a server that does not exit cleanly fails the test run.
"""

import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "clients" / "python"))

import gpuflow  # noqa: E402

# The client reads these (docs/python.md); a developer's own must not point
# the tests at a server of theirs. Tests that want them pass them in.
for _name in ("GPUFLOW_TOKEN", "GPUFLOW_TLS_CA", "GPUFLOW_TLS_CERT", "GPUFLOW_TLS_KEY"):
    os.environ.pop(_name, None)


# The backend every test server uses; the conformance suite runs unchanged
# against each (make test: cpu; on a GPU host: GPUFLOW_TEST_BACKEND=cuda).
BACKEND = os.environ.get("GPUFLOW_TEST_BACKEND", "cpu")


def server_binary():
    path = os.environ.get("GPUFLOW_SERVER_BIN", str(ROOT / "build" / "bin" / "gpuflowd"))
    if not os.path.exists(path):
        pytest.exit(f"gpuflowd not found at {path}: build it first (make build)", returncode=2)
    return path


class Server:
    """A gpuflowd child process on a free port."""

    def __init__(self, *args, env=None):
        self.final_log = None
        self._dir = tempfile.TemporaryDirectory()
        port_file = pathlib.Path(self._dir.name) / "port"
        self.log_path = pathlib.Path(self._dir.name) / "server.log"
        self._log = open(self.log_path, "w")
        full_env = dict(os.environ, **(env or {}))
        if "--backend=cpu" in args and "GPUFLOW_DEVICES" not in (env or {}):
            # GPUFLOW_DEVICES (a suite run on --devices of the CUDA backend)
            # names GPUs; a server the test asks to be a CPU one keeps its one
            # device.
            full_env.pop("GPUFLOW_DEVICES", None)
        self.proc = subprocess.Popen(
            # No metrics endpoint unless a test asks (a fixed port would collide
            # between servers); a later --metrics_port in args wins.
            [server_binary(), "--port=0", f"--port_file={port_file}", f"--backend={BACKEND}",
             "--metrics_port=0", *args],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=full_env,
        )
        deadline = time.monotonic() + 30
        while not port_file.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(f"gpuflowd exited with {self.proc.returncode}: {self.log()}")
            if time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError(f"gpuflowd did not start: {self.log()}")
            time.sleep(0.02)
        self.port = int(port_file.read_text())
        self.target = f"localhost:{self.port}"

    def log(self):
        self._log.flush()
        return self.log_path.read_text()

    def stop(self, timeout=15):
        """SIGTERM, then the exit code (killing it after `timeout`). Idempotent."""
        if self.final_log is not None:
            return self.proc.returncode
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise RuntimeError("gpuflowd ignored SIGTERM")
        self._log.close()
        self.final_log = self.log_path.read_text()
        code = self.proc.returncode
        self._dir.cleanup()
        return code


@pytest.fixture(autouse=True)
def _no_session_left_entered():
    """A test that enters a session (``with`` or ``__enter__``) leaves it: a
    current session leaking into later tests makes their calls without
    ``session=`` pass or fail by the order the tests run in."""
    stack = list(getattr(gpuflow.client._current, "stack", []))
    yield
    left = list(getattr(gpuflow.client._current, "stack", []))
    if left != stack:
        gpuflow.client._current.stack = stack
        pytest.fail(f"the test left {len(left) - len(stack)} session(s) entered (current: "
                    f"{left[-1] if left else None}); leave them (with ... as s:)")


@pytest.fixture(scope="session")
def server():
    srv = Server(
        "--default_session_memory_limit=3GiB",
        "--max_session_memory_limit=4GiB",
        "--max_array_bytes=2GiB",
        "--session_reap_interval=100ms",
    )
    yield srv
    assert srv.stop() == 0, srv.log()


@pytest.fixture(scope="session")
def raw_kernel_server():
    """A server that accepts raw CUDA kernels (--allow_raw_kernels)."""
    srv = Server("--allow_raw_kernels")
    yield srv
    assert srv.stop() == 0, srv.log()


@pytest.fixture(scope="session")
def client(server):
    c = gpuflow.connect(server.target)
    yield c
    c.close()


@pytest.fixture
def session(client):
    with client.session(label="pytest") as s:
        yield s


@pytest.fixture
def make_server():
    """Starts extra servers with their own flags; stops them after the test."""
    started = []

    def start(*args, env=None):
        srv = Server(*args, env=env)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()
