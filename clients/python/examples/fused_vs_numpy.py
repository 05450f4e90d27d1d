"""A fused elementwise expression on the server against the same expression
in NumPy: the results agree, the server runs it as one kernel, and both are
timed.

    z = exp(-(a*a + b*b) / 2) * cos(a) + 0.5 * b

NumPy makes a temporary array per operation; gpuflow records the
expression lazily and the server fuses it into one step. With `make serve`
running:

    PYTHONPATH=clients/python python3 clients/python/examples/fused_vs_numpy.py
"""

import argparse
import sys
import time

import numpy as np

import gpuflow


def expression(xp, a, b):
    """The same code for numpy (xp=np) and gpuflow (xp=gpuflow)."""
    return xp.exp(-(a * a + b * b) / 2) * xp.cos(a) + 0.5 * b


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="localhost:50051", help="gpuflowd host:port")
    parser.add_argument("--size", type=int, default=2048, help="arrays are size x size float32")
    parser.add_argument("--n_repeat", type=int, default=20)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((args.size, args.size), dtype=np.float32)
    b_np = rng.standard_normal((args.size, args.size), dtype=np.float32)

    expected = expression(np, a_np, b_np)
    start = time.perf_counter()
    for _ in range(args.n_repeat):
        expression(np, a_np, b_np)
    numpy_us = (time.perf_counter() - start) / args.n_repeat * 1e6

    with gpuflow.connect(args.target) as client, client.session(label="fused") as s:
        info = client.info()
        print(f"server: {info.backend} ({info.device})")
        a, b = s.asarray(a_np), s.asarray(b_np)
        z = expression(gpuflow, a, b)
        evaluated = gpuflow.evaluate(z, profile=True)
        steps = [step.description for step in evaluated.timings.steps]
        print(f"the server ran {len(steps)} step(s): {'; '.join(steps)}")
        error = float(np.max(np.abs(evaluated[0] - expected)))
        print(f"max |gpuflow - numpy| = {error:.3g}")
        timing = gpuflow.benchmark(expression, (gpuflow, a, b), n_repeat=args.n_repeat,
                                   name="fused on gpuflow")
    print(timing)
    print(f"{'numpy on this host':<20s}:    CPU:{numpy_us:9.03f} us")
    return 0 if error < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
