"""Aggregate throughput of a pool of gpuflowd workers (issue 18): for 1, 2
and 3 workers on this host, CLIENTS client threads (each its own session,
placed by the pool client on the least-loaded worker) run a small Execute
(a 10-op chain on a 64 Ki-element float32 array, result stored) for
--duration seconds; reports requests per second in all and per worker, and
how the sessions spread. Workers on one host share its CPUs (and GPU), so
this shows the pool's placement and routing overhead and how far one host
scales, not a fleet of hosts.

Prints one JSON object (and writes it to --out). A benchmark, not a test:

    python3 bench/fleet_bench.py --server build/bin/gpuflowd --backend cpu
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)

import numpy as np  # noqa: E402

import gpu_bench  # noqa: E402, F401 - puts clients/python on sys.path
import gpuflow  # noqa: E402

N_ELEMENTS = 1 << 16


def start_worker(binary, backend, directory):
    port_file = os.path.join(directory, f"port{len(os.listdir(directory))}")
    proc = subprocess.Popen([binary, "--address=127.0.0.1", "--port=0", f"--port_file={port_file}",
                             f"--backend={backend}", "--metrics_port=0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while not os.path.exists(port_file) or not open(port_file).read().strip():
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            raise RuntimeError("a worker did not start")
        time.sleep(0.05)
    return proc, f"127.0.0.1:{int(open(port_file).read())}"


def run_clients(target, clients, duration):
    """(requests per second in all, {worker: sessions}, {worker: requests})."""
    client = gpuflow.connect(target, timeout=30)
    sessions = [client.session(label=f"fleet{i}") for i in range(clients)]
    counts = [0] * clients
    stop = threading.Event()

    def loop(i):
        s = sessions[i]
        x = s.asarray(np.linspace(0, 1, N_ELEMENTS, dtype=np.float32))
        while not stop.is_set():
            y = x
            for k in range(10):
                y = y * 1.0001 if k % 2 == 0 else y + 0.5
            y.persist("y")
            counts[i] += 1

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    time.sleep(duration / 4)  # warm-up: prepared graphs, compiled kernels
    start_counts = list(counts)
    start = time.perf_counter()
    time.sleep(duration)
    done = list(counts)
    elapsed = time.perf_counter() - start
    stop.set()
    for t in threads:
        t.join()
    per_worker_sessions, per_worker_requests = {}, {}
    for s, before, after in zip(sessions, start_counts, done):
        per_worker_sessions[s.endpoint] = per_worker_sessions.get(s.endpoint, 0) + 1
        per_worker_requests[s.endpoint] = per_worker_requests.get(s.endpoint, 0) + after - before
        s.close()
    client.close()
    total = sum(a - b for a, b in zip(done, start_counts))
    return total / elapsed, per_worker_sessions, per_worker_requests


def measure(binary, backend="cpu", clients=6, duration=3.0, max_workers=3):
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        procs, addresses = [], []
        try:
            for n in range(1, max_workers + 1):
                proc, address = start_worker(binary, backend, directory)
                procs.append(proc)
                addresses.append(address)
                rate, sessions, requests = run_clients(",".join(addresses), clients, duration)
                rows.append({"workers": n, "requests_per_s": rate, "sessions": sessions,
                             "requests": requests})
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(timeout=30)
    base = rows[0]["requests_per_s"] if rows else 0
    for row in rows:
        row["speedup"] = row["requests_per_s"] / base if base else None
    return {"clients": clients, "duration_s": duration, "backend": backend, "rows": rows,
            "cpus": os.cpu_count()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True, help="the gpuflowd binary")
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--out")
    args = parser.parse_args()
    result = measure(args.server, args.backend, args.clients, args.duration)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
