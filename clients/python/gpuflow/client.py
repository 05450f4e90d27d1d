"""Connections and sessions.

    import numpy as np, gpuflow
    client = gpuflow.connect("localhost:50051")
    with client.session(label="demo") as s:
        s.upload(np.arange(10, dtype=np.float32), name="x")
        print(s.download("x"))

Asynchronous calls return a :class:`Future` (a ``concurrent.futures.Future``),
so one thread keeps several requests in flight::

    g = gpuflow.Graph()
    y = g.mul(g.array("x"), 2.0)
    futures = [s.execute_async(g, [y]) for _ in range(8)]   # 8 requests in flight
    results = [f.result()[0] for f in futures]

A server with TLS and tenants (docs/security.md)::

    client = gpuflow.connect("gpuflow.example:50051", token=os.environ["TEAM_TOKEN"],
                             root_certificates="/etc/gpuflow/ca.crt")
"""

import collections
import concurrent.futures
import ipaddress
import itertools
import os
import threading
import warnings

import numpy as np
import grpc

from gpuflow import _fleet, dtypes
from gpuflow.graph import Graph, Node, inline_to_numpy
from gpuflow.errors import CancelledError, Error, UnavailableError, from_rpc_error
from gpuflow.v1 import service_pb2, service_pb2_grpc, types_pb2

DEFAULT_TARGET = "localhost:50051"
DEFAULT_CHUNK_BYTES = 1 << 20
_MAX_MESSAGE_BYTES = 64 << 20


_current = threading.local()


def current_session():
    """The innermost session entered with ``with`` in this thread (or None).
    Array-creating functions (``gpuflow.zeros``, ``gpuflow.asarray``, ...)
    use it when no ``session=`` is given."""
    stack = getattr(_current, "stack", None)
    return stack[-1] if stack else None


def _rpc(method, request, **kwargs):
    try:
        return method(request, **kwargs)
    except grpc.RpcError as err:
        raise from_rpc_error(err) from None


def _checked_transport(transport):
    """``transport`` when it is one Session.upload/download take, else
    ValueError."""
    if transport not in ("auto", "grpc", "shm", "cuda_ipc"):
        raise ValueError(f"transport must be 'auto', 'grpc', 'shm' or 'cuda_ipc', got {transport!r}")
    return transport


# The name prefix of the client's threads for asynchronous work.
_ASYNC_THREAD = "gpuflow-async"


class Future(concurrent.futures.Future):
    """The result of an asynchronous call (:meth:`Session.execute_async`,
    :meth:`RemoteArray.get_async`, :func:`gpuflow.evaluate_async`). It is a
    ``concurrent.futures.Future``, so ``concurrent.futures.wait`` and
    ``as_completed`` take it; ``result(timeout)`` gives what the synchronous
    call returns, or raises the :class:`gpuflow.Error` it would raise.

    ``cancel()`` succeeds until the result is set. It cancels the request
    on the server too, except one with results too large to return inline
    (stored under temporary names, then downloaded): that one runs to its
    end and its temporaries are then deleted, so nothing is left behind.
    Callbacks given to ``add_done_callback`` run on a thread of the client
    (not gRPC's), so they may make gpuflow calls; several may run at once,
    in any order. Thread-safe."""

    def __init__(self, client):
        super().__init__()
        self._client = client
        self._call = None  # the gRPC future to cancel with this one

    def cancel(self):
        if not super().cancel():
            return False
        call = self._call
        if call is not None:
            call.cancel()
        return True

    def add_done_callback(self, fn):
        if self.done():
            fn(self)
            return
        client = self._client

        def on_client_thread(future):
            # gRPC runs its callbacks on the thread that delivers every
            # streamed message of the channel: a download there would wait
            # for itself.
            try:
                client._background().submit(fn, future)
            except RuntimeError:  # the client is closed: no threads left
                fn(future)

        super().add_done_callback(on_client_thread)


def _settle(future, value=None, error=None):
    """Sets a pending Future's result (or error); nothing when it was
    cancelled meanwhile."""
    if not future.set_running_or_notify_cancel():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


def _call_async(client, fn):
    """A :class:`Future` of ``fn()`` run on one of the client's threads
    (for work that makes blocking calls)."""
    future = Future(client)

    def run():
        if future.cancelled():
            return
        try:
            value = fn()
        except Exception as err:  # noqa: BLE001 - every failure goes to the future
            _settle(future, error=err)
        else:
            _settle(future, value)

    client._background().submit(run)
    return future


