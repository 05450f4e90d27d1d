"""Security: TLS and mutual TLS, tenants with bearer tokens, isolation between
tenants, per-tenant limits, reloading certificates and tokens, start-up
warnings and the kernel cache directory check (docs/security.md).

Certificates are made here, with the openssl command, in a temporary
directory. Reloads are waited for by polling with a generous deadline, never
by assuming how long anything takes.
"""

import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import threading
import time

import grpc
import numpy as np
import pytest

import gpuflow
from gpuflow.v1 import service_pb2

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None,
                                reason="needs the openssl command (scripts/install_deps.sh)")

SERVING = b"\x08\x01"


# ---- certificates ------------------------------------------------------------------------


class Pki:
    """CAs and certificates made with openssl (EC P-256: fast) in `root`."""

    def __init__(self, root):
        self.root = pathlib.Path(root)

    def _openssl(self, *args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    def ca(self, name):
        """A self-signed CA: (cert path, key path)."""
        key, cert = self.root / f"{name}.key", self.root / f"{name}.crt"
        self._openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                      "-nodes", "-days", "2", "-subj", f"/CN={name}", "-keyout", str(key),
                      "-out", str(cert))
        return cert, key

    def issue(self, ca, name, *, server):
        """A certificate for `name` signed by `ca`: (cert path, key path).
        Server certificates name localhost and 127.0.0.1."""
        ca_cert, ca_key = ca
        key, csr, cert = (self.root / f"{name}.key", self.root / f"{name}.csr",
                          self.root / f"{name}.crt")
        ext = self.root / f"{name}.ext"
        ext.write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
                       if server else "extendedKeyUsage=clientAuth\n")
        self._openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                      "-subj", f"/CN={name}", "-keyout", str(key), "-out", str(csr))
        self._openssl("x509", "-req", "-in", str(csr), "-CA", str(ca_cert), "-CAkey", str(ca_key),
                      "-CAcreateserial", "-days", "2", "-extfile", str(ext), "-out", str(cert))
        return cert, key


def replace_file(path, data):
    """Writes `data` to `path` at once (a temporary file renamed over it), as
    Kubernetes updates a mounted Secret."""
    path = pathlib.Path(path)
    tmp = path.with_name(path.name + ".new")
    tmp.write_bytes(data if isinstance(data, bytes) else data.encode())
    os.replace(tmp, path)


