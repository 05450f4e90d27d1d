"""Row norms, sqrt(sum(a**2, axis=-1)), timed on the server with
gpuflow.benchmark (cupyx.profiler.benchmark's call and printed form).

The graph (square, sum over the last axis, sqrt) is fused into one
reduction step; the server runs it n_repeat times and reports host (CPU)
and, on the CUDA backend, device (GPU) times. With `make serve` running:

    PYTHONPATH=clients/python python3 clients/python/examples/benchmark_norms.py
"""

import argparse
import sys

import numpy as np

import gpuflow


def norms(a):
    return gpuflow.sqrt(gpuflow.sum(a ** 2, axis=-1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="localhost:50051", help="gpuflowd host:port")
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=1024)
    parser.add_argument("--n_repeat", type=int, default=100)
    args = parser.parse_args()

    a_np = np.random.default_rng(0).standard_normal((args.rows, args.cols), dtype=np.float32)
    with gpuflow.connect(args.target) as client, client.session(label="norms") as s:
        info = client.info()
        print(f"server: {info.backend} ({info.device})")
        a = s.asarray(a_np)
        print(gpuflow.benchmark(norms, (a,), n_repeat=args.n_repeat, n_warmup=10))
        result = norms(a).get()
    expected = np.sqrt((a_np.astype(np.float64) ** 2).sum(axis=-1))
    error = float(np.max(np.abs(result - expected) / expected))
    print(f"max relative error vs numpy (float64): {error:.3g}")
    return 0 if error < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
