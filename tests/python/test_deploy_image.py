"""The container images, as far as this machine can check them.

make test (no container engine, no registry):
  - the Dockerfile: its stages, what each final stage copies from its build
    stage (the staged tree and nothing else), USER, VOLUME, HEALTHCHECK,
    ENTRYPOINT, ports and environment; NVIDIA's CUDA images can't be pulled
    here, so the CUDA target is checked only this way;
  - deploy/image/stage.sh run on build/bin: the runtime tree both targets
    copy in (binaries, NVRTC, cuBLAS and the headers generated kernels
    include when the build has CUDA, the packages that own every other
    library);
  - deploy/image/gpuflow-health, the image's health check, against a real
    gpuflowd and against TLS and mutual-TLS servers.

make test-image (GPUFLOW_TEST_IMAGE=1; podman, debootstrap, minutes): the
cpu target built with podman from build/bin (--build-arg CPU_STAGE=prebuilt)
on a Debian 12 base made by debootstrap, then run read-only, as its user,
without capabilities, serving traffic, healthy by its HEALTHCHECK, and
stopped by SIGTERM with exit status 0.
"""

import json
import os
import pathlib
import re
import resource
import shutil
import subprocess
import tempfile
import time
import urllib.request
from concurrent import futures

import grpc
import numpy as np
import pytest

import gpuflow
from conftest import ROOT, server_binary
from deploy_testing import HEALTH_SCRIPT, free_port, load_health_script

STAGE_SCRIPT = ROOT / "deploy" / "image" / "stage.sh"
USER = "10001:10001"
CACHE_VOLUME = "/var/cache/gpuflow"


# ---------------------------------------------------------------- the Dockerfile