def wait_for(condition, what, timeout=60):
    """Polls `condition` until it returns a true value (returned)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def pki(tmp_path):
    return Pki(tmp_path)


@pytest.fixture
def tls_files(pki, tmp_path):
    """A CA, a server certificate it signed, copied to the paths the server
    is given (so tests can rotate them), and a client CA with a client."""
    ca = pki.ca("ca")
    server_cert, server_key = pki.issue(ca, "server", server=True)
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    shutil.copy(server_cert, cert)
    shutil.copy(server_key, key)
    client_ca = pki.ca("client-ca")
    client = pki.issue(client_ca, "client", server=False)
    return {"ca": ca, "cert": cert, "key": key, "client_ca": client_ca, "client": client}


def health(target, credentials=None, metadata=None):
    """grpc.health.v1.Health/Check of the whole server, by hand."""
    channel = (grpc.secure_channel(target, credentials) if credentials
               else grpc.insecure_channel(target))
    with channel:
        return channel.unary_unary("/grpc.health.v1.Health/Check")(b"", timeout=10,
                                                                   metadata=metadata)


# ---- TLS -----------------------------------------------------------------------------------


def test_tls_server_takes_clients_that_trust_its_ca_only(make_server, tls_files, pki):
    srv = make_server(f"--tls_cert_file={tls_files['cert']}", f"--tls_key_file={tls_files['key']}")
    assert "TLS: CN=server" in srv.log()
    with gpuflow.connect(srv.target, root_certificates=tls_files["ca"][0]) as c:
        assert c.info().healthy
        with c.session() as s:
            x = np.arange(100_000, dtype=np.float32)
            s.upload(x, name="x")
            assert np.array_equal(s.download("x"), x)
    # PEM bytes work as well as a path.
    with gpuflow.connect(srv.target, root_certificates=tls_files["ca"][0].read_bytes()) as c:
        assert c.info().healthy
    # A plaintext client cannot talk to it.
    with pytest.raises(gpuflow.UnavailableError):
        gpuflow.connect(srv.target, timeout=2)
    # Nor one that trusts another CA: it refuses the server's certificate.
    other = pki.ca("other-ca")
    # (One address: through "localhost" the error reported may be the IPv6
    # address's refused connection rather than the handshake.)
    with pytest.raises(gpuflow.UnavailableError, match="(?i)handshake|certificate"):
        gpuflow.connect(f"127.0.0.1:{srv.port}", root_certificates=other[0], timeout=5)


def test_tls_client_ca_from_the_environment(make_server, tls_files, monkeypatch):
    srv = make_server(f"--tls_cert_file={tls_files['cert']}", f"--tls_key_file={tls_files['key']}")
    monkeypatch.setenv("GPUFLOW_TLS_CA", str(tls_files["ca"][0]))
    with gpuflow.connect(srv.target) as c:
        assert c.info().healthy


def test_mutual_tls_requires_a_client_certificate_of_its_ca(make_server, tls_files, pki):
    srv = make_server(f"--tls_cert_file={tls_files['cert']}", f"--tls_key_file={tls_files['key']}",
                      f"--tls_client_ca_file={tls_files['client_ca'][0]}")
    assert "mutual TLS: CN=server" in srv.log()
    ca = tls_files["ca"][0]
    client_cert, client_key = tls_files["client"]

    def refused(**credentials):
        # The handshake fails at connect, or (TLS 1.3 checks the client last)
        # at the first call.
        with pytest.raises(gpuflow.UnavailableError):
            with gpuflow.connect(srv.target, root_certificates=ca, timeout=3, **credentials) as c:
                c.info()

    refused()  # no client certificate
    foreign = pki.issue(pki.ca("foreign-ca"), "intruder", server=False)
    refused(certificate_chain=foreign[0], private_key=foreign[1])
    with gpuflow.connect(srv.target, root_certificates=ca, certificate_chain=client_cert,
                         private_key=client_key) as c:
        assert c.info().healthy
        with c.session() as s:
            s.upload(np.ones(3), name="x")


def test_health_answers_over_tls_without_a_client_token(make_server, tls_files, tmp_path):
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"tenants": [{"name": "a", "token_sha256": sha("t" * 32)}]}))
    srv = make_server(f"--tls_cert_file={tls_files['cert']}", f"--tls_key_file={tls_files['key']}",
                      f"--auth_tokens_file={tokens}")
    credentials = grpc.ssl_channel_credentials(tls_files["ca"][0].read_bytes())
    assert health(srv.target, credentials) == SERVING


@pytest.mark.parametrize("flags, message", [
    (["--tls_cert_file={cert}"], "--tls_cert_file and --tls_key_file go together"),
    (["--tls_client_ca_file={ca}"], "--tls_client_ca_file needs TLS"),
    (["--tls_cert_file={cert}", "--tls_key_file={other_key}"], "does not match the certificate"),
    (["--tls_cert_file={key}", "--tls_key_file={key}"], "not a PEM certificate chain"),
    (["--tls_cert_file={cert}", "--tls_key_file={cert}"], "not a PEM private key"),
    (["--tls_cert_file={cert}", "--tls_key_file={missing}"], "cannot read it"),
    (["--tls_cert_file={cert}", "--tls_key_file={key}", "--tls_client_ca_file={key}"],
     "not a PEM bundle of CA certificates"),
])
def test_bad_tls_files_stop_the_start(make_server, tls_files, pki, tmp_path, flags, message):
    other = pki.issue(tls_files["ca"], "other", server=True)
    values = {"cert": tls_files["cert"], "key": tls_files["key"], "ca": tls_files["ca"][0],
              "other_key": other[1], "missing": tmp_path / "missing.pem"}
    with pytest.raises(RuntimeError, match="exited with 2") as err:
        make_server(*[f.format(**values) for f in flags])
    assert message in str(err.value)
    # The key's contents are never quoted.
    assert "PRIVATE KEY-----\n" not in str(err.value)


def test_certificate_rotation_without_dropping_the_server(make_server, tls_files, pki):
    srv = make_server(f"--tls_cert_file={tls_files['cert']}", f"--tls_key_file={tls_files['key']}")
    old_ca = tls_files["ca"][0]
    before = gpuflow.connect(srv.target, root_certificates=old_ca)
    session = before.session()
    session.upload(np.arange(5), name="x")

    # cert-manager renews the certificate under a new CA.
    new_ca = pki.ca("new-ca")
    new_cert, new_key = pki.issue(new_ca, "server-renewed", server=True)
    replace_file(tls_files["key"], new_key.read_bytes())
    replace_file(tls_files["cert"], new_cert.read_bytes())

    def connects(ca):
        try:
            with gpuflow.connect(srv.target, root_certificates=ca, timeout=1) as c:
                return c.info().healthy
        except gpuflow.UnavailableError:
            return False

    wait_for(lambda: connects(new_ca[0]), "the renewed certificate in use")
    assert not connects(old_ca)
    wait_for(lambda: "TLS certificates reloaded: CN=server-renewed" in srv.log(), "the reload log")
    # The connection made before the rotation still works.
    assert np.array_equal(session.download("x"), np.arange(5))

    # A bad rotation (the key replaced, the certificate not yet) is refused:
    # the server keeps serving the last good certificate.
    stray = pki.issue(new_ca, "stray", server=True)
    replace_file(tls_files["key"], stray[1].read_bytes())
    wait_for(lambda: "does not match the certificate" in srv.log(), "the refusal in the log")
    assert "still serving CN=server-renewed" in srv.log()
    assert connects(new_ca[0])
    # Both files done: in use again.
    replace_file(tls_files["cert"], stray[0].read_bytes())
    wait_for(lambda: "TLS certificates reloaded: CN=stray" in srv.log(), "the second reload")
    assert connects(new_ca[0])
    session.close()
    before.close()
    assert "PRIVATE KEY" not in srv.log()


def test_client_ca_rotation(make_server, tls_files, pki):
    srv = make_server(f"--tls_cert_file={tls_files['cert']}", f"--tls_key_file={tls_files['key']}",
                      f"--tls_client_ca_file={tls_files['client_ca'][0]}")
    ca = tls_files["ca"][0]
    new_client_ca = pki.ca("client-ca-2")
    client = pki.issue(new_client_ca, "client-2", server=False)

    def works(cert, key):
        try:
            with gpuflow.connect(srv.target, root_certificates=ca, certificate_chain=cert,
                                 private_key=key, timeout=1) as c:
                return c.info().healthy
        except gpuflow.UnavailableError:
            return False

    assert works(*tls_files["client"]) and not works(*client)
    replace_file(tls_files["client_ca"][0], new_client_ca[0].read_bytes())
    wait_for(lambda: works(*client), "clients of the new CA taken")
    assert not works(*tls_files["client"])


# ---- tenants and tokens ------------------------------------------------------------------


TOKEN_A = "token-of-team-a-0123456789abcdef"
TOKEN_B = "token-of-team-b-fedcba9876543210"


def sha(token):
    return hashlib.sha256(token.encode()).hexdigest()


def tokens_file(path, tenants):
    """Writes a tokens file: tenants maps name -> (token, {limits})."""
    entries = [dict({"name": name, "token_sha256": sha(token)}, **limits)
               for name, (token, limits) in tenants.items()]
    replace_file(path, json.dumps({"tenants": entries}))
    return path


@pytest.fixture
def two_tenants(make_server, tmp_path):
    """A server with tenants team-a and team-b."""
    path = tokens_file(tmp_path / "tokens.json",
                       {"team-a": (TOKEN_A, {}), "team-b": (TOKEN_B, {})})
    return make_server(f"--auth_tokens_file={path}", "--session_reap_interval=100ms")


def test_every_call_needs_a_valid_token(two_tenants):
    srv = two_tenants
    refusals = []
    for token in (None, "wrong-token", TOKEN_A + "x", TOKEN_A[:-1]):
        with gpuflow.connect(srv.target, token=token) as c:
            with pytest.raises(gpuflow.UnauthenticatedError) as err:
                c.info()
            refusals.append(err.value.details)
            with pytest.raises(gpuflow.UnauthenticatedError):
                c.session()
    # The same answer whatever was wrong, naming nothing.
    assert len(set(refusals)) == 1 and "Bearer" in refusals[0]
    for word in ("expired", "unknown", "tenant", "invalid"):
        assert word not in refusals[0]
    with gpuflow.connect(srv.target, token=TOKEN_A) as c:
        assert c.info().tenant == "team-a"


@pytest.mark.parametrize("metadata", [
    [],
    [("authorization", TOKEN_A)],
    [("authorization", f"Basic {TOKEN_A}")],
    [("authorization", "Bearer ")],
    [("authorization", f"Bearer {TOKEN_A}"), ("authorization", f"Bearer {TOKEN_B}")],
])
def test_malformed_authorization_is_unauthenticated(two_tenants, metadata):
    with grpc.insecure_channel(two_tenants.target) as ch:
        stub = service_pb2_grpc().GpuFlowStub(ch)
        with pytest.raises(grpc.RpcError) as err:
            stub.GetServerInfo(service_pb2.GetServerInfoRequest(), metadata=metadata, timeout=10)
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED


def service_pb2_grpc():
    from gpuflow.v1 import service_pb2_grpc as module
    return module


def test_bearer_scheme_is_case_insensitive(two_tenants):
    with grpc.insecure_channel(two_tenants.target) as ch:
        stub = service_pb2_grpc().GpuFlowStub(ch)
        info = stub.GetServerInfo(service_pb2.GetServerInfoRequest(),
                                  metadata=[("authorization", f"bearer {TOKEN_B}")], timeout=10)
    assert info.tenant == "team-b"


def test_token_from_the_environment(two_tenants, monkeypatch):
    monkeypatch.setenv("GPUFLOW_TOKEN", TOKEN_B)
    with gpuflow.connect(two_tenants.target) as c:
        assert c.info().tenant == "team-b"


def test_health_needs_no_token_and_reflection_does(two_tenants):
    assert health(two_tenants.target) == SERVING
    with grpc.insecure_channel(two_tenants.target) as ch:
        call = ch.stream_stream("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
        with pytest.raises(grpc.RpcError) as err:
            list(call(iter([b"\x3a\x00"]), timeout=10))
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        replies = list(call(iter([b"\x3a\x00"]), timeout=10,
                            metadata=[("authorization", f"Bearer {TOKEN_A}")]))
    assert b"gpuflow.v1.GpuFlow" in replies[0]


def test_tenant_cannot_touch_another_tenants_session(two_tenants):
    srv = two_tenants
    a = gpuflow.connect(srv.target, token=TOKEN_A)
    b = gpuflow.connect(srv.target, token=TOKEN_B)
    sa = a.session(label="secret")
    sa.upload(np.arange(10, dtype=np.float32), name="x")
    # Tenant B holding A's session id.
    stolen = gpuflow.Session(b, service_pb2.SessionInfo(session_id=sa.id))
    bogus_id = "0" * 32
    bogus = gpuflow.Session(b, service_pb2.SessionInfo(session_id=bogus_id))

    def refusal(session, call):
        with pytest.raises(gpuflow.NotFoundError) as err:
            call(session)
        # Word for word what an id that does not exist gets: no oracle.
        return err.value.details.replace(session.id, "<id>")

    g = gpuflow.Graph()
    y = g.add(g.array("x"), 1)
    attempts = {
        "read": lambda s: s.download("x"),
        "info": lambda s: s.info("x"),
        "list": lambda s: s.list(),
        "write": lambda s: s.upload(np.zeros(4), name="planted"),
        "execute": lambda s: s.execute(g, outputs={"y": y}),
        "delete": lambda s: s.delete("x"),
        "keep alive": lambda s: s.keep_alive(),
        "close": lambda s: gpuflow.client._rpc(
            s._stub.CloseSession, service_pb2.CloseSessionRequest(session_id=s.id)),
    }
    for what, call in attempts.items():
        assert refusal(stolen, call) == refusal(bogus, call), what
    # A's session is untouched.
    assert [info.name for info in sa.list()] == ["x"]
    assert np.array_equal(sa.download("x"), np.arange(10, dtype=np.float32))
    # Tenants see only their own sessions in GetServerInfo.
    sb = b.session()
    assert a.info().active_sessions == 1 and b.info().active_sessions == 1
    sa.close()
    sb.close()
    a.close()
    b.close()


def test_server_info_shows_the_tenant_its_own_limits_only(make_server, tmp_path):
    path = tokens_file(tmp_path / "tokens.json", {
        "team-a": (TOKEN_A, {"max_sessions": 3, "max_memory_bytes": 1 << 20,
                             "max_concurrent_requests": 4}),
        "team-b": (TOKEN_B, {}),
    })
    srv = make_server(f"--auth_tokens_file={path}", "--max_sessions=10",
                      "--max_memory_bytes=8MiB")
    with gpuflow.connect(srv.target, token=TOKEN_A) as a, gpuflow.connect(srv.target,
                                                                         token=TOKEN_B) as b:
        info = a.info()
        assert (info.tenant, info.limits.max_sessions, info.limits.max_memory_bytes,
                info.limits.max_concurrent_requests) == ("team-a", 3, 1 << 20, 4)
        info = b.info()
        assert (info.tenant, info.limits.max_sessions, info.limits.max_memory_bytes,
                info.limits.max_concurrent_requests) == ("team-b", 10, 8 << 20, 0)
        # Cache statistics describe every tenant's work: not shown.
        assert not info.HasField("kernel_cache") and not info.HasField("plan_cache")


def test_tenant_session_limit_does_not_lock_others_out(make_server, tmp_path):
    path = tokens_file(tmp_path / "tokens.json", {
        "team-a": (TOKEN_A, {"max_sessions": 2}),
        "team-b": (TOKEN_B, {"max_sessions": 2}),
    })
    srv = make_server(f"--auth_tokens_file={path}", "--max_sessions=4")
    with gpuflow.connect(srv.target, token=TOKEN_A) as a, gpuflow.connect(srv.target,
                                                                         token=TOKEN_B) as b:
        held = [a.session(), a.session()]
        with pytest.raises(gpuflow.ResourceExhaustedError, match="team-a has 2 open, its "
                                                                 "max_sessions") as err:
            a.session()
        assert err.value.retry_after == 1.0
        # B is not locked out by A.
        held += [b.session(), b.session()]
        # A closes one: room again for A.
        held.pop(0).close()
        held.append(a.session())
        for s in held:
            s.close()


# Regression (issue 14): one client opened all 64 sessions and locked
# everyone else out. Tenants without a max_sessions of their own: the last
# free sessions wait for the tenants that hold none.
def test_a_tenant_without_limits_cannot_take_every_session(make_server, tmp_path):
    path = tokens_file(tmp_path / "tokens.json", {"team-a": (TOKEN_A, {}),
                                                  "team-b": (TOKEN_B, {})})
    srv = make_server(f"--auth_tokens_file={path}", "--max_sessions=3")
    with gpuflow.connect(srv.target, token=TOKEN_A) as a, gpuflow.connect(srv.target,
                                                                         token=TOKEN_B) as b:
        held = [a.session(), a.session()]
        with pytest.raises(gpuflow.ResourceExhaustedError,
                           match="keeps its last free sessions for tenants that hold none") as err:
            a.session()
        assert err.value.retry_after == 1.0
        held.append(b.session())  # B still gets in
        with pytest.raises(gpuflow.ResourceExhaustedError, match="--max_sessions"):
            b.session()
        for s in held:
            s.close()


# Nor fill the server's memory: each tenant keeps a reserve of it, here
# min(the default session quota, 1 MiB / 2 tenants) = 512 KiB.
def test_a_tenant_without_limits_cannot_take_all_the_memory(make_server, tmp_path):
    path = tokens_file(tmp_path / "tokens.json", {"team-a": (TOKEN_A, {}),
                                                  "team-b": (TOKEN_B, {})})
    srv = make_server(f"--auth_tokens_file={path}", "--max_memory_bytes=1MiB")
    with gpuflow.connect(srv.target, token=TOKEN_A) as a, gpuflow.connect(srv.target,
                                                                         token=TOKEN_B) as b:
        with a.session() as sa, b.session() as sb:
            sa.upload(np.zeros(400_000, np.uint8), name="x")
            with pytest.raises(gpuflow.ResourceExhaustedError,
                               match="kept for tenants that hold less than their share") as err:
                sa.upload(np.zeros(200_000, np.uint8), name="y")
            assert err.value.retry_after == 1.0
            sb.upload(np.zeros(400_000, np.uint8), name="x")  # B still gets its share
            assert sb.download("x").nbytes == 400_000


def test_server_wide_limit_refusals_do_not_tell_what_others_hold(make_server, tmp_path):
    path = tokens_file(tmp_path / "tokens.json", {"team-a": (TOKEN_A, {}),
                                                  "team-b": (TOKEN_B, {})})
    srv = make_server(f"--auth_tokens_file={path}", "--max_sessions=1",
                      "--max_memory_bytes=64KiB")
    with gpuflow.connect(srv.target, token=TOKEN_A) as a, gpuflow.connect(srv.target,
                                                                         token=TOKEN_B) as b:
        with a.session() as s:
            with pytest.raises(gpuflow.ResourceExhaustedError) as err:
                b.session()
            assert "--max_sessions" in err.value.details and "1 are open" not in err.value.details
            assert err.value.retry_after == 1.0
            with pytest.raises(gpuflow.ResourceExhaustedError) as err:
                s.upload(np.zeros(100_000, np.uint8), name="big")
            assert "--max_memory_bytes" in err.value.details
            assert "bytes left" not in err.value.details


def test_tenant_memory_limit_covers_all_its_sessions(make_server, tmp_path):
    path = tokens_file(tmp_path / "tokens.json", {
        "team-a": (TOKEN_A, {"max_memory_bytes": 1 << 20}),
        "team-b": (TOKEN_B, {}),
    })
    srv = make_server(f"--auth_tokens_file={path}")
    with gpuflow.connect(srv.target, token=TOKEN_A) as a, gpuflow.connect(srv.target,
                                                                         token=TOKEN_B) as b:
        s1, s2 = a.session(), a.session()
        s1.upload(np.zeros(600 << 10, np.uint8), name="x")
        # Each session's own quota (GiBs) would hold it; the tenant's does not.
        with pytest.raises(gpuflow.ResourceExhaustedError,
                           match="tenant team-a memory exhausted \\(its max_memory_bytes\\)") as err:
            s2.upload(np.zeros(600 << 10, np.uint8), name="y")
        assert err.value.retry_after == 1.0
        # Team B is not held back by team A's use.
        with b.session() as sb:
            sb.upload(np.zeros(2 << 20, np.uint8), name="z")
        # Freed memory is the tenant's again.
        s1.delete("x")
        s2.upload(np.zeros(600 << 10, np.uint8), name="y")
        s1.close()
        s2.close()


def test_tenant_concurrency_limit(make_server, tmp_path):
    path = tokens_file(tmp_path / "tokens.json", {
        "team-a": (TOKEN_A, {"max_concurrent_requests": 1}),
        "team-b": (TOKEN_B, {}),
    })
    srv = make_server(f"--auth_tokens_file={path}")
    a = gpuflow.connect(srv.target, token=TOKEN_A)
    b = gpuflow.connect(srv.target, token=TOKEN_B)
    session = a.session()
    release = threading.Event()

    def slow_upload():
        # An upload that stays in flight until released: A's one request.
        yield service_pb2.UploadArrayRequest(header=service_pb2.UploadHeader(
            session_id=session.id, name="x", dtype=gpuflow.dtypes.to_proto("uint8"), shape=[4]))
        release.wait(60)
        yield service_pb2.UploadArrayRequest(chunk=b"\0\1\2\3")

    upload = a.stub.UploadArray.future(slow_upload())

    def refused():
        try:
            a.info()
            return None
        except gpuflow.ResourceExhaustedError as err:
            return err

    try:
        err = wait_for(refused, "the tenant's second request refused")
        assert "team-a has 1 requests in flight, its max_concurrent_requests" in err.details
        assert err.retry_after == 1.0
        assert b.info().tenant == "team-b"  # other tenants are not held back
    finally:
        release.set()
    assert upload.result(timeout=60).num_bytes == 4
    # The upload's reply came after its slot was given back.
    assert a.info().tenant == "team-a"
    session.close()
    a.close()
    b.close()


def test_raw_kernels_only_for_tenants_allowed_them(make_server, tmp_path):
    path = tokens_file(tmp_path / "tokens.json", {
        "trusted": (TOKEN_A, {"allow_raw_kernels": True}),
        "other": (TOKEN_B, {}),
    })
    source = 'extern "C" __global__ void k(float* y, int n) { }'
    kernel = gpuflow.RawKernel(source, "k")

    def run(srv, token, allowed):
        with gpuflow.connect(srv.target, token=token) as c, c.session() as s:
            assert c.info().limits.allow_raw_kernels == allowed
            y = gpuflow.zeros(4, np.float32, session=s)
            kernel((1,), (4,), (y, np.int32(4)))
            y.get()

    srv = make_server(f"--auth_tokens_file={path}", "--allow_raw_kernels")
    with pytest.raises(gpuflow.PermissionDeniedError,
                       match="not allowed for tenant other \\(allow_raw_kernels"):
        run(srv, TOKEN_B, allowed=False)
    from conftest import BACKEND
    if BACKEND == "cuda":
        run(srv, TOKEN_A, allowed=True)
    else:
        with pytest.raises(gpuflow.FailedPreconditionError, match="cuda"):
            run(srv, TOKEN_A, allowed=True)
    # The tenant's permission is not enough without the server's.
    srv = make_server(f"--auth_tokens_file={path}")
    with pytest.raises(gpuflow.PermissionDeniedError, match="--allow_raw_kernels"):
        run(srv, TOKEN_A, allowed=False)


def test_custom_kernels_only_for_tenants_allowed_them(make_server, tmp_path):
    """ElementwiseKernel and ReductionKernel code is compiled as given, so it
    is trusted code: only tenants with allow_custom_kernels may send it."""
    path = tokens_file(tmp_path / "tokens.json", {
        "trusted": (TOKEN_A, {"allow_custom_kernels": True}),
        "other": (TOKEN_B, {}),
    })
    srv = make_server(f"--auth_tokens_file={path}")
    square = gpuflow.ElementwiseKernel("T x", "T y", "y = x * x", "square")
    total = gpuflow.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "total")
    from conftest import BACKEND

    for kernel in (square, total):
        with gpuflow.connect(srv.target, token=TOKEN_B) as c, c.session() as s:
            assert not c.info().limits.allow_custom_kernels
            with pytest.raises(gpuflow.PermissionDeniedError,
                               match="custom kernels are not allowed for tenant other "
                                     "\\(allow_custom_kernels"):
                kernel(s.asarray(np.arange(4, dtype=np.float32))).get()
        with gpuflow.connect(srv.target, token=TOKEN_A) as c, c.session() as s:
            assert c.info().limits.allow_custom_kernels
            y = kernel(s.asarray(np.arange(4, dtype=np.float32)))
            if BACKEND == "cuda":
                y.get()
            else:
                with pytest.raises(gpuflow.FailedPreconditionError, match="cuda"):
                    y.get()
    # Without tenants every caller may, as before.
    with gpuflow.connect(make_server().target) as c:
        assert c.info().limits.allow_custom_kernels


def test_tokens_file_reload(make_server, tmp_path):
    path = tokens_file(tmp_path / "tokens.json", {"team-a": (TOKEN_A, {}),
                                                  "team-b": (TOKEN_B, {})})
    srv = make_server(f"--auth_tokens_file={path}", "--credentials_reload_interval=100ms")
    a = gpuflow.connect(srv.target, token=TOKEN_A)
    kept = a.session(label="kept")
    kept.upload(np.arange(3), name="x")
    b = gpuflow.connect(srv.target, token=TOKEN_B)
    b_session = b.session(label="b-session")

    # Team A's token is rotated, team B removed, team C added.
    new_a, token_c = "rotated-token-of-team-a-000000", "token-of-team-c-11111111111111"
    tokens_file(path, {"team-a": (new_a, {"max_sessions": 5}), "team-c": (token_c, {})})

    def tenant_of(token):
        try:
            with gpuflow.connect(srv.target, token=token) as c:
                return c.info().tenant
        except gpuflow.UnauthenticatedError:
            return None

    wait_for(lambda: tenant_of(new_a) == "team-a", "the rotated token accepted")
    assert tenant_of(TOKEN_A) is None and tenant_of(TOKEN_B) is None
    assert tenant_of(token_c) == "team-c"
    # Team A's sessions are still team A's, under its new token.
    with gpuflow.connect(srv.target, token=new_a) as a2:
        same = gpuflow.Session(a2, service_pb2.SessionInfo(session_id=kept.id))
        assert np.array_equal(same.download("x"), np.arange(3))
        assert a2.info().limits.max_sessions == 5
        same.close()
    # Team B's sessions were closed with it.
    wait_for(lambda: re.search(r"tokens file reloaded .*added=team-c updated=team-a "
                               r"removed=team-b sessions_closed=1", srv.log()), "the reload log")

    # A bad file keeps the tenants in force and says why, without secrets.
    replace_file(path, '{"tenants": [{"name": "team-a", "token_sha256": "abc"}]}')
    wait_for(lambda: "token_sha256 must be 64 hex digits" in srv.log(), "the refusal in the log")
    assert "stay in force" in srv.log()
    assert tenant_of(new_a) == "team-a"
    replace_file(path, "not json")
    wait_for(lambda: "not a tokens file" in srv.log(), "the second refusal")
    assert tenant_of(new_a) == "team-a"
    a.close()
    b.close()
    srv.stop()
    for secret in (TOKEN_A, TOKEN_B, new_a, token_c):
        assert secret not in srv.final_log and sha(secret) not in srv.final_log


@pytest.mark.parametrize("contents, message", [
    ("{", "not a tokens file"),
    ('{"tenants": []}', "lists no tenants"),
    ('{"tenant": []}', "not a tokens file"),
    ('{"tenants": [{"name": "a b", "token_sha256": "%s"}]}' % ("0" * 64), "name must be"),
    ('{"tenants": [{"name": "a", "token_sha256": "%s"}, {"name": "a", "token_sha256": "%s"}]}'
     % ("0" * 64, "1" * 64), "the name is used twice"),
    ('{"tenants": [{"name": "a", "token_sha256": "%s"}, {"name": "b", "token_sha256": "%s"}]}'
     % ("0" * 64, "0" * 64), "the same token_sha256 as another tenant"),
    ('{"tenants": [{"name": "a", "token_sha256": "%s", "max_sessions": 0}]}' % ("0" * 64),
     "max_sessions must be at least 1"),
    ('{"tenants": [{"name": "a", "token_sha256": "%s", "max_session": 3}]}' % ("0" * 64),
     "not a tokens file"),
])
def test_bad_tokens_file_stops_the_start(make_server, tmp_path, contents, message):
    path = tmp_path / "tokens.json"
    path.write_text(contents)
    with pytest.raises(RuntimeError, match="exited with 2") as err:
        make_server(f"--auth_tokens_file={path}")
    assert message in str(err.value)
    assert "0" * 64 not in str(err.value)


def test_request_log_and_metrics_carry_the_tenant(make_server, tmp_path):
    from test_observability import free_port
    import urllib.request

    path = tokens_file(tmp_path / "tokens.json", {"team-a": (TOKEN_A, {}),
                                                  "team-b": (TOKEN_B, {})})
    port = free_port()
    srv = make_server(f"--auth_tokens_file={path}", f"--metrics_port={port}",
                      "--metrics_address=127.0.0.1")
    with gpuflow.connect(srv.target, token=TOKEN_A) as a:
        a.session(label="mine").close()
    with gpuflow.connect(srv.target, token="nope") as c:
        with pytest.raises(gpuflow.UnauthenticatedError):
            c.info()
    assert re.search(r"rpc method=CreateSession tenant=team-a session_label=mine code=OK",
                     srv.log())
    assert re.search(r"rpc method=GetServerInfo session_label=\"\" code=UNAUTHENTICATED .*"
                     r"auth=\"unknown token\" peer=", srv.log())
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    assert re.search(r'gpuflow_rpc_requests_total\{code="OK",method="CreateSession",'
                     r'tenant="team-a"\} 1', text)
    assert re.search(r'gpuflow_rpc_requests_total\{code="UNAUTHENTICATED",'
                     r'method="GetServerInfo"\} 1', text)
    assert "nope" not in text and TOKEN_A not in text


# ---- start-up warnings and the kernel cache directory --------------------------------------


def test_warns_when_listening_beyond_loopback_unprotected(make_server, tls_files, tmp_path):
    srv = make_server("--address=0.0.0.0")
    log = srv.log()
    assert "warning: listening on 0.0.0.0 without TLS" in log
    assert "warning: listening on 0.0.0.0 without authentication" in log
    # On loopback: nothing to warn about.
    assert "warning: listening" not in make_server().log()
    # TLS and tokens: nothing either.
    path = tokens_file(tmp_path / "tokens.json", {"team-a": (TOKEN_A, {}),
                                                  "team-b": (TOKEN_B, {})})
    srv = make_server("--address=0.0.0.0", f"--tls_cert_file={tls_files['cert']}",
                      f"--tls_key_file={tls_files['key']}", f"--auth_tokens_file={path}")
    assert "warning: listening" not in srv.log()
    # Tokens without TLS beyond loopback: they would cross the network in clear.
    srv = make_server("--address=0.0.0.0", f"--auth_tokens_file={path}")
    assert "without TLS" in srv.log() and "session ids, bearer tokens and array data" in srv.log()
    assert "without authentication" not in srv.log()


def test_warns_about_tenants_that_could_lock_the_others_out(make_server, tmp_path):
    path = tokens_file(tmp_path / "tokens.json", {
        "greedy": (TOKEN_A, {}),
        "modest": (TOKEN_B, {"max_sessions": 4, "max_memory_bytes": 1 << 20}),
    })
    log = make_server(f"--auth_tokens_file={path}", "--max_sessions=8").log()
    # Sessions need no warning: the last free ones wait for tenants that hold none.
    assert "may open all" not in log
    assert "tenant greedy may take all" in log
    assert "tenant modest may" not in log


def test_kernel_cache_directory_others_can_write_is_refused(make_server, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(RuntimeError, match="exited with 2") as err:
        make_server("--backend=auto", f"--kernel_cache_dir={shared}")
    assert "is writable by every user (mode 0777)" in str(err.value)
    assert "would run as its code" in str(err.value)
    # The CPU backend has no kernel cache to refuse.
    make_server("--backend=cpu", f"--kernel_cache_dir={shared}")
    # A directory that does not exist yet is made private.
    fresh = tmp_path / "fresh" / "kernels"
    make_server("--backend=auto", f"--kernel_cache_dir={fresh}")
    assert fresh.stat().st_mode & 0o077 == 0 and fresh.parent.stat().st_mode & 0o077 == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")
def test_kernel_cache_directory_of_another_user_or_group_is_refused(make_server, tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, 54321, -1)
    with pytest.raises(RuntimeError, match="exited with 2") as err:
        make_server("--backend=auto", f"--kernel_cache_dir={theirs}")
    assert "belongs to uid 54321" in str(err.value)
    group = tmp_path / "group"
    group.mkdir()
    os.chmod(group, 0o775)
    os.chown(group, -1, 54321)
    with pytest.raises(RuntimeError, match="exited with 2") as err:
        make_server("--backend=auto", f"--kernel_cache_dir={group}")
    assert "is writable by group 54321" in str(err.value)
    # Writable by the server's own group: fine.
    os.chown(group, -1, os.getegid())
    make_server("--backend=auto", f"--kernel_cache_dir={group}")


# ---- the CLI binary ------------------------------------------------------------------------


def test_cli_reads_token_and_tls_files_from_the_environment(make_server, tls_files, tmp_path):
    from test_cli import cli_binary

    path = tokens_file(tmp_path / "tokens.json", {"team-a": (TOKEN_A, {})})
    srv = make_server(f"--tls_cert_file={tls_files['cert']}", f"--tls_key_file={tls_files['key']}",
                      f"--tls_client_ca_file={tls_files['client_ca'][0]}",
                      f"--auth_tokens_file={path}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFLOW_")}
    env.update(GPUFLOW_TARGET=srv.target, GPUFLOW_TOKEN=TOKEN_A,
               GPUFLOW_TLS_CA=str(tls_files["ca"][0]), GPUFLOW_TLS_CERT=str(tls_files["client"][0]),
               GPUFLOW_TLS_KEY=str(tls_files["client"][1]))

    def run(*args, **extra):
        return subprocess.run([cli_binary(), *args], capture_output=True, text=True, timeout=60,
                              env=dict(env, **extra))

    proc = run("info")
    assert proc.returncode == 0, proc.stderr
    assert "tenant:    team-a" in proc.stdout
    proc = run("info", GPUFLOW_TOKEN="wrong")
    assert proc.returncode == 1 and "UNAUTHENTICATED" in proc.stderr
    # The command line wins over the environment.
    proc = run("--token", "wrong", "info")
    assert proc.returncode == 1 and "UNAUTHENTICATED" in proc.stderr
    assert TOKEN_A not in srv.log()


# ---- client-side checks --------------------------------------------------------------------


def test_client_refuses_inconsistent_credentials(server, tls_files):
    with pytest.raises(ValueError, match="certificate_chain and private_key go together"):
        gpuflow.connect(server.target, certificate_chain=tls_files["client"][0])
    with pytest.raises(ValueError, match="tls=False, but certificates were given"):
        gpuflow.connect(server.target, tls=False, root_certificates=tls_files["ca"][0])
    with pytest.raises(ValueError, match="cannot read root_certificates"):
        gpuflow.connect(server.target, root_certificates="/nonexistent/ca.crt")
    with pytest.raises(ValueError, match="token must be a non-empty string"):
        gpuflow.connect(server.target, token="two\nlines")


def test_client_warns_before_sending_a_token_in_clear_beyond_loopback(monkeypatch):
    # No server needed: the warning comes before connecting (which then fails).
    with pytest.warns(UserWarning, match="without TLS"):
        with pytest.raises(gpuflow.UnavailableError):
            gpuflow.connect("192.0.2.1:50051", token="t", timeout=0.2)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(gpuflow.UnavailableError):
            gpuflow.connect("127.0.0.1:1", token="t", timeout=0.2)
