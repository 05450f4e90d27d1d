"""Upload/download round trips and bad input, through the real server."""

import threading
import time

import grpc
import numpy as np
import pytest

import gpuflow
from gpuflow.v1 import service_pb2

NUMPY_DTYPES = [
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64,
]
SHAPES = [(), (0,), (1,), (7,), (3, 0, 2), (2, 3), (1023,), (4, 5, 6, 7)]


def random_array(dtype, shape, rng):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    # Random bit patterns: NaNs, infinities and subnormals must survive too.
    bits = rng.integers(0, 256, size=int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8)
    return bits.view(dtype).reshape(shape)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_round_trip_is_bit_exact(session, dtype, shape):
    rng = np.random.default_rng(7)
    a = random_array(dtype, shape, rng)
    info = session.upload(a, name="a")
    assert info.dtype == np.dtype(dtype).name
    assert info.shape == shape
    assert info.nbytes == a.nbytes
    b = session.download("a")
    assert b.dtype == a.dtype
    assert b.shape == a.shape
    assert b.tobytes() == a.tobytes()


def test_bfloat16_round_trips_as_raw_words(session):
    values = np.array([1.0, -2.5, 3.14159, 1e30, -0.0, np.inf, np.nan], dtype=np.float32)
    words = gpuflow.float32_to_bfloat16(values)
    info = session.upload(words, name="bf", dtype="bfloat16")
    assert info.dtype == "bfloat16" and info.nbytes == 2 * len(values)
    back = session.download("bf")
    assert back.dtype == np.uint16
    np.testing.assert_array_equal(back, words)
    decoded = gpuflow.bfloat16_to_float32(back)
    np.testing.assert_allclose(decoded[:4], values[:4], rtol=1e-2)
    assert np.isnan(decoded[-1])


def test_bfloat16_needs_uint16_words(session):
    with pytest.raises(TypeError, match="uint16"):
        session.upload(np.ones(3, np.float32), name="bf", dtype="bfloat16")


def test_non_contiguous_and_big_endian_inputs(session):
    a = np.arange(24, dtype=np.int32).reshape(4, 6)[:, ::2]
    session.upload(a, name="strided")
    np.testing.assert_array_equal(session.download("strided"), a)
    be = np.arange(5, dtype=">f8")
    session.upload(be, name="be")
    out = session.download("be")
    assert out.dtype == np.dtype("<f8")
    np.testing.assert_array_equal(out, be)


def test_unsupported_dtype_is_a_type_error(session):
    with pytest.raises(TypeError, match="clongdouble|complex256"):
        session.upload(np.ones(3, np.clongdouble), name="c")


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_round_trip(session, dtype):
    a = (np.arange(7) + 1j * np.arange(7)[::-1]).astype(dtype)
    session.upload(a, name="z")
    got = session.download("z")
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, a)


def test_multi_chunk_round_trip_with_odd_sizes(session):
    rng = np.random.default_rng(1)
    a = rng.integers(0, 255, size=(5 << 20) + 3, dtype=np.uint8)
    session.upload(a, name="odd", chunk_bytes=(1 << 20) - 1)
    for chunk in (0, 1 << 16, 3 << 20):
        np.testing.assert_array_equal(session.download("odd", chunk_bytes=chunk), a)


def test_one_gib_array_round_trips(session):
    n = (1 << 30) // 4
    a = np.arange(n, dtype=np.float32)
    a[::4097] = -1.5
    info = session.upload(a, name="big")
    assert info.nbytes == 1 << 30
    b = session.download("big")
    assert np.array_equal(a, b)
    assert session.delete("big") == 1 << 30
    assert session.memory_used == 0


def test_list_info_delete_and_overwrite(session):
    session.upload(np.zeros((2, 2), np.float64), name="b")
    session.upload(np.zeros(3, np.int8), name="a")
    assert [i.name for i in session.list()] == ["a", "b"]
    assert session.info("b").shape == (2, 2)
    assert session.memory_used == 32 + 3
    session.upload(np.ones(10, np.int16), name="b")  # overwrite: old bytes return
    assert session.info("b").dtype == "int16"
    assert session.memory_used == 20 + 3
    np.testing.assert_array_equal(session.download("b"), np.ones(10, np.int16))
    assert session.delete("a") == 3
    with pytest.raises(gpuflow.NotFoundError, match="no array named 'a'"):
        session.download("a")
    with pytest.raises(gpuflow.NotFoundError):
        session.delete("a")


def test_unknown_session_is_not_found(client):
    fake = gpuflow.Session(client, service_pb2.SessionInfo(session_id="0" * 32))
    with pytest.raises(gpuflow.NotFoundError) as e:
        fake.upload(np.ones(3), name="x")
    assert e.value.code == grpc.StatusCode.NOT_FOUND
    assert "unknown or expired session" in e.value.details
    with pytest.raises(gpuflow.NotFoundError):
        fake.list()


def test_closed_session_is_not_found(client):
    s = client.session()
    s.upload(np.ones(4), name="x")
    s.close()
    with pytest.raises(gpuflow.NotFoundError):
        s.download("x")


def test_bad_names_are_rejected(session):
    for name in ["", "has space", "x" * 129, "slash/name"]:
        with pytest.raises(gpuflow.InvalidArgumentError, match="array name"):
            session.upload(np.ones(2), name=name)


