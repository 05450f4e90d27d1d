"""GPU figures for gpuflow beside CuPy and PyTorch, on the same GPU, same run.

Run on a GPU host with gpuflowd already serving the CUDA backend:
    python3 bench/gpu_bench.py --target localhost:50051 --out results.json
GPU times are medians of CUDA-event timings: gpuflow's from the server's own
Benchmark call, CuPy's from cupyx.profiler.benchmark, PyTorch's from
torch.cuda.Event around each call. Every result is checked against a
reference before its time is trusted. A benchmark, not a test.
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np

import gpuflow
from gpuflow.v1 import service_pb2


def gpuflow_bench(session, graph, name, n_repeat=50, n_warmup=5):
    request = service_pb2.BenchmarkRequest(session_id=session.id, graph=graph.proto, name=name,
                                           n_warmup=n_warmup, n_repeat=n_repeat)
    request.max_duration.FromSeconds(20)
    reply = session._stub.Benchmark(request)
    return {
        "gpu_ms": statistics.median(reply.gpu_seconds) * 1e3 if reply.gpu_seconds else None,
        "host_ms": statistics.median(reply.cpu_seconds) * 1e3,
        "repeats": len(reply.cpu_seconds),
        "compile_s": reply.first_run.compile_seconds,
    }


def client_wall(session, graph, outputs, n=20):
    """Client-side wall time of Execute calls storing the outputs (p50, p99)."""
    times = []
    for _ in range(n):
        t = time.perf_counter()
        session.execute(graph, outputs=outputs)
        times.append(time.perf_counter() - t)
    times.sort()
    return {"p50_ms": times[len(times) // 2] * 1e3, "p99_ms": times[int(len(times) * 0.99) - 1] * 1e3}


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", default="localhost:50051")
    parser.add_argument("--out", default="gpu_results.json")
    parser.add_argument("--log2n", type=int, default=28)
    args = parser.parse_args()

    import cupy as cp
    import torch

    results = {"device": torch.cuda.get_device_name(0), "workloads": {}}
    client = gpuflow.connect(args.target, timeout=30)
    info = client.info()
    print("server:", info.backend, info.device, flush=True)
    assert info.backend == "cuda", info.backend
    session = client.session(label="gpu_bench", memory_limit=64 << 30)

    # ---- sqrt(a*a + b*b) * 2 + 1 over 2^28 float32 ----
    n = 1 << args.log2n
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    t = time.perf_counter()
    session.upload(a, name="a", chunk_bytes=4 << 20)
    session.upload(b, name="b", chunk_bytes=4 << 20)
    upload_gbps = 2 * a.nbytes / (time.perf_counter() - t) / 1e9
    g = gpuflow.Graph()
    x, y = g.array("a"), g.array("b")
    out = g.add(g.mul(g.sqrt(g.add(g.mul(x, x), g.mul(y, y))), 2), 1)
    session.execute(g, outputs={"c": out})
    got = session.download("c", chunk_bytes=4 << 20)
    want = np.sqrt(a * a + b * b) * 2 + 1
    np.testing.assert_allclose(got, want, rtol=1e-6)
    ew = gpuflow_bench(session, g, "ew")
    ew.update(client_wall(session, g, {"c": out}))
    ca, cb = cp.asarray(a), cp.asarray(b)
    fused = cp.ElementwiseKernel("float32 a, float32 b", "float32 c",
                                 "c = sqrtf(a * a + b * b) * 2.0f + 1.0f", "ew")
    ew["cupy_elementwise_kernel_ms"] = cupy_time(lambda: fused(ca, cb))
    ew["cupy_eager_ms"] = cupy_time(lambda: cp.sqrt(ca * ca + cb * cb) * 2 + 1)
    ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
    ew["torch_eager_ms"] = torch_time(lambda: torch.sqrt(ta * ta + tb * tb) * 2 + 1)
    compiled = torch.compile(lambda p, q: torch.sqrt(p * p + q * q) * 2 + 1)
    ew["torch_compile_ms"] = torch_time(lambda: compiled(ta, tb))
    ew["gpuflow_effective_tbps"] = 3 * a.nbytes / (ew["gpu_ms"] / 1e3) / 1e12
    results["workloads"]["sqrt(a*a+b*b)*2+1, 2^%d f32" % args.log2n] = ew
    results["upload_gbps_2x1GiB"] = upload_gbps
    print(json.dumps(ew), flush=True)
    session.delete("a")
    session.delete("b")
    session.delete("c")
    del ca, cb, ta, tb

    # ---- reductions and softmax ----
    def reduction(label, *args, **kwargs):
        try:
            run_reduction(label, *args, **kwargs)
        except Exception as e:  # noqa: BLE001 - reported, the run goes on
            results["workloads"][label] = {"error": repr(e)[:500]}
            print(label, "FAILED", repr(e)[:500], flush=True)
            for name in ("r", "ro"):
                try:
                    session.delete(name)
                except gpuflow.Error:
                    pass

    def run_reduction(label, shape, build, torch_fn, cupy_fn, tol=1e-4):
        host = rng.standard_normal(shape, dtype=np.float32)
        session.upload(host, name="r", chunk_bytes=4 << 20)
        g = gpuflow.Graph()
        node = build(g, g.array("r"))
        session.execute(g, outputs={"ro": node})
        got = session.download("ro", chunk_bytes=4 << 20)
        th = torch.as_tensor(host, device="cuda")
        want = torch_fn(th).cpu().numpy()
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.abs(want).max())))
        r = gpuflow_bench(session, g, label)
        r["torch_ms"] = torch_time(lambda: torch_fn(th))
        ch = cp.asarray(host)
        r["cupy_ms"] = cupy_time(lambda: cupy_fn(ch)) if cupy_fn else None
        r["ratio_vs_torch"] = r["gpu_ms"] / r["torch_ms"]
        r["effective_tbps"] = host.nbytes / (r["gpu_ms"] / 1e3) / 1e12
        results["workloads"][label] = r
        print(label, json.dumps(r), flush=True)
        session.delete("r")
        session.delete("ro")
        del th, ch

    reduction("sum, 2^28 f32", (1 << args.log2n,), lambda g, x: g.sum(x),
              lambda t: t.sum(), lambda c: c.sum())
    reduction("sum, 256^3 f32", (256, 256, 256), lambda g, x: g.sum(x),
              lambda t: t.sum(), lambda c: c.sum())
    reduction("sum(axis=-1), (4096, 65536) f32", (4096, 65536), lambda g, x: g.sum(x, axes=[-1]),
              lambda t: t.sum(dim=-1), lambda c: c.sum(axis=-1))
    reduction("sum(axis=0), (4096, 65536) f32", (4096, 65536), lambda g, x: g.sum(x, axes=[0]),
              lambda t: t.sum(dim=0), lambda c: c.sum(axis=0))
    reduction("softmax(axis=-1), (8192, 8192) f32", (8192, 8192),
              lambda g, x: g.softmax(x, axis=-1), lambda t: torch.softmax(t, dim=-1), None, tol=1e-5)

    # ---- matmul 8192^3, float32 and float16 ----
    m = 8192
    for dtype, tol in (("float32", 1e-3), ("float16", 2e-2)):
        ha = (rng.standard_normal((m, m)) / 64).astype(dtype)
        hb = (rng.standard_normal((m, m)) / 64).astype(dtype)
        session.upload(ha, name="ma", chunk_bytes=4 << 20)
        session.upload(hb, name="mb", chunk_bytes=4 << 20)
        g = gpuflow.Graph()
        mm = g.matmul(g.array("ma"), g.array("mb"))
        session.execute(g, outputs={"mc": mm})
        got = session.download("mc", chunk_bytes=4 << 20)
        ta = torch.as_tensor(ha, device="cuda")
        tb = torch.as_tensor(hb, device="cuda")
        torch.backends.cuda.matmul.allow_tf32 = False
        ref = (ta.float() @ tb.float()).cpu().numpy()
        err = np.max(np.abs(got.astype(np.float32) - ref)) / np.max(np.abs(ref))
        assert err < tol, (dtype, err)
        r = gpuflow_bench(session, g, "matmul", n_repeat=20, n_warmup=3)
        r["torch_ms"] = torch_time(lambda: ta @ tb, n_repeat=20, n_warmup=3)
        r["ratio_vs_torch_cublas"] = r["gpu_ms"] / r["torch_ms"]
        r["tflops"] = 2 * m**3 / (r["gpu_ms"] / 1e3) / 1e12
        r["max_rel_err"] = float(err)
        results["workloads"][f"matmul 8192^3 {dtype}"] = r
        print(dtype, json.dumps(r), flush=True)
        session.delete("ma")
        session.delete("mb")
        session.delete("mc")
        del ta, tb

    with open(args.out, "w") as f:
        json.dump(results, f, indent=2)
    print(json.dumps(results, indent=2))
    session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
