"""The device's idle time between the kernels of one plan (issue 15, target
3): a plan of STEPS kernels that cannot fuse (ten rounds of
``x = x - 0.001 * x.sum(axis=0, keepdims=True)`` on a small float32
array: a reduction over columns, then an elementwise step that broadcasts
it back; over rows the planner would make the whole chain one row program),
run
through the Benchmark RPC. The plan's device time (events around it) less
the sum of its steps' own device times (events around each step, from one
profiled Execute), over the number of steps, is the idle gap per kernel:
what launching costs the device when the host cannot keep ahead of it.

Prints one JSON object (and writes it to --out). A benchmark, not a test:

    python3 bench/kernel_gaps.py --server build/bin/gpuflowd --backend cpu
"""

import argparse
import os
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)

import numpy as np  # noqa: E402

import gpu_bench  # noqa: E402 - also puts clients/python on sys.path
import gpuflow  # noqa: E402
import service_bench  # noqa: E402

ROUNDS = 10
SHAPE = (64, 256)


def rounds(x):
    for _ in range(ROUNDS):
        x = x - 0.001 * x.sum(axis=0, keepdims=True)
    return x


def measure(target, n_repeat=2000, max_duration=2.0):
    client = gpuflow.connect(target)
    try:
        with client.session(label="kernel_gaps") as session:
            host = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
            x = session.asarray(host)
            want = host.astype(np.float64)
            for _ in range(ROUNDS):
                want = want - 0.001 * want.sum(axis=0, keepdims=True)
            profiled = gpuflow.evaluate(rounds(x), profile=True)
            steps = list(profiled.timings.steps)
            result = {
                "steps": len(steps),
                "kinds": [s.kind for s in steps],
                "answer_ok": bool(np.allclose(profiled[0], want, rtol=1e-4, atol=1e-4)),
            }
            timed = gpuflow.benchmark(rounds, (x,), n_repeat=n_repeat, max_duration=max_duration)
            result["host_per_run_us"] = float(np.median(timed.cpu_times)) * 1e6
            if timed.gpu_times.size == 0 or not all(s.HasField("gpu_seconds") for s in steps):
                result["gpu"] = None  # the CPU backend times no device
                return result
            # Steps' own device times: the median of several profiled runs.
            per_step = [[s.gpu_seconds] for s in steps]
            for _ in range(20):
                for i, s in enumerate(gpuflow.evaluate(rounds(x), profile=True).timings.steps):
                    per_step[i].append(s.gpu_seconds)
            busy = sum(gpu_bench.percentile(v, 50) for v in per_step)
            plan = float(np.median(timed.gpu_times[0]))
            result["gpu"] = {
                "plan_us": plan * 1e6,
                "steps_busy_us": busy * 1e6,
                "idle_per_kernel_us": (plan - busy) / len(steps) * 1e6,
                "repeats": int(timed.gpu_times.shape[1]),
            }
            return result
    finally:
        client.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", help="gpuflowd to start (else --target)")
    parser.add_argument("--target")
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--out")
    args = parser.parse_args()
    service_bench.run_standalone(args, measure)


if __name__ == "__main__":
    main()
