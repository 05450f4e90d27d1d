"""GPU figures for gpuflow beside CuPy and PyTorch, on the same GPU, same run.

Part of the issue 8 harness (bench/run_gpu.sh runs it with the service
figures); alone, with gpuflowd already serving the CUDA backend:
    python3 bench/gpu_bench.py --target localhost:50051 --out results.json
GPU times are medians of CUDA-event timings: gpuflow's from the server's own
Benchmark call, CuPy's from cupyx.profiler.benchmark, PyTorch's (eager and
torch.compile) from torch.cuda.Event around each call. Every result, of every
tool, is checked against a float64 reference before its time is kept.
Beside the GPU time, each gpuflow row has the server's host time per repeat
and the client's wall time of whole Execute calls (output stored in the
session, not downloaded), p50/p99.

Large inputs are drawn on the server (random_uniform: Philox4x32-10, see
engine/ir/philox.h) and drawn again locally with the same formula (a CuPy
kernel on the GPU, NumPy for small arrays), so no GiB crosses the network;
a strided sample of each is compared bit for bit with the server's, and
the array is downloaded instead when they differ. Without CuPy and PyTorch
(or on the CPU backend, --small) only the gpuflow rows are measured. A
benchmark, not a test.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time
import traceback

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if os.path.join(ROOT, "clients", "python") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "clients", "python"))

import gpuflow  # noqa: E402
from gpuflow.v1 import service_pb2  # noqa: E402

# --------------------------------------------------------------------- timing


def percentile(values, q):
    """Nearest-rank percentile (q in [0, 100]) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def gpuflow_bench(session, graph, name, n_repeat=50, n_warmup=5, output_nodes=(), max_seconds=20):
    """The server's Benchmark RPC: GPU (CUDA events) and host medians, ms."""
    request = service_pb2.BenchmarkRequest(session_id=session.id, graph=graph.proto, name=name,
                                           n_warmup=n_warmup, n_repeat=n_repeat,
                                           output_nodes=list(output_nodes))
    request.max_duration.FromSeconds(max_seconds)
    reply = session._stub.Benchmark(request)
    return {
        "gpu_ms": statistics.median(reply.gpu_seconds) * 1e3 if reply.gpu_seconds else None,
        "host_ms": statistics.median(reply.cpu_seconds) * 1e3,
        "repeats": len(reply.cpu_seconds),
        "compile_s": reply.first_run.compile_seconds,
    }


def client_wall(session, graph, outputs, n=20):
    """Client-side wall time of Execute calls storing the outputs (p50, p99),
    and the server's own total per call (Timings.total_seconds)."""
    times, server = [], []
    for _ in range(n):
        t = time.perf_counter()
        result = session.execute(graph, outputs=outputs)
        times.append(time.perf_counter() - t)
        server.append(result.timings.total_seconds)
    return {"wall_p50_ms": percentile(times, 50) * 1e3, "wall_p99_ms": percentile(times, 99) * 1e3,
            "wall_n": n, "server_total_p50_ms": percentile(server, 50) * 1e3}


