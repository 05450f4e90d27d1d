"""CUDA IPC (issue 16, item 2): device memory of a process on the server's
GPU registered as a region (RegisterSharedMemory with a cuda_ipc_handle),
uploads and downloads device to device, and the Python client's use of it
(``gf.asarray(cuda_tensor)``, ``gf.to_torch(x, device="cuda")``,
``session.download_into``). The refusals run everywhere (off:
PERMISSION_DENIED; a CPU server: FAILED_PRECONDITION; a malformed handle:
INVALID_ARGUMENT); the transfers need the CUDA backend and PyTorch or CuPy
on the same GPU, and skip otherwise."""

import numpy as np
import pytest

import gpuflow as gf
from conftest import BACKEND
from gpuflow.v1 import service_pb2


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


torch = _torch_cuda()
needs_gpu = pytest.mark.skipif(BACKEND != "cuda" or torch is None,
                               reason="needs the CUDA backend and PyTorch with a GPU")


@pytest.fixture(scope="module")
def ipc_server():
    from conftest import Server

    srv = Server("--allow_cuda_ipc")
    yield srv
    assert srv.stop() == 0, srv.log()


@pytest.fixture
def ipc_session(ipc_server):
    with gf.connect(ipc_server.target) as client, client.session() as s:
        yield s


def _register(session, handle, byte_size=16, key=""):
    return gf.client._rpc(session._stub.RegisterSharedMemory,
                          service_pb2.RegisterSharedMemoryRequest(
                              session_id=session.id, region="d", key=key, byte_size=byte_size,
                              cuda_ipc_handle=handle))


def test_off_by_default(session):
    assert not session.client.limits.allow_cuda_ipc
    with pytest.raises(gf.PermissionDeniedError, match="--allow_cuda_ipc"):
        _register(session, b"\x01" * 64)


def test_the_flag_is_in_the_limits_and_the_uuid_in_the_info(ipc_session):
    info = ipc_session.client.info()
    assert info.limits.allow_cuda_ipc
    if BACKEND == "cuda":
        assert info.device_uuid.startswith("GPU-") and len(info.device_uuid) == 40
    else:
        assert info.device_uuid == ""


def test_handles_are_checked(ipc_session):
    with pytest.raises(gf.InvalidArgumentError, match="64 bytes"):
        _register(ipc_session, b"\x01" * 10)
    with pytest.raises(gf.InvalidArgumentError, match="not both"):
        _register(ipc_session, b"\x01" * 64, 16, "gpuflow_x")
    with pytest.raises(gf.InvalidArgumentError, match="byte_size"):
        _register(ipc_session, b"\x01" * 64, 0)
    # Bytes no process exported: the CPU backend has no device memory, and
    # the CUDA driver refuses them; either way a clean FAILED_PRECONDITION.
    with pytest.raises(gf.FailedPreconditionError,
                       match="no device memory" if BACKEND != "cuda" else "cannot open"):
        _register(ipc_session, b"\x01" * 64)
    assert ipc_session.client.info().healthy


def test_transports_are_checked(ipc_session):
    with pytest.raises(TypeError, match="takes a CUDA array"):
        ipc_session.upload(np.ones(3), "x", transport="cuda_ipc")
    with pytest.raises(ValueError, match="'cuda_ipc'"):
        ipc_session.upload(np.ones(3), "x", transport="pigeon")
    with pytest.raises(TypeError, match="takes a CUDA array"):
        ipc_session.download_into("x", np.ones(3))
    # A host array with the default transport still goes through gRPC.
    ipc_session.upload(np.arange(3.0), "x")
    np.testing.assert_array_equal(ipc_session.download("x"), np.arange(3.0))


# ---- on the GPU -------------------------------------------------------------