def dockerfile():
    """(ARG defaults, [(stage name, FROM image, [instructions])])."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    args, stages = {}, []
    for line in text.splitlines():
        line = re.sub(r"\s+", " ", line.strip())
        if not line or line.startswith("#"):
            continue
        m = re.match(r"FROM (\S+)(?: AS (\S+))?$", line, re.I)
        if m:
            stages.append((m.group(2), m.group(1), []))
        elif stages:
            stages[-1][2].append(line)
        else:
            m = re.match(r"ARG (\w+)=(\S+)$", line)
            assert m, f"before the first FROM only ARGs with defaults: {line}"
            args[m.group(1)] = m.group(2)
    return args, stages


def stage(name):
    return next(s for s in dockerfile()[1] if s[0] == name)


def instructions(name, keyword):
    return [i[len(keyword) + 1:] for i in stage(name)[2] if i.startswith(keyword + " ")]


def test_dockerfile_stages_and_default_target():
    args, stages = dockerfile()
    names = [s[0] for s in stages]
    assert names == ["cpu-build", "prebuilt", "cpu-stage", "cpu", "cuda-build", "cuda"]
    # The default target (the last stage) is the CUDA server.
    assert names[-1] == "cuda"
    assert stage("cuda-build")[1] == "nvidia/cuda:${CUDA_VERSION}-devel-${CUDA_RELEASE}"
    assert stage("cuda")[1] == "nvidia/cuda:${CUDA_VERSION}-base-${CUDA_RELEASE}"
    # Ubuntu 24.04 carries Debian 12's gRPC, Protobuf and Abseil.
    assert args["CUDA_RELEASE"] == "ubuntu24.04" and args["CUDA_VERSION"].startswith("13.")
    assert (stage("cpu-build")[1], args["DEBIAN"]) == ("${DEBIAN}", "debian:12")
    assert (stage("cpu")[1], args["DEBIAN_SLIM"]) == ("${DEBIAN_SLIM}", "debian:12-slim")
    assert stage("cpu-stage")[1] == "${CPU_STAGE}" and args["CPU_STAGE"] == "cpu-build"
    assert instructions("prebuilt", "COPY") == ["stage/ /stage/"]


@pytest.mark.parametrize("target,build,cuda", [("cpu", "cpu-build", "OFF"), ("cuda", "cuda-build", "ON")])
def test_build_stage_builds_only_the_binaries_and_stages_them(target, build, cuda):
    runs = " ".join(instructions(build, "RUN"))
    assert "scripts/install_deps.sh --build" in runs
    assert f"-DGPUFLOW_CUDA={cuda}" in runs
    assert "-DGPUFLOW_BUILD_TESTS=OFF" in runs and "-DGPUFLOW_BUILD_BENCH=OFF" in runs
    assert "--target gpuflowd gpuflow" in runs
    expected = "deploy/image/stage.sh build/bin /stage" + (" /usr/local/cuda/include" if cuda == "ON" else "")
    assert expected in runs


@pytest.mark.parametrize("target,source", [("cpu", "cpu-stage"), ("cuda", "cuda-build")])
def test_runtime_stage_holds_the_staged_tree_and_nothing_else(target, source):
    body = stage(target)[2]
    # Only the staged tree comes from the build: no toolchain, no sources,
    # for cuda no devel libraries beyond NVRTC and cuBLAS (stage.sh).
    assert instructions(target, "COPY") == [f"--from={source} /stage/ /"]
    assert instructions(target, "ADD") == []
    assert instructions(target, "RUN") == ["/usr/share/gpuflow/install-runtime"]
    keywords = [i.split()[0] for i in body]
    # Root only to install; everything after runs as the server's user.
    assert keywords.index("USER") > keywords.index("RUN")
    assert instructions(target, "USER") == [USER]
    env = dict(kv.split("=", 1) for kv in " ".join(instructions(target, "ENV")).split())
    assert instructions(target, "VOLUME") == [CACHE_VOLUME]
    assert os.path.dirname(env["GPUFLOW_KERNEL_CACHE_DIR"]) == CACHE_VOLUME
    assert instructions(target, "EXPOSE") == [f"{env['GPUFLOW_PORT']} {env['GPUFLOW_METRICS_PORT']}"]
    assert env["GPUFLOW_ADDRESS"] == "0.0.0.0" and env["GPUFLOW_BACKEND"] == target
    (health,) = instructions(target, "HEALTHCHECK")
    assert health.endswith('CMD ["gpuflow-health"]')
    start_period = re.search(r"--start-period=(\d+)m", health)
    assert start_period and int(start_period.group(1)) >= 5  # --precompile warms up first
    assert instructions(target, "ENTRYPOINT") == ['["/usr/local/bin/gpuflowd"]']
    if target == "cuda":
        assert env["GPUFLOW_CUDA_INCLUDE_DIR"] == "/opt/gpuflow/cuda/include"


def test_dockerignore_keeps_builds_and_git_out_of_the_context():
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".git", "build", "build-*", "dist", "clients/node/node_modules"} <= ignored


def test_build_packages_are_the_build_part_of_install_deps():
    def packages(*mode):
        run = subprocess.run(["bash", "scripts/install_deps.sh", *mode, "--list"], cwd=ROOT,
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        return set(run.stdout.split())
    build, test, image = packages("--build"), packages(), packages("--image")
    assert {"libgrpc++-dev", "libabsl-dev", "cmake", "g++"} <= build
    assert build < test < image
    assert not build & {"prometheus", "clang", "python3-pytest", "podman"}
    assert {"prometheus", "python3-yaml"} <= test and {"podman", "debootstrap", "runc"} <= image


# ---------------------------------------------------------------- the staged tree


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    bin_dir = pathlib.Path(server_binary()).parent
    out = tmp_path_factory.mktemp("stage") / "stage"
    run = subprocess.run(["bash", str(STAGE_SCRIPT), str(bin_dir), str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return bin_dir, out


def build_has_cuda(bin_dir):
    ldd = subprocess.run(["ldd", str(bin_dir / "gpuflowd")], capture_output=True, text=True).stdout
    return "libnvrtc" in ldd


def test_stage_holds_the_binaries_and_the_health_check(staged):
    bin_dir, out = staged
    for name in ("gpuflowd", "gpuflow", "gpuflow-health"):
        assert os.access(out / "usr/local/bin" / name, os.X_OK), name
    assert os.access(out / "usr/share/gpuflow/install-runtime", os.X_OK)
    run = subprocess.run([str(out / "usr/local/bin/gpuflowd"), "--version"], capture_output=True, text=True)
    assert run.returncode == 0 and "gpuflowd" in run.stdout


def test_stage_lists_the_packages_that_own_every_library(staged):
    _, out = staged
    packages = (out / "usr/share/gpuflow/runtime-packages").read_text().split()
    assert "python3-grpcio" in packages  # for gpuflow-health
    assert any(p.startswith("libgrpc++") for p in packages)
    assert any(p.startswith("libprotobuf") for p in packages)
    assert not [p for p in packages if "-dev" in p]
    for p in packages:
        status = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True)
        assert "install ok installed" in status.stdout, p
    # Those packages (and the staged CUDA libraries) hold every library the
    # binaries load.
    owned = set()
    for p in packages:
        owned |= set(subprocess.run(["dpkg-query", "-L", p], capture_output=True, text=True).stdout.split())
    ldd = subprocess.run(["ldd", str(out / "usr/local/bin/gpuflowd")], capture_output=True, text=True).stdout
    for lib in re.findall(r"=> (/\S+)", ldd):
        if "/cuda" in lib:
            continue
        candidates = {lib, "/usr" + lib, os.path.realpath(lib)}
        assert candidates & owned, f"{lib} belongs to no listed package"


def test_stage_holds_what_nvrtc_needs_when_the_build_has_cuda(staged):
    bin_dir, out = staged
    lib_dir, include = out / "opt/gpuflow/cuda/lib", out / "opt/gpuflow/cuda/include"
    if not build_has_cuda(bin_dir):
        assert not (out / "opt").exists() and not (out / "etc").exists()
        pytest.skip("build/bin has no CUDA backend: nothing of CUDA is staged (checked)")
    names = {p.name for p in lib_dir.iterdir()}
    for prefix in ("libnvrtc.so.", "libnvrtc-builtins.so", "libcublas.so.", "libcublasLt.so."):
        assert any(n.startswith(prefix) for n in names), prefix
    assert (out / "etc/ld.so.conf.d/gpuflow-cuda.conf").read_text().strip() == "/opt/gpuflow/cuda/lib"
    # The staged binary finds its CUDA libraries there.
    ldd = subprocess.run(["ldd", str(out / "usr/local/bin/gpuflowd")], capture_output=True, text=True,
                         env=dict(os.environ, LD_LIBRARY_PATH=str(lib_dir))).stdout
    for lib in ("libnvrtc", "libcublas.", "libcublasLt"):
        assert re.search(rf"{lib}\S* => {re.escape(str(lib_dir))}/", ldd), lib
    # Every header the generated kernels include, under the -I paths gpuflowd
    # gives NVRTC (include and include/cccl).
    kernel_includes = {"cuda_fp16.h", "cuda_bf16.h"}
    for source in (ROOT / "engine" / "cuda").glob("*.cc"):
        kernel_includes |= set(re.findall(r'"#include <([^>]+)>\\n', source.read_text()))
    # Generated kernels include no CUB (device_library.cc has their block
    # primitives), but custom kernels may, as CuPy users' raw kernels do.
    kernel_includes.add("cub/block/block_reduce.cuh")
    for header in kernel_includes:
        assert (include / header).exists() or (include / "cccl" / header).exists(), header


# ---------------------------------------------------------------- gpuflow-health


def health(*args):
    run = subprocess.run([str(HEALTH_SCRIPT), *args], capture_output=True, text=True, timeout=30)
    return run.returncode, run.stdout + run.stderr


def test_health_check_against_gpuflowd(make_server):
    srv = make_server()
    assert health(f"--target={srv.target}") == (0, f"gpuflow-health: {srv.target} service '': SERVING\n")
    code, out = health(f"--target={srv.target}", "--service=gpuflow.v1.GpuFlow")
    assert code == 0 and "SERVING" in out
    code, out = health(f"--target={srv.target}", "--service=gpuflow.v1.Nope")
    assert code == 1 and "NOT_FOUND" in out
    assert srv.stop() == 0
    code, out = health(f"--target={srv.target}", "--timeout=2")
    assert code == 1 and "UNAVAILABLE" in out


def test_health_check_default_target_follows_gpuflow_port(make_server):
    srv = make_server()
    run = subprocess.run([str(HEALTH_SCRIPT)], capture_output=True, text=True, timeout=30,
                         env=dict(os.environ, GPUFLOW_PORT=str(srv.port)))
    assert run.returncode == 0, run.stderr


def test_health_reply_decoding():
    h = load_health_script()
    assert h.encode_request("") == b""
    assert h.encode_request("gpuflow.v1.GpuFlow") == b"\x0a\x12gpuflow.v1.GpuFlow"
    assert h.decode_status(b"\x08\x01") == 1 and h.decode_status(b"") == 0
    assert h.decode_status(b"\x12\x02ab\x08\x02") == 2  # an unknown field first
    with pytest.raises(ValueError):
        h.decode_status(b"\x08")


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    """A CA, a server certificate for gpuflow.test and a client certificate."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl not installed")
    d = tmp_path_factory.mktemp("pki")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
             "-days", "2", "-subj", "/CN=test CA", cwd=d)
    for name, ext in (("server", "subjectAltName=DNS:gpuflow.test\nextendedKeyUsage=serverAuth,clientAuth"),
                      ("client", "extendedKeyUsage=clientAuth")):
        (d / f"{name}.ext").write_text(ext + "\n")
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", f"/CN={name}", cwd=d)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext", cwd=d)
    return d