def torch_time(fn, n_repeat=50, n_warmup=5):
    import torch

    for _ in range(n_warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(n_repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def cupy_time(fn, n_repeat=50, n_warmup=5):
    from cupyx.profiler import benchmark

    r = benchmark(fn, (), n_repeat=n_repeat, n_warmup=n_warmup)
    return float(np.median(r.gpu_times[0])) * 1e3


# ----------------------------------------------------------- the other tools


class Tools:
    """CuPy and PyTorch when they are here and see a GPU; the reference
    arrays live in `xp` (CuPy, else NumPy)."""

    def __init__(self, use_cupy=True, use_torch=True, use_compile=True):
        self.cp = self.torch = None
        self.notes = []
        if use_cupy:
            try:
                import cupy

                cupy.cuda.runtime.getDeviceCount()
                self.cp = cupy
            except Exception as e:  # noqa: BLE001 - absent or no device: the run goes on
                self.notes.append(f"CuPy not used: {e!r}"[:300])
        if use_torch:
            try:
                import torch

                if not torch.cuda.is_available():
                    raise RuntimeError("torch.cuda.is_available() is False")
                torch.backends.cuda.matmul.allow_tf32 = False
                torch.backends.cudnn.allow_tf32 = False
                torch.set_float32_matmul_precision("highest")
                self.torch = torch
            except Exception as e:  # noqa: BLE001
                self.notes.append(f"PyTorch not used: {e!r}"[:300])
        if self.torch is not None and use_compile:
            try:  # workloads share torch functions: allow their recompiles
                import torch._dynamo

                for attr in ("cache_size_limit", "recompile_limit"):
                    if hasattr(torch._dynamo.config, attr):
                        setattr(torch._dynamo.config, attr, 64)
            except Exception as e:  # noqa: BLE001
                self.notes.append(f"torch._dynamo config not set: {e!r}"[:300])
        self.use_compile = use_compile and self.torch is not None
        self.xp = self.cp if self.cp is not None else np
        self._philox = None

    def versions(self):
        v = {"numpy": np.__version__}
        if self.cp is not None:
            v["cupy"] = self.cp.__version__
            try:
                rt = self.cp.cuda.runtime.runtimeGetVersion()
                v["cupy_cuda_runtime"] = f"{rt // 1000}.{rt % 1000 // 10}"
            except Exception:  # noqa: BLE001
                pass
        if self.torch is not None:
            v["torch"] = self.torch.__version__
            v["torch_cuda"] = self.torch.version.cuda
            v["torch_device"] = self.torch.cuda.get_device_name(0)
        return v

    def to_ref(self, x):
        """Any array (NumPy, CuPy, torch) as an `xp` array."""
        if self.torch is not None and isinstance(x, self.torch.Tensor):
            x = x.detach()
            if x.dtype == self.torch.bfloat16:
                x = x.float()  # exact; neither CuPy nor NumPy has bfloat16
            if self.cp is not None:
                try:
                    return self.cp.from_dlpack(x.contiguous())
                except Exception:  # noqa: BLE001 - fall back to a host copy
                    pass
            return self.xp.asarray(x.cpu().numpy())
        if self.cp is not None:
            return self.cp.asarray(x)
        return np.asarray(x)

    def to_numpy(self, x):
        if self.cp is not None and isinstance(x, self.cp.ndarray):
            return self.cp.asnumpy(x)
        return np.asarray(x)

    def to_torch(self, x):
        if self.cp is not None and isinstance(x, self.cp.ndarray):
            try:
                return self.torch.from_dlpack(x)
            except Exception:  # noqa: BLE001
                x = self.cp.asnumpy(x)
        return self.torch.as_tensor(np.ascontiguousarray(x), device="cuda")

    def philox_uniform(self, n, seed, low, high):
        """random_uniform's float32 draws, made locally (None: too large
        without CuPy)."""
        if self.cp is not None:
            if self._philox is None:
                self._philox = self.cp.ElementwiseKernel(
                    "uint64 seed, float64 low, float64 high", "float32 y", PHILOX_UNIFORM_F32,
                    "gf_philox_uniform", preamble=PHILOX_PREAMBLE_CUDA)
            y = self.cp.empty(n, dtype=self.cp.float32)
            self._philox(np.uint64(seed), float(low), float(high), y)
            return y
        if n <= (1 << 24):
            return philox_uniform_numpy(n, seed, low, high)
        return None

    def sync(self):
        if self.cp is not None:
            self.cp.cuda.Device().synchronize()
        if self.torch is not None:
            self.torch.cuda.synchronize()

    def free(self):
        self.sync()
        if self.cp is not None:
            self.cp.get_default_memory_pool().free_all_blocks()
        if self.torch is not None:
            self.torch.cuda.empty_cache()


# Philox4x32-10 and the float32 conversion of engine/ir/philox.h
# (UniformAt, 24-bit form). `i` is the flat element index; the products and
# sum round as the server's (no contraction into an FMA).
PHILOX_PREAMBLE_CUDA = "#define GF_DMUL(a, b) __dmul_rn(a, b)\n#define GF_DADD(a, b) __dadd_rn(a, b)\n"
PHILOX_UNIFORM_F32 = r"""
unsigned long long gf_ctr = (unsigned long long)i;
unsigned int c0 = (unsigned int)gf_ctr, c1 = (unsigned int)(gf_ctr >> 32), c2 = 0u, c3 = 0u;
unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
for (int gf_round = 0; gf_round < 10; ++gf_round) {
  unsigned long long p0 = 0xD2511F53ull * c0;
  unsigned long long p1 = 0xCD9E8D57ull * c2;
  unsigned int n0 = (unsigned int)(p1 >> 32) ^ c1 ^ k0;
  unsigned int n1 = (unsigned int)p1;
  unsigned int n2 = (unsigned int)(p0 >> 32) ^ c3 ^ k1;
  unsigned int n3 = (unsigned int)p0;
  c0 = n0; c1 = n1; c2 = n2; c3 = n3;
  k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
}
float gf_u = (float)(c0 >> 8) * 5.9604644775390625e-08f;
y = (float)GF_DADD(low, GF_DMUL(high - low, (double)gf_u));
"""


def philox_uniform_numpy(n, seed, low, high, block=1 << 22):
    """The same draws in NumPy (slow: for small arrays and tests)."""
    m32 = np.uint64(0xFFFFFFFF)
    out = np.empty(n, dtype=np.float32)
    for start in range(0, n, block):
        i = np.arange(start, min(n, start + block), dtype=np.uint64)
        c0, c1 = i & m32, i >> np.uint64(32)
        c2 = c3 = np.zeros_like(i)
        k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64((seed >> 32) & 0xFFFFFFFF)
        for _ in range(10):
            p0, p1 = c0 * np.uint64(0xD2511F53), c2 * np.uint64(0xCD9E8D57)
            c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & m32,
                              (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & m32)
            k0, k1 = (k0 + np.uint64(0x9E3779B9)) & m32, (k1 + np.uint64(0xBB67AE85)) & m32
        u = ((c0 >> np.uint64(8)).astype(np.float32) * np.float32(2.0**-24)).astype(np.float64)
        out[start : start + len(i)] = (low + (high - low) * u).astype(np.float32)
    return out


def round_to_bfloat16(xp, a):
    """float32 values rounded to bfloat16's (to nearest, ties to even; no
    NaN here), still float32: what the server's cast gives, for the
    references and torch (NumPy and CuPy have no bfloat16)."""
    bits = xp.ascontiguousarray(a, dtype=xp.float32).view(xp.uint32)
    bits = (bits + xp.uint32(0x7FFF) + ((bits >> xp.uint32(16)) & xp.uint32(1))) & xp.uint32(
        0xFFFF0000)
    return bits.view(xp.float32)


# ------------------------------------------------------------------ workloads


class Input:
    """An input array. Drawn on the server with random_uniform on [low, high)
    (float32, then cast), or, with host=True, drawn here (standard normal)
    and uploaded. Ranges of width 2^k starting at a multiple of the step keep
    every draw exact in float32."""

    def __init__(self, name, shape, dtype="float32", low=-1.0, high=1.0, seed=1, host=False):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype
        self.low, self.high, self.seed, self.host = float(low), float(high), seed, host

    @property
    def size(self):
        return math.prod(self.shape)

    def describe(self):
        how = "host normal" if self.host else f"uniform[{self.low:g}, {self.high:g})"
        return f"{self.name}: {self.dtype}{list(self.shape)} {how}"


class Workload:
    """One row. gpuflow/cupy map a variant name to a builder; the first is
    the row's figure (CuPy: the fastest variant). torch builds one callable,
    run eager and through torch.compile."""

    def __init__(self, key, label, inputs, reference, gpuflow, cupy=None, torch=None, rtol=1e-5,
                 atol=0.0, check="allclose", bytes_moved=None, flops=None, n_repeat=50, n_warmup=5,
                 out_dtype=None):
        self.key, self.label, self.inputs, self.reference = key, label, inputs, reference
        # "bfloat16": gpuflow's result comes back as raw words.
        self.out_dtype = out_dtype
        self.gpuflow, self.cupy, self.torch = gpuflow, cupy or {}, torch
        self.rtol, self.atol, self.check = rtol, atol, check
        self.bytes_moved, self.flops = bytes_moved, flops
        self.n_repeat, self.n_warmup = n_repeat, n_warmup


def graph_variant(build):
    """build(graph, *array_nodes) -> node."""

    def make(session, names):
        g = gpuflow.Graph()
        return g, build(g, *[g.array(n) for n in names])

    return make


def array_variant(build):
    """build(*RemoteArrays) -> RemoteArray (the CuPy-style API, custom kernels)."""

    def make(session, names):
        out = build(*[session.array(n) for n in names])
        g, nodes = gpuflow.to_graph(out)
        return g, nodes[0]

    return make


SOFTPLUS = ("T x, float64 threshold", "T y", "y = (x > threshold) ? x : log1p(exp(x))", "softplus")
L2NORM = ("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")


def pow2_label(n):
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)


def workloads(small=False):
    n = 1 << (20 if small else 28)
    cube = 32 if small else 256
    rows, cols = (256, 4096) if small else (4096, 65536)
    sm = 256 if small else 8192
    mm = 256 if small else 8192
    sp = 100 if small else 1000
    long_rows, long_len = (4, 1 << 16) if small else (64, 1 << 20)
    n2 = pow2_label(n)
    ns = 1 << (16 if small else 26)  # sort of 2^26 float32 (issue 19)
    ar = 256 if small else 4096  # argsort of (4096, 4096) rows
    # Issue 19 items 1-2: reductions broadcast back into their rows, scans.
    ln = (256, 512) if small else (16384, 4096)
    lnb = (128, 1024) if small else (4096, 16384)
    ce = 256 if small else 8192
    sd = (512, 256) if small else (32768, 2048)

    def cupy_ew(cp):
        k = cp.ElementwiseKernel("float32 a, float32 b", "float32 c",
                                 "c = sqrtf(a * a + b * b) * 2.0f + 1.0f", "gf_bench_ew")
        return lambda a, b: k(a, b)

    def cupy_softplus(cp):
        k = cp.ElementwiseKernel(*SOFTPLUS)
        return lambda x: k(x, 20.0)

    def cupy_l2norm(cp):
        k = cp.ReductionKernel(*L2NORM)
        return lambda a: k(a, axis=1)

    def cupy_softmax(cp, axis=-1):
        def softmax(x):
            e = cp.exp(x - x.max(axis=axis, keepdims=True))
            return e / e.sum(axis=axis, keepdims=True)

        return softmax

    def ref_softmax(xp, x, axis=-1):
        e = xp.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    def softmax_workload(key, label, shape, axis, seed):
        size = shape[0] * shape[1]
        return Workload(
            key, label, [Input("x", shape, low=-8.0, high=8.0, seed=seed)],
            lambda xp, x: ref_softmax(xp, x, axis),
            gpuflow={"graph": graph_variant(lambda g, x: g.softmax(x, axis=axis))},
            cupy={"exp/max/sum": lambda cp: cupy_softmax(cp, axis)},
            torch=lambda torch: lambda x: torch.softmax(x, dim=axis),
            rtol=1e-4, atol=1e-10, bytes_moved=2 * 4 * size)

    def ref_softplus(xp, x):
        return xp.where(x > 20.0, x, xp.log1p(xp.exp(xp.minimum(x, 20.0))))

    def torch_softplus(torch):
        return lambda x: torch.nn.functional.softplus(x, beta=1.0, threshold=20.0)

    gf_softplus = gpuflow.ElementwiseKernel(*SOFTPLUS)
    gf_l2norm = gpuflow.ReductionKernel(*L2NORM)

    def softplus_workload(key, shape, seed):
        size = math.prod(shape)
        label = f"softplus kernel, {pow2_label(size) if len(shape) == 1 else shape} f32"
        return Workload(
            key, label, [Input("x", shape, low=-32.0, high=32.0, seed=seed)], ref_softplus,
            gpuflow={
                "ElementwiseKernel": array_variant(lambda x: gf_softplus(x, 20.0)),
                "graph where/log1p/exp": graph_variant(
                    lambda g, x: g.where(g.gt(x, 20.0), x, g.log1p(g.exp(x)))),
            },
            cupy={"ElementwiseKernel": cupy_softplus}, torch=torch_softplus,
            rtol=1e-5, atol=1e-6, bytes_moved=2 * 4 * size)

    def matmul_workload(dtype):
        size = 2 if dtype == "float16" else 4
        return Workload(
            f"matmul_{dtype}", f"matmul {mm}^3 {dtype}",
            [Input("a", (mm, mm), dtype, seed=51), Input("b", (mm, mm), dtype, seed=52)],
            lambda xp, a, b: a @ b,
            gpuflow={"graph": graph_variant(lambda g, a, b: g.matmul(a, b))},
            cupy={"matmul": lambda cp: lambda a, b: cp.matmul(a, b)},
            torch=lambda torch: lambda a, b: a @ b,
            rtol=1e-3 if dtype == "float32" else 2e-2, check="maxrel",
            bytes_moved=3 * size * mm * mm, flops=2 * mm**3, n_repeat=20, n_warmup=3)

    def sum_workload(key, label, shape, axes, seed):
        size = math.prod(shape)
        out = size // math.prod(shape[a] for a in axes) if axes else 1
        numpy_axis = None if axes is None else tuple(axes)
        return Workload(
            key, label, [Input("x", shape, low=0.0, high=1.0, seed=seed)],
            lambda xp, x: x.sum(axis=numpy_axis),
            gpuflow={"graph": graph_variant(
                lambda g, x: g.sum(x) if axes is None else g.sum(x, axes=list(axes)))},
            cupy={"sum": lambda cp: lambda x: x.sum(axis=numpy_axis)},
            torch=lambda torch: ((lambda x: x.sum()) if axes is None else (lambda x: x.sum(dim=axes))),
            rtol=1e-4, atol=1e-6, bytes_moved=4 * (size + out))

    def layer_norm(xp, x, g, b):
        c = x - x.mean(axis=-1, keepdims=True)
        return c / xp.sqrt((c * c).mean(axis=-1, keepdims=True) + 1e-5) * g + b

    def rows_workload(key, label, shape, fn, torch_fn, out_rows=False, seed=0):
        size = math.prod(shape)
        return Workload(
            key, label, [Input("x", shape, low=0.0, high=1.0, seed=seed)], fn,
            gpuflow={"array API": array_variant(lambda x: fn(gpuflow, x))},
            cupy={"eager": lambda cp: lambda x: fn(cp, x)}, torch=torch_fn,
            rtol=1e-3, atol=1e-5, bytes_moved=4 * (size + (shape[0] if out_rows else size)))

    def compress_variant(session, names):
        # The selection's length is learnt first, as x[x > 0] does (one
        # Execute, not timed); the timed graph compares, compacts and gathers.
        count = int(gpuflow.count_nonzero(session.array(names[0]) > 0).get())
        g = gpuflow.Graph()
        x = g.array(names[0])
        return g, g.take(x, g.flatnonzero(g.gt(x, 0.0), size=count))

    return [
        Workload(
            "ew", f"sqrt(a*a+b*b)*2+1, {n2} f32",
            [Input("a", (n,), seed=11), Input("b", (n,), seed=12)],
            lambda xp, a, b: xp.sqrt(a * a + b * b) * 2 + 1,
            gpuflow={"graph": graph_variant(
                lambda g, a, b: g.add(g.mul(g.sqrt(g.add(g.mul(a, a), g.mul(b, b))), 2), 1))},
            cupy={
                "ElementwiseKernel": cupy_ew,
                "fuse": lambda cp: cp.fuse(lambda a, b: cp.sqrt(a * a + b * b) * 2 + 1),
                "eager": lambda cp: lambda a, b: cp.sqrt(a * a + b * b) * 2 + 1,
            },
            torch=lambda torch: lambda a, b: torch.sqrt(a * a + b * b) * 2 + 1,
            rtol=1e-5, bytes_moved=3 * 4 * n),
        sum_workload("sum_flat", f"sum, {n2} f32", (n,), None, 21),
        sum_workload("sum_cube", f"sum, {cube}^3 f32", (cube, cube, cube), None, 22),
        sum_workload("sum_rows", f"sum(axis=-1), ({rows}, {cols}) f32", (rows, cols), (1,), 23),
        sum_workload("sum_cols", f"sum(axis=0), ({rows}, {cols}) f32", (rows, cols), (0,), 24),
        Workload(
            "softmax", f"softmax(axis=-1), ({sm}, {sm}) f32",
            [Input("x", (sm, sm), low=-8.0, high=8.0, seed=41)], ref_softmax,
            gpuflow={"graph": graph_variant(lambda g, x: g.softmax(x, axis=-1))},
            cupy={"exp/max/sum": cupy_softmax},
            torch=lambda torch: lambda x: torch.softmax(x, dim=-1),
            rtol=1e-4, atol=1e-10, bytes_moved=2 * 4 * sm * sm),
        softmax_workload("softmax_cols", f"softmax(axis=0), ({sm}, {sm}) f32", (sm, sm), 0, 42),
        softmax_workload("softmax_long", f"softmax(axis=-1), ({long_rows}, {long_len}) f32",
                         (long_rows, long_len), -1, 43),
        matmul_workload("float32"),
        matmul_workload("float16"),
        softplus_workload("softplus_small", (sp, sp), 61),
        softplus_workload("softplus_big", (n,), 62),
        Workload(
            "norms_f64", "sqrt(sum(a**2, axis=-1)), (256, 1024) f64",
            [Input("a", (256, 1024), "float64", seed=71, host=True)],
            lambda xp, a: xp.sqrt(xp.sum(a**2, axis=-1)),
            gpuflow={
                "array API": array_variant(lambda a: gpuflow.sqrt(gpuflow.sum(a**2, axis=-1))),
                "ReductionKernel": array_variant(lambda a: gf_l2norm(a, axis=1)),
            },
            cupy={"eager": lambda cp: lambda a: cp.sqrt(cp.sum(a**2, axis=-1)),
                  "ReductionKernel": cupy_l2norm},
            torch=lambda torch: lambda a: torch.sqrt((a**2).sum(dim=-1)),
            rtol=1e-12, bytes_moved=8 * 256 * 1025),
        Workload(
            "compress", f"x[x > 0] (50% kept), {n2} f32", [Input("x", (n,), seed=81)],
            lambda xp, x: x[x > 0],
            gpuflow={"graph gt/flatnonzero/take": compress_variant},
            cupy={"x[x > 0]": lambda cp: lambda x: x[x > 0]},
            torch=lambda torch: lambda x: x[x > 0],
            rtol=0.0, bytes_moved=4 * n + 4 * (n // 2)),
        Workload(
            "sort", f"sort, {pow2_label(ns)} f32", [Input("x", (ns,), seed=91)],
            lambda xp, x: xp.sort(x),
            gpuflow={"graph": graph_variant(lambda g, x: g.sort(x))},
            cupy={"sort": lambda cp: lambda x: cp.sort(x)},
            torch=lambda torch: lambda x: torch.sort(x, stable=True).values,
            rtol=0.0, bytes_moved=2 * 4 * ns),
        Workload(
            # Edges k/128 - 1 and draws on [-1, 1) are exact in float32: every
            # tool bins alike (torch.histc returns float32 counts).
            "histogram", f"histogram, 256 bins, {n2} f32", [Input("x", (n,), seed=93)],
            lambda xp, x: xp.histogram(x, bins=256, range=(-1.0, 1.0))[0],
            gpuflow={"array API": array_variant(
                lambda x: gpuflow.histogram(x, bins=256, range=(-1.0, 1.0))[0])},
            cupy={"histogram": lambda cp: lambda x: cp.histogram(x, bins=256,
                                                                 range=(-1.0, 1.0))[0]},
            torch=lambda torch: lambda x: torch.histc(x, bins=256, min=-1.0, max=1.0),
            rtol=0.0, bytes_moved=4 * n),
        Workload(
            "argsort_rows", f"argsort(axis=-1), ({ar}, {ar}) f32", [Input("x", (ar, ar), seed=92)],
            lambda xp, x: xp.argsort(x, axis=-1, kind="stable"),
            gpuflow={"graph": graph_variant(lambda g, x: g.argsort(x, axis=-1))},
            cupy={"argsort": lambda cp: lambda x: cp.argsort(x, axis=-1)},
            torch=lambda torch: lambda x: torch.argsort(x, dim=-1, stable=True),
            rtol=0.0, bytes_moved=(4 + 8) * ar * ar),
        Workload(
            "layernorm", f"layer norm, {ln} f32",
            [Input("x", ln, low=-4.0, high=4.0, seed=101), Input("g", (ln[1],), seed=102),
             Input("b", (ln[1],), seed=103)],
            layer_norm,
            gpuflow={"array API": array_variant(lambda x, g, b: layer_norm(gpuflow, x, g, b))},
            cupy={"eager": lambda cp: lambda x, g, b: layer_norm(cp, x, g, b)},
            torch=lambda torch: lambda x, g, b: torch.nn.functional.layer_norm(
                x, (x.shape[-1],), g, b, 1e-5),
            rtol=1e-3, atol=1e-4, bytes_moved=4 * (2 * math.prod(ln) + 2 * ln[1])),
        Workload(
            # Issue 19's bfloat16 row: gpuflow rounds each step to bfloat16
            # as NumPy's dtype rules say; torch's layer_norm computes in
            # float32 inside (hence the loose check). CuPy has no bfloat16.
            "layernorm_bf16", f"layer norm, {lnb} bf16",
            [Input("x", lnb, "bfloat16", low=-4.0, high=4.0, seed=108),
             Input("g", (lnb[1],), "bfloat16", seed=109),
             Input("b", (lnb[1],), "bfloat16", seed=110)],
            layer_norm,
            gpuflow={"array API": array_variant(lambda x, g, b: layer_norm(gpuflow, x, g, b))},
            torch=lambda torch: lambda x, g, b: torch.nn.functional.layer_norm(
                x, (x.shape[-1],), g, b, 1e-5),
            rtol=5e-2, atol=5e-2, bytes_moved=2 * (2 * math.prod(lnb) + 2 * lnb[1]),
            out_dtype="bfloat16"),
        rows_workload("center", f"x - x.mean(axis=-1, keepdims=True), ({ce}, {ce}) f32", (ce, ce),
                      lambda xp, x: x - x.mean(axis=-1, keepdims=True),
                      lambda torch: lambda x: x - x.mean(dim=-1, keepdim=True), seed=104),
        rows_workload("std_rows", f"std(axis=-1, ddof=1), {sd} f32", sd,
                      lambda xp, x: x.std(axis=-1, ddof=1),
                      lambda torch: lambda x: x.std(dim=-1, correction=1), out_rows=True,
                      seed=105),
        rows_workload("cumsum_flat", f"cumsum, {n2} f32", (n,), lambda xp, x: xp.cumsum(x),
                      lambda torch: lambda x: torch.cumsum(x, 0), seed=106),
        rows_workload("cumsum_rows", f"cumsum(axis=-1), ({rows}, {cols}) f32", (rows, cols),
                      lambda xp, x: xp.cumsum(x, axis=-1),
                      lambda torch: lambda x: torch.cumsum(x, -1), seed=107),
    ]


# ------------------------------------------------------------------- running


def short_error(e):
    return f"{type(e).__name__}: {e}"[:600]


def check_result(tools, w, got, ref):
    """Compares `got` with the float64 reference; raises AssertionError."""
    xp = tools.xp
    g = tools.to_ref(got).astype(xp.float64)
    if tuple(g.shape) != tuple(ref.shape):
        raise AssertionError(f"shape {tuple(g.shape)}, expected {tuple(ref.shape)}")
    err = xp.abs(g - ref)
    max_err = float(err.max()) if err.size else 0.0
    if w.check == "maxrel":
        scale = float(xp.abs(ref).max())
        rel = max_err / scale if scale else max_err
        if not rel <= w.rtol:
            raise AssertionError(f"max |error| / max |reference| = {rel:.3g} > {w.rtol:g}")
        return {"ok": True, "max_rel_err": rel}
    bad = ~(err <= w.atol + w.rtol * xp.abs(ref))
    n_bad = int(bad.sum())
    if n_bad:
        raise AssertionError(f"{n_bad} of {g.size} elements beyond rtol={w.rtol:g} atol={w.atol:g} "
                             f"(max |error| {max_err:.3g})")
    return {"ok": True, "max_abs_err": max_err}


class Runner:
    """Runs workloads against one gpuflowd session and the local tools."""

    def __init__(self, session, tools, small=False, deadline=None, wall_seconds=1.5, log=print):
        self.session, self.tools, self.small = session, tools, small
        self.deadline = deadline
        self.wall_seconds = wall_seconds
        self.log = log
        self.downloaded_inputs = 0  # inputs not drawn locally (a slower setup)
        self.compile_failures = 0  # torch.compile errors in a row

    def time_left(self):
        return math.inf if self.deadline is None else self.deadline - time.monotonic()

    # -- inputs ---------------------------------------------------------------

    def make_inputs(self, w):
        """Creates w's inputs on the server; returns their local copies."""
        s, tools = self.session, self.tools
        drawn = [i for i in w.inputs if not i.host]
        if drawn:
            g = gpuflow.Graph()
            outs = {}
            for i in drawn:
                node = g.random_uniform(shape=list(i.shape), seed=i.seed, low=i.low, high=i.high,
                                        dtype="float32")
                outs[i.name] = node if i.dtype == "float32" else g.cast(node, dtype=i.dtype)
            s.execute(g, outputs=outs)
        local = []
        for i in w.inputs:
            if i.host:
                host = np.random.default_rng(i.seed).standard_normal(i.shape).astype(i.dtype)
                s.upload(host, name=i.name, chunk_bytes=4 << 20)
                local.append(tools.xp.asarray(host))
                continue
            arr = None
            try:
                flat = tools.philox_uniform(i.size, i.seed, i.low, i.high)
                if flat is not None and i.dtype == "bfloat16":
                    arr = round_to_bfloat16(tools.xp, flat).reshape(i.shape)
                    if not self.same_as_server(i, arr):
                        raise ValueError(f"{i.name}: local bfloat16 draws differ from the server's")
                elif flat is not None:
                    arr = flat.astype(i.dtype).reshape(i.shape)
                    if not self.same_as_server(i, arr):
                        self.log(f"  {i.name}: local draws differ from the server's; downloading it")
                        arr = None
            except Exception as e:  # noqa: BLE001 - the download below still works
                self.log(f"  {i.name}: local draws failed ({short_error(e)}); downloading it")
                traceback.print_exc()
                arr = None
            if arr is None:
                host = s.download(i.name, chunk_bytes=4 << 20)
                if i.dtype == "bfloat16":  # raw words, as float32 for the references
                    host = gpuflow.bfloat16_to_float32(host)
                arr = tools.xp.asarray(host)
                self.downloaded_inputs += 1
            local.append(arr)
        return local

    def same_as_server(self, i, arr, samples=1 << 16):
        """A strided sample and the tail of the server's array, bit for bit."""
        n = i.size
        step = max(1, n // samples)
        tail = min(n, 4096)
        g = gpuflow.Graph()
        flat = g.reshape(g.array(i.name), shape=[n])
        got = self.session.execute(g, outputs=[
            g.slice(flat, starts=[0], stops=[n], steps=[step]),
            g.slice(flat, starts=[n - tail], stops=[n])])
        mine = self.tools.to_numpy(arr.reshape(-1)[::step]), self.tools.to_numpy(arr.reshape(-1)[n - tail:])
        if i.dtype == "bfloat16":  # the server's words against these values' top halves
            mine = tuple((np.ascontiguousarray(m).view(np.uint32) >> 16).astype(np.uint16)
                         for m in mine)
        return all(a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
                   for a, b in zip(got, mine))

    # -- one workload ---------------------------------------------------------

    def run(self, w):
        entry = {"label": w.label, "inputs": [i.describe() for i in w.inputs],
                 "bytes_moved": w.bytes_moved, "flops": w.flops}
        t0 = time.perf_counter()
        names = [i.name for i in w.inputs]
        try:
            local = self.make_inputs(w)
            xp = self.tools.xp
            ref = w.reference(xp, *[a.astype(xp.float64) for a in local])
            entry["setup_s"] = time.perf_counter() - t0
        except Exception as e:  # noqa: BLE001 - reported, the run goes on
            entry["error"] = "inputs: " + short_error(e)
            self.log(f"  inputs FAILED: {entry['error']}")
            traceback.print_exc()
            self.cleanup(names)
            return entry
        entry["gpuflow"] = {name: self.run_gpuflow(w, name, make, names, ref)
                            for name, make in w.gpuflow.items()}
        if self.tools.cp is not None and w.cupy:
            entry["cupy"] = {name: self.run_other(w, "cupy", make, local, ref, name)
                             for name, make in w.cupy.items()}
        if self.tools.torch is not None and w.torch is not None:
            targs = [self.tools.to_torch(a) for a in local]
            targs = [t.to(self.tools.torch.bfloat16) if i.dtype == "bfloat16" else t
                     for t, i in zip(targs, w.inputs)]
            entry["torch"] = {"eager": self.run_other(w, "torch", w.torch, targs, ref, "eager")}
            if self.compile_failures >= 2:
                entry["torch"]["compile"] = {"skipped": "torch.compile failed on two workloads in a row"}
            elif self.tools.use_compile and self.time_left() > 20:
                r = self.run_other(w, "torch", w.torch, targs, ref, "compile")
                entry["torch"]["compile"] = r
                # A broken toolchain (no compiler for Triton...) fails every
                # time, slowly: stop trying after two failures in a row.
                failed = "error" in r and not r["error"].startswith("AssertionError")
                self.compile_failures = self.compile_failures + 1 if failed else 0
            elif self.tools.use_compile:
                entry["torch"]["compile"] = {"skipped": "time budget"}
            del targs
        del local, ref
        self.cleanup(names + ["out"])
        entry["total_s"] = time.perf_counter() - t0
        return entry

    def cleanup(self, names):
        for name in names:
            try:
                self.session.delete(name)
            except gpuflow.Error:
                pass
        try:
            self.tools.free()
        except Exception:  # noqa: BLE001
            pass

    def run_gpuflow(self, w, name, make, names, ref):
        s = self.session
        r = {}
        try:
            graph, node = make(s, names)
            t = time.perf_counter()
            first = s.execute(graph, outputs={"out": node})
            r["first_execute_s"] = time.perf_counter() - t
            r["first_compile_s"] = first.timings.compile_seconds
            got = s.download("out", chunk_bytes=4 << 20)
            if w.out_dtype == "bfloat16":
                got = gpuflow.bfloat16_to_float32(got)
            r["check"] = check_result(self.tools, w, got, ref)
            r.update(gpuflow_bench(s, graph, f"{w.key}/{name}", n_repeat=w.n_repeat,
                                   n_warmup=w.n_warmup,
                                   output_nodes=[node.id] if node.id is not None else ()))
            t = time.perf_counter()
            s.execute(graph, outputs={"out": node})
            once = time.perf_counter() - t
            calls = int(min(300 if not self.small else 50, max(20, self.wall_seconds / max(once, 1e-5))))
            r.update(client_wall(s, graph, {"out": node}, n=calls))
            gbps = r["gpu_ms"] or r["host_ms"]
            if w.bytes_moved and gbps:
                r["effective_tbps"] = w.bytes_moved / (gbps / 1e3) / 1e12
            if w.flops and gbps:
                r["tflops"] = w.flops / (gbps / 1e3) / 1e12
        except gpuflow.FailedPreconditionError as e:
            r = {"skipped": short_error(e)}
        except Exception as e:  # noqa: BLE001
            r["error"] = short_error(e)
            traceback.print_exc()
        self.log(f"  gpuflow {name}: {json.dumps(r)}")
        return r

    def run_other(self, w, tool, make, args, ref, name):
        """A CuPy variant or torch eager/compile: check once, then time."""
        r = {}
        try:
            if tool == "cupy":
                fn = make(self.tools.cp)
                timer = cupy_time
            else:
                fn = make(self.tools.torch)
                if name == "compile":
                    fn = self.tools.torch.compile(fn, dynamic=False)
                timer = torch_time
            t = time.perf_counter()
            out = fn(*args)
            self.tools.sync()
            r["first_call_s"] = time.perf_counter() - t
            r["check"] = check_result(self.tools, w, out, ref)
            del out
            r["gpu_ms"] = timer(lambda: fn(*args), n_repeat=w.n_repeat, n_warmup=w.n_warmup)
        except Exception as e:  # noqa: BLE001
            r["error"] = short_error(e)
            traceback.print_exc()
        self.log(f"  {tool} {name}: {json.dumps(r)}")
        return r

    def run_all(self, wls, on_result=None):
        results = {}
        for w in wls:
            if self.time_left() < 0:
                results[w.key] = {"label": w.label, "skipped": "time budget"}
                self.log(f"{w.label}: skipped (time budget)")
                continue
            self.log(f"{w.label}:")
            results[w.key] = self.run(w)
            if on_result:
                on_result(results)
        return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="localhost:50051")
    parser.add_argument("--out", default="gpu_results.json")
    parser.add_argument("--small", action="store_true", help="tiny sizes (to try the script)")
    parser.add_argument("--only", help="comma-separated workload keys")
    parser.add_argument("--no-cupy", action="store_true")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--budget", type=float, help="seconds; later workloads are skipped")
    args = parser.parse_args()

    tools = Tools(not args.no_cupy, not args.no_torch, not args.no_compile)
    for note in tools.notes:
        print(note, flush=True)
    client = gpuflow.connect(args.target, timeout=30)
    info = client.info()
    print("server:", info.backend, info.device, flush=True)
    wls = workloads(args.small)
    if args.only:
        keys = args.only.split(",")
        wls = [w for w in wls if w.key in keys]
    deadline = time.monotonic() + args.budget if args.budget else None
    results = {"server": {"backend": info.backend, "device": info.device, "version": info.version},
               "versions": tools.versions(), "notes": tools.notes}
    with client.session(label="gpu_bench", memory_limit=64 << 30) as session:
        runner = Runner(session, tools, small=args.small, deadline=deadline,
                        log=lambda m: print(m, flush=True))
        results["workloads"] = runner.run_all(wls)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
