"""Isolation between sessions (issue 15, target 7): the tiny Execute of
service_bench.tiny_execute in one session, alone and while another session
keeps the GPU busy with a loop of large float32 matmuls (8192^3, about 21 ms
each on an H200; 256^3 with --small). p50/p99 of the tiny call in both
cases, and how many matmuls ran meanwhile. The loop runs in a thread of this
process (gRPC calls release the GIL); a benchmark, not a test.

    python3 bench/isolation_bench.py --target 127.0.0.1:50051 [--small]
"""

import argparse
import json
import os
import sys
import threading
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)

import numpy as np  # noqa: E402

import gpu_bench  # noqa: E402 - also puts clients/python on sys.path
import gpuflow  # noqa: E402
import service_bench  # noqa: E402


def measure_isolation(target, n=1000, size=8192, warmup=50, log=print):
    client = gpuflow.connect(target, timeout=30)
    small = client.session(label="isolation_small")
    big = client.session(label="isolation_big", memory_limit=4 * size * size * 4 + (64 << 20))
    try:
        tiny = service_bench.tiny_execute(small)
        alone = service_bench.timed_calls(tiny, n, warmup)
        ones = np.ones((size, size), np.float32)
        big.upload(ones, name="a")
        big.upload(ones, name="b")
        del ones
        g = gpuflow.Graph()
        product = g.matmul(g.array("a"), g.array("b"))
        big.execute(g, outputs={"c": product})  # compiles nothing new after this
        stop = threading.Event()
        matmul_times = []
        errors = []

        def loop():
            try:
                while not stop.is_set():
                    t = time.perf_counter()
                    big.execute(g, outputs={"c": product})
                    matmul_times.append(time.perf_counter() - t)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(gpu_bench.short_error(e))

        worker = threading.Thread(target=loop, daemon=True)
        worker.start()
        time.sleep(0.5)  # the loop is running
        loaded = service_bench.timed_calls(tiny, n, warmup)
        stop.set()
        worker.join(timeout=60)
        out = {"matmul": f"float32 {size}x{size} @ {size}x{size}",
               "alone": service_bench.summary(alone),
               "under_load": service_bench.summary(loaded), "matmuls_during": len(matmul_times),
               "matmul_p50_ms": gpu_bench.percentile(matmul_times, 50) * 1e3
               if matmul_times else None}
        if errors:
            out["error"] = errors[0]
        out["ratio_p50"] = out["under_load"]["p50_us"] / out["alone"]["p50_us"]
        log(f"isolation: tiny Execute alone p50 {out['alone']['p50_us']:.0f} us p99 "
            f"{out['alone']['p99_us']:.0f} us; beside {size}^3 matmuls p50 "
            f"{out['under_load']['p50_us']:.0f} us p99 {out['under_load']['p99_us']:.0f} us")
        return out
    finally:
        for closing in (big.close, small.close, client.close):
            try:
                closing()
            except Exception:  # noqa: BLE001
                pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--small", action="store_true", help="256^3 matmuls")
    args = parser.parse_args()
    print(json.dumps(measure_isolation(args.target, args.n, 256 if args.small else 8192),
                     indent=2))


if __name__ == "__main__":
    main()
