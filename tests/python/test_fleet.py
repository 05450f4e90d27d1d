"""Scale-out on loopback (issue 18): three gpuflowd workers (CPU backend)
behind one pool target. New sessions spread over the workers by load,
every call of a session goes to its worker, a session id sent to another
worker is NOT_FOUND, and killing a worker loses only its sessions
(SessionLostError) while new sessions avoid it."""

import socket

import numpy as np
import pytest

import gpuflow as gf
from gpuflow import _fleet
from gpuflow.v1 import service_pb2


@pytest.fixture
def workers(make_server):
    servers = []
    for _ in range(3):
        servers.append(make_server())
    return servers


def pool_target(servers):
    return ",".join(s.target for s in servers)


def test_load_and_endpoint_are_reported(make_server):
    port = None
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    srv = make_server(f"--advertise_address=worker-7.example:{port}")
    with gf.connect(srv.target) as client:
        info = client.info()
        assert info.endpoint == f"worker-7.example:{port}"
        assert info.load.sessions == 0 and info.load.requests_in_flight == 0
        with client.session() as s:
            assert s.endpoint == f"worker-7.example:{port}"
            s.upload(np.ones(1000), "x")
            load = client.info().load
            assert load.sessions == 1 and load.bytes_held >= 8000


def test_sessions_spread_and_stay_on_their_worker(workers):
    with gf.connect(pool_target(workers)) as client:
        sessions = [client.session(label=f"s{i}") for i in range(6)]
        by_worker = {}
        for s in sessions:
            by_worker.setdefault(s.endpoint, []).append(s)
        assert sorted(by_worker) == sorted(w.target for w in workers)
        assert sorted(len(v) for v in by_worker.values()) == [2, 2, 2]
        for i, s in enumerate(sessions):
            x = np.arange(100, dtype=np.float32) * i
            s.upload(x, "x")
            np.testing.assert_array_equal(s.download("x"), x)
            np.testing.assert_array_equal((s.array("x") * 2).get(), x * 2)
        # Each worker holds exactly its own sessions.
        for w in workers:
            with gf.connect(w.target) as direct:
                assert direct.info().load.sessions == len(by_worker[w.target])
        for s in sessions:
            s.close()


def test_a_session_id_on_another_worker_is_not_found(workers):
    with gf.connect(pool_target(workers)) as client, client.session() as s:
        other = next(w for w in workers if w.target != s.endpoint)
        with gf.connect(other.target) as direct:
            with pytest.raises(gf.NotFoundError):
                gf.client._rpc(direct.stub.KeepAlive,
                               service_pb2.KeepAliveRequest(session_id=s.id))


def test_a_lost_worker_loses_only_its_sessions(workers):
    with gf.connect(pool_target(workers)) as client:
        sessions = [client.session() for _ in range(3)]
        for s in sessions:
            s.upload(np.ones(10), "x")
        doomed = workers[0]
        doomed.stop()
        for s in sessions:
            if s.endpoint == doomed.target:
                with pytest.raises(gf.SessionLostError, match="lost"):
                    s.download("x")
                with pytest.raises(gf.SessionLostError):
                    s.keep_alive()
                g = gf.Graph()
                y = g.neg(g.array("x"))
                with pytest.raises(gf.SessionLostError):  # asynchronous calls too
                    s.execute_async(g, [y]).result(30)
                assert issubclass(gf.SessionLostError, gf.Error)
            else:
                np.testing.assert_array_equal(s.download("x"), np.ones(10))
        # New sessions avoid the lost worker.
        fresh = [client.session() for _ in range(4)]
        assert {s.endpoint for s in fresh} <= {w.target for w in workers[1:]}
        for s in fresh + [s for s in sessions if s.endpoint != doomed.target]:
            s.close()


def test_no_worker_answers(make_server):
    srv = make_server()
    target = srv.target
    srv.stop()
    with pytest.raises(gf.UnavailableError):
        gf.connect(f"{target},{target}", timeout=0.5)


