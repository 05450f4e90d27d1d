"""--exit_on_device_error: after a sticky device error the server turns
NOT_SERVING, drains for at most --shutdown_grace and exits with status 3, so a
supervisor (a Deployment, systemd) replaces it. Needs a GPU: skipped on the
CPU backend (GPUFLOW_TEST_BACKEND=cuda runs it)."""

import time

import grpc
import numpy as np
import pytest

import gpuflow
from conftest import BACKEND, Server

pytestmark = pytest.mark.skipif(BACKEND != "cuda", reason="needs the cuda backend and a GPU")

# Writes through a wild pointer: cudaErrorIllegalAddress, a sticky error
# that poisons the CUDA context for good.
WILD_WRITE = r"""
extern "C" __global__ void wild(float* y) {
    float* p = reinterpret_cast<float*>(0x10);
    p[threadIdx.x] = y[threadIdx.x];
}"""

# The exit status documented in docs/server.md.
EXIT_DEVICE_ERROR = 3


def fault(target):
    # No context managers: the server may be gone (exit status 3) before a
    # CloseSession could reach it.
    client = gpuflow.connect(target)
    session = client.session()
    session.upload(np.zeros(32, np.float32), name="y")
    g = gpuflow.Graph()
    out = g.raw_kernel(g.array("y"), code=WILD_WRITE, name="wild", grid=[1], block=[32],
                       output=0)
    with pytest.raises(gpuflow.Error) as err:
        session.execute(g, outputs=[out])
    return err.value


def test_a_faulting_kernel_makes_the_server_exit_with_status_3():
    srv = Server("--allow_raw_kernels", "--shutdown_grace=2s", "--health_check_interval=200ms")
    try:
        error = fault(srv.target)
        assert error.code == grpc.StatusCode.UNAVAILABLE, error
        start = time.monotonic()
        # grace (2 s) + 1 s + a poll of the health check, with room for a
        # loaded machine.
        code = srv.proc.wait(timeout=15)
        took = time.monotonic() - start
        assert code == EXIT_DEVICE_ERROR, srv.log()
        assert took < 2 + 1 + 2, took
        assert "sticky device error" in srv.log()
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
            srv.proc.wait()


def test_without_exit_on_device_error_the_server_stays_up_not_serving():
    srv = Server("--allow_raw_kernels", "--exit_on_device_error=false",
                 "--health_check_interval=200ms")
    try:
        error = fault(srv.target)
        assert error.code == grpc.StatusCode.UNAVAILABLE, error
        time.sleep(1.0)
        assert srv.proc.poll() is None, srv.log()
        with gpuflow.connect(srv.target) as client:
            with pytest.raises(gpuflow.Error) as later:
                with client.session():
                    pass
            assert later.value.code == grpc.StatusCode.UNAVAILABLE
    finally:
        srv.stop()
