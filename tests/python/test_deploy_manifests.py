"""deploy/ renders with `kubectl kustomize` and the rendered objects hold
together: one GPU per CUDA pod, probes on the health services gpuflowd really
answers, a termination grace that covers the drain, a hardened security
context, a kernel cache gpuflowd accepts, Secrets mounted so rotation
reaches the server, selectors that match, and environment variables that
are gpuflowd flags whose values start a real server.

kubectl is Debian's kubernetes-client (scripts/install_deps.sh) or any
kubectl on PATH; GPUFLOW_KUBECTL=path1:path2 runs every test under each
(the manifests are written for kustomize v2.0.3, kubectl 1.20, and later).
"""

import json
import os
import re
import shutil
import subprocess

import grpc
import pytest

yaml = pytest.importorskip("yaml", reason="python3-yaml (scripts/install_deps.sh)")

import gpuflow  # noqa: E402
from conftest import ROOT, server_binary  # noqa: E402
from deploy_testing import health_status, load_health_script  # noqa: E402
from gpuflow.v1 import service_pb2  # noqa: E402

DEPLOY = ROOT / "deploy"
OVERLAYS = {"cpu": "gpuflow-cpu", "gpu": "gpuflow", "gpu-secure": "gpuflow",
            "fleet": "gpuflow", "gpu-multi": "gpuflow"}
GPU_OVERLAYS = {"gpu", "gpu-secure", "fleet", "gpu-multi"}
# GPUs per pod of each GPU overlay (gpu-multi: one gpuflowd, --devices=all).
GPUS_PER_POD = {"gpu": 1, "gpu-secure": 1, "fleet": 1, "gpu-multi": 4}
SELECTOR = {"app.kubernetes.io/name": "gpuflow", "app.kubernetes.io/component": "worker"}
# The job name deploy/prometheus/rules.yaml and the dashboard expect.
JOB = "gpuflow"


def _kubectls():
    listed = os.environ.get("GPUFLOW_KUBECTL")
    if listed:
        return [p for p in listed.split(os.pathsep) if p]
    found = shutil.which("kubectl")
    return [found] if found else []


KUBECTLS = _kubectls()


@pytest.fixture(scope="module", params=KUBECTLS or [None], ids=lambda k: k or "no-kubectl")
def kubectl(request):
    if request.param is None:
        pytest.skip("kubectl not installed (Debian package kubernetes-client; scripts/install_deps.sh)")
    return request.param


