"""Scale-out on loopback (issue 18): three gpuflowd workers (CPU backend)
behind one pool target. New sessions spread over the workers by load,
every call of a session goes to its worker, a session id sent to another
worker is NOT_FOUND, and killing a worker loses only its sessions
(SessionLostError) while new sessions avoid it."""

import socket

import numpy as np
import pytest

import gpuflow as gf
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
