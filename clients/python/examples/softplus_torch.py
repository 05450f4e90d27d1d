"""A custom CUDA kernel (softplus, with CuPy's ElementwiseKernel form)
applied to a PyTorch tensor, and the result converted back to a tensor.

Custom kernels run on the CUDA backend only: on the CPU backend this example
says so and exits with status 0. PyTorch is optional: without it the input
is a numpy array. With `make serve` running:

    PYTHONPATH=clients/python python3 clients/python/examples/softplus_torch.py
"""

import argparse
import sys

import numpy as np

import gpuflow

# softplus(x) = log(1 + e^x), computed as x for large x (where e^x would
# overflow and log1p(e^x) == x in float32), as torch.nn.functional.softplus does.
softplus = gpuflow.ElementwiseKernel(
    "T x, float32 threshold", "T y",
    "y = x > threshold ? x : log1p(exp(x))",
    "softplus")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="localhost:50051", help="gpuflowd host:port")
    args = parser.parse_args()

    try:
        import torch
    except ImportError:
        torch = None
    n = 1 << 20
    if torch is not None:
        x = torch.linspace(-10, 30, n)
        if torch.cuda.is_available():
            x = x.cuda()  # uploaded straight from the device tensor's copy
    else:
        print("PyTorch is not installed: using a numpy array instead")
        x = np.linspace(-10, 30, n, dtype=np.float32)

    with gpuflow.connect(args.target) as client, client.session(label="softplus") as s:
        info = client.info()
        print(f"server: {info.backend} ({info.device})")
        y = softplus(s.asarray(x), 20.0)  # a RemoteArray; nothing has run yet
        try:
            out = gpuflow.to_torch(y, device=x.device) if torch is not None else y.get()
        except gpuflow.FailedPreconditionError as err:
            print(f"softplus_torch.py needs the CUDA backend; this server runs on "
                  f"{info.backend!r} ({err.details})")
            return 0

    if torch is not None:
        expected = torch.nn.functional.softplus(x)
        error = (out - expected).abs().max().item()
        reference = "torch.nn.functional.softplus"
    else:
        expected = np.where(x > 20, x, np.logaddexp(0, x.astype(np.float64)))
        error = float(np.abs(out - expected).max())
        reference = "numpy"
    print(f"softplus of {n} values: {type(out).__module__}.{type(out).__name__} "
          f"{tuple(out.shape)} {out.dtype}")
    print(f"max |error| vs {reference}: {error:.3g}")
    return 0 if error < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
