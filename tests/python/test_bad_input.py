"""Bad input on every RPC of gpuflow.v1.GpuFlow, sent as a hostile client would.

Every request goes through the raw generated stubs (or raw bytes), never the
friendly client. Each case checks:
  1. the exact grpc.StatusCode;
  2. a bounded status message (<= 1024 bytes, even for 1 MiB inputs: the
     server cuts every echo of client input to 256 bytes);
  3. the server is alive afterwards (its process runs, KeepAlive answers);
  4. the case's sessions hold exactly the memory and arrays they held before,
     and the server's RSS comes back near its warm baseline.

A case that kills the server fails saying so, and the module server is
started again for the next case, so one crash does not cascade.
"""

import os
import signal
import threading
import time

import grpc
import numpy as np
import pytest

from conftest import BACKEND, Server
from gpuflow.v1 import graph_pb2, service_pb2, service_pb2_grpc, types_pb2

SC = grpc.StatusCode
IA, NF, RE = SC.INVALID_ARGUMENT, SC.NOT_FOUND, SC.RESOURCE_EXHAUSTED

MiB = 1 << 20
BIG = "a" * MiB  # a 1 MiB string
MAX_DETAILS = 1024
# Allocators keep some freed pages. On the CUDA backend the first NVRTC
# compiles map its builtins and the loaded modules stay in memory for good
# (measured on the H200: about 400 MiB after the compile-heavy cases), so the
# slack there is larger; device memory is bounded by the session quotas.
RSS_SLACK_MIB = 64 if BACKEND != "cuda" else 768
CALL_TIMEOUT = 20
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
INT32_MAX = 2**31 - 1

F32, F64, U8 = types_pb2.DTYPE_FLOAT32, types_pb2.DTYPE_FLOAT64, types_pb2.DTYPE_UINT8

MODULE_FLAGS = (
    "--max_array_bytes=64MiB",
    "--default_session_memory_limit=64MiB",
    "--max_session_memory_limit=256MiB",
    "--max_inline_bytes=1MiB",
    "--max_chunk_bytes=1MiB",
    "--max_benchmark_duration=3s",
    "--shutdown_grace=1s",
)
# The module server's max message size is max(chunk, inline) + 1 MiB = 2 MiB.

CHANNEL_OPTIONS = [
    # The client must not be the one refusing big messages.
    ("grpc.max_receive_message_length", 256 * MiB),
    ("grpc.max_send_message_length", 256 * MiB),
    # Let an over-long status reach the assertion instead of failing in the transport.
    ("grpc.max_metadata_size", 16 * MiB),
]


# ---------------------------------------------------------------- servers


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def raw_passthrough(channel, method, kind="unary_unary", response=None):
    """A call that sends bytes as they are (for undecodable messages)."""
    factory = getattr(channel, kind)
    return factory(f"/gpuflow.v1.GpuFlow/{method}", request_serializer=lambda b: b,
                   response_deserializer=response.FromString if response else None)


