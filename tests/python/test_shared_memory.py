"""Same-host transfers through POSIX shared memory (issue 16): the
RegisterSharedMemory family of RPCs and the Python client's transports,
through the real server. Every transfer is checked bit for bit; every
refusal has its code (off: PERMISSION_DENIED, out of bounds:
INVALID_ARGUMENT, no such object: NOT_FOUND, another session's:
PERMISSION_DENIED); nothing outlives its session."""

import os
import secrets
from multiprocessing import shared_memory

import numpy as np
import pytest

import gpuflow as gf
from gpuflow.v1 import service_pb2


@pytest.fixture(scope="module")
def shm_server():
    from conftest import Server

    srv = Server("--allow_shared_memory", "--max_shared_memory_bytes=256MiB")
    yield srv
    assert srv.stop() == 0, srv.log()


@pytest.fixture
def shm_session(shm_server):
    with gf.connect(shm_server.target) as client, client.session() as s:
        yield s


@pytest.fixture
def region():
    shm = shared_memory.SharedMemory(name=f"gpuflow_test_{secrets.token_hex(8)}", create=True,
                                     size=1 << 20)
    yield shm
    shm.close()
    try:
        shm.unlink()
    except FileNotFoundError:
        pass


ARRAYS = [
    np.arange(12, dtype=np.float32).reshape(3, 4),
    np.array(3.5),
    np.zeros((0, 5), dtype=np.int16),
    np.array([True, False, True]),
    np.arange(-5, 5, dtype=np.int64),
    (np.arange(10) * 0.1).astype(np.float16),
    np.random.default_rng(1).standard_normal((300, 301)),  # larger than the first stage
]


def test_large_arrays_copy_in_pieces_bit_exact(shm_session):
    # Above gpuflow._shm._PARALLEL_BYTES the client's copies into and out of
    # its stage run on several threads; an odd size ends in a short piece.
    from gpuflow import _shm

    array = np.random.default_rng(2).integers(0, 255, _shm._PARALLEL_BYTES + 4097, np.uint8)
    shm_session.upload(array, "big", transport="shm")
    np.testing.assert_array_equal(shm_session.download("big", transport="shm"), array)
    np.testing.assert_array_equal(shm_session.download("big", transport="grpc"), array)


@pytest.mark.parametrize("array", ARRAYS, ids=lambda a: f"{a.dtype}{a.shape}")
def test_round_trips_bit_exact(shm_session, array):
    info = shm_session.upload(array, "a", transport="shm")
    assert info.shape == array.shape
    for transport in ("shm", "grpc", "auto"):
        back = shm_session.download("a", transport=transport)
        assert back.dtype == array.dtype and back.shape == array.shape
        assert back.tobytes() == array.tobytes()


def test_auto_uses_shared_memory_where_it_works(shm_session, make_server):
    x = np.arange(1000, dtype=np.float64)
    shm_session.upload(x, "x")  # auto
    assert shm_session._shm_stage is not None and shm_session._shm_stage.usable
    np.testing.assert_array_equal(shm_session.download("x"), x)
    # The array API goes through it too.
    a = shm_session.asarray(np.ones((512, 512), dtype=np.float32))
    assert float(a.sum().get()) == 512 * 512
    np.testing.assert_array_equal((a * 2).get(), np.full((512, 512), 2, dtype=np.float32))
    # A server without it: auto is gRPC, and "shm" says why it cannot.
    off = make_server()
    with gf.connect(off.target) as client, client.session() as s:
        assert not client.limits.allow_shared_memory
        s.upload(x, "x")
        assert s._shm_stage is None
        np.testing.assert_array_equal(s.download("x"), x)
        with pytest.raises(gf.PermissionDeniedError, match="allow_shared_memory"):
            s.upload(x, "y", transport="shm")
        with pytest.raises(gf.PermissionDeniedError, match="--allow_shared_memory"):
            s.register_shared_memory("r", "gpuflow_nothing", 1)
        with pytest.raises(ValueError, match="transport"):
            s.upload(x, "y", transport="carrier pigeon")