def _raw_upload(session, header_kwargs, chunks):
    header = service_pb2.UploadHeader(session_id=session.id, **header_kwargs)
    msgs = [service_pb2.UploadArrayRequest(header=header)]
    msgs += [service_pb2.UploadArrayRequest(chunk=c) for c in chunks]
    try:
        return session._stub.UploadArray(iter(msgs))
    except grpc.RpcError as err:
        raise gpuflow.errors.from_rpc_error(err) from None


F32 = gpuflow.dtypes.to_proto("float32")


@pytest.mark.parametrize(
    "chunks,message",
    [
        ([b"\0" * 20], "ended after 20 of the 24 bytes"),
        ([b"\0" * 24, b"\0"], "sent more than the 24 bytes"),
        ([b"\0" * 28], "sent more than the 24 bytes"),
        ([], "ended after 0 of the 24 bytes"),
    ],
)
def test_byte_count_mismatch_leaves_nothing(session, chunks, message):
    with pytest.raises(gpuflow.InvalidArgumentError, match=message):
        _raw_upload(session, dict(name="m", dtype=F32, shape=[2, 3]), chunks)
    assert session.list() == []
    assert session.memory_used == 0


@pytest.mark.parametrize(
    "header,message",
    [
        (dict(name="m", dtype=0, shape=[2]), "dtype is not set"),
        (dict(name="m", dtype=99, shape=[2]), "unknown dtype value 99"),
        (dict(name="m", dtype=F32, shape=[-1]), "negative"),
        (dict(name="m", dtype=F32, shape=[1 << 40, 1 << 40]), "more than 2"),
    ],
)
def test_bad_headers_are_invalid_argument(session, header, message):
    with pytest.raises(gpuflow.InvalidArgumentError, match=message):
        _raw_upload(session, header, [])
    assert session.memory_used == 0


def test_chunk_before_header_is_rejected(session):
    msgs = [service_pb2.UploadArrayRequest(chunk=b"1234")]
    with pytest.raises(grpc.RpcError) as e:
        session._stub.UploadArray(iter(msgs))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "first upload message must be a header" in e.value.details()


def test_quota_exceeded_is_resource_exhausted(client):
    # Each array also costs its metadata: 256 bytes + its name + 8 a dimension.
    with client.session(memory_limit=1600) as s:
        s.upload(np.zeros(100, np.float64), name="a")  # 800 bytes + 265 of metadata
        with pytest.raises(gpuflow.ResourceExhaustedError,
                           match="quota exceeded: 665 bytes requested, 535 of 1600 bytes left"):
            s.upload(np.zeros(50, np.float64), name="b")  # 400 + 265
        assert [i.name for i in s.list()] == ["a"]
        assert s.memory_used == 800


def test_array_over_max_array_bytes_is_resource_exhausted(client):
    with client.session() as s:
        with pytest.raises(gpuflow.ResourceExhaustedError, match="max_array_bytes"):
            _raw_upload(s, dict(name="huge", dtype=F32, shape=[1 << 30]), [])


def test_quota_and_ttl_over_the_maximum_are_invalid(client):
    with pytest.raises(gpuflow.InvalidArgumentError, match="memory limit"):
        client.session(memory_limit=5 << 30)
    with pytest.raises(gpuflow.InvalidArgumentError, match="idle TTL"):
        client.session(idle_ttl=10 * 86400)


def test_idle_session_expires_and_frees(client):
    s = client.session(idle_ttl=0.3)
    s.upload(np.ones(1000), name="x")
    time.sleep(0.15)
    s.keep_alive()  # resets the timer
    time.sleep(0.2)
    assert s.memory_used == 8000  # still alive: 0.2 s since the keep-alive
    time.sleep(0.6)
    with pytest.raises(gpuflow.NotFoundError, match="unknown or expired"):
        s.download("x")


def test_cancelled_upload_leaves_nothing(session):
    sent = threading.Event()

    def requests():
        header = service_pb2.UploadHeader(session_id=session.id, name="c", dtype=F32, shape=[1 << 20])
        yield service_pb2.UploadArrayRequest(header=header)
        yield service_pb2.UploadArrayRequest(chunk=b"\0" * (1 << 20))
        sent.set()
        time.sleep(30)  # never finishes on its own
        yield service_pb2.UploadArrayRequest(chunk=b"\0")

    future = session._stub.UploadArray.future(requests())
    assert sent.wait(10)
    # The reservation is visible while the upload runs...
    deadline = time.monotonic() + 10
    held = (4 << 20) + 256 + 1 + 8  # the data and the array's metadata ("c", 1-d)
    while session.memory_used != held and time.monotonic() < deadline:
        time.sleep(0.02)
    assert session.memory_used == held
    future.cancel()
    # ...and gone once the server has seen the cancellation.
    deadline = time.monotonic() + 10
    while session.memory_used != 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert session.memory_used == 0
    assert session.list() == []


def test_many_clients_at_once(server):
    errors = []

    def worker(i):
        try:
            with gpuflow.connect(server.target) as c, c.session(label=f"w{i}") as s:
                for j in range(5):
                    a = np.full((257, 3), i * 10 + j, dtype=np.int32)
                    s.upload(a, name="a")
                    np.testing.assert_array_equal(s.download("a"), a)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