def _rpc_async(client, method, request, finish, *, blocking=False, discard=None, retry=None):
    """Sends ``request`` through ``method.future`` and returns a
    :class:`Future` of ``finish(reply)``, or of the error ``_rpc`` would
    raise (``from_rpc_error``). ``blocking``: ``finish`` makes calls of its
    own, so it runs on a client thread rather than gRPC's. ``discard``:
    given when ``finish`` owns something on the server (results stored
    under temporary names); the request then runs to its end even when the
    Future is cancelled, and ``discard(reply)`` (on a client thread) runs
    instead of ``finish``, so nothing is left behind. ``retry(error)``: a
    request to send once more instead of failing with ``error``, or None."""
    future = Future(client)

    def send(request):
        call = method.future(request)
        if discard is None:
            future._call = call
            if future.cancelled():
                call.cancel()
        call.add_done_callback(done)

    def complete(reply):
        if future.cancelled():
            if discard is not None:
                discard(reply)
            return
        try:
            value = finish(reply)
        except Exception as err:  # noqa: BLE001 - every failure goes to the future
            _settle(future, error=err)
        else:
            _settle(future, value)

    def done(call):
        nonlocal retry
        if call.cancelled():
            _settle(future, error=CancelledError("the call was cancelled"))
            return
        err = call.exception()
        if err is not None:
            err = from_rpc_error(err) if isinstance(err, grpc.RpcError) else err
            translate = getattr(method, "translate", None)  # a pool's session: SessionLostError
            if translate is not None:
                err = translate(err)
            again = retry(err) if retry is not None and not future.cancelled() else None
            retry = None  # once
            if again is not None:
                send(again)
                return
            _settle(future, error=err)
            return
        reply = call.result()
        if not blocking:
            complete(reply)
            return
        try:
            client._background().submit(complete, reply)
        except RuntimeError:
            _settle(future, error=Error("the client was closed before the reply was read"))

    send(request)
    return future


def connect(target=DEFAULT_TARGET, *, timeout=10.0, token=None, root_certificates=None,
            certificate_chain=None, private_key=None, tls=None):
    """Connects to a gpuflowd at ``target`` ("host:port") and waits up to
    ``timeout`` seconds for it to answer. Raises :class:`UnavailableError`
    when it does not (saying why, e.g. a TLS handshake that failed).

    ``token``: the bearer token of a server with tenants, sent with every
    call as ``authorization: Bearer <token>`` (default: ``$GPUFLOW_TOKEN``).

    TLS: ``root_certificates`` is the CA bundle that signed the server's
    certificate (default: ``$GPUFLOW_TLS_CA``; without one, the system's
    roots); ``certificate_chain`` and ``private_key`` are this client's
    certificate and key for a server that requires them (mutual TLS;
    defaults: ``$GPUFLOW_TLS_CERT``, ``$GPUFLOW_TLS_KEY``). Each takes PEM
    bytes, or a path (str or os.PathLike) to a PEM file. ``tls``: None (the
    default) uses TLS when any of these is given; True forces it (with the
    system's roots when no CA is given); False forces plaintext."""
    return Client(target, timeout=timeout, token=token, root_certificates=root_certificates,
                  certificate_chain=certificate_chain, private_key=private_key, tls=tls)


def _pem(value, what):
    """PEM bytes from bytes, or from the file a path names."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, (str, os.PathLike)):
        try:
            with open(value, "rb") as f:
                return f.read()
        except OSError as err:
            raise ValueError(f"cannot read {what} from {os.fspath(value)!r}: {err.strerror}") from None
    raise TypeError(f"{what} must be PEM bytes or a path, not {type(value).__name__}")


def _is_loopback(target):
    """Whether a "host:port" target names this machine only."""
    host = target.rsplit(":", 1)[0] if ":" in target else target
    for prefix in ("dns:///", "ipv4:", "ipv6:"):
        if host.startswith(prefix):
            host = host[len(prefix):]
    host = host.strip("[]")
    if host == "localhost" or host.endswith(".localhost") or host.startswith("unix:"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _BearerToken(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
                   grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Adds ``authorization: Bearer <token>`` to every call of a channel
    (over TLS or not, unlike gRPC's call credentials)."""

    def __init__(self, token):
        self._metadata = ("authorization", f"Bearer {token}")

    def _with_token(self, details):
        metadata = list(details.metadata or []) + [self._metadata]
        return details._replace(metadata=metadata)

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._with_token(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._with_token(details), request)

    def intercept_stream_unary(self, continuation, details, request_iterator):
        return continuation(self._with_token(details), request_iterator)

    def intercept_stream_stream(self, continuation, details, request_iterator):
        return continuation(self._with_token(details), request_iterator)