class Box:
    """A gpuflowd with a channel and a stub, restartable when a case kills it."""

    def __init__(self, *flags, warm=True):
        self.flags = flags
        self.warm = warm
        self.deaths = []  # (case id, exit code)
        self.srv = None
        self.start()

    def start(self):
        self.srv = Server(*self.flags)
        self.channel = grpc.insecure_channel(self.srv.target, options=CHANNEL_OPTIONS)
        self.stub = service_pb2_grpc.GpuFlowStub(self.channel)
        grpc.channel_ready_future(self.channel).result(timeout=10)
        if self.warm:
            self.warm_up()
        self.baseline_mib = rss_mib(self.srv.proc.pid)

    @property
    def pid(self):
        return self.srv.proc.pid

    def alive(self):
        return self.srv.proc.poll() is None

    def rss(self):
        return rss_mib(self.pid)

    def warm_up(self):
        """Touches the paths the cases use so the allocator's pools exist."""
        s = self.stub.CreateSession(service_pb2.CreateSessionRequest(label="warm-up"))
        data = np.ones(MiB // 4 * 8, np.float32).tobytes()  # 8 MiB
        upload(self.stub, s.session_id, "w", F32, [len(data) // 4], data)
        list(self.stub.DownloadArray(service_pb2.DownloadArrayRequest(session_id=s.session_id,
                                                                      name="w")))
        req = execute_request(s.session_id, [N("y", "sum", A("w"))], ["y"])
        self.stub.Execute(req, timeout=CALL_TIMEOUT)
        req = execute_request(s.session_id, [N("y", "mul", A("w"), S(2.0))], [("y", "w2")])
        self.stub.Execute(req, timeout=CALL_TIMEOUT)
        self.stub.CloseSession(service_pb2.CloseSessionRequest(session_id=s.session_id))

    def ensure(self):
        if not self.alive():
            self.restart()

    def restart(self):
        self.channel.close()
        try:
            self.srv.stop(timeout=3)
        except RuntimeError:
            pass
        self.start()

    def stop(self, timeout=10):
        # --shutdown_grace (5 s) + 1 s is the server's bound, and more room.
        self.channel.close()
        try:
            return self.srv.stop(timeout=timeout)
        except RuntimeError:
            return "killed (ignored SIGTERM)"


def log_tail(box, n=1500):
    try:
        return box.srv.log()[-n:]
    except Exception:  # noqa: BLE001
        return "(no log)"


@pytest.fixture(scope="module")
def box():
    b = Box(*MODULE_FLAGS)
    yield b
    code = b.stop()
    assert code == 0, f"the module server did not exit cleanly on SIGTERM: {code}"


@pytest.fixture
def lone_server():
    """Starts a server of its own for one case; killed afterwards whatever state it is in."""
    boxes = []

    def start(*flags):
        b = Box(*flags, warm=False)
        boxes.append(b)
        return b

    yield start
    for b in boxes:
        b.channel.close()
        if b.alive():
            b.srv.proc.send_signal(signal.SIGKILL)
            b.srv.proc.wait()
        try:
            b.srv.stop()
        except Exception:  # noqa: BLE001
            pass


# ---------------------------------------------------------------- request builders


def A(name):
    return graph_pb2.Input(array=name)


def R(node):
    return graph_pb2.Input(node=node)


def S(value, dtype=None):
    if isinstance(value, bool):
        s = graph_pb2.Scalar(bool_value=value)
    elif isinstance(value, int):
        s = graph_pb2.Scalar(int_value=value)
    else:
        s = graph_pb2.Scalar(float_value=value)
    if dtype is not None:
        s.dtype = dtype
    return graph_pb2.Input(scalar=s)


def L(dtype, shape, data):
    return graph_pb2.Input(literal=types_pb2.InlineArray(dtype=dtype, shape=shape, data=data))


class DT:
    """A dtype attribute value."""

    def __init__(self, value):
        self.value = value


def attr(value):
    if isinstance(value, graph_pb2.AttrValue):
        return value
    if isinstance(value, DT):
        return graph_pb2.AttrValue(dtype_value=value.value)
    if isinstance(value, bool):
        return graph_pb2.AttrValue(bool_value=value)
    if isinstance(value, int):
        return graph_pb2.AttrValue(int_value=value)
    if isinstance(value, float):
        return graph_pb2.AttrValue(float_value=value)
    if isinstance(value, str):
        return graph_pb2.AttrValue(string_value=value)
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return graph_pb2.AttrValue(ints=graph_pb2.IntList(values=value))
    if isinstance(value, list) and all(isinstance(v, float) for v in value):
        return graph_pb2.AttrValue(floats=graph_pb2.FloatList(values=value))
    raise TypeError(value)


def N(id, op, *inputs, **attrs):
    n = graph_pb2.Node(id=id, op=op, inputs=inputs)
    for k, v in attrs.items():
        n.attrs[k].CopyFrom(attr(v))
    return n


def graph(nodes):
    return graph_pb2.Graph(nodes=nodes)


def output_specs(outputs):
    """'y': inline; ('y', 'name'): stored; ('y', 'name', True): both; OutputSpec as is."""
    specs = []
    for o in outputs:
        if isinstance(o, graph_pb2.OutputSpec):
            specs.append(o)
        elif isinstance(o, str):
            specs.append(graph_pb2.OutputSpec(node=o, return_inline=True))
        else:
            specs.append(graph_pb2.OutputSpec(node=o[0], store_as=o[1],
                                              return_inline=len(o) > 2 and o[2]))
    return specs


def execute_request(sid, nodes, outputs):
    return service_pb2.ExecuteRequest(session_id=sid, graph=graph(nodes),
                                      outputs=output_specs(outputs))


def benchmark_request(sid, nodes, **kw):
    return service_pb2.BenchmarkRequest(session_id=sid, graph=graph(nodes), **kw)


def precompile_request(graphs, array_types=None):
    req = service_pb2.PrecompileRequest(graphs=[graph(g) for g in graphs])
    for name, (dtype, shape) in (array_types or {}).items():
        req.array_types[name].dtype = dtype
        req.array_types[name].shape.extend(shape)
    return req


def header(sid, name, dtype, shape):
    return service_pb2.UploadArrayRequest(
        header=service_pb2.UploadHeader(session_id=sid, name=name, dtype=dtype, shape=shape))


def chunk(data):
    return service_pb2.UploadArrayRequest(chunk=data)


def upload(stub, sid, name, dtype, shape, data, chunk_bytes=MiB):
    msgs = [header(sid, name, dtype, shape)]
    msgs += [chunk(data[i:i + chunk_bytes]) for i in range(0, len(data), chunk_bytes)]
    return stub.UploadArray(iter(msgs), timeout=CALL_TIMEOUT)


TINY = [N("y", "add", A("x"), S(1.0))]  # a valid graph on the session's x


# ---------------------------------------------------------------- the per-case context


class Ctx:
    """One case's view: the module server, a fresh session holding x (float32 [4, 4])."""

    def __init__(self, box):
        self.box = box
        self.stub = box.stub
        self.channel = box.channel
        self.sessions = []  # [session id, expected used bytes, expected array names]
        self.post = []
        self.sid = self.new_session()
        upload(self.stub, self.sid, "x", F32, [4, 4], np.arange(16, dtype=np.float32).tobytes())
        self.snapshot()

    def new_session(self, memory_limit=0):
        s = self.stub.CreateSession(service_pb2.CreateSessionRequest(
            label="bad-input", memory_limit_bytes=memory_limit), timeout=CALL_TIMEOUT)
        self.sessions.append([s.session_id, 0, set()])
        return s.session_id

    def listing(self, sid):
        r = self.stub.ListArrays(service_pb2.ListArraysRequest(session_id=sid),
                                 timeout=CALL_TIMEOUT)
        return r.memory_used_bytes, {a.name for a in r.arrays}

    def snapshot(self):
        """What every session holds now is what it must hold after the case."""
        for entry in self.sessions:
            entry[1], entry[2] = self.listing(entry[0])

    def forget(self, sid):
        """A session the case closes itself."""
        self.sessions = [e for e in self.sessions if e[0] != sid]

    def close(self):
        for sid, _, _ in self.sessions:
            try:
                self.stub.CloseSession(service_pb2.CloseSessionRequest(session_id=sid),
                                       timeout=CALL_TIMEOUT)
            except grpc.RpcError:
                pass

    # -- calls ------------------------------------------------------------

    def unary(self, method, request, timeout=CALL_TIMEOUT):
        return getattr(self.stub, method)(request, timeout=timeout)

    def download(self, request, timeout=CALL_TIMEOUT):
        return list(self.stub.DownloadArray(request, timeout=timeout))

    def upload_msgs(self, msgs, timeout=CALL_TIMEOUT):
        return self.stub.UploadArray(iter(msgs), timeout=timeout)

    def upload_raw(self, messages, timeout=CALL_TIMEOUT):
        call = raw_passthrough(self.channel, "UploadArray", "stream_unary", types_pb2.ArrayInfo)
        return call(iter(messages), timeout=timeout)

    def array_missing(self, name, sid=None):
        try:
            info = self.stub.GetArrayInfo(
                service_pb2.GetArrayInfoRequest(session_id=sid or self.sid, name=name),
                timeout=CALL_TIMEOUT)
        except grpc.RpcError as e:
            assert e.code() == NF, f"GetArrayInfo({name!r}): {e.code().name}"
            return
        raise AssertionError(f"array {name!r} was published by the failed call "
                             f"(shape {list(info.shape)}, {info.num_bytes} bytes)")

    def later(self, check):
        """A check to run after the case's call, whatever its outcome."""
        self.post.append(check)


def died_message(box, what):
    return (f"SERVER DIED during {what}: exit code {box.srv.proc.returncode}; "
            f"log tail:\n{log_tail(box)}")


def await_exit(box, e):
    """An UNAVAILABLE may arrive before the dying process is reaped."""
    if e.code() in (SC.UNAVAILABLE, SC.CANCELLED, SC.UNKNOWN, SC.INTERNAL):
        try:
            box.srv.proc.wait(timeout=2)
        except Exception:  # noqa: BLE001
            pass
    return box.alive()


def check_call(box, code, fn, *args, **kwargs):
    """Runs fn, which must fail with `code` and a bounded message.

    Returns a description of what was wrong, or None; fails at once if the
    server died."""
    try:
        result = fn(*args, **kwargs)
    except grpc.RpcError as e:
        if not await_exit(box, e):
            pytest.fail(died_message(box, f"a call expecting {code.name}"))
        details = e.details() or ""
        if e.code() != code:
            return (f"expected {code.name}, got {e.code().name}: {details[:400]!r}"
                    f"{'...' if len(details) > 400 else ''} ({len(details)} bytes)")
        if len(details) > MAX_DETAILS:
            return (f"{code.name} as expected, but a status message of {len(details)} bytes "
                    f"(limit {MAX_DETAILS}): {details[:300]!r}...")
        return None
    if not box.alive():
        pytest.fail(died_message(box, f"a call expecting {code.name}"))
    return f"expected {code.name}, the call succeeded: {str(result)[:100]!r}"


def expect(box, code, fn, *args, **kwargs):
    problem = check_call(box, code, fn, *args, **kwargs)
    if problem:
        pytest.fail(problem)


class PeakRss:
    """Samples the server's RSS while a block runs; .grown: the peak over the start, MiB."""

    def __init__(self, box):
        self.box = box
        self.grown = 0.0

    def __enter__(self):
        self.start = self.peak = self.box.rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, self.box.rss())
            except (OSError, RuntimeError):
                return
            self._stop.wait(0.005)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.grown = self.peak - self.start
        return False


def wait_rss_down(box, limit_mib, timeout=3.0):
    deadline = time.monotonic() + timeout
    while True:
        rss = box.rss()
        if rss <= limit_mib or time.monotonic() > deadline:
            return rss
        time.sleep(0.05)


def check_after(ctx, case_id):
    box = ctx.box
    if not box.alive():
        pytest.fail(died_message(box, case_id))
    try:
        box.stub.GetServerInfo(service_pb2.GetServerInfoRequest(), timeout=10)
        for sid, used, names in ctx.sessions:
            info = box.stub.KeepAlive(service_pb2.KeepAliveRequest(session_id=sid), timeout=10)
            now_used, now_names = ctx.listing(sid)
            assert (now_used, now_names) == (used, names), (
                f"session {sid}: held {used} bytes in {sorted(names)} before, "
                f"{now_used} bytes in {sorted(now_names)} after")
            assert info.memory_used_bytes == used
    except grpc.RpcError as e:
        if not box.alive():
            pytest.fail(died_message(box, case_id))
        raise AssertionError(f"server unresponsive after the case: {e.code().name} "
                             f"{(e.details() or '')[:300]}") from None
    limit = box.baseline_mib + RSS_SLACK_MIB
    rss = wait_rss_down(box, limit)
    assert rss <= limit, f"RSS {rss:.0f} MiB, baseline {box.baseline_mib:.0f} MiB"


@pytest.fixture
def ctx(box):
    box.ensure()
    c = Ctx(box)
    yield c
    if box.alive():
        c.close()


# ---------------------------------------------------------------- the case table

CASES = []


def case(id, code, fn):
    CASES.append(pytest.param(code, fn, id=id))


# Every RPC naming a session, with a bad session id.
SESSION_RPCS = {
    "CloseSession": lambda c, sid: c.unary("CloseSession",
                                           service_pb2.CloseSessionRequest(session_id=sid)),
    "KeepAlive": lambda c, sid: c.unary("KeepAlive", service_pb2.KeepAliveRequest(session_id=sid)),
    "UploadArray": lambda c, sid: c.upload_msgs([header(sid, "y", F32, [1]), chunk(b"\0" * 4)]),
    "DownloadArray": lambda c, sid: c.download(
        service_pb2.DownloadArrayRequest(session_id=sid, name="x")),
    "ListArrays": lambda c, sid: c.unary("ListArrays",
                                         service_pb2.ListArraysRequest(session_id=sid)),
    "GetArrayInfo": lambda c, sid: c.unary(
        "GetArrayInfo", service_pb2.GetArrayInfoRequest(session_id=sid, name="x")),
    "DeleteArray": lambda c, sid: c.unary(
        "DeleteArray", service_pb2.DeleteArrayRequest(session_id=sid, name="x")),
    "Execute": lambda c, sid: c.unary("Execute", execute_request(sid, TINY, ["y"])),
    "Benchmark": lambda c, sid: c.unary("Benchmark",
                                        benchmark_request(sid, TINY, n_warmup=0, n_repeat=1)),
}
BAD_SESSION_IDS = {
    "empty": lambda c: "",
    "unknown-hex": lambda c: "0123456789abcdef0123456789abcdef",
    "non-hex": lambda c: "z" * 32,
    "uppercased-real": lambda c: c.sid.upper(),
    "real-plus-newline": lambda c: c.sid + "\n",
    "1MiB": lambda c: BIG,
}
# Unknown and malformed ids are both "unknown or expired session" (registry lookup).
for rpc, call in SESSION_RPCS.items():
    for bad, make_id in BAD_SESSION_IDS.items():
        case(f"{rpc}-session-{bad}", NF,
             lambda c, call=call, make_id=make_id: call(c, make_id(c)))


# -- GetServerInfo

def _garbage_server_info(c):
    return raw_passthrough(c.channel, "GetServerInfo", response=service_pb2.ServerInfo)(
        b"\xff\xff\xff", timeout=CALL_TIMEOUT)


def _oversized_server_info(c):
    # A valid message (an unknown field) over the server's max message size.
    payload = b"\x7a" + _varint(3 * MiB) + b"\0" * (3 * MiB)  # field 15, bytes
    return raw_passthrough(c.channel, "GetServerInfo", response=service_pb2.ServerInfo)(
        payload, timeout=CALL_TIMEOUT)


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _invalid_utf8_keep_alive(c):
    # Field 1 (session_id, a proto3 string) holding bytes that are not UTF-8.
    return raw_passthrough(c.channel, "KeepAlive", response=service_pb2.SessionInfo)(
        b"\x0a\x02\xff\xfe", timeout=CALL_TIMEOUT)


# An undecodable unary request never reaches the service: gRPC C++'s
# callback handler answers it itself, UNIMPLEMENTED with no message. (The
# upload stream, whose messages the service decodes itself, answers
# INVALID_ARGUMENT: see the UploadArray cases.)
case("GetServerInfo-undecodable-request", SC.UNIMPLEMENTED, _garbage_server_info)
case("KeepAlive-session-id-not-utf8", SC.UNIMPLEMENTED, _invalid_utf8_keep_alive)
case("GetServerInfo-request-over-max-message-size", RE, _oversized_server_info)


# -- CreateSession

def _create(**kw):
    def run(c):
        req = service_pb2.CreateSessionRequest(**{k: v for k, v in kw.items() if k != "ttl"})
        if "ttl" in kw:
            req.idle_ttl.seconds, req.idle_ttl.nanos = kw["ttl"]
        return c.unary("CreateSession", req)
    return run


case("CreateSession-label-129-chars", IA, _create(label="l" * 129))
case("CreateSession-label-1MiB", IA, _create(label=BIG))
case("CreateSession-memory-limit-negative", IA, _create(memory_limit_bytes=-1))
case("CreateSession-memory-limit-int64-min", IA, _create(memory_limit_bytes=INT64_MIN))
case("CreateSession-memory-limit-over-max", IA, _create(memory_limit_bytes=256 * MiB + 1))
case("CreateSession-memory-limit-int64-max", IA, _create(memory_limit_bytes=INT64_MAX))
case("CreateSession-ttl-negative-seconds", IA, _create(ttl=(-1, 0)))
case("CreateSession-ttl-negative-nanos", IA, _create(ttl=(0, -1)))
case("CreateSession-ttl-over-max-25h", IA, _create(ttl=(25 * 3600, 0)))
case("CreateSession-ttl-int64-max-seconds", IA, _create(ttl=(INT64_MAX, 0)))
case("CreateSession-ttl-int64-min-seconds", IA, _create(ttl=(INT64_MIN, 0)))


# -- CloseSession


def _close_twice(c):
    sid = c.new_session()
    c.forget(sid)
    c.unary("CloseSession", service_pb2.CloseSessionRequest(session_id=sid))
    return c.unary("CloseSession", service_pb2.CloseSessionRequest(session_id=sid))


case("CloseSession-twice", NF, _close_twice)


# -- UploadArray: headers

def _up_header(name="y", dtype=F32, shape=(4,), data=None):
    def run(c):
        msgs = [header(c.sid, name, dtype, list(shape))]
        if data is not None:
            msgs.append(chunk(data))
        return c.upload_msgs(msgs)
    return run


case("UploadArray-dtype-unspecified", IA, _up_header(dtype=types_pb2.DTYPE_UNSPECIFIED,
                                                     data=b"\0" * 4))
case("UploadArray-dtype-99", IA, _up_header(dtype=99, data=b"\0" * 16))
case("UploadArray-dtype-negative", IA, _up_header(dtype=-5, data=b"\0" * 16))
case("UploadArray-negative-dim", IA, _up_header(shape=(-1, 4), data=b"\0" * 16))
case("UploadArray-int64-min-dim", IA, _up_header(shape=(INT64_MIN,)))
case("UploadArray-rank-65", IA, _up_header(shape=[1] * 65, data=b"\0" * 4))
case("UploadArray-element-count-overflows-int64", IA, _up_header(shape=(2**40, 2**40)))
case("UploadArray-element-count-overflows-int64-max-dims", IA,
     _up_header(shape=(INT64_MAX, INT64_MAX)))
case("UploadArray-byte-size-overflows-int64", IA, _up_header(shape=(2**62,)))
case("UploadArray-over-max-array-bytes", RE, _up_header(shape=(16 * MiB + 1,)))
case("UploadArray-over-session-quota", RE, _up_header(shape=(16 * MiB,)))  # x holds 64 bytes
case("UploadArray-name-empty", IA, _up_header(name="", data=b"\0" * 16))
case("UploadArray-name-slash", IA, _up_header(name="../etc/passwd", data=b"\0" * 16))
case("UploadArray-name-space", IA, _up_header(name="a b", data=b"\0" * 16))
case("UploadArray-name-129-chars", IA, _up_header(name="n" * 129, data=b"\0" * 16))
case("UploadArray-name-1MiB", IA, _up_header(name=BIG, data=b"\0" * 16))


# -- UploadArray: streams

def _upload_then_missing(msgs_fn, name="y", raw=False):
    def run(c):
        c.later(lambda: c.array_missing(name))
        msgs = msgs_fn(c)
        return c.upload_raw(msgs) if raw else c.upload_msgs(msgs)
    return run


H16 = lambda c: header(c.sid, "y", U8, [16])  # noqa: E731

case("UploadArray-stream-empty", IA, _upload_then_missing(lambda c: []))
case("UploadArray-chunk-before-header", IA,
     _upload_then_missing(lambda c: [chunk(b"\0" * 16), H16(c)]))
case("UploadArray-header-twice", IA,
     _upload_then_missing(lambda c: [H16(c), H16(c), chunk(b"\0" * 16)]))
case("UploadArray-header-after-data", IA,
     _upload_then_missing(lambda c: [H16(c), chunk(b"\0" * 16), H16(c)]))
case("UploadArray-first-message-has-neither-field", IA,
     _upload_then_missing(lambda c: [service_pb2.UploadArrayRequest(), H16(c)]))
case("UploadArray-later-message-has-neither-field", IA,
     _upload_then_missing(lambda c: [H16(c), chunk(b"\0" * 8),
                                     service_pb2.UploadArrayRequest(), chunk(b"\0" * 8)]))
case("UploadArray-too-many-bytes-one-chunk", IA,
     _upload_then_missing(lambda c: [H16(c), chunk(b"\0" * 17)]))
case("UploadArray-too-many-bytes-two-chunks", IA,
     _upload_then_missing(lambda c: [H16(c), chunk(b"\0" * 10), chunk(b"\0" * 10)]))
case("UploadArray-too-few-bytes", IA,
     _upload_then_missing(lambda c: [H16(c), chunk(b"\0" * 15)]))
case("UploadArray-header-only-no-data", IA, _upload_then_missing(lambda c: [H16(c)]))
case("UploadArray-chunk-over-max-chunk-bytes", IA,
     _upload_then_missing(lambda c: [header(c.sid, "y", U8, [2 * MiB]), chunk(b"\0" * (MiB + 1))]))
case("UploadArray-message-over-max-message-size", RE,
     _upload_then_missing(lambda c: [header(c.sid, "y", U8, [3 * MiB]), chunk(b"\0" * (3 * MiB))]))
case("UploadArray-undecodable-after-all-data", IA,
     _upload_then_missing(lambda c: [H16(c).SerializeToString(),
                                     chunk(b"\1" * 16).SerializeToString(), b"\xff\xff\xff"],
                          raw=True))
case("UploadArray-undecodable-first-message", IA,
     _upload_then_missing(lambda c: [b"\xff\xff\xff"], raw=True))
case("UploadArray-undecodable-mid-data", IA,
     _upload_then_missing(lambda c: [H16(c).SerializeToString(),
                                     chunk(b"\1" * 8).SerializeToString(), b"\x12\xff\xff\xff\x0f",
                                     chunk(b"\1" * 8).SerializeToString()], raw=True))
case("UploadArray-unknown-field-only-after-data", IA,
     _upload_then_missing(lambda c: [H16(c).SerializeToString(),
                                     chunk(b"\1" * 16).SerializeToString(), b"\x18\x01"],
                          raw=True))


def _replace_fails_keeps_old(c):
    def old_x_intact():
        info = c.unary("GetArrayInfo", service_pb2.GetArrayInfoRequest(session_id=c.sid,
                                                                        name="x"))
        assert list(info.shape) == [4, 4], f"x replaced by a failed upload: {info}"
        data = b"".join(m.chunk for m in c.download(
            service_pb2.DownloadArrayRequest(session_id=c.sid, name="x")))
        assert data == np.arange(16, dtype=np.float32).tobytes(), "x's bytes changed"

    c.later(old_x_intact)
    return c.upload_msgs([header(c.sid, "x", F32, [4, 4]), chunk(b"\0" * 63)])


case("UploadArray-short-replacement-keeps-the-old-array", IA, _replace_fails_keeps_old)


def _cancel_mid_upload(c):
    sid = c.new_session(memory_limit=64 * MiB)
    c.snapshot()
    release = threading.Event()
    sent = threading.Event()

    def messages():
        yield header(sid, "big", U8, [32 * MiB])
        for _ in range(8):
            yield chunk(b"\1" * MiB)
        sent.set()
        release.wait(10)

    fut = c.stub.UploadArray.future(messages(), timeout=CALL_TIMEOUT)
    try:
        assert sent.wait(10)
        # The reservation is held while the upload runs.
        deadline = time.monotonic() + 5
        while c.listing(sid)[0] < 32 * MiB and time.monotonic() < deadline:
            time.sleep(0.02)
        assert c.listing(sid)[0] >= 32 * MiB
        fut.cancel()
        fut.result()
    finally:
        release.set()
        if c.box.alive():
            deadline = time.monotonic() + 3
            while c.listing(sid)[0] != 0 and time.monotonic() < deadline:
                time.sleep(0.02)
            c.array_missing("big", sid)


def _cancel_wrapper(c):
    try:
        _cancel_mid_upload(c)
    except grpc.FutureCancelledError:
        # What the Python client raises for its own cancel: re-raise as the status.
        raise _CancelledRpc() from None


class _CancelledRpc(grpc.RpcError):
    def code(self):
        return SC.CANCELLED

    def details(self):
        return "cancelled by the client"


case("UploadArray-cancelled-mid-upload", SC.CANCELLED, _cancel_wrapper)


def _close_session_mid_upload(c):
    box = c.box
    sid = c.new_session(memory_limit=256 * MiB)
    c.forget(sid)
    n_up, size = 2, 48 * MiB
    half = threading.Barrier(n_up + 1, timeout=20)
    closed = threading.Event()

    def messages(name):
        yield header(sid, name, U8, [size])
        for i in range(size // MiB):
            if i == size // MiB // 2:
                half.wait()
                closed.wait(20)
            yield chunk(b"\1" * MiB)

    futs = [c.stub.UploadArray.future(messages(f"u{i}"), timeout=CALL_TIMEOUT)
            for i in range(n_up)]
    half.wait()
    rss_during = box.rss()
    c.unary("CloseSession", service_pb2.CloseSessionRequest(session_id=sid))
    closed.set()
    errors = []
    for f in futs:
        try:
            f.result()
            errors.append(None)
        except grpc.RpcError as e:
            errors.append(e)
    assert all(e is not None for e in errors), "an upload into a closed session succeeded"
    codes = {e.code() for e in errors}
    limit = box.baseline_mib + RSS_SLACK_MIB
    rss = wait_rss_down(box, limit)
    assert rss <= limit, (f"RSS {rss:.0f} MiB after the uploads ended (baseline "
                          f"{box.baseline_mib:.0f}, {rss_during:.0f} during)")
    if len(codes) != 1:
        raise AssertionError(f"the uploads ended with different codes: {codes}")
    raise errors[0]


# Closing the session cancels its uploads in progress.
case("UploadArray-session-closed-mid-upload", SC.CANCELLED, _close_session_mid_upload)


# -- DownloadArray

def _download(name="x", chunk_bytes=0):
    return lambda c: c.download(service_pb2.DownloadArrayRequest(session_id=c.sid, name=name,
                                                                 chunk_bytes=chunk_bytes))


case("DownloadArray-unknown-array", NF, _download(name="nope"))
case("DownloadArray-empty-name", NF, _download(name=""))
case("DownloadArray-1MiB-name", NF, _download(name=BIG))
case("DownloadArray-negative-chunk-bytes", IA, _download(chunk_bytes=-1))
case("DownloadArray-int64-min-chunk-bytes", IA, _download(chunk_bytes=INT64_MIN))


# -- ListArrays / GetArrayInfo / DeleteArray

def _info(name):
    return lambda c: c.unary("GetArrayInfo", service_pb2.GetArrayInfoRequest(session_id=c.sid,
                                                                             name=name))


def _delete(name):
    return lambda c: c.unary("DeleteArray", service_pb2.DeleteArrayRequest(session_id=c.sid,
                                                                           name=name))


def _delete_twice(c):
    upload(c.stub, c.sid, "z", U8, [8], b"\0" * 8)
    c.unary("DeleteArray", service_pb2.DeleteArrayRequest(session_id=c.sid, name="z"))
    return c.unary("DeleteArray", service_pb2.DeleteArrayRequest(session_id=c.sid, name="z"))


def _list_closed(c):
    sid = c.new_session()
    c.forget(sid)
    c.unary("CloseSession", service_pb2.CloseSessionRequest(session_id=sid))
    return c.unary("ListArrays", service_pb2.ListArraysRequest(session_id=sid))


case("GetArrayInfo-unknown-array", NF, _info("nope"))
case("GetArrayInfo-empty-name", NF, _info(""))
case("GetArrayInfo-1MiB-name", NF, _info(BIG))
case("DeleteArray-unknown-array", NF, _delete("nope"))
case("DeleteArray-1MiB-name", NF, _delete(BIG))
case("DeleteArray-twice", NF, _delete_twice)
case("ListArrays-closed-session", NF, _list_closed)


# -- Execute: graphs

def _exe(nodes, outputs=("y",)):
    return lambda c: c.unary("Execute", execute_request(c.sid, nodes, list(outputs)))


def _exe_after_upload(name, dtype, shape, nodes, outputs=("y",)):
    def run(c):
        upload(c.stub, c.sid, name, dtype, shape, b"")
        c.snapshot()
        return c.unary("Execute", execute_request(c.sid, nodes, list(outputs)))
    return run


ID129 = "i" * 129
case("Execute-no-nodes", IA, _exe([]))
case("Execute-no-outputs", IA, _exe(TINY, outputs=()))
case("Execute-unknown-op", IA, _exe([N("y", "frobnicate", A("x"))]))
case("Execute-empty-op", IA, _exe([N("y", "", A("x"))]))
case("Execute-1MiB-op-name", IA, _exe([N("y", BIG, A("x"))]))
case("Execute-1MiB-node-id", IA, _exe([N(BIG, "neg", A("x")), N("y", "abs", A("x"))]))
case("Execute-node-id-path-traversal", IA,
     _exe([N("../../etc/passwd", "neg", A("x"))], outputs=("../../etc/passwd",)))
case("Execute-node-id-129-chars", IA, _exe([N(ID129, "neg", A("x"))], outputs=(ID129,)))
case("Execute-node-id-empty", IA, _exe([N("", "neg", A("x"))], outputs=("",)))
case("Execute-node-id-space", IA, _exe([N("a b", "neg", A("x"))], outputs=("a b",)))
case("Execute-node-id-non-ascii", IA, _exe([N("\u00e9", "neg", A("x"))], outputs=("\u00e9",)))
case("Execute-node-id-control-char", IA, _exe([N("a\x01", "neg", A("x"))], outputs=("a\x01",)))
case("Execute-duplicate-node-ids", IA, _exe([N("y", "neg", A("x")), N("y", "abs", A("x"))]))
case("Execute-forward-reference", IA, _exe([N("y", "neg", R("z")), N("z", "abs", A("x"))]))
case("Execute-self-reference", IA, _exe([N("y", "neg", R("y"))]))
case("Execute-unknown-node-reference", IA, _exe([N("y", "neg", R("nope"))]))
case("Execute-1MiB-node-reference", IA, _exe([N("y", "neg", R(BIG))]))
case("Execute-unknown-array", NF, _exe([N("y", "neg", A("nope"))]))
# No array can have such a name: refused before any lookup.
case("Execute-1MiB-array-name", IA, _exe([N("y", "neg", A(BIG))]))
case("Execute-input-without-source", IA, _exe([N("y", "neg", graph_pb2.Input())]))
case("Execute-scalar-without-value", IA,
     _exe([N("y", "add", A("x"), graph_pb2.Input(scalar=graph_pb2.Scalar()))]))
case("Execute-scalar-dtype-99", IA, _exe([N("y", "add", A("x"), S(1, dtype=99))]))
case("Execute-too-few-inputs", IA, _exe([N("y", "add", A("x"))]))
case("Execute-too-many-inputs", IA, _exe([N("y", "neg", A("x"), A("x"))]))
case("Execute-attr-wrong-type", IA, _exe([N("y", "sum", A("x"), axes="0")]))
case("Execute-attr-without-value", IA, _exe([N("y", "sum", A("x"), axes=graph_pb2.AttrValue())]))
case("Execute-attr-unknown", IA, _exe([N("y", "sum", A("x"), colour=1)]))
case("Execute-attr-1MiB-name", IA, _exe([N("y", "sum", A("x"), **{BIG: 1})]))
case("Execute-attr-required-missing", IA, _exe([N("y", "cast", A("x"))]))
case("Execute-attr-dtype-99", IA, _exe([N("y", "cast", A("x"), dtype=DT(99))]))
case("Execute-axes-out-of-range", IA, _exe([N("y", "sum", A("x"), axes=[2])]))
case("Execute-axes-int64-min", IA, _exe([N("y", "sum", A("x"), axes=[INT64_MIN])]))
case("Execute-axes-repeated", IA, _exe([N("y", "sum", A("x"), axes=[0, -2])]))
case("Execute-softmax-axis-out-of-range", IA, _exe([N("y", "softmax", A("x"), axis=7)]))
case("Execute-transpose-not-a-permutation", IA, _exe([N("y", "transpose", A("x"), axes=[0, 0])]))
case("Execute-reshape-wrong-size", IA, _exe([N("y", "reshape", A("x"), shape=[5, 5])]))
case("Execute-reshape-two-minus-ones", IA, _exe([N("y", "reshape", A("x"), shape=[-1, -1])]))
case("Execute-reshape-negative-dim", IA, _exe([N("y", "reshape", A("x"), shape=[-4, -4])]))
case("Execute-reshape-to-rank-65", IA,
     _exe([N("y", "reshape", A("x"), shape=[16] + [1] * 64)]))
case("Execute-expand-dims-to-rank-65", IA,
     _exe([N("y", "expand_dims", A("x"), axes=list(range(2, 65)))]))
case("Execute-broadcast-to-rank-65", IA,
     _exe([N("y", "broadcast_to", A("x"), shape=[1] * 63 + [4, 4])]))
case("Execute-full-negative-shape", IA, _exe([N("y", "full", S(1.0), shape=[-1])]))
case("Execute-full-shape-overflows-int64", IA, _exe([N("y", "full", S(1.0), shape=[2**40] * 2)]))
case("Execute-full-bytes-overflow-int64", IA, _exe([N("y", "full", S(1.0), shape=[2**31] * 2)]))
case("Execute-slice-step-zero", IA,
     _exe([N("y", "slice", A("x"), starts=[0], stops=[4], steps=[0])]))
case("Execute-arange-step-zero", IA, _exe([N("y", "arange", stop=10.0, step=0.0)]))
case("Execute-matmul-0d", IA, _exe([N("y", "matmul", S(1.0), S(2.0))]))
case("Execute-matmul-mismatched", IA,
     _exe([N("r", "reshape", A("x"), shape=[2, 8]), N("y", "matmul", R("r"), R("r"))]))
case("Execute-max-of-empty-axis", IA,
     _exe_after_upload("e", F32, [0, 3], [N("y", "max", A("e"), axes=[0])]))
case("Execute-literal-wrong-byte-count", IA, _exe([N("y", "neg", L(F32, [4], b"\0" * 15))]))
case("Execute-literal-dtype-unspecified", IA,
     _exe([N("y", "neg", L(types_pb2.DTYPE_UNSPECIFIED, [4], b"\0" * 16))]))
case("Execute-literal-rank-65", IA, _exe([N("y", "neg", L(F32, [1] * 65, b"\0" * 4))]))
case("Execute-literal-negative-dim", IA, _exe([N("y", "neg", L(F32, [-1], b""))]))
case("Execute-literal-over-max-inline-bytes", RE,
     _exe([N("y", "sum", L(U8, [MiB + 8], b"\0" * (MiB + 8)))]))
case("Execute-int-scalar-out-of-bounds", IA,
     _exe_after_upload("i8", types_pb2.DTYPE_INT8, [0], [N("y", "add", A("i8"), S(300))]))
case("Execute-output-unknown-node", IA, _exe(TINY, outputs=("nope",)))
case("Execute-output-1MiB-node", IA, _exe(TINY, outputs=(BIG,)))
case("Execute-output-neither-stored-nor-inline", IA,
     _exe(TINY, outputs=(graph_pb2.OutputSpec(node="y"),)))
case("Execute-store-as-bad-name", IA, _exe(TINY, outputs=(("y", "a/b"),)))
case("Execute-store-as-129-chars", IA, _exe(TINY, outputs=(("y", "s" * 129),)))
case("Execute-store-as-1MiB", IA, _exe(TINY, outputs=(("y", BIG),)))
case("Execute-inline-result-over-max-inline-bytes", IA,
     _exe([N("y", "full", S(1.0), shape=[MiB // 8 + 1])]))
case("Execute-too-many-nodes", RE,
     _exe([N("n0", "neg", A("x"))] + [N(f"n{i}", "neg", R(f"n{i - 1}")) for i in range(1, 10001)],
          outputs=("n10000",)))
case("Execute-raw-kernel-without-allow-raw-kernels", SC.PERMISSION_DENIED,
     _exe([N("y", "raw_kernel", A("x"), code="extern \"C\" __global__ void k(float* p) {}",
             name="k", grid=[1], block=[1], output=0)]))
if BACKEND == "cpu":
    case("Execute-custom-kernel-on-cpu", SC.FAILED_PRECONDITION,
         _exe([N("y", "elementwise_kernel", A("x"), in_params="T x", out_params="T y",
                 operation="y = x * 2", name="double_it")]))

# Crash reproducers (were process aborts): empty arrays whose shapes overflow.
case("Execute-crash-literal-0xINT64MAX-sum", IA,
     _exe([N("y", "sum", L(F32, [0, INT64_MAX], b""), axes=[0])]))
case("Execute-crash-uploaded-0x3x2^62-mean-keepdims", IA,
     _exe_after_upload("q", F32, [0, 3, 2**62],
                       [N("y", "mean", A("q"), axes=[0], keepdims=True)]))
case("Execute-crash-uploaded-0xINT64MAX-sum-inline", IA,
     _exe_after_upload("q", F32, [0, INT64_MAX], [N("y", "sum", A("q"), axes=[0])]))


def _store_over_max_array_bytes(c):
    sid = c.new_session(memory_limit=256 * MiB)
    c.snapshot()
    nodes = [N("y", "full", S(0.0, dtype=F32), shape=[16 * MiB + 1])]  # 64 MiB + 4 bytes
    c.later(lambda: c.array_missing("big", sid))
    return c.unary("Execute", execute_request(sid, nodes, [("y", "big")]))


case("Execute-store-as-over-max-array-bytes", RE, _store_over_max_array_bytes)


def _store_over_quota(c):
    nodes = [N("y", "full", S(0.0, dtype=F32), shape=[16 * MiB])]  # 64 MiB, x holds 64 bytes
    c.later(lambda: c.array_missing("big"))
    return c.unary("Execute", execute_request(c.sid, nodes, [("y", "big")]))


case("Execute-store-as-over-session-quota", RE, _store_over_quota)


def _inline_reply_over_max_message(c):
    # Three inline outputs of 1 MiB each (each within --max_inline_bytes) make a
    # reply over the 2 MiB max message size; the stored output must not appear.
    nodes = [N("y", "full", S(1.0), shape=[MiB // 8]), N("s", "sum", R("y"))]
    c.later(lambda: c.array_missing("kept"))
    return c.unary("Execute", execute_request(c.sid, nodes, ["y", "y", "y", ("s", "kept")]))


case("Execute-inline-reply-over-max-message-with-store-as", RE, _inline_reply_over_max_message)


def _intermediate_over_quota(c):
    sid = c.new_session(memory_limit=16 * MiB)
    c.snapshot()
    # A 256 MiB intermediate (not fusable into the reduction: a scan) reduced to a scalar.
    nodes = [N("a", "full", S(1.0), shape=[32 * MiB]), N("b", "cumsum", R("a"), axis=0),
             N("y", "sum", R("b"))]
    with PeakRss(c.box) as peak:
        try:
            return c.unary("Execute", execute_request(sid, nodes, ["y"]))
        finally:
            def bounded():
                assert peak.grown < 128, (f"RSS grew by {peak.grown:.0f} MiB during the call "
                                          f"for a 16 MiB session")
            # On the CUDA backend intermediates live on the device, and the
            # host RSS this would watch is NVRTC compiling the plan's kernels.
            if BACKEND != "cuda":
                c.later(bounded)


case("Execute-intermediates-over-session-quota", RE, _intermediate_over_quota)


# -- Benchmark

def _bench(nodes=TINY, **kw):
    kw.setdefault("n_warmup", 0)
    kw.setdefault("n_repeat", 1)
    duration = kw.pop("max_duration", None)

    def run(c):
        req = benchmark_request(c.sid, nodes, **kw)
        if duration is not None:
            req.max_duration.seconds, req.max_duration.nanos = duration
        return c.unary("Benchmark", req)
    return run


case("Benchmark-n-repeat-0", IA, _bench(n_repeat=0))
case("Benchmark-n-repeat-negative", IA, _bench(n_repeat=-1))
case("Benchmark-n-repeat-over-100000", IA, _bench(n_repeat=100001, max_duration=(0, 200000000)))
case("Benchmark-n-repeat-int32-max", IA, _bench(n_repeat=INT32_MAX, max_duration=(0, 200000000)))
case("Benchmark-n-warmup-negative", IA, _bench(n_warmup=-1))
case("Benchmark-n-warmup-int32-min", IA, _bench(n_warmup=-(2**31)))
case("Benchmark-max-duration-negative", IA, _bench(max_duration=(-1, 0)))
case("Benchmark-max-duration-negative-nanos", IA, _bench(max_duration=(0, -1)))
case("Benchmark-max-duration-zero", IA, _bench(max_duration=(0, 0)))
case("Benchmark-no-nodes", IA, _bench(nodes=[]))
case("Benchmark-unknown-op", IA, _bench(nodes=[N("y", "frobnicate", A("x"))]))
case("Benchmark-1MiB-op-name", IA, _bench(nodes=[N("y", BIG, A("x"))]))
case("Benchmark-node-id-path-traversal", IA, _bench(nodes=[N("../../etc/passwd", "neg", A("x"))]))
case("Benchmark-unknown-array", NF, _bench(nodes=[N("y", "neg", A("nope"))]))
case("Benchmark-output-node-unknown", IA, _bench(output_nodes=["nope"]))
case("Benchmark-output-node-1MiB", IA, _bench(output_nodes=[BIG]))
case("Benchmark-crash-literal-0xINT64MAX-sum", IA,
     _bench(nodes=[N("y", "sum", L(F32, [0, INT64_MAX], b""), axes=[0])]))


# -- Precompile

def _pre(graphs, array_types=None):
    return lambda c: c.unary("Precompile", precompile_request(graphs, array_types))


Q = {"q": (F32, [4, 4])}
case("Precompile-crash-0xINT64MAX-sum", IA,
     _pre([[N("s", "sum", A("q"), axes=[0])]], {"q": (F32, [0, INT64_MAX])}))
case("Precompile-crash-0x3x2^62-mean-keepdims", IA,
     _pre([[N("s", "mean", A("q"), axes=[0], keepdims=True)]], {"q": (F32, [0, 3, 2**62])}))
case("Precompile-graph-no-nodes", IA, _pre([[]]))
case("Precompile-second-graph-bad", IA,
     _pre([[N("s", "neg", A("q"))], [N("s", "frobnicate", A("q"))]], Q))
case("Precompile-array-not-described", NF, _pre([[N("s", "neg", A("q"))]]))
case("Precompile-1MiB-array-name", IA, _pre([[N("s", "neg", A(BIG))]], Q))
case("Precompile-array-type-dtype-unspecified", IA,
     _pre([[N("s", "neg", A("q"))]], {"q": (types_pb2.DTYPE_UNSPECIFIED, [4])}))
case("Precompile-array-type-rank-65", IA, _pre([[N("s", "neg", A("q"))]], {"q": (F32, [1] * 65)}))
case("Precompile-array-type-negative-dim", IA, _pre([[N("s", "neg", A("q"))]], {"q": (F32, [-3])}))
case("Precompile-array-type-shape-overflows", IA,
     _pre([[N("s", "neg", A("q"))]], {"q": (F32, [2**40, 2**40])}))
case("Precompile-unknown-op", IA, _pre([[N("s", "frobnicate", A("q"))]], Q))
case("Precompile-1MiB-op-name", IA, _pre([[N("s", BIG, A("q"))]], Q))
case("Precompile-1MiB-node-id", IA, _pre([[N(BIG, "neg", A("q"))]], Q))
case("Precompile-node-id-path-traversal", IA, _pre([[N("../../etc/passwd", "neg", A("q"))]], Q))
case("Precompile-expand-dims-to-rank-65", IA,
     _pre([[N("s", "expand_dims", A("q"), axes=list(range(2, 65)))]], Q))
case("Precompile-raw-kernel-without-allow-raw-kernels", SC.PERMISSION_DENIED,
     _pre([[N("s", "raw_kernel", A("q"), code="extern \"C\" __global__ void k(float* p) {}",
             name="k", grid=[1], block=[1], output=0)]], Q))


# ---------------------------------------------------------------- the tests


@pytest.mark.parametrize("code,fn", CASES)
def test_bad_input(ctx, request, code, fn):
    case_id = request.node.callspec.id
    try:
        problems = [check_call(ctx.box, code, fn, ctx)]
        for check in ctx.post:
            if not ctx.box.alive():
                pytest.fail(died_message(ctx.box, case_id))
            try:
                check()
            except AssertionError as e:
                problems.append(str(e).splitlines()[0] if str(e) else repr(e))
        problems = [p for p in problems if p]
        if problems:
            pytest.fail(" AND ".join(problems))
        check_after(ctx, case_id)
    finally:
        if not ctx.box.alive():
            ctx.box.deaths.append((case_id, ctx.box.srv.proc.returncode))


# The bounds below are far from both the right answer and the bug (hours of
# warm-up, or the server's 30 s cap), so a slow or busy machine does not fail
# them: tests are not benchmarks.
def test_benchmark_warmup_counts_inside_max_duration(lone_server):
    b = lone_server("--max_benchmark_duration=30s", "--compute_threads=1")
    sid = b.stub.CreateSession(service_pb2.CreateSessionRequest()).session_id
    upload(b.stub, sid, "x", F32, [4, 4], b"\0" * 64)
    req = benchmark_request(sid, TINY, n_warmup=INT32_MAX, n_repeat=10)
    req.max_duration.seconds = 1
    start = time.monotonic()
    try:
        reply = b.stub.Benchmark(req, timeout=40)
    except grpc.RpcError as e:
        pytest.fail(f"Benchmark(n_warmup=2**31-1, max_duration=1s): {e.code().name} after "
                    f"{time.monotonic() - start:.1f} s: {(e.details() or '')[:300]}")
    elapsed = time.monotonic() - start
    assert elapsed < 10, f"took {elapsed:.1f} s with max_duration=1s"
    assert len(reply.cpu_seconds) <= 10
    # Idle again: a small call completes at once.
    b.stub.Execute(execute_request(sid, TINY, ["y"]), timeout=3)
    assert b.alive()


# A pass over the outputs that is quadratic in their number takes minutes for
# 300k; a linear one takes a few seconds, more on a busy machine. The bound
# tells the two apart without timing the machine.
def test_execute_with_300k_outputs_answers_quickly(lone_server):
    # Big enough messages for 300k outputs (request ~2.1 MB, reply ~7 MB).
    b = lone_server("--max_inline_bytes=16MiB", "--max_chunk_bytes=1MiB")
    sid = b.stub.CreateSession(service_pb2.CreateSessionRequest()).session_id
    nodes = [N("a", "full", S(1.0), shape=[]), N("b", "neg", R("a")), N("c", "abs", R("b"))]
    req = service_pb2.ExecuteRequest(session_id=sid, graph=graph(nodes))
    for i in range(300_000):
        req.outputs.add(node="abc"[i % 3], return_inline=True)
    start = time.monotonic()
    try:
        reply = b.stub.Execute(req, timeout=60)
    except grpc.RpcError as e:
        pytest.fail(f"300k outputs: {e.code().name} after {time.monotonic() - start:.1f} s: "
                    f"{(e.details() or '')[:300]}")
    elapsed = time.monotonic() - start
    assert len(reply.outputs) == 300_000
    assert elapsed < 30, f"300k outputs took {elapsed:.1f} s"
    assert b.alive()
    b.stub.KeepAlive(service_pb2.KeepAliveRequest(session_id=sid), timeout=5)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# On CUDA the server stays busy after the deadline (H200 runs 35-39,
# bench/RESULTS.md: 0.5 s of CPU in 0.5 s while the abandoned chain's
# kernels finish): a thread still waits on them spinning (the runtime's
# default schedule; DeviceRuntime::Synchronize naps, the event waits of
# copies do not yet).
@pytest.mark.xfail(BACKEND == "cuda", strict=False,
                   reason="a thread spins on the abandoned chain's kernels")
def test_deadline_shorter_than_a_long_execute(lone_server):
    # One compute thread, so abandoned work would block the next call. The chain
    # is many steps of about a second each here (1024^3 float64 matmuls; 2048^3
    # take 7 s on this 2-core machine): about 20 s of work in all. An H200 runs
    # that chain in a millisecond, so there it is 8192^3 (about 20 ms each).
    n, steps = (8192, 24) if BACKEND == "cuda" else (1024, 24)
    b = lone_server("--compute_threads=1", "--default_session_memory_limit=8GiB",
                    "--max_array_bytes=1GiB")
    sid = b.stub.CreateSession(service_pb2.CreateSessionRequest()).session_id
    nodes = [N("a", "random_uniform", shape=[n, n], seed=1, dtype=DT(F64)),
             N("m1", "matmul", R("a"), R("a"))]
    for i in range(2, steps + 1):
        nodes.append(N(f"m{i}", "matmul", R(f"m{i - 1}"), R("a")))
    nodes.append(N("y", "sum", R(f"m{steps}")))
    start = time.monotonic()
    expect(b, SC.DEADLINE_EXCEEDED, b.stub.Execute, execute_request(sid, nodes, ["y"]),
           timeout=0.2)
    assert time.monotonic() - start < 2, "the client deadline was not honoured"
    # The server gives the abandoned work up: a small Execute completes quickly...
    start = time.monotonic()
    try:
        b.stub.Execute(execute_request(sid, [N("y", "full", S(1.0), shape=[4])], ["y"]),
                       timeout=5)
    except grpc.RpcError as err:
        pytest.fail(f"small Execute after the abandoned one: {err.code().name} after "
                    f"{time.monotonic() - start:.1f} s: the server kept running the "
                    f"abandoned matmul chain")
    elapsed = time.monotonic() - start
    assert elapsed < 3, f"small Execute took {elapsed:.1f} s after the abandoned one"
    # ... and the process is idle.
    used = cpu_seconds(b.pid)
    time.sleep(0.5)
    used = cpu_seconds(b.pid) - used
    assert used < 0.2, f"the server used {used:.2f} s of CPU in 0.5 s after the deadline"
    info = b.stub.KeepAlive(service_pb2.KeepAliveRequest(session_id=sid), timeout=5)
    assert info.memory_used_bytes == 0
    assert b.alive()


def test_zz_module_server_back_to_baseline(box):
    """After every case: no deaths, no sessions left, RSS near the baseline."""
    deaths = list(box.deaths)
    box.ensure()
    info = box.stub.GetServerInfo(service_pb2.GetServerInfoRequest(), timeout=10)
    assert info.active_sessions == 0, f"{info.active_sessions} sessions left open"
    limit = box.baseline_mib + RSS_SLACK_MIB
    rss = wait_rss_down(box, limit, timeout=5)
    assert rss <= limit, f"RSS {rss:.0f} MiB after all cases, baseline {box.baseline_mib:.0f} MiB"
    assert not deaths, f"the module server died {len(deaths)} times, after cases: {deaths}"
