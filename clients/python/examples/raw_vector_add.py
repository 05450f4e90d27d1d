"""Vector addition with a RawKernel, called as in CuPy:
kernel((grid,), (block,), (args...)).

gpuflow arrays are immutable; an array made by gpuflow.zeros (or empty,
ones, full, .copy()) is *writable*: after the launch, `y` is the array as
the kernel left it. Raw kernels need the CUDA backend and a server started
with --allow_raw_kernels; otherwise this example says which is missing and
exits with status 0. With `make serve` running:

    PYTHONPATH=clients/python python3 clients/python/examples/raw_vector_add.py
"""

import argparse
import sys

import numpy as np

import gpuflow

vec_add = gpuflow.RawKernel(r'''
extern "C" __global__ void vec_add(const float* a, const float* b, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a[i] + b[i];
}
''', "vec_add")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="localhost:50051", help="gpuflowd host:port")
    parser.add_argument("--n", type=int, default=(1 << 20) + 3)
    args = parser.parse_args()

    n = args.n
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal(n, dtype=np.float32)
    b_np = rng.standard_normal(n, dtype=np.float32)
    with gpuflow.connect(args.target) as client, client.session(label="vec_add") as s:
        info = client.info()
        print(f"server: {info.backend} ({info.device})")
        a, b = s.asarray(a_np), s.asarray(b_np)
        y = gpuflow.zeros(n, dtype=gpuflow.float32)  # in the current session, s
        threads = 256
        vec_add(((n + threads - 1) // threads,), (threads,), (a, b, y, np.int32(n)))
        try:
            result = y.get()
        except gpuflow.PermissionDeniedError as err:
            print(f"raw_vector_add.py needs a server started with --allow_raw_kernels "
                  f"({err.details})")
            return 0
        except gpuflow.FailedPreconditionError as err:
            print(f"raw_vector_add.py needs the CUDA backend; this server runs on "
                  f"{info.backend!r} ({err.details})")
            return 0
    ok = np.array_equal(result, a_np + b_np)
    print(f"vec_add of {n} float32 values: {'matches numpy' if ok else 'DIFFERS from numpy'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