class ArrayInfo:
    """What the server holds under a name: dtype, shape and size."""

    def __init__(self, msg):
        self.name = msg.name
        self.dtype = dtypes.name_of(msg.dtype)
        self.shape = tuple(msg.shape)
        self.size = msg.num_elements
        self.nbytes = msg.num_bytes

    def __repr__(self):
        return f"ArrayInfo(name={self.name!r}, dtype={self.dtype}, shape={self.shape})"

    def __eq__(self, other):
        return isinstance(other, ArrayInfo) and vars(self) == vars(other)


def _node_id(graph, node):
    if not isinstance(node, Node) or node.graph is not graph or node.id is None:
        raise ValueError(f"{node!r} is not a node of this graph")
    return node.id


class ExecuteResult(list):
    """The outputs of one Execute, in order, plus the server's ``timings``."""

    def __init__(self, values, timings):
        super().__init__(values)
        self.timings = timings


def _execute_result(reply):
    values = [
        inline_to_numpy(o.value) if o.HasField("value") else ArrayInfo(o.info)
        for o in reply.outputs
    ]
    return ExecuteResult(values, reply.timings)


class Client:
    """A connection to one gpuflowd. Thread-safe; close it (or use ``with``)
    when done."""

    def __init__(self, target=DEFAULT_TARGET, *, timeout=10.0, token=None, root_certificates=None,
                 certificate_chain=None, private_key=None, tls=None):
        self.target = target
        if token is None:
            token = os.environ.get("GPUFLOW_TOKEN") or None
        if root_certificates is None:
            root_certificates = os.environ.get("GPUFLOW_TLS_CA") or None
        if certificate_chain is None and private_key is None:
            certificate_chain = os.environ.get("GPUFLOW_TLS_CERT") or None
            private_key = os.environ.get("GPUFLOW_TLS_KEY") or None
        root_certificates = _pem(root_certificates, "root_certificates")
        certificate_chain = _pem(certificate_chain, "certificate_chain")
        private_key = _pem(private_key, "private_key")
        if (certificate_chain is None) != (private_key is None):
            raise ValueError("certificate_chain and private_key go together (mutual TLS)")
        if tls is None:
            tls = any(v is not None for v in (root_certificates, certificate_chain, private_key))
        elif not tls and any(v is not None for v in (root_certificates, certificate_chain, private_key)):
            raise ValueError("tls=False, but certificates were given")
        if token is not None:
            if not isinstance(token, str) or not token or any(c in token for c in "\r\n"):
                raise ValueError("token must be a non-empty string on one line")
            if not tls and not _is_loopback(target):
                warnings.warn(f"sending a bearer token to {target} without TLS: anyone on the "
                              "network path can read it (pass root_certificates=...)",
                              stacklevel=3)
        credentials = grpc.ssl_channel_credentials(
            root_certificates=root_certificates, private_key=private_key,
            certificate_chain=certificate_chain) if tls else None

        def open_channel(address):
            options = [
                ("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES),
            ]
            if credentials is not None:
                raw = grpc.secure_channel(address, credentials, options=options)
            else:
                raw = grpc.insecure_channel(address, options=options)
            channel = raw if token is None else grpc.intercept_channel(raw, _BearerToken(token))
            return raw, service_pb2_grpc.GpuFlowStub(channel)

        self._limits = None
        self._pool_lock = threading.Lock()
        self._pool = None
        self.target = target
        self._fleet = _fleet.Fleet(target, open_channel) if _fleet.is_pool(target) else None
        if self._fleet is not None:
            # Any worker answers for the fleet's info and limits.
            self._channel, self.stub = self._fleet.first_ready(timeout)
            return
        self._channel, self.stub = open_channel(target)
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            reason = self._why_unreachable()
            self._channel.close()
            raise UnavailableError(f"no gpuflow server answered at {target} within {timeout} s"
                                   + (f": {reason}" if reason else "")) from None

    def _why_unreachable(self):
        """What gRPC says went wrong connecting (a refused connection, a TLS
        handshake that failed), from one quick health check."""
        check = self._channel.unary_unary("/grpc.health.v1.Health/Check")
        try:
            check(b"", timeout=1)
        except grpc.RpcError as err:
            details = err.details() if callable(getattr(err, "details", None)) else ""
            return details or None
        return None

    @property
    def limits(self):
        """The server's ``Limits`` message, fetched once and cached."""
        if self._limits is None:
            self._limits = self.info().limits
        return self._limits

    def info(self):
        """The server's ``ServerInfo`` message: version, backend, device,
        limits, dtypes and ops."""
        return _rpc(self.stub.GetServerInfo, service_pb2.GetServerInfoRequest())

    def devices(self):
        """The server's devices (``DeviceInfo`` messages: id, description,
        health, sessions and bytes held, memory), one per device it drives
        (docs/multi-gpu.md)."""
        return list(self.info().devices)

    def session(self, label="", *, memory_limit=0, idle_ttl=None, device=None):
        """Opens a session. ``memory_limit`` in bytes (0: server default);
        ``idle_ttl`` in seconds (None: server default); ``device`` the id of
        the server's device to hold it (None: the least-loaded healthy one).
        Use it as a context manager so it is closed on exit."""
        request = service_pb2.CreateSessionRequest(label=label, memory_limit_bytes=memory_limit)
        if device is not None:
            request.device = int(device)
        if idle_ttl is not None:
            request.idle_ttl.FromNanoseconds(int(idle_ttl * 1e9))
        if self._fleet is None:
            return Session(self, _rpc(self.stub.CreateSession, request))
        # A pool: the least-loaded healthy worker holds the new session, and
        # every later call of it goes there.
        address, stub = self._fleet.place()
        info = _rpc(stub.CreateSession, request)
        return Session(self, info,
                       stub=_fleet.WorkerStub(stub, address, info.session_id, self._fleet),
                       endpoint=info.endpoint or address)

    def _background(self):
        """The client's threads for asynchronous work that blocks on calls
        of its own (downloads, deletes) and for Future callbacks, started
        on first use."""
        with self._pool_lock:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=4, thread_name_prefix=_ASYNC_THREAD)
            return self._pool

    def close(self):
        """Closes the channel; calls still in flight fail with
        :class:`CancelledError`."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)
        if self._fleet is not None:
            self._fleet.close()
        else:
            self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Session:
    """A session on the server: a namespace of arrays with a memory quota and
    an idle TTL. Calls on one session may come from several threads."""

    def __init__(self, client, info, stub=None, endpoint=None):
        self._client = client
        self._stub = client.stub if stub is None else stub
        self.id = info.session_id
        self._endpoint = endpoint or info.endpoint or client.target
        self.label = info.label
        # The id of the server's device that holds the session.
        self.device = info.device
        self.memory_limit = info.memory_limit_bytes
        self.idle_ttl = info.idle_ttl.ToTimedelta().total_seconds()
        self.closed = False
        # Names of temporary arrays (uploaded for RemoteArrays) no longer
        # referenced; deleted before the next array-API call. Filled by
        # weakref finalizers, which may run on any thread at any time, so they
        # only append here and never make RPCs themselves.
        self._released = collections.deque()
        self._temp_ids = itertools.count()
        self._prepared = None  # gpuflow._prepared.Cache, made on first use
        self._shm_stage = None  # gpuflow._shm.Stage, made on first use
        self._shm_lock = threading.Lock()
        self._ipc = None  # (allow_cuda_ipc, device_uuid) of the session's worker
        # Futures of this session's asynchronous calls not yet done: close()
        # waits for them.
        self._pending = set()
        self._pending_lock = threading.Lock()

    @property
    def client(self):
        """The :class:`Client` this session belongs to."""
        return self._client

    # -- RemoteArrays (see gpuflow.remote_array) ------------------------------

    def asarray(self, obj, dtype=None):
        """Uploads ``obj`` (a numpy array, a CPU or CUDA torch tensor, an
        object with ``__dlpack__`` or ``__array__``, a list or a scalar) and
        returns a :class:`gpuflow.RemoteArray` for it. The upload is a
        temporary array of this session, deleted once no RemoteArray uses it.
        A RemoteArray of this session is returned as is (cast to ``dtype``)."""
        from gpuflow import remote_array

        return remote_array.asarray(obj, dtype=dtype, session=self)

    def array(self, name):
        """A :class:`gpuflow.RemoteArray` for the session array ``name`` (which
        must exist; later uploads under that name change what it reads)."""
        from gpuflow import remote_array

        return remote_array.RemoteArray._from_session_array(self, self.info(name))

    @property
    def endpoint(self):
        """The worker that holds the session (a pool's member, or the
        server); after an owner redirect, the owner it named."""
        moved = getattr(self._stub, "moved_to", None)
        return moved or self._endpoint

    def _check_open(self):
        if self.closed:
            from gpuflow.errors import SessionClosedError

            raise SessionClosedError(f"session {self.id} is closed")

    # -- shared memory (docs/shared-memory.md) -----------------------------

    def _stage(self):
        stage = self._shm_stage
        if stage is None:
            from gpuflow import _shm

            with self._shm_lock:
                if self._shm_stage is None:
                    self._shm_stage = _shm.Stage(self, _rpc)
                stage = self._shm_stage
        return stage

    def _use_shm(self, transport, nbytes):
        """Whether a transfer of ``nbytes`` (None: not known) of host memory
        goes through shared memory."""
        if _checked_transport(transport) in ("grpc", "cuda_ipc"):
            return False
        if transport == "auto" and (nbytes == 0 or not self._client.limits.allow_shared_memory):
            return False
        self._check_open()
        if self._stage().probe():
            return True
        if transport == "auto":
            return False
        if not self._client.limits.allow_shared_memory:
            from gpuflow.errors import PermissionDeniedError

            raise PermissionDeniedError("shared-memory transfers are off on this server "
                                        "(gpuflowd --allow_shared_memory)")
        raise Error("shared memory does not work with this server: it runs on another host, "
                    "does not share /dev/shm, or /dev/shm has no room")

    def _result_stage(self):
        """The shared-memory stage results too large to return inline go
        through (see gpuflow._shm), or None: the server does not allow it,
        or it does not work from here."""
        return self._stage() if self._use_shm("auto", None) else None

    # -- CUDA IPC (docs/shared-memory.md, "CUDA IPC") -------------------------

    def _ipc_server(self):
        """(allowed, the GPU's UUID) of the worker holding this session."""
        if self._ipc is None:
            info = _rpc(self._stub.GetServerInfo, service_pb2.GetServerInfoRequest())
            self._ipc = (info.limits.allow_cuda_ipc, info.device_uuid)
        return self._ipc

    def _use_ipc(self, transport, device):
        """Whether a transfer to or from the CUDA array ``device`` (a
        gpuflow._cuda_ipc.DeviceArray) goes by CUDA IPC; for
        ``transport="cuda_ipc"`` an error says why it cannot."""
        if _checked_transport(transport) not in ("auto", "cuda_ipc"):
            return False
        from gpuflow import _cuda_ipc
        from gpuflow.errors import FailedPreconditionError, PermissionDeniedError

        self._check_open()
        allowed, server_uuid = self._ipc_server()
        if not allowed:
            if transport == "auto":
                return False
            raise PermissionDeniedError("CUDA IPC is off on this server (gpuflowd --allow_cuda_ipc)")
        try:
            if device.device is None:
                raise _cuda_ipc.IpcUnavailable("the array's device is unknown (no CUDA driver "
                                               "here, or an empty array)")
            mine = _cuda_ipc.device_uuid(device.device)
        except _cuda_ipc.IpcUnavailable as err:
            if transport == "auto":
                return False
            raise Error(f"CUDA IPC does not work from here: {err}") from None
        if mine != server_uuid:
            if transport == "auto":
                return False
            raise FailedPreconditionError(
                f"the array is on {mine}, the server's GPU is {server_uuid or 'none'}: CUDA IPC "
                "needs both on the same GPU")
        return True

    def register_cuda_memory(self, region, array):
        """Registers the device allocation holding ``array`` (a CUDA torch
        tensor, a CuPy array or any C-contiguous object with
        ``__cuda_array_interface__``, on the server's GPU) as ``region``,
        through CUDA IPC: the server must run with ``--allow_cuda_ipc``.
        Returns the byte offset of ``array``'s data in the region, what
        :meth:`upload_from_shared_memory` and :meth:`download_to_shared_memory`
        take. The allocation must stay alive until the region is
        unregistered or the session ends, and its producer's writes must be
        complete before a call reads it."""
        from gpuflow import _cuda_ipc

        device = _cuda_ipc.device_array(array, contiguous_copy=False)
        if device is None:
            raise TypeError(f"{type(array).__name__} is not CUDA device memory")
        try:
            handle, size, offset = _cuda_ipc.export(device)
        except _cuda_ipc.IpcUnavailable as err:
            raise Error(f"cannot share this array by CUDA IPC: {err}") from None
        _rpc(self._stub.RegisterSharedMemory, service_pb2.RegisterSharedMemoryRequest(
            session_id=self.id, region=region, byte_size=size, cuda_ipc_handle=handle))
        return offset

    def _ipc_transfer(self, device, call):
        """Runs ``call(region, offset)`` with ``device``'s allocation
        registered under a temporary region name, unregistered after."""
        region = f"_ipc.{next(self._temp_ids)}"
        offset = self.register_cuda_memory(region, device.owner)
        try:
            return call(region, offset)
        finally:
            try:
                self.unregister_shared_memory(region)
            except Error:
                pass  # the session is gone, and the region with it

    def _upload_device(self, device, name):
        """Uploads the CUDA array ``device`` by CUDA IPC as ``name``."""
        from gpuflow import _cuda_ipc

        _cuda_ipc.synchronize(device.device)  # the producer's writes are in memory
        return self._ipc_transfer(device, lambda region, offset: self.upload_from_shared_memory(
            name, region, offset, device.dtype, device.shape))

    def download_into(self, name, out, *, transport="auto"):
        """Writes the array ``name`` into ``out``, a C-contiguous CUDA array
        (torch tensor, CuPy array) of its size: by CUDA IPC, device to
        device, when the server allows it and drives ``out``'s GPU
        (``transport="auto"``; ``"cuda_ipc"`` insists), else through host
        memory. Returns ``out``."""
        from gpuflow import _cuda_ipc

        device = _cuda_ipc.device_array(out, contiguous_copy=False)
        if device is None:
            raise TypeError(f"download_into takes a CUDA array, got {type(out).__name__}")
        if self._use_ipc(transport, device):
            info = self._ipc_transfer(device, lambda region, offset: self.download_to_shared_memory(
                name, region, offset))
            if info.nbytes != device.nbytes:
                raise ValueError(f"array {name!r} has {info.nbytes} bytes, out has {device.nbytes}")
            return out
        host = self.download(name, transport="auto" if transport == "cuda_ipc" else transport)
        if host.nbytes != device.nbytes:
            raise ValueError(f"array {name!r} has {host.nbytes} bytes, out has {device.nbytes}")
        _cuda_ipc.copy_from_host(device, np.ascontiguousarray(host))
        return out

    def register_shared_memory(self, region, key, byte_size):
        """Registers the shared-memory object ``key`` (a name given to
        shm_open, e.g. ``multiprocessing.shared_memory.SharedMemory(...).name``,
        starting with "gpuflow") in this session as ``region``: the first
        ``byte_size`` bytes. Returns the server's ``SharedMemoryRegion``."""
        return _rpc(self._stub.RegisterSharedMemory, service_pb2.RegisterSharedMemoryRequest(
            session_id=self.id, region=region, key=key, byte_size=byte_size))

    def unregister_shared_memory(self, region):
        _rpc(self._stub.UnregisterSharedMemory, service_pb2.UnregisterSharedMemoryRequest(
            session_id=self.id, region=region))

    def upload_from_shared_memory(self, name, region, offset, dtype, shape):
        """Stores region bytes [offset, offset + size) as the array ``name``
        of ``dtype`` and ``shape``; returns its :class:`ArrayInfo`."""
        return ArrayInfo(_rpc(self._stub.UploadFromSharedMemory,
                              service_pb2.SharedMemoryUploadRequest(
                                  session_id=self.id, name=name,
                                  dtype=dtypes.to_proto(dtype if dtype == "bfloat16"
                                                        else np.dtype(dtype)),
                                  shape=list(shape), region=region, offset=offset)))

    def download_to_shared_memory(self, name, region, offset=0):
        """Writes the array ``name``'s bytes into ``region`` at ``offset``;
        returns its :class:`ArrayInfo`."""
        return ArrayInfo(_rpc(self._stub.DownloadToSharedMemory,
                              service_pb2.SharedMemoryDownloadRequest(
                                  session_id=self.id, name=name, region=region, offset=offset)))

    def _prepared_cache(self):
        """The structures this session has prepared on the server (see
        gpuflow._prepared)."""
        cache = self._prepared
        if cache is None:
            from gpuflow import _prepared

            cache = self._prepared = _prepared.Cache(self._client.limits.max_prepared_graphs)
        return cache

    def _new_temp_name(self):
        return f"_tmp.{next(self._temp_ids)}"

    def _release_temp(self, name):
        if not self.closed:
            self._released.append(name)

    def _delete_released(self):
        """Deletes temporary arrays whose RemoteArrays are gone."""
        while self._released and not self.closed:
            try:
                name = self._released.popleft()
            except IndexError:  # empty, or another thread took the last one
                return
            try:
                self.delete(name)
            except Error:
                pass  # already gone (expired session, deleted by the user)

    # -- arrays -------------------------------------------------------------

    def upload(self, array, name, *, dtype=None, chunk_bytes=DEFAULT_CHUNK_BYTES,
               transport="auto"):
        """Uploads a numpy array (any shape, 0-d and empty included) under
        ``name``, replacing an array of that name. ``dtype="bfloat16"`` sends
        a uint16 array's words as bfloat16. Returns its :class:`ArrayInfo`.

        ``transport``: ``"grpc"`` (the bytes travel in the call), ``"shm"``
        (through shared memory: the server must allow it and run on this
        host; :class:`gpuflow.Error` otherwise) or ``"auto"`` (shared memory
        when that works, else gRPC). See docs/shared-memory.md."""
        from gpuflow import _cuda_ipc

        device = _cuda_ipc.device_array(array)
        if device is not None:
            from gpuflow.remote_array import dtype_name, host_array

            same_dtype = dtype is None or dtype_name(dtype) == device.dtype
            if same_dtype and self._use_ipc(transport, device):
                return self._upload_device(device, name)

            array, host_dtype = host_array(array)  # through host memory
            if dtype is None and host_dtype == "bfloat16":
                dtype = "bfloat16"
            transport = "auto" if transport == "cuda_ipc" else transport
        elif transport == "cuda_ipc":
            raise TypeError(f"transport='cuda_ipc' takes a CUDA array, got {type(array).__name__}")
        array = np.asarray(array)
        name_ = dtype if dtype is not None else array.dtype.name
        if name_ == "bfloat16" and array.dtype != np.uint16:
            raise TypeError("bfloat16 uploads take a uint16 array of raw bfloat16 words")
        if name_ != "bfloat16" and dtype is not None and np.dtype(dtype) != array.dtype:
            array = array.astype(dtype)
        wire = dtypes.to_proto(name_)
        array = np.asarray(array, dtype=dtypes.numpy_dtype(name_), order="C")
        if self._use_shm(transport, array.nbytes):
            return ArrayInfo(self._stage().upload(array, name, wire))
        header = service_pb2.UploadHeader(
            session_id=self.id, name=name, dtype=wire, shape=list(array.shape)
        )
        flat = memoryview(array.reshape(-1).view(np.uint8)) if array.size else memoryview(b"")

        def requests():
            yield service_pb2.UploadArrayRequest(header=header)
            for start in range(0, len(flat), chunk_bytes):
                yield service_pb2.UploadArrayRequest(chunk=bytes(flat[start : start + chunk_bytes]))

        return ArrayInfo(_rpc(self._stub.UploadArray, _fleet.Replayable(requests)))

    def download(self, name, *, chunk_bytes=0, transport="auto"):
        """Downloads an array as a numpy array, bit-exact (bfloat16 arrays as
        uint16 words). ``transport`` as for :meth:`upload`."""
        if self._use_shm(transport, None):
            return self._stage().download(name)[1]
        stream = self._stub.DownloadArray(
            service_pb2.DownloadArrayRequest(session_id=self.id, name=name, chunk_bytes=chunk_bytes)
        )
        try:
            header = None
            out = None
            offset = 0
            for message in stream:
                if message.HasField("header"):
                    header = ArrayInfo(message.header)
                    out = np.empty(header.nbytes, dtype=np.uint8)
                    continue
                chunk = message.chunk
                if out is None or offset + len(chunk) > len(out):
                    raise Error("server sent more bytes than the array holds")
                out[offset : offset + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
                offset += len(chunk)
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        if header is None or offset != header.nbytes:
            raise Error(f"download of {name!r} ended early")
        return out.view(dtypes.numpy_dtype(header.dtype)).reshape(header.shape)

    def list(self):
        """Every array of the session, sorted by name."""
        reply = _rpc(self._stub.ListArrays, service_pb2.ListArraysRequest(session_id=self.id))
        return [ArrayInfo(a) for a in reply.arrays]

    def info(self, name):
        return ArrayInfo(
            _rpc(self._stub.GetArrayInfo, service_pb2.GetArrayInfoRequest(session_id=self.id, name=name))
        )

    def delete(self, name):
        """Deletes an array; returns the bytes freed."""
        reply = _rpc(self._stub.DeleteArray, service_pb2.DeleteArrayRequest(session_id=self.id, name=name))
        return reply.freed_bytes

    def copy_from(self, source, name, as_name=None):
        """Copies array ``name`` of session ``source`` (of the same server
        and caller) into this session as ``as_name`` (default ``name``),
        whichever devices hold the two: peer to peer between GPUs that reach
        each other, else staged through host memory. Returns ``(ArrayInfo,
        transfer)``, transfer being "device", "peer", "staged" or "host"."""
        reply = _rpc(self._stub.CopyArray, service_pb2.CopyArrayRequest(
            source_session_id=source.id, source_name=name, session_id=self.id,
            name=as_name or ""))
        return ArrayInfo(reply.array), reply.transfer

    # -- graphs ---------------------------------------------------------------

    def execute(self, graph, outputs, *, profile=False, allow_tf32=False):
        """Runs ``graph`` (a :class:`gpuflow.Graph`) in this session.

        ``outputs`` is either a list of nodes, whose values come back as numpy
        arrays (each at most the server's inline limit), or a dict
        ``{name: node}`` storing each value in the session under ``name``
        (download it later). Returns an :class:`ExecuteResult`: a list of the
        numpy arrays (or :class:`ArrayInfo` for stored outputs), with
        ``.timings`` (the server's ``Timings`` message).
        """
        request = self._execute_request(graph, outputs, profile, allow_tf32)
        return _execute_result(_rpc(self._stub.Execute, request))

    def execute_async(self, graph, outputs, *, profile=False, allow_tf32=False):
        """:meth:`execute` without waiting: returns a :class:`Future` of its
        :class:`ExecuteResult`. Any number may be in flight on one session,
        from any threads; the server runs them side by side. A bad node
        raises here; what the server refuses, from ``result()``."""
        request = self._execute_request(graph, outputs, profile, allow_tf32)
        return self._track(_rpc_async(self._client, self._stub.Execute, request, _execute_result))

    def _execute_request(self, graph, outputs, profile, allow_tf32):
        request = service_pb2.ExecuteRequest(
            session_id=self.id, graph=graph.proto, profile=profile, allow_tf32=allow_tf32
        )
        if isinstance(outputs, Node):
            outputs = [outputs]
        if isinstance(outputs, dict):
            for name, node in outputs.items():
                request.outputs.add(node=_node_id(graph, node), store_as=name)
        else:
            for node in outputs:
                request.outputs.add(node=_node_id(graph, node), return_inline=True)
        return request

    # -- session ------------------------------------------------------------

    def keep_alive(self):
        """Resets the idle timer."""
        _rpc(self._stub.KeepAlive, service_pb2.KeepAliveRequest(session_id=self.id))

    @property
    def memory_used(self):
        """Bytes held by the session's arrays and uploads in progress."""
        reply = _rpc(self._stub.KeepAlive, service_pb2.KeepAliveRequest(session_id=self.id))
        return reply.memory_used_bytes

    def _track(self, future):
        """Returns ``future`` (of an asynchronous call of this session),
        which close() then waits for."""
        with self._pending_lock:
            self._pending.add(future)

        def forget(done):
            with self._pending_lock:
                self._pending.discard(done)

        # The plain Future's callback: runs as it settles, on any thread.
        concurrent.futures.Future.add_done_callback(future, forget)
        return future

    def close(self):
        """Closes the session, freeing everything it holds. Safe to call twice.
        First waits for the session's asynchronous calls still in flight
        (as ``concurrent.futures.Executor.shutdown`` does; not when called
        from one of their callbacks), so leaving a ``with`` block loses
        none. RemoteArrays of a closed session raise
        :class:`SessionClosedError`."""
        if self.closed:
            return
        with self._pending_lock:
            pending = list(self._pending)
        if pending and not threading.current_thread().name.startswith(_ASYNC_THREAD):
            concurrent.futures.wait(pending)
        self.closed = True
        self._released.clear()
        try:
            _rpc(self._stub.CloseSession, service_pb2.CloseSessionRequest(session_id=self.id))
        finally:
            if self._shm_stage is not None:
                self._shm_stage.close()  # the server let go of it with the session

    def __enter__(self):
        """Closes the session on exit, and makes it the current session of
        this thread meanwhile (see :func:`current_session`)."""
        stack = getattr(_current, "stack", None)
        if stack is None:
            stack = _current.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc):
        stack = getattr(_current, "stack", [])
        if self in stack:
            del stack[len(stack) - 1 - stack[::-1].index(self)]
        try:
            self.close()
        except Error:
            if exc[0] is None:
                raise

    def __repr__(self):
        return f"Session(id={self.id!r}, label={self.label!r})"