def test_dns_targets_resolve_to_every_address(workers):
    port = workers[0].port
    with gf.connect(f"dns:///localhost:{port}") as client, client.session() as s:
        s.upload(np.arange(3), "x")
        np.testing.assert_array_equal(s.download("x"), np.arange(3))
        assert s.endpoint.endswith(f":{port}")
    with pytest.raises(ValueError, match="host:port"):
        gf.connect("dns:///localhost")


class Redirector:
    """What a gateway of one's own might be: it places sessions on ``owner``
    (CreateSession and GetServerInfo go through), holds none, and answers
    every other session call FAILED_PRECONDITION naming ``owner`` in the
    trailing metadata gpuflow-session-endpoint. gpuflowd itself never
    redirects (docs/scale-out.md)."""

    def __init__(self, owner, places=None):
        import concurrent.futures

        import grpc
        from gpuflow.v1 import service_pb2_grpc

        self.owner = owner
        self.redirects = 0
        self._channel = grpc.insecure_channel(places or owner)
        self._stub = service_pb2_grpc.GpuFlowStub(self._channel)
        redirector = self

        class Servicer(service_pb2_grpc.GpuFlowServicer):
            def GetServerInfo(self, request, context):
                return redirector._stub.GetServerInfo(request)

            def CreateSession(self, request, context):
                return redirector._stub.CreateSession(request)

            def _redirect(self, request, context):
                redirector.redirects += 1
                context.set_trailing_metadata(((_fleet.SESSION_ENDPOINT_KEY, redirector.owner),))
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"held by {redirector.owner}")

            KeepAlive = ListArrays = DownloadArray = Execute = _redirect

            def UploadArray(self, requests, context):
                next(requests)  # a gateway would route on the header's session id
                self._redirect(None, context)

        self._server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=4))
        service_pb2_grpc.add_GpuFlowServicer_to_server(Servicer(), self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self.target = f"127.0.0.1:{self.port}"
        self._server.start()

    def close(self):
        self._server.stop(None)
        self._channel.close()


@pytest.fixture
def redirector():
    made = []

    def make(owner, places=None):
        made.append(Redirector(owner, places))
        return made[-1]

    yield make
    for r in made:
        r.close()


def test_session_calls_follow_an_owner_redirect_once(make_server, redirector):
    owner = make_server()
    gateway = redirector(owner.target)
    with gf.connect(f"dns:///{gateway.target}") as client:
        s = client.session()
        assert s.endpoint == gateway.target
        s.upload(np.arange(5.0), "x")  # redirected: the upload starts over on the owner
        assert s.endpoint == owner.target and gateway.redirects == 1
        np.testing.assert_array_equal(s.download("x"), np.arange(5.0))
        s.keep_alive()
        assert gateway.redirects == 1  # the session stays on its owner
        # A download, and a unary call, redirected as a session's first call.
        t = client.session()
        with pytest.raises(gf.NotFoundError, match="x"):
            t.download("x")  # followed to the owner, where t has no x
        assert t.endpoint == owner.target and gateway.redirects == 2
        u = client.session()
        u.keep_alive()
        assert u.endpoint == owner.target and gateway.redirects == 3
        for session in (s, t, u):
            session.close()


def test_an_owner_redirect_is_followed_only_once(make_server, redirector):
    owner = make_server()
    second = redirector(owner.target)
    first = redirector(second.target, places=owner.target)  # sends callers on to `second`
    with gf.connect(f"dns:///{first.target}") as client:
        s = client.session()
        with pytest.raises(gf.FailedPreconditionError, match="held by"):
            s.keep_alive()
        assert (first.redirects, second.redirects) == (1, 1)
        assert s.endpoint == second.target
    # Without a pool target, no redirect is followed.
    with gf.connect(first.target) as client:
        s = client.session()
        with pytest.raises(gf.FailedPreconditionError):
            s.keep_alive()
        assert s.endpoint == first.target
