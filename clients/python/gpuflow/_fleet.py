"""A pool of gpuflowd workers behind one target (docs/scale-out.md).

``gpuflow.connect("h1:p1,h2:p2")`` or ``gpuflow.connect("dns:///name:port")``
(a name that resolves to several addresses, such as a Kubernetes headless
Service; resolved again for every new session, so workers may come and
go). A new session goes to the least-loaded healthy worker (ServerInfo.load:
fewest sessions, then fewest requests in flight, then fewest bytes held;
ties in turn), and every later call of the session goes to that worker on
its own channel. A call of a session whose worker is gone or not serving
raises :class:`gpuflow.SessionLostError`; other sessions are not touched.
"""

import itertools
import socket
import threading
import time

import grpc

from gpuflow.errors import SessionLostError, UnavailableError, from_rpc_error
from gpuflow.v1 import service_pb2

_DNS = "dns:///"
# How long a worker may take to answer GetServerInfo when a session is
# placed; slower ones are skipped.
_PLACE_TIMEOUT = 2.0


def is_pool(target):
    """Whether ``target`` names a pool rather than one server."""
    return "," in target or target.startswith(_DNS)


def _resolve(target):
    """The workers' addresses ("host:port"), in a stable order."""
    if not target.startswith(_DNS):
        addresses = [a.strip() for a in target.split(",") if a.strip()]
    else:
        host, sep, port = target[len(_DNS):].rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"a dns:/// target needs host:port, got {target!r}")
        try:
            infos = socket.getaddrinfo(host.strip("[]"), int(port), type=socket.SOCK_STREAM)
        except OSError as err:
            raise UnavailableError(f"{target} does not resolve: {err}") from None
        addresses = sorted({f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
                            for _, _, _, _, (ip, *_) in infos})
    if not addresses:
        raise UnavailableError(f"{target} names no workers")
    return addresses


class Fleet:
    """The workers of one pool target and a channel to each (opened on
    first use). Thread-safe."""

    def __init__(self, target, open_channel):
        self._target = target
        self._open = open_channel
        self._workers = {}  # address -> (raw channel, stub)
        self._lock = threading.Lock()
        self._turn = itertools.count()

    def _worker(self, address):
        with self._lock:
            worker = self._workers.get(address)
            if worker is None:
                worker = self._workers[address] = self._open(address)
            return worker

    def first_ready(self, timeout):
        """(channel, stub) of the first worker that answers within
        ``timeout`` seconds; UnavailableError naming them all otherwise."""
        addresses = _resolve(self._target)
        deadline = time.monotonic() + timeout
        while True:
            for address in addresses:
                raw, stub = self._worker(address)
                try:
                    grpc.channel_ready_future(raw).result(timeout=0.05)
                    return raw, stub
                except grpc.FutureTimeoutError:
                    pass
            if time.monotonic() > deadline:
                raise UnavailableError(f"no gpuflow worker of {self._target} answered within "
                                       f"{timeout} s (tried {', '.join(addresses)})")

    def place(self):
        """(address, stub) of the worker a new session should go to."""
        addresses = _resolve(self._target)
        asked = []
        for address in addresses:
            _, stub = self._worker(address)
            asked.append((address, stub, stub.GetServerInfo.future(
                service_pb2.GetServerInfoRequest(), timeout=_PLACE_TIMEOUT)))
        candidates = []
        for address, stub, future in asked:
            try:
                info = future.result()
            except grpc.RpcError:
                continue  # gone, draining or too slow
            if not info.healthy:
                continue
            load = info.load
            candidates.append(((load.sessions, load.requests_in_flight, load.bytes_held),
                               address, stub))
        if not candidates:
            raise UnavailableError(f"no healthy gpuflow worker among {', '.join(addresses)}")
        least = min(c[0] for c in candidates)
        ties = [c for c in candidates if c[0] == least]
        _, address, stub = ties[next(self._turn) % len(ties)]
        return address, stub

    def close(self):
        with self._lock:
            workers, self._workers = self._workers, {}
        for raw, _ in workers.values():
            raw.close()


class WorkerStub:
    """A session's stub: its worker's, with UNAVAILABLE (the worker gone or
    not serving) turned into SessionLostError."""

    def __init__(self, stub, address, session_id):
        self._stub = stub
        self.address = address
        self.session_id = session_id

    def __getattr__(self, name):
        method = _Method(getattr(self._stub, name), self)
        setattr(self, name, method)
        return method

    def translate(self, err):
        if isinstance(err, UnavailableError) and not isinstance(err, SessionLostError):
            return SessionLostError(
                f"session {self.session_id} is lost: its worker {self.address} is gone or not "
                f"serving ({err.details})")
        return err


class _Method:
    """One RPC of a WorkerStub: called, ``.future``, or (for a stream) the
    iterator it returns, translating errors as the stub says."""

    def __init__(self, method, worker):
        self._method = method
        self._worker = worker
        self._streams = "Stream" in type(method).__name__ and "UnaryStream" in type(
            method).__name__

    def translate(self, err):
        return self._worker.translate(err)

    def __call__(self, *args, **kwargs):
        try:
            reply = self._method(*args, **kwargs)
        except grpc.RpcError as err:
            raise self._lost(err) from None
        return self._iterate(reply) if self._streams else reply

    def _iterate(self, stream):
        try:
            yield from stream
        except grpc.RpcError as err:
            raise self._lost(err) from None

    def _lost(self, err):
        if err.code() == grpc.StatusCode.UNAVAILABLE:
            return self._worker.translate(from_rpc_error(err))
        return err

    def future(self, *args, **kwargs):
        return self._method.future(*args, **kwargs)