def _tls_health_server(certs, require_client_cert):
    """A gRPC server on TLS that answers grpc.health.v1 Check SERVING."""
    def check(request, context):
        return b"\x08\x01"

    handler = grpc.method_handlers_generic_handler("grpc.health.v1.Health", {
        "Check": grpc.unary_unary_rpc_method_handler(check)})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), handlers=[handler])
    credentials = grpc.ssl_server_credentials(
        [((certs / "server.key").read_bytes(), (certs / "server.crt").read_bytes())],
        root_certificates=(certs / "ca.crt").read_bytes() if require_client_cert else None,
        require_client_auth=require_client_cert)
    port = server.add_secure_port("127.0.0.1:0", credentials)
    server.start()
    return server, f"127.0.0.1:{port}"


def test_health_check_over_tls(certificates):
    server, target = _tls_health_server(certificates, require_client_cert=False)
    try:
        tls = [f"--target={target}", f"--tls-ca={certificates / 'ca.crt'}", "--tls-server-name=gpuflow.test"]
        assert health(*tls)[0] == 0
        # Plaintext against a TLS port, and a name the certificate lacks, fail.
        assert health(f"--target={target}", "--timeout=2")[0] == 1
        assert health(*tls[:2], "--tls-server-name=other.test", "--timeout=2")[0] == 1
    finally:
        server.stop(0)


