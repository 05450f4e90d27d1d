"""Vector addition with a Python kernel, @gpuflow.jit.rawkernel, called in
CuPy's form kernel((grid,), (block,), (args...)) and in Numba's
kernel[grid, block](args...).

The client translates the Python function to CUDA C++ (once per argument
types) and runs it as a raw kernel, so it needs the CUDA backend and a
server started with --allow_raw_kernels; otherwise this example prints the
CUDA source, says which is missing and exits with status 0. With
`make serve` running:

    PYTHONPATH=clients/python python3 clients/python/examples/jit_vector_add.py
"""

import argparse
import sys

import numpy as np

import gpuflow
from gpuflow import jit


@jit.rawkernel()
def vec_add(a, b, y):
    i = jit.grid(1)
    if i < y.size:
        y[i] = a[i] + b[i]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="localhost:50051", help="gpuflowd host:port")
    parser.add_argument("--n", type=int, default=(1 << 20) + 3)
    args = parser.parse_args()

    n = args.n
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal(n, dtype=np.float32)
    b_np = rng.standard_normal(n, dtype=np.float32)
    with gpuflow.connect(args.target) as client, client.session(label="jit_vector_add") as s:
        info = client.info()
        print(f"server: {info.backend} ({info.device})")
        a, b = s.asarray(a_np), s.asarray(b_np)
        y = gpuflow.zeros(n, dtype=gpuflow.float32)   # writable: the kernel's output
        z = gpuflow.zeros(n, dtype=gpuflow.float32)
        threads = 256
        blocks = (n + threads - 1) // threads
        vec_add((blocks,), (threads,), (a, b, y))     # CuPy's call form
        vec_add[blocks, threads](a, b, z)             # Numba's
        try:
            y_np, z_np = y.get(), z.get()
        except (gpuflow.PermissionDeniedError, gpuflow.FailedPreconditionError) as err:
            print(vec_add.cuda_source(a, b, y))
            if isinstance(err, gpuflow.PermissionDeniedError):
                print(f"jit_vector_add.py needs a server started with --allow_raw_kernels "
                      f"({err.details})")
            else:
                print(f"jit_vector_add.py needs the CUDA backend; this server runs on "
                      f"{info.backend!r} ({err.details})")
            return 0
    expected = a_np + b_np
    ok = np.array_equal(y_np, expected) and np.array_equal(z_np, expected)
    print(f"jit vec_add of {n} float32 values: {'matches numpy' if ok else 'DIFFERS from numpy'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