def test_a_users_own_region(shm_session, region):
    view = np.ndarray((1 << 20,), dtype=np.uint8, buffer=region.buf)
    x = np.arange(1000, dtype=np.float32)
    view[4096:4096 + x.nbytes] = x.view(np.uint8)
    info = shm_session.register_shared_memory("mine", region.name, 1 << 20)
    assert info.byte_size == 1 << 20 and info.key == region.name
    stored = shm_session.upload_from_shared_memory("x", "mine", 4096, np.float32, (1000,))
    assert stored.shape == (1000,)
    np.testing.assert_array_equal(shm_session.download("x", transport="grpc"), x)
    shm_session.upload(x * 2, "y", transport="grpc")
    shm_session.download_to_shared_memory("y", "mine", 8192)
    np.testing.assert_array_equal(view[8192:8192 + x.nbytes].view(np.float32), x * 2)
    # A region name in use, and an object another session has.
    with pytest.raises(gf.Error, match="already") as err:
        shm_session.register_shared_memory("mine", region.name, 16)
    assert err.value.code.name == "ALREADY_EXISTS"
    with shm_session.client.session() as other:
        with pytest.raises(gf.PermissionDeniedError, match="another session"):
            other.register_shared_memory("theirs", region.name, 16)
    shm_session.unregister_shared_memory("mine")
    with pytest.raises(gf.NotFoundError, match="no shared-memory region 'mine'"):
        shm_session.upload_from_shared_memory("x", "mine", 0, np.float32, (10,))
    # Unregistered, the object is free for another session.
    with shm_session.client.session() as other:
        other.register_shared_memory("theirs", region.name, 16)


def test_every_offset_and_size_is_checked(shm_session, region):
    shm_session.register_shared_memory("r", region.name, 4096)
    shm_session.upload(np.arange(1024, dtype=np.float32), "x", transport="grpc")
    for offset, shape in [(1, (1024,)), (-8, (2,)), (4000, (100,)), (0, (1025,)),
                          (1 << 62, (1,))]:
        with pytest.raises(gf.InvalidArgumentError, match="outside the region"):
            shm_session.upload_from_shared_memory("y", "r", offset, np.float32, shape)
    for offset in (1, -1, 4096, 1 << 62):
        with pytest.raises(gf.InvalidArgumentError, match="outside the region"):
            shm_session.download_to_shared_memory("x", "r", offset)
    assert "y" not in [a.name for a in shm_session.list()]
    shm_session.download_to_shared_memory("x", "r", 0)  # exactly fits
    with pytest.raises(gf.InvalidArgumentError, match="fewer than byte_size"):
        shm_session.register_shared_memory("big", region.name, (1 << 20) + 1)
    with pytest.raises(gf.InvalidArgumentError, match="byte_size must be positive"):
        shm_session.register_shared_memory("zero", region.name, 0)
    with pytest.raises(gf.ResourceExhaustedError, match="max_shared_memory_bytes"):
        shm_session.register_shared_memory("huge", region.name, 1 << 40)


@pytest.mark.parametrize("key", ["../etc/passwd", "/gpuflow_x", "gpuflow", "gpuflow/../x",
                                 "other_name", "gpuflow_" + "a" * 300, "gpuflow_\x00x"])
def test_keys_are_names_not_paths(shm_session, key):
    with pytest.raises(gf.InvalidArgumentError, match="shared-memory key"):
        shm_session.register_shared_memory("r", key, 16)


def test_an_object_not_on_this_host(shm_session):
    with pytest.raises(gf.NotFoundError, match="same host"):
        shm_session.register_shared_memory("r", f"gpuflow_missing_{secrets.token_hex(8)}", 16)


def test_a_shrunk_object_fails_the_call_not_the_server(shm_session, region):
    shm_session.register_shared_memory("r", region.name, 1 << 20)
    os.truncate(f"/dev/shm/{region.name}", 100)
    with pytest.raises(gf.FailedPreconditionError, match="shorter than registered"):
        shm_session.upload_from_shared_memory("x", "r", 0, np.uint8, (4096,))
    # Writing fails the same way (on CUDA it would go to the pinned pages
    # the truncation orphaned), and leaves the object as it is.
    shm_session.upload(np.arange(10, dtype=np.uint8), "y", transport="grpc")
    with pytest.raises(gf.FailedPreconditionError, match="register it again"):
        shm_session.download_to_shared_memory("y", "r", 200)
    assert os.path.getsize(f"/dev/shm/{region.name}") == 100
    # The server is fine: grown back and registered again, the region works.
    os.truncate(f"/dev/shm/{region.name}", 1 << 20)
    shm_session.unregister_shared_memory("r")
    shm_session.register_shared_memory("r", region.name, 1 << 20)
    shm_session.download_to_shared_memory("y", "r", 200)
    assert bytes(region.buf[200:210]) == bytes(range(10))


