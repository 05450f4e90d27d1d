"""A pool of gpuflowd workers behind one target (docs/scale-out.md).

``gpuflow.connect("h1:p1,h2:p2")`` or ``gpuflow.connect("dns:///name:port")``
(a name that resolves to several addresses, such as a Kubernetes headless
Service; resolved again for every new session, so workers may come and
go). A new session goes to the least-loaded healthy worker (ServerInfo.load:
fewest sessions, then fewest requests in flight, then fewest bytes held;
ties in turn), and every later call of the session goes to that worker on
its own channel. A call of a session whose worker is gone or not serving
raises :class:`gpuflow.SessionLostError`; other sessions are not touched.

Owner redirects: a call answered FAILED_PRECONDITION with the trailing
metadata ``gpuflow-session-endpoint: host:port`` (what a gateway may send;
gpuflowd never does, as a worker knows only its own sessions) is sent once
more, to that endpoint, and the session's later calls go there too.
"""

import itertools
import socket
import threading
import time

import grpc

from gpuflow.errors import SessionLostError, UnavailableError, from_rpc_error
from gpuflow.v1 import service_pb2

_DNS = "dns:///"
# The trailing-metadata key of an owner redirect (docs/scale-out.md).
SESSION_ENDPOINT_KEY = "gpuflow-session-endpoint"
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

    def worker(self, address):
        """(raw channel, stub) of ``address``, opened on first use (a pool
        member or a redirect's endpoint)."""
        return self._worker(address)

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


def redirect_endpoint(err):
    """The owner endpoint a FAILED_PRECONDITION answer names, or None."""
    if not callable(getattr(err, "code", None)) or err.code() != grpc.StatusCode.FAILED_PRECONDITION:
        return None
    trailing = err.trailing_metadata() if callable(getattr(err, "trailing_metadata", None)) else None
    for key, value in trailing or ():
        if key == SESSION_ENDPOINT_KEY:
            value = value.decode() if isinstance(value, bytes) else value
            return value.strip() or None
    return None


class Replayable:
    """The requests of a client stream, ``make()``'s iterator, that can be
    made again (``again()``): an upload redirected to the owner starts
    over."""

    def __init__(self, make):
        self._make = make
        self._requests = iter(make())

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._requests)

    def again(self):
        return Replayable(self._make)


class WorkerStub:
    """A session's stub: its worker's, with UNAVAILABLE (the worker gone or
    not serving) turned into SessionLostError, and an owner redirect
    followed once per call (``fleet`` opens the owner's channel)."""

    def __init__(self, stub, address, session_id, fleet=None):
        self._stub = stub
        self.address = address
        self.session_id = session_id
        self._fleet = fleet
        self._lock = threading.Lock()
        # The endpoint an owner redirect moved the session to, if any.
        self.moved_to = None

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        method = _Method(getattr(self._stub, name), self, name)
        setattr(self, name, method)
        return method

    def move_to(self, endpoint, seen):
        """Sends the session's calls to ``endpoint`` from now on, unless it is
        where the call went (``seen``); whether it moved."""
        if self._fleet is None or endpoint == seen:
            return False
        _, stub = self._fleet.worker(endpoint)
        with self._lock:
            if self.address == seen:  # not moved meanwhile by another call
                for name in [n for n, v in vars(self).items() if isinstance(v, _Method)]:
                    delattr(self, name)
                self._stub, self.address, self.moved_to = stub, endpoint, endpoint
        return True

    def translate(self, err):
        if isinstance(err, UnavailableError) and not isinstance(err, SessionLostError):
            return SessionLostError(
                f"session {self.session_id} is lost: its worker {self.address} is gone or not "
                f"serving ({err.details})")
        return err


class _Method:
    """One RPC of a WorkerStub: called, ``.future``, or (for a stream) the
    iterator it returns, translating errors as the stub says."""

    def __init__(self, method, worker, name):
        self._method = method
        self._worker = worker
        self._name = name
        self._address = worker.address
        self._streams = "Stream" in type(method).__name__ and "UnaryStream" in type(
            method).__name__

    def translate(self, err):
        return self._worker.translate(err)

    def __call__(self, *args, **kwargs):
        try:
            reply = self._method(*args, **kwargs)
        except grpc.RpcError as err:
            if self._follow(err):
                args = [a.again() if isinstance(a, Replayable) else a for a in args]
                return getattr(self._worker, self._name)._again(*args, **kwargs)
            raise self._lost(err) from None
        return self._iterate(reply, args, kwargs) if self._streams else reply

    def _again(self, *args, **kwargs):
        """The call once more, on the owner: no redirect followed."""
        try:
            reply = self._method(*args, **kwargs)
        except grpc.RpcError as err:
            raise self._lost(err) from None
        return self._iterate(reply, None, None) if self._streams else reply

    def _follow(self, err):
        endpoint = redirect_endpoint(err)
        return endpoint is not None and self._worker.move_to(endpoint, self._address)

    def _iterate(self, stream, args, kwargs):
        # A download is redirected before its first message.
        try:
            first = True
            for message in stream:
                first = False
                yield message
        except grpc.RpcError as err:
            if first and args is not None and self._follow(err):
                yield from getattr(self._worker, self._name)._again(*args, **kwargs)
                return
            raise self._lost(err) from None

    def _lost(self, err):
        if err.code() == grpc.StatusCode.UNAVAILABLE:
            return self._worker.translate(from_rpc_error(err))
        return err

    def future(self, *args, **kwargs):
        return self._method.future(*args, **kwargs)