def test_health_check_over_mutual_tls(certificates):
    server, target = _tls_health_server(certificates, require_client_cert=True)
    try:
        tls = [f"--target={target}", f"--tls-ca={certificates / 'ca.crt'}", "--tls-server-name=gpuflow.test"]
        assert health(*tls, "--timeout=2")[0] == 1  # no client certificate
        # The pod's own certificate (serverAuth and clientAuth), as the
        # gpu-secure overlay's exec probes present it.
        mine = [f"--tls-cert={certificates / 'server.crt'}", f"--tls-key={certificates / 'server.key'}"]
        assert health(*tls, *mine)[0] == 0
        assert health(*tls, mine[0])[0] != 0  # a certificate without its key
    finally:
        server.stop(0)


# ---------------------------------------------------------------- the image, with podman

IMAGE_TEST = os.environ.get("GPUFLOW_TEST_IMAGE") == "1"
BASE_IMAGE = "localhost/gpuflow-test-base:bookworm"
IMAGE = "localhost/gpuflow:test-cpu"


def podman(*args, check=True, timeout=900):
    """podman as this machine can run it: runc when installed (crun refuses
    hybrid cgroup hierarchies), and ulimits within this process's hard
    limits (podman's defaults exceed a sandbox's)."""
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    nproc = 4096 if nproc == resource.RLIM_INFINITY else min(nproc, 4096)
    limits = ["--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}"]
    runtime = ["--runtime", "runc"] if shutil.which("runc") else []
    if args[0] in ("run", "build"):
        args = (args[0], *limits, *args[1:])
    run = subprocess.run(["podman", *runtime, *args], capture_output=True, text=True, timeout=timeout)
    if check:
        assert run.returncode == 0, f"podman {' '.join(args)}:\n{run.stdout}\n{run.stderr}"
    return run