@pytest.fixture
def no_host_path(monkeypatch):
    """Fails any transfer that would go through host memory."""
    from gpuflow import remote_array

    def refuse(*args, **kwargs):
        raise AssertionError("went through host memory")

    monkeypatch.setattr(remote_array, "host_array", refuse)
    monkeypatch.setattr(gf.Session, "download", refuse)


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8", "bfloat16", "bool"])
def test_torch_round_trip_device_to_device(ipc_session, no_host_path, dtype):
    t = torch.arange(1, 1001, device="cuda").reshape(10, 100)
    t = (t % 2 == 0) if dtype == "bool" else t.to(getattr(torch, dtype))
    x = gf.asarray(t, session=ipc_session)
    assert x.shape == (10, 100) and x.dtype == dtype
    back = gf.to_torch(x, device="cuda")
    assert back.device.type == "cuda" and back.dtype == t.dtype
    assert torch.equal(back, t)
    if dtype != "bool":
        y = gf.to_torch(x * 2 + 1, device="cuda")  # a lazy result, written into the tensor
        assert torch.equal(y, t * 2 + 1)


@needs_gpu
def test_a_slice_of_an_allocation_and_its_bounds(ipc_session):
    big = torch.arange(4096, dtype=torch.float32, device="cuda")
    part = big[1000:1010]  # inside the same allocation, at an offset
    offset = ipc_session.register_cuda_memory("r", part)
    assert offset >= 4000  # bytes from the allocation's base
    info = ipc_session.upload_from_shared_memory("p", "r", offset, np.float32, (10,))
    assert info.shape == (10,)
    np.testing.assert_array_equal(ipc_session.download("p", transport="grpc"),
                                  np.arange(1000, 1010, dtype=np.float32))
    with pytest.raises(gf.InvalidArgumentError, match="outside the region"):
        ipc_session.upload_from_shared_memory("q", "r", 1 << 40, np.float32, (10,))
    # An Execute output straight into the tensor.
    g = gf.Graph()
    y = g.mul(g.array("p"), 2.0)
    request = service_pb2.ExecuteRequest(session_id=ipc_session.id, graph=g.proto)
    out = request.outputs.add(node=y.id)
    out.shared_memory.region = "r"
    out.shared_memory.offset = offset
    gf.client._rpc(ipc_session._stub.Execute, request)
    torch.cuda.synchronize()
    assert torch.equal(part, torch.arange(1000, 1010, dtype=torch.float32, device="cuda") * 2)
    ipc_session.unregister_shared_memory("r")
    with pytest.raises(gf.NotFoundError):
        ipc_session.download_to_shared_memory("p", "r", offset)


@needs_gpu
def test_download_into_checks_the_size(ipc_session):
    ipc_session.upload(np.arange(6, dtype=np.float32), "x", transport="grpc")
    out = torch.empty(6, dtype=torch.float32, device="cuda")
    assert ipc_session.download_into("x", out, transport="cuda_ipc") is out
    assert torch.equal(out.cpu(), torch.arange(6, dtype=torch.float32))
    with pytest.raises(ValueError, match="24 bytes"):
        ipc_session.download_into("x", torch.empty(7, dtype=torch.float32, device="cuda"))


@needs_gpu
def test_a_server_without_the_flag_goes_through_host_memory(session):
    t = torch.arange(5, dtype=torch.float32, device="cuda")
    x = gf.asarray(t, session=session)
    assert torch.equal(gf.to_torch(x, device="cuda"), t)
    with pytest.raises(gf.PermissionDeniedError, match="--allow_cuda_ipc"):
        session.upload(t, "t", transport="cuda_ipc")


@needs_gpu
def test_cupy_arrays_too(ipc_session, no_host_path):
    cupy = pytest.importorskip("cupy")
    a = cupy.arange(12, dtype=cupy.int64).reshape(3, 4)
    x = gf.asarray(a, session=ipc_session) + 1
    ipc_session.upload(a, "c")
    out = cupy.empty((3, 4), dtype=cupy.int64)
    assert ipc_session.download_into("c", out) is out
    assert bool((out == a).all())
    assert bool((gf.to_torch(x, device="cuda") == torch.as_tensor(a, device="cuda") + 1).all())