def test_regions_go_with_their_session(shm_server, region):
    with gf.connect(shm_server.target) as client:
        s = client.session()
        s.register_shared_memory("r", region.name, 16)
        s.upload(np.ones(4), "x", transport="shm")
        stage_key = s._shm_stage._shm.name
        s.close()
        # The stage is unlinked, and the user's object is free again.
        assert not os.path.exists(f"/dev/shm/{stage_key}")
        with client.session() as t:
            t.register_shared_memory("r", region.name, 16)


def test_metrics_and_info_show_it(shm_server):
    with gf.connect(shm_server.target) as client:
        limits = client.limits
        assert limits.allow_shared_memory
        assert limits.max_shared_memory_bytes == 256 << 20
        request = service_pb2.GetServerInfoRequest()
        assert client.stub.GetServerInfo(request).limits.allow_shared_memory


def test_large_results_come_back_through_the_stage(shm_session, monkeypatch):
    # Results over the inline limit go through the stage: one Execute, no
    # temporaries stored, nothing downloaded.
    limit = shm_session.client.limits.max_inline_bytes
    rows = limit // (4 * 1100) + 8
    big = shm_session.asarray(np.ones((rows, 1100), dtype=np.float32))
    before = sorted(a.name for a in shm_session.list())

    def no_download(*args, **kwargs):
        raise AssertionError("a result was downloaded")

    monkeypatch.setattr(shm_session, "download", no_download)
    for k in range(2):  # the second by handle
        out = gf.evaluate(big * (3 + k), big.sum(axis=0), big - 1)
        np.testing.assert_array_equal(out[0], np.full((rows, 1100), 3 + k, dtype=np.float32))
        np.testing.assert_array_equal(out[1], np.full(1100, rows, dtype=np.float32))
        np.testing.assert_array_equal(out[2], np.zeros((rows, 1100), dtype=np.float32))
    assert out.timings.prepared_graph
    assert sorted(a.name for a in shm_session.list()) == before
    # Asynchronous evaluations keep the temporaries' way (the stage is one
    # region, held by one evaluation at a time).
    monkeypatch.undo()
    np.testing.assert_array_equal((big * 5).get_async().result(60),
                                  np.full((rows, 1100), 5, dtype=np.float32))


def test_execute_writes_outputs_into_a_region(shm_session, region):
    view = np.ndarray((1 << 20,), dtype=np.uint8, buffer=region.buf)
    shm_session.upload(np.arange(100, dtype=np.float32), "x", transport="grpc")
    shm_session.register_shared_memory("out", region.name, 1 << 20)
    g = gf.Graph()
    y = g.mul(g.array("x"), 2.0)
    request = service_pb2.ExecuteRequest(session_id=shm_session.id, graph=g.proto)
    request.outputs.add(node=y.id, shared_memory={"region": "out", "offset": 1024},
                        store_as="y")
    reply = gf.client._rpc(shm_session._stub.Execute, request)
    assert tuple(reply.outputs[0].info.shape) == (100,)
    np.testing.assert_array_equal(view[1024:1424].view(np.float32), np.arange(100) * 2.0)
    np.testing.assert_array_equal(shm_session.download("y", transport="grpc"),
                                  np.arange(100) * 2.0)
    # Out of the region: refused before anything runs or is stored.
    request.outputs[0].shared_memory.offset = (1 << 20) - 100
    request.outputs[0].store_as = "z"
    with pytest.raises(gf.InvalidArgumentError, match="outside the region"):
        gf.client._rpc(shm_session._stub.Execute, request)
    assert "z" not in [a.name for a in shm_session.list()]
    request.outputs[0].store_as = ""
    request.outputs[0].return_inline = True
    request.outputs[0].shared_memory.offset = 0
    with pytest.raises(gf.InvalidArgumentError, match="both returned inline"):
        gf.client._rpc(shm_session._stub.Execute, request)
    request.outputs[0].return_inline = False
    request.outputs[0].shared_memory.region = "nope"
    with pytest.raises(gf.NotFoundError, match="no shared-memory region 'nope'"):
        gf.client._rpc(shm_session._stub.Execute, request)


def test_execute_to_shared_memory_is_refused_when_off(session):
    session.upload(np.arange(4, dtype=np.float32), "x")
    g = gf.Graph()
    y = g.neg(g.array("x"))
    request = service_pb2.ExecuteRequest(session_id=session.id, graph=g.proto)
    request.outputs.add(node=y.id, shared_memory={"region": "r", "offset": 0})
    with pytest.raises(gf.PermissionDeniedError, match="--allow_shared_memory"):
        gf.client._rpc(session._stub.Execute, request)