@pytest.fixture(scope="module")
def image(staged):
    if not IMAGE_TEST:
        pytest.skip("the image build and run are make test-image (GPUFLOW_TEST_IMAGE=1): minutes")
    for tool in ("podman", "debootstrap"):
        assert shutil.which(tool), f"{tool} missing: scripts/install_deps.sh --image"
    if podman("image", "exists", BASE_IMAGE, check=False).returncode != 0:
        # No registry here: Debian 12 from its mirror (debian:12-slim stands in).
        with tempfile.TemporaryDirectory() as root:
            subprocess.run(["debootstrap", "--variant=minbase", "bookworm", root,
                            "http://deb.debian.org/debian"], check=True, capture_output=True, timeout=900)
            tar = subprocess.Popen(["tar", "-C", root, "-c", "."], stdout=subprocess.PIPE)
            subprocess.run(["podman", "import", "-", BASE_IMAGE], stdin=tar.stdout, check=True,
                           capture_output=True, timeout=300)
            assert tar.wait() == 0
    _, stage_dir = staged
    dangling = ["images", "-q", "--filter", "dangling=true"]
    before = set(podman(*dangling).stdout.split())
    with tempfile.TemporaryDirectory() as context:
        shutil.copytree(stage_dir, pathlib.Path(context) / "stage", symlinks=True)
        podman("build", "--format", "docker", "--pull=never", "-f", str(ROOT / "Dockerfile"),
               "--target", "cpu", "--build-arg", "CPU_STAGE=prebuilt",
               "--build-arg", f"DEBIAN_SLIM={BASE_IMAGE}", "-t", IMAGE, context)
    yield IMAGE
    podman("rmi", "-f", IMAGE, check=False)
    # The build's own intermediate stages (the prebuilt tree), nothing else.
    for leftover in set(podman(*dangling).stdout.split()) - before:
        podman("rmi", "-f", leftover, check=False)


def test_image_metadata(image):
    (info,) = json.loads(podman("image", "inspect", image).stdout)
    config = info["Config"]
    assert config["User"] == USER
    # Podman keeps the Docker-format health check beside the OCI config.
    check = info.get("Healthcheck") or config.get("Healthcheck")
    assert check and check["Test"] == ["CMD", "gpuflow-health"], info.keys()
    assert list(config["Volumes"]) == [CACHE_VOLUME]
    assert config["Entrypoint"] == ["/usr/local/bin/gpuflowd"]
    assert set(config["ExposedPorts"]) == {"50051/tcp", "9464/tcp"}
    env = dict(e.split("=", 1) for e in config["Env"])
    assert env["GPUFLOW_BACKEND"] == "cpu" and env["GPUFLOW_KERNEL_CACHE_DIR"].startswith(CACHE_VOLUME)


def test_image_serves_read_only_as_its_user_and_stops_cleanly(image):
    name = f"gpuflow-test-{os.getpid()}"
    grpc_port, metrics_port = free_port(), free_port()
    podman("run", "-d", "--name", name, "--read-only", "--cap-drop=ALL",
           "--security-opt=no-new-privileges", "-p", f"127.0.0.1:{grpc_port}:50051",
           "-p", f"127.0.0.1:{metrics_port}:9464", "-v", f"{name}:{CACHE_VOLUME}", image)
    target = f"127.0.0.1:{grpc_port}"
    try:
        deadline = time.monotonic() + 60
        while health(f"--target={target}", "--timeout=1")[0] != 0:
            assert time.monotonic() < deadline, podman("logs", name, check=False).stderr
            time.sleep(0.5)
        # The image's own HEALTHCHECK, run inside the container.
        assert podman("healthcheck", "run", name, check=False).returncode == 0
        assert podman("exec", name, "id", "-u").stdout.strip() == USER.split(":")[0]
        assert podman("exec", name, "touch", "/probe", check=False).returncode != 0  # read-only root
        ldd = podman("exec", name, "ldd", "/usr/local/bin/gpuflowd").stdout
        assert "not found" not in ldd
        if "libnvrtc" in ldd:
            assert "/opt/gpuflow/cuda/lib/libnvrtc" in ldd
        stat = podman("exec", name, "stat", "-c", "%u:%g %a", CACHE_VOLUME).stdout.strip()
        assert stat == f"{USER} 700"
        with gpuflow.connect(target) as client, client.session() as s:
            x = np.arange(1 << 16, dtype=np.float32)
            s.upload(x, name="x")
            g = gpuflow.Graph()
            (y,) = s.execute(g, outputs=[g.sqrt(g.array("x"))])
            assert np.allclose(y, np.sqrt(x))
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as reply:
            assert 'gpuflow_build_info{backend="cpu"' in reply.read().decode()
        podman("stop", "-t", "20", name)
        assert podman("inspect", name, "--format", "{{.State.ExitCode}}").stdout.strip() == "0"
        assert "stopped" in podman("logs", name).stderr
    finally:
        podman("rm", "-f", name, check=False)
        podman("volume", "rm", "-f", name, check=False)
