"""What RemoteArray ``.get()`` adds to a raw-stub Execute (issue 15): the
10-op elementwise chain of bench/latency_phases.py on its resident float32
array, with the calls interleaved one by one (a raw-stub Execute of the
prebuilt graph request, one of a prepared handle, ``.get()`` of the chain
built afresh, ``.get()`` of one prebuilt expression) so that drift and the
machine's other load fall on all of them alike; then the client's own time
of each step with the session's stub answering a recorded reply (no RPC):
building the chain, ``.get()`` of a chain built before, of a prebuilt one,
and of one built afresh. Prints one JSON object of p50 µs (and writes it to
--out). A benchmark, not a test:

    python3 bench/get_overhead.py --server build/bin/gpuflowd --backend cpu
"""

import argparse
import os
import statistics
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)

import numpy as np  # noqa: E402

import gpu_bench  # noqa: E402, F401 - puts clients/python on sys.path
import gpuflow  # noqa: E402
import latency_phases  # noqa: E402
import service_bench  # noqa: E402
from gpuflow.v1 import service_pb2  # noqa: E402

chain_expression = latency_phases.chain_expression


def _p50_us(values):
    return statistics.median(values) * 1e6


def interleaved(calls, n, warmup):
    """p50 µs of each of ``calls`` ({name: fn}), called in turn n times."""
    times = {name: [] for name in calls}
    for i in range(n + warmup):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            elapsed = time.perf_counter() - start
            if i >= warmup:
                times[name].append(elapsed)
    return {name: _p50_us(t) for name, t in times.items()}, times


def client_only(session, x, n):
    """The client's time of each step (best of 200 rounds of n/200 calls,
    so another process's turn on the cores drops out), the session's stub
    answering the reply it recorded."""
    built = chain_expression(x)
    built.get()
    real = session._stub
    recorded = []

    class Recording:
        def Execute(self, request):  # noqa: N802 - the stub's name
            recorded.append(real.Execute(request))
            return recorded[-1]

    class Answering:
        def Execute(self, request):  # noqa: N802
            return recorded[-1]

    session._stub = Recording()
    try:
        built.get()
        session._stub = Answering()
        per_round = max(1, n // 200)

        def best(step, setup=None):
            fastest = float("inf")
            for _ in range(200):
                made = setup() if setup else None
                start = time.perf_counter()
                for k in range(per_round):
                    step(made[k] if made else None)
                fastest = min(fastest, time.perf_counter() - start)
            return fastest / per_round * 1e6

        chains = lambda: [chain_expression(x) for _ in range(per_round)]  # noqa: E731
        return {
            "build_chain": best(lambda _: chain_expression(x)),
            "get_of_a_chain_built_before": best(lambda c: c.get(), chains),
            "get_prebuilt": best(lambda _: built.get()),
            "build_and_get": best(lambda _: chain_expression(x).get()),
        }
    finally:
        session._stub = real


def measure(target, n, warmup):
    client = gpuflow.connect(target)
    session = client.session(label="get_overhead")
    x_host = np.linspace(0, 1, latency_phases.N_ELEMENTS, dtype=np.float32)
    session.upload(x_host, name="x")
    g, out = latency_phases.chain_graph("x")
    request = service_pb2.ExecuteRequest(session_id=session.id, graph=g.proto)
    request.outputs.add(node=out.id, return_inline=True)
    info = client.stub.PrepareGraph(service_pb2.PrepareGraphRequest(
        session_id=session.id, graph=g.proto, output_nodes=[out.id]))
    by_handle = service_pb2.ExecuteRequest(session_id=session.id, prepared_graph=info.handle)
    by_handle.outputs.add(node=out.id, return_inline=True)
    x = session.array("x")
    built = chain_expression(x)
    stub = client.stub
    p50, times = interleaved({
        "execute_raw": lambda: stub.Execute(request),
        "execute_raw_prepared": lambda: stub.Execute(by_handle),
        "remote_array_get": lambda: chain_expression(x).get(),
        "remote_array_get_prebuilt": built.get,
    }, n, warmup)
    result = {"n": n, "p50_us": p50}
    result["get_minus_raw_us"] = p50["remote_array_get"] - p50["execute_raw"]
    result["prebuilt_minus_raw_us"] = p50["remote_array_get_prebuilt"] - p50["execute_raw"]
    result["p50_of_get_minus_raw_in_pairs_us"] = _p50_us(
        [a - b for a, b in zip(times["remote_array_get"], times["execute_raw"])])
    result["client_only_us"] = client_only(session, x, n)
    want = chain_expression(x_host)
    result["answer_ok"] = all(bool(np.allclose(a, want, rtol=1e-5))
                              for a in (chain_expression(x).get(), built.get()))
    session.close()
    client.close()
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", help="gpuflowd to start (else --target)")
    parser.add_argument("--target")
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--out")
    args = parser.parse_args()
    service_bench.run_standalone(args, lambda target: measure(target, args.n, args.warmup))


if __name__ == "__main__":
    main()
