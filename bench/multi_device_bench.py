"""Aggregate throughput of every device of one gpuflowd against one device
(issue 22): a session per device, each kept busy by its own client thread
running the same workload (a float32 matmul by default, compute-bound, so
devices do not share a bottleneck but the host), for a fixed time. Reports
executes per second on device 0 alone, then on all devices at once, and
the ratio (N devices ideally give N times one).

A benchmark, not a test:

    gpuflowd --backend=cuda --devices=all &
    python3 bench/multi_device_bench.py --target localhost:50051 --seconds 5

The CPU backend's virtual devices (--devices=N) run it too (CI's smoke run);
their figures say nothing about GPUs.
"""

import argparse
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients",
                                "python"))

import numpy as np  # noqa: E402

import gpuflow  # noqa: E402


def _worker(client, device, n, seconds, out):
    with client.session(label=f"multi_device_bench/{device}", device=device) as s:
        g = gpuflow.Graph()
        a = g.random_uniform(shape=[n, n], seed=1 + device, dtype="float32")
        b = g.random_uniform(shape=[n, n], seed=2 + device, dtype="float32")
        s.execute(g, outputs={"a": a, "b": b})
        g = gpuflow.Graph()
        prod = g.matmul(g.array("a"), g.array("b"))
        check = g.sum(prod)
        first = s.execute(g, outputs=[check])
        calls = 0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            s.execute(g, outputs={"c": prod})
            calls += 1
        elapsed = time.perf_counter() - start
        out[device] = {"calls": calls, "seconds": elapsed, "session_device": s.device,
                       "answer_ok": bool(np.isfinite(first[0]))}


def run(target, devices, n, seconds):
    client = gpuflow.connect(target)
    try:
        results = {}
        threads = [threading.Thread(target=_worker, args=(client, d, n, seconds, results))
                   for d in devices]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return results
    finally:
        client.close()


def measure(target, n=1024, seconds=2.0):
    client = gpuflow.connect(target)
    try:
        devices = [d.id for d in client.devices() if d.healthy] or [0]
    finally:
        client.close()
    one = run(target, devices[:1], n, seconds)
    every = run(target, devices, n, seconds)

    def rate(results):
        return sum(r["calls"] / r["seconds"] for r in results.values())

    flops = 2.0 * n**3
    out = {
        "devices": devices,
        "matmul_n": n,
        "one_device_per_s": rate(one),
        "all_devices_per_s": rate(every),
        "answer_ok": all(r["answer_ok"] for r in list(one.values()) + list(every.values())),
        "placed_as_asked": all(r["session_device"] == d for d, r in every.items()),
    }
    out["speedup"] = out["all_devices_per_s"] / out["one_device_per_s"]
    out["all_devices_tflops"] = out["all_devices_per_s"] * flops / 1e12
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="localhost:50051")
    parser.add_argument("--n", type=int, default=8192, help="matmul size (n x n x n)")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--out")
    args = parser.parse_args()
    result = measure(args.target, n=args.n, seconds=args.seconds)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