@pytest.fixture(scope="module")
def rendered(kubectl):
    """{overlay: [objects]} as `kubectl kustomize deploy/overlays/<overlay>` renders them."""
    out = {}
    for overlay in OVERLAYS:
        run = subprocess.run([kubectl, "kustomize", str(DEPLOY / "overlays" / overlay)],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, f"{overlay}: {run.stderr}"
        out[overlay] = [d for d in yaml.safe_load_all(run.stdout) if d]
    return out


# ---------------------------------------------------------------- helpers


def one(objects, kind):
    found = [o for o in objects if o["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {[o['metadata']['name'] for o in found]}"
    return found[0]


def workload(objects):
    """The overlay's one Deployment or StatefulSet (the fleet's)."""
    found = [o for o in objects if o["kind"] in ("Deployment", "StatefulSet")]
    assert len(found) == 1, [o["kind"] for o in found]
    return found[0]


def pod_spec(objects):
    return workload(objects)["spec"]["template"]["spec"]


def server_container(objects):
    containers = pod_spec(objects)["containers"]
    assert [c["name"] for c in containers] == ["gpuflowd"]
    return containers[0]


def env_of(container):
    env = {}
    for e in container.get("env", []):
        assert e["name"] not in env, f"{e['name']} set twice"
        if "valueFrom" in e:  # only the downward API's pod fields (the fleet's POD_IP)
            assert set(e["valueFrom"]) == {"fieldRef"}, f"{e['name']}: {e['valueFrom']}"
            env[e["name"]] = "$(" + e["valueFrom"]["fieldRef"]["fieldPath"] + ")"
            continue
        assert "value" in e, f"{e['name']}: only literal values are expected"
        env[e["name"]] = e["value"]
    return env


_QUANTITY = re.compile(r"^([0-9.]+)(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")
_FACTOR = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def quantity(q):
    m = _QUANTITY.match(str(q))
    assert m, f"not a quantity: {q!r}"
    return float(m.group(1)) * _FACTOR[m.group(2)]


def byte_count(text):
    """gpuflowd's byte sizes: 4096, 64KiB, 512MiB, 16GiB (powers of 1024)."""
    m = re.match(r"^(\d+)(KiB|MiB|GiB|TiB|Ki|Mi|Gi|K|M|G)?$", text)
    assert m, f"not a byte count: {text!r}"
    unit = (m.group(2) or "")[:1]
    return int(m.group(1)) * {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}[unit]


def seconds(duration):
    """gpuflowd's (absl's) durations: 300ms, 30s, 10m, 1h30m."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", duration)
    assert parts and "".join(a + b for a, b in parts) == duration, duration
    return sum(float(n) * {"ms": 1e-3, "s": 1, "m": 60, "h": 3600}[u] for n, u in parts)


def dockerfile_final_stages():
    """{stage name: [instruction lines]} of the Dockerfile's stages."""
    stages, current = {}, None
    for line in (ROOT / "Dockerfile").read_text().replace("\\\n", " ").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"FROM\s+\S+(?:\s+AS\s+(\S+))?", line, re.I)
        if m:
            current = m.group(1)
            stages[current] = []
        elif current is not None:
            stages[current].append(line)
    return stages


def image_user():
    users = {line.split()[1] for s in ("cpu", "cuda") for line in dockerfile_final_stages()[s]
             if line.startswith("USER ")}
    assert len(users) == 1, users
    uid, _, gid = users.pop().partition(":")
    return int(uid), int(gid)


def gpuflowd_flags():
    run = subprocess.run([server_binary(), "--helpfull"], capture_output=True, text=True)
    return set(re.findall(r"^\s+--([a-z0-9_]+) \(", run.stdout + run.stderr, re.M))


# ---------------------------------------------------------------- rendering


def test_every_overlay_renders_into_its_namespace(rendered):
    for overlay, namespace in OVERLAYS.items():
        objects = rendered[overlay]
        kinds = sorted(o["kind"] for o in objects)
        expected = ["StatefulSet" if overlay == "fleet" else "Deployment", "Namespace",
                    "PodDisruptionBudget", "PodMonitor", "Service"]
        if overlay in GPU_OVERLAYS:
            expected.append("ConfigMap")
        assert kinds == sorted(expected), overlay
        for o in objects:
            if o["kind"] == "Namespace":
                assert o["metadata"]["name"] == namespace
            else:
                assert o["metadata"].get("namespace") == namespace, (overlay, o["kind"])


def test_gpu_pods_request_their_gpus_and_cpu_pods_none(rendered):
    for overlay in OVERLAYS:
        resources = server_container(rendered[overlay])["resources"]
        gpus = {k: resources.get(k, {}).get("nvidia.com/gpu") for k in ("requests", "limits")}
        if overlay in GPU_OVERLAYS:
            n = GPUS_PER_POD[overlay]
            assert gpus == {"requests": n, "limits": n}, overlay
            # More than one GPU is worth asking for only if gpuflowd drives them all.
            devices = env_of(server_container(rendered[overlay])).get("GPUFLOW_DEVICES")
            assert devices == ("all" if n > 1 else None), overlay
            assert env_of(server_container(rendered[overlay]))["GPUFLOW_BACKEND"] == "cuda"
            tolerations = pod_spec(rendered[overlay]).get("tolerations", [])
            assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in tolerations
        else:
            assert gpus == {"requests": None, "limits": None}, overlay
            assert env_of(server_container(rendered[overlay]))["GPUFLOW_BACKEND"] == "cpu"


def test_every_container_has_requests_within_limits(rendered):
    for overlay, objects in rendered.items():
        spec = pod_spec(objects)
        for c in spec["containers"] + spec.get("initContainers", []):
            requests, limits = c["resources"]["requests"], c["resources"]["limits"]
            for resource in ("cpu", "memory"):
                assert resource in requests and resource in limits, (overlay, c["name"], resource)
                assert quantity(requests[resource]) <= quantity(limits[resource]), (overlay, c["name"])


def test_compute_threads_follow_the_cpu_limit(rendered):
    # gpuflowd sizes its pool on the host's cores, not the container's limit.
    for overlay, objects in rendered.items():
        c = server_container(objects)
        assert quantity(c["resources"]["limits"]["cpu"]) == int(env_of(c)["GPUFLOW_COMPUTE_THREADS"])


def test_cpu_backend_memory_budget_fits_the_memory_limit(rendered):
    # On the CPU backend arrays live in host memory; gpuflowd's default budget
    # is 80% of the node's memory, which a container limit does not change.
    c = server_container(rendered["cpu"])
    env = env_of(c)
    limit = quantity(c["resources"]["limits"]["memory"])
    budget = byte_count(env["GPUFLOW_MAX_MEMORY_BYTES"])
    assert budget <= 0.8 * limit
    assert byte_count(env["GPUFLOW_MAX_SESSION_MEMORY_LIMIT"]) <= budget
    assert byte_count(env["GPUFLOW_DEFAULT_SESSION_MEMORY_LIMIT"]) <= budget


# ---------------------------------------------------------------- security


def test_pods_run_as_the_image_user_without_privileges(rendered):
    uid, gid = image_user()
    for overlay, objects in rendered.items():
        spec = pod_spec(objects)
        assert spec["automountServiceAccountToken"] is False
        for key in ("hostNetwork", "hostPID", "hostIPC"):
            assert not spec.get(key), (overlay, key)
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True
        assert (pod["runAsUser"], pod["runAsGroup"], pod["fsGroup"]) == (uid, gid, gid)
        assert pod["seccompProfile"] == {"type": "RuntimeDefault"}
        c = server_container(objects)["securityContext"]
        assert c["readOnlyRootFilesystem"] is True
        assert c["allowPrivilegeEscalation"] is False
        assert c["capabilities"] == {"drop": ["ALL"]}
        assert not c.get("privileged") and "runAsUser" not in c
        for init in spec.get("initContainers", []):
            sc = init["securityContext"]
            assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
            assert sc["capabilities"]["drop"] == ["ALL"]
            assert set(sc["capabilities"].get("add", [])) <= {"CHOWN", "FOWNER"}, init["name"]
            assert not sc.get("privileged")


def test_cpu_overlay_meets_the_restricted_pod_security_standard(rendered):
    objects = rendered["cpu"]
    labels = one(objects, "Namespace")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    spec = pod_spec(objects)
    assert "initContainers" not in spec
    allowed = {"configMap", "emptyDir", "secret", "projected", "downwardAPI", "ephemeral",
               "persistentVolumeClaim", "csi"}
    for v in spec["volumes"]:
        assert set(v) - {"name"} <= allowed, v


def test_gpu_namespace_allows_what_its_pods_need(rendered):
    # hostPath and a root init container are beyond "baseline".
    objects = rendered["gpu"]
    spec = pod_spec(objects)
    uses_host_path = any("hostPath" in v for v in spec["volumes"])
    enforce = one(objects, "Namespace")["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
    assert enforce == ("privileged" if uses_host_path else "restricted")


# ---------------------------------------------------------------- probes and shutdown


def probes(container):
    return {k: container[k] for k in ("startupProbe", "readinessProbe", "livenessProbe")}


def test_grpc_probes_use_the_grpc_port_and_the_right_services(rendered):
    for overlay in ("cpu", "gpu"):
        c = server_container(rendered[overlay])
        port = {p["name"]: p["containerPort"] for p in c["ports"]}["grpc"]
        assert int(env_of(c)["GPUFLOW_PORT"]) == port
        p = probes(c)
        for name, probe in p.items():
            assert set(probe) & {"grpc", "exec", "httpGet", "tcpSocket"} == {"grpc"}, (overlay, name)
            assert probe["grpc"]["port"] == port
        # Ready: the GpuFlow service; live: the server as a whole.
        assert p["readinessProbe"]["grpc"]["service"] == "gpuflow.v1.GpuFlow"
        assert p["livenessProbe"]["grpc"].get("service", "") == ""
        assert p["startupProbe"]["grpc"].get("service", "") == ""
        # The port opens only after --precompile: give warm-up minutes.
        startup = p["startupProbe"]
        assert startup["failureThreshold"] * startup["periodSeconds"] >= 300
        for probe in p.values():
            assert probe["timeoutSeconds"] >= 1


def test_tls_overlay_probes_run_gpuflow_health_with_the_mounted_certificates(rendered):
    health = load_health_script()
    c = server_container(rendered["gpu-secure"])
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    env = env_of(c)
    services = {}
    for name, probe in probes(c).items():
        assert set(probe) & {"grpc", "exec", "httpGet", "tcpSocket"} == {"exec"}, name
        command = probe["exec"]["command"]
        assert command[0] == "gpuflow-health"
        args = health.build_parser().parse_args(command[1:])  # the script's own parser
        for path in (args.tls_ca, args.tls_cert, args.tls_key):
            assert path and os.path.dirname(path) in mounts, (name, path)
        # The server's own files: the probe verifies what gpuflowd serves.
        assert args.tls_cert == env["GPUFLOW_TLS_CERT_FILE"]
        assert args.tls_key == env["GPUFLOW_TLS_KEY_FILE"]
        assert args.tls_server_name
        services[name] = args.service
    assert services == {"startupProbe": "", "readinessProbe": "gpuflow.v1.GpuFlow",
                        "livenessProbe": ""}


def test_probe_services_are_the_ones_gpuflowd_answers(rendered, make_server):
    services = set()
    for overlay in ("cpu", "gpu"):
        for probe in probes(server_container(rendered[overlay])).values():
            services.add(probe["grpc"].get("service", ""))
    srv = make_server()
    channel = grpc.insecure_channel(srv.target)
    try:
        for service in services:
            assert health_status(channel, service) == "SERVING", service
        # A name gpuflowd does not know would fail the probe for good.
        assert health_status(channel, "gpuflow.v1.NoSuchService") == "NOT_FOUND"
    finally:
        channel.close()


def test_termination_grace_covers_prestop_and_the_shutdown_grace(rendered):
    for overlay, objects in rendered.items():
        spec = pod_spec(objects)
        c = server_container(objects)
        grace = seconds(env_of(c)["GPUFLOW_SHUTDOWN_GRACE"])
        pre_stop = c["lifecycle"]["preStop"]["exec"]["command"]
        assert pre_stop[0] == "sleep"
        # gpuflowd exits within --shutdown_grace + 1 s of SIGTERM, which
        # comes after preStop; past terminationGracePeriodSeconds, SIGKILL.
        needed = float(pre_stop[1]) + grace + 1
        assert needed <= spec["terminationGracePeriodSeconds"] <= needed + 30, overlay
        assert env_of(c)["GPUFLOW_EXIT_ON_DEVICE_ERROR"] == "true"


# ---------------------------------------------------------------- volumes


def test_kernel_cache_is_a_private_directory_inside_the_volume(rendered):
    uid, gid = image_user()
    image_volumes = {line.split()[1] for s in ("cpu", "cuda") for line in dockerfile_final_stages()[s]
                     if line.startswith("VOLUME ")}
    for overlay, objects in rendered.items():
        spec = pod_spec(objects)
        c = server_container(objects)
        cache_dir = env_of(c)["GPUFLOW_KERNEL_CACHE_DIR"]
        mount = next(m for m in c["volumeMounts"] if m["name"] == "kernel-cache")
        # gpuflowd makes the directory itself (0700) inside the volume,
        # whose own mode it does not need to trust.
        assert os.path.dirname(cache_dir) == mount["mountPath"] and not mount.get("readOnly")
        assert image_volumes == {mount["mountPath"]}
        volume = next(v for v in spec["volumes"] if v["name"] == "kernel-cache")
        if overlay in GPU_OVERLAYS:
            assert volume["hostPath"]["type"] == "DirectoryOrCreate" and "emptyDir" not in volume
            (init,) = spec["initContainers"]
            assert init["volumeMounts"] == [{"name": "kernel-cache", "mountPath": mount["mountPath"]}]
            assert init["command"] == ["install", "-d", "-m", "0700", "-o", str(uid), "-g", str(gid),
                                       cache_dir]
            assert init["image"] == c["image"]
        else:
            assert set(volume) == {"name", "emptyDir"}


def test_secrets_are_mounted_whole_so_rotation_reaches_gpuflowd(rendered):
    for overlay, objects in rendered.items():
        spec = pod_spec(objects)
        c = server_container(objects)
        volumes = {v["name"]: v for v in spec["volumes"]}
        for m in c["volumeMounts"]:
            # A subPath mount never sees a rotated Secret.
            assert "subPath" not in m and "subPathExpr" not in m, (overlay, m)
        secret_mounts = {m["name"]: m for m in c["volumeMounts"] if "secret" in volumes[m["name"]]}
        assert {volumes[n]["secret"]["secretName"] for n in secret_mounts} == {"gpuflow-tls",
                                                                               "gpuflow-tokens"}
        assert all(m["readOnly"] for m in secret_mounts.values())
        required = overlay == "gpu-secure"
        for name in secret_mounts:
            assert volumes[name]["secret"]["optional"] is (not required), (overlay, name)
        env = env_of(c)
        files = {k: v for k, v in env.items() if k.startswith(("GPUFLOW_TLS_", "GPUFLOW_AUTH_"))}
        if required:
            assert set(files) == {"GPUFLOW_TLS_CERT_FILE", "GPUFLOW_TLS_KEY_FILE",
                                  "GPUFLOW_TLS_CLIENT_CA_FILE", "GPUFLOW_AUTH_TOKENS_FILE"}
            dirs = {m["mountPath"] for m in secret_mounts.values()}
            assert all(os.path.dirname(f) in dirs for f in files.values()), files
        else:
            assert files == {}, overlay


# ---------------------------------------------------------------- wiring


def test_service_monitor_and_budget_select_the_pods(rendered):
    for overlay, objects in rendered.items():
        deployment = workload(objects)
        template = deployment["spec"]["template"]
        labels = template["metadata"]["labels"]
        assert deployment["spec"]["selector"]["matchLabels"] == SELECTOR
        assert SELECTOR.items() <= labels.items()
        c = server_container(objects)
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        env = env_of(c)
        assert ports == {"grpc": int(env["GPUFLOW_PORT"]), "metrics": int(env["GPUFLOW_METRICS_PORT"])}

        service = one(objects, "Service")["spec"]
        assert service["clusterIP"] == "None"  # headless: clients reach the pod holding a session
        assert service["selector"].items() <= labels.items()
        assert {p["targetPort"] for p in service["ports"]} <= set(ports)

        monitor = one(objects, "PodMonitor")["spec"]
        assert monitor["selector"]["matchLabels"].items() <= labels.items()
        (endpoint,) = monitor["podMetricsEndpoints"]
        assert endpoint["port"] == "metrics" and endpoint["path"] == "/metrics"
        assert labels[monitor["jobLabel"]] == JOB
        annotations = template["metadata"]["annotations"]
        assert int(annotations["prometheus.io/port"]) == ports["metrics"]

        budget = one(objects, "PodDisruptionBudget")["spec"]
        assert budget["selector"]["matchLabels"].items() <= labels.items()
        assert 1 <= budget["maxUnavailable"] < max(2, deployment["spec"]["replicas"])


def test_rollouts_replace_one_pod_at_a_time(rendered):
    for overlay, objects in rendered.items():
        kind, spec = workload(objects)["kind"], workload(objects)["spec"]
        if kind == "Deployment":
            assert spec["strategy"]["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 1}
        else:
            # A StatefulSet never surges and, without maxUnavailable or a
            # partition, replaces one pod at a time.
            assert spec["updateStrategy"] == {"type": "RollingUpdate"}, overlay
        assert spec["minReadySeconds"] > 0


def test_images_name_the_dockerfile_targets(rendered):
    targets = set(dockerfile_final_stages())
    for overlay, objects in rendered.items():
        spec = pod_spec(objects)
        for c in spec["containers"] + spec.get("initContainers", []):
            name, _, tag = c["image"].rpartition(":")
            assert name == "gpuflow" and tag in targets, c["image"]
            assert tag == ("cuda" if overlay in GPU_OVERLAYS else "cpu")


# ---------------------------------------------------------------- the real server


def test_every_environment_variable_is_a_gpuflowd_flag(rendered):
    flags = gpuflowd_flags()
    assert "shutdown_grace" in flags, "could not read gpuflowd --helpfull"
    for overlay, objects in rendered.items():
        for name, value in env_of(server_container(objects)).items():
            if value == "$(status.podIP)":
                continue  # a downward-API input of a flag's value (the fleet's POD_IP)
            assert name.startswith("GPUFLOW_"), name
            assert name[len("GPUFLOW_"):].lower() in flags, f"{overlay}: {name} is no gpuflowd flag"


def test_multi_gpu_pods_are_the_gpu_overlays_pods_with_more_of_everything(rendered):
    """gpu-multi changes the devices and the resources beside them, nothing
    else: the same probes, volumes, image and security as the gpu overlay."""
    one_gpu, multi = pod_spec(rendered["gpu"]), pod_spec(rendered["gpu-multi"])
    a, b = server_container(rendered["gpu"]), server_container(rendered["gpu-multi"])
    for key in ("image", "ports", "readinessProbe", "livenessProbe", "volumeMounts",
                "securityContext", "lifecycle"):
        assert a.get(key) == b.get(key), key
    assert one_gpu["volumes"] == multi["volumes"]
    assert one_gpu.get("tolerations") == multi.get("tolerations")
    env_a, env_b = env_of(a), env_of(b)
    assert {k: v for k, v in env_b.items() if k not in ("GPUFLOW_DEVICES", "GPUFLOW_COMPUTE_THREADS")} \
        == {k: v for k, v in env_a.items() if k != "GPUFLOW_COMPUTE_THREADS"}
    n = GPUS_PER_POD["gpu-multi"]
    for kind in ("requests", "limits"):
        for resource in ("cpu", "memory"):
            assert quantity(b["resources"][kind][resource]) >= \
                quantity(a["resources"][kind][resource]) * n / 2, (kind, resource)


@pytest.mark.parametrize("overlay", ["cpu", "gpu", "gpu-multi"])
def test_overlay_environment_starts_gpuflowd(rendered, make_server, tmp_path, overlay):
    """gpuflowd started with the overlay's environment (ports, addresses and
    paths made local) serves, with the limits the overlay sets."""
    objects = rendered[overlay]
    c = server_container(objects)
    env = env_of(c)
    env["GPUFLOW_ADDRESS"] = "localhost"
    env["GPUFLOW_KERNEL_CACHE_DIR"] = str(tmp_path / "kernels")
    env.pop("GPUFLOW_BACKEND")  # the test backend (conftest: --backend)
    if "GPUFLOW_PRECOMPILE" in env:
        # The ConfigMap the pod mounts, as rendered.
        config_map = one(objects, "ConfigMap")
        volume = next(v for v in pod_spec(objects)["volumes"] if "configMap" in v)
        assert volume["configMap"]["name"] == config_map["metadata"]["name"]
        mount = next(m for m in c["volumeMounts"] if m["name"] == volume["name"])
        key = os.path.relpath(env["GPUFLOW_PRECOMPILE"], mount["mountPath"])
        precompile = tmp_path / key
        precompile.write_text(config_map["data"][key])
        json.loads(precompile.read_text())
        env["GPUFLOW_PRECOMPILE"] = str(precompile)
    srv = make_server(env=env)
    with gpuflow.connect(srv.target) as client:
        info = client.stub.GetServerInfo(service_pb2.GetServerInfoRequest())
        limits = info.limits
        # --devices=all: every visible GPU, or one device on the CPU backend.
        assert len(info.devices) >= 1 and [d.healthy for d in info.devices] == \
            [True] * len(info.devices)
    names = {"GPUFLOW_MAX_MEMORY_BYTES": "max_memory_bytes",
             "GPUFLOW_MAX_SESSION_MEMORY_LIMIT": "max_session_memory_limit_bytes",
             "GPUFLOW_DEFAULT_SESSION_MEMORY_LIMIT": "default_session_memory_limit_bytes",
             "GPUFLOW_MAX_ARRAY_BYTES": "max_array_bytes"}
    for var, field in names.items():
        if var in env:
            assert getattr(limits, field) == byte_count(env[var]), var
    if "GPUFLOW_PRECOMPILE" in env:
        assert re.search(r"precompiled \d+ graph\(s\) from " + re.escape(env["GPUFLOW_PRECOMPILE"]),
                         srv.log())
    assert srv.stop() == 0, srv.log()


def test_fleet_workers_advertise_their_pod_ip(rendered):
    # docs/scale-out.md: clients reach every ready pod through the headless
    # Service and learn each session's worker from SessionInfo.endpoint.
    objects = rendered["fleet"]
    assert one(objects, "StatefulSet")["spec"]["replicas"] > 1
    env = server_container(objects)["env"]
    names = [e["name"] for e in env]
    assert names.index("POD_IP") < names.index("GPUFLOW_ADVERTISE_ADDRESS")
    pod_ip = next(e for e in env if e["name"] == "POD_IP")
    assert pod_ip["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    port = {p["name"]: p["containerPort"] for p in server_container(objects)["ports"]}["grpc"]
    assert env_of(server_container(objects))["GPUFLOW_ADVERTISE_ADDRESS"] == f"$(POD_IP):{port}"
    # The other overlays advertise nothing (one worker behind a Service).
    for overlay in ("cpu", "gpu", "gpu-secure"):
        assert "GPUFLOW_ADVERTISE_ADDRESS" not in env_of(server_container(rendered[overlay]))


def test_fleet_statefulset_is_governed_by_the_headless_service(rendered):
    objects = rendered["fleet"]
    spec = one(objects, "StatefulSet")["spec"]
    service = one(objects, "Service")
    # Pod DNS names (gpuflow-0.gpuflow...) come from the governing Service.
    assert spec["serviceName"] == service["metadata"]["name"]
    assert service["spec"]["clusterIP"] == "None"
    # Only ready pods resolve: no session is placed on a warming or draining pod.
    assert service["spec"]["publishNotReadyAddresses"] is False
    assert spec["podManagementPolicy"] == "Parallel"
    assert "volumeClaimTemplates" not in spec  # sessions die with their pod


def _normalized(template):
    """A pod template with named lists as {name: item}, to compare by content."""
    if isinstance(template, dict):
        return {k: _normalized(v) for k, v in template.items()}
    if isinstance(template, list) and template and all(
            isinstance(i, dict) and "name" in i for i in template):
        return {i["name"]: _normalized(i) for i in template}
    if isinstance(template, list):
        return [_normalized(i) for i in template]
    return template


def test_fleet_pods_are_the_gpu_overlays_pods_plus_their_address(rendered):
    # statefulset.yaml repeats the gpu overlay's pod template (kustomize
    # cannot turn a Deployment into a StatefulSet): hold the two equal.
    fleet = _normalized(one(rendered["fleet"], "StatefulSet")["spec"]["template"])
    gpu = _normalized(one(rendered["gpu"], "Deployment")["spec"]["template"])
    env = fleet["spec"]["containers"]["gpuflowd"]["env"]
    assert set(env) - set(gpu["spec"]["containers"]["gpuflowd"]["env"]) == {
        "POD_IP", "GPUFLOW_ADVERTISE_ADDRESS"}
    del env["POD_IP"], env["GPUFLOW_ADVERTISE_ADDRESS"]
    assert fleet == gpu
