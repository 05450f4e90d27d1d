"""First-request cost of a softmax Execute with a cold, a disk-warm and a
precompiled kernel cache (issue 5). Run on a GPU host, from the repository
root, with a bundle (dist/) or a build (build/):

    python3 bench/cache_warmup.py                # dist/bin/gpuflowd, else build/bin/gpuflowd
    python3 bench/cache_warmup.py --server build/bin/gpuflowd --trials 5 --out warmup.json

Each trial takes a fresh --kernel_cache_dir and starts gpuflowd
(--backend=cuda) three times on it, one after the other:
  cold        empty cache: the first Execute runs NVRTC (softmax includes CUB);
  disk-warm   a new process, same directory: the first Execute loads the
              cubin from disk instead;
  precompiled a new process started with --precompile=FILE (the same graph
              as a PrecompileRequest in JSON): the kernel is loaded before
              serving, so the first Execute finds it in memory.
In every process, after the first Execute it runs --repeats more: their
median is "memory-warm", the steady state. Times are client wall time of
Execute (the input is uploaded before, the output stored in the session, so
no transfer is timed) and the server's own Timings.total_seconds.

Target (issue 5): disk-warm first Execute - memory-warm median <= 5 ms.
A benchmark, not a test.
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))

import gpuflow  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from gpuflow.v1 import service_pb2, types_pb2  # noqa: E402


def start_server(binary, backend, workdir, cache_dir, extra_args=()):
    """Starts gpuflowd; returns (process, port, seconds until it served)."""
    port_file = os.path.join(workdir, "port")
    if os.path.exists(port_file):
        os.remove(port_file)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFLOW_")}
    env["GPUFLOW_METRICS_PORT"] = "0"  # no metrics listener (ignored by builds without one)
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(binary))), "lib")
    if os.path.isdir(lib):
        env["LD_LIBRARY_PATH"] = ":".join(
            p for p in (lib, "/usr/local/cuda/lib64", env.get("LD_LIBRARY_PATH")) if p)
    log = open(os.path.join(workdir, "gpuflowd.log"), "a")
    args = [binary, f"--backend={backend}", "--address=127.0.0.1", "--port=0",
            f"--port_file={port_file}", f"--kernel_cache_dir={cache_dir}", *extra_args]
    log.write(f"\n$ {' '.join(args)}\n")
    log.flush()
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stdout=log, stderr=log, env=env)
    while time.perf_counter() - t0 < 120:
        if proc.poll() is not None:
            raise RuntimeError(f"gpuflowd exited with {proc.returncode}; see {log.name}")
        if os.path.exists(port_file) and open(port_file).read().strip():
            return proc, int(open(port_file).read()), time.perf_counter() - t0
        time.sleep(0.005)
    proc.kill()
    raise RuntimeError(f"gpuflowd did not start within 120 s; see {log.name}")


def stop_server(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def softmax_graph():
    g = gpuflow.Graph()
    y = g.softmax(g.array("x"), axis=-1)
    return g, y


def measure(port, x, repeats):
    """First Execute and the median of `repeats` more, on a fresh server."""
    g, y = softmax_graph()
    with gpuflow.connect(f"127.0.0.1:{port}") as client:
        with client.session() as s:
            s.upload(x, name="x")
            walls, servers, first_timings = [], [], None
            for i in range(repeats + 1):
                t = time.perf_counter()
                result = s.execute(g, outputs={"y": y})
                walls.append(time.perf_counter() - t)
                servers.append(result.timings.total_seconds)
                if i == 0:
                    first_timings = result.timings
            check = s.download("y")
            ref = np.exp(x - x.max(axis=-1, keepdims=True))
            ref /= ref.sum(axis=-1, keepdims=True)
            np.testing.assert_allclose(check, ref, rtol=1e-5, atol=1e-7)
        cache = client.info().kernel_cache
    return {
        "first_wall_ms": walls[0] * 1e3,
        "first_server_ms": servers[0] * 1e3,
        "first_compile_ms": first_timings.compile_seconds * 1e3,
        "first_kernels_compiled": first_timings.kernels_compiled,
        "first_kernel_cache_hits": first_timings.kernel_cache_hits,
        "warm_wall_ms": statistics.median(walls[1:]) * 1e3,
        "warm_server_ms": statistics.median(servers[1:]) * 1e3,
        "kernel_cache": json_format.MessageToDict(cache, preserving_proto_field_name=True),
    }


def run_trial(binary, backend, x, repeats, workdir):
    cache_dir = os.path.join(workdir, "kernels")
    shutil.rmtree(cache_dir, ignore_errors=True)
    g, _ = softmax_graph()
    request = service_pb2.PrecompileRequest(graphs=[g.proto])
    request.array_types["x"].dtype = types_pb2.DTYPE_FLOAT32
    request.array_types["x"].shape.extend(x.shape)
    precompile_file = os.path.join(workdir, "precompile.json")
    with open(precompile_file, "w") as f:
        f.write(json_format.MessageToJson(request))

    trial = {}
    for phase, extra in (("cold", ()), ("disk_warm", ()),
                         ("precompiled", (f"--precompile={precompile_file}",))):
        proc, port, start_s = start_server(binary, backend, workdir, cache_dir, extra)
        try:
            trial[phase] = measure(port, x, repeats)
            trial[phase]["start_to_serving_ms"] = start_s * 1e3
        finally:
            stop_server(proc)
    trial["cache_files"] = sorted(os.listdir(cache_dir)) if os.path.isdir(cache_dir) else []
    return trial


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_server = os.path.join(ROOT, "dist", "bin", "gpuflowd")
    if not os.path.exists(default_server):
        default_server = os.path.join(ROOT, "build", "bin", "gpuflowd")
    parser.add_argument("--server", default=default_server)
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=20, help="memory-warm Executes per process")
    parser.add_argument("--trials", type=int, default=3, help="fresh cache directories")
    parser.add_argument("--out", help="write every figure here as JSON")
    parser.add_argument("--backend", default="cuda", help="cpu only to try the script itself")
    args = parser.parse_args()

    x = np.random.default_rng(0).standard_normal((args.rows, args.cols), dtype=np.float32)
    workdir = tempfile.mkdtemp(prefix="gpuflow-cache-warmup-")
    trials = []
    try:
        for t in range(args.trials):
            trials.append(run_trial(args.server, args.backend, x, args.repeats, workdir))
            print(f"trial {t}: done", file=sys.stderr)
    finally:
        print(f"gpuflowd logs: {workdir}/gpuflowd.log", file=sys.stderr)

    def med(phase, key):
        return statistics.median(tr[phase][key] for tr in trials)

    print(f"softmax(axis=-1) float32 ({args.rows}, {args.cols}), {args.server}, "
          f"{args.trials} trial(s), medians (ms)")
    print("| phase | first Execute wall | first server total | compile in first | "
          "memory-warm wall | memory-warm server | first - warm (wall) | start to serving |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for phase in ("cold", "disk_warm", "precompiled"):
        print(f"| {phase} | {med(phase, 'first_wall_ms'):.2f} | {med(phase, 'first_server_ms'):.2f} | "
              f"{med(phase, 'first_compile_ms'):.2f} | {med(phase, 'warm_wall_ms'):.3f} | "
              f"{med(phase, 'warm_server_ms'):.3f} | "
              f"{med(phase, 'first_wall_ms') - med(phase, 'warm_wall_ms'):.2f} | "
              f"{med(phase, 'start_to_serving_ms'):.0f} |")
    overhead = statistics.median(
        tr["disk_warm"]["first_wall_ms"] - tr["disk_warm"]["warm_wall_ms"] for tr in trials)
    print(f"disk-warm first-request overhead over memory-warm: {overhead:.2f} ms "
          f"(target <= 5 ms: {'met' if overhead <= 5 else 'MISSED'})")
    for phase in ("cold", "disk_warm", "precompiled"):
        tr = trials[-1][phase]
        print(f"{phase}: first Execute compiled {tr['first_kernels_compiled']}, cache hits "
              f"{tr['first_kernel_cache_hits']}; ServerInfo.kernel_cache {tr['kernel_cache']}")
    print(f"cache directory after the last trial: {trials[-1]['cache_files']}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "trials": trials}, f, indent=1)


if __name__ == "__main__":
    main()
