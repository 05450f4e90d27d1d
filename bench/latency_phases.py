"""Where a small Execute's time goes (issue 15): one client, one session,
a 10-op elementwise chain on a resident 4096-element float32 array (16 KiB
inline result), sent N times as

- KeepAlive through the raw stub (the floor for our own server),
- Execute through the raw stub with a prebuilt request,
- the same request serialised once and sent as bytes (so the Python
  client's serialising of the message, tens of microseconds for this graph,
  is left out: what remains is the server's and gRPC's),
- the same graph through ``Session.execute``,
- the same graph prepared once (PrepareGraph) and run by handle through the
  raw stub,
- the same expression as RemoteArrays, ``.get()`` (built afresh each time;
  the client sends it by the handle of a prepared graph after the first),
- ``.get()`` of one prebuilt expression, and of a ``gpuflow.fuse``
  function,

with p50/p99 of each and, for the raw-stub Executes, p50 of every phase the
server reports in ``Timings``. Prints one JSON object (and writes it to
--out). A benchmark, not a test:

    python3 bench/latency_phases.py --server build/bin/gpuflowd --backend cpu
"""

import argparse
import os
import sys

import grpc

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)

import numpy as np  # noqa: E402

import gpu_bench  # noqa: E402 - also puts clients/python on sys.path
import gpuflow  # noqa: E402
import service_bench  # noqa: E402
from gpuflow.v1 import service_pb2  # noqa: E402

latency = service_bench.latency

OPS = 10
N_ELEMENTS = 4096


def chain_graph(name):
    """x*1.0001+0.5, alternating mul and add, OPS ops in all."""
    g = gpuflow.Graph()
    node = g.array(name)
    for i in range(OPS):
        node = g.mul(node, 1.0001) if i % 2 == 0 else g.add(node, 0.5)
    return g, node


def chain_expression(x):
    for i in range(OPS):
        x = x * 1.0001 if i % 2 == 0 else x + 0.5
    return x


PHASES = ("queue_seconds", "convert_seconds", "validate_seconds", "plan_seconds", "run_seconds",
          "transfer_seconds", "reply_seconds", "total_seconds", "gpu_seconds")


def phases_of(timings, fields):
    """p50 µs of every Timings phase over ``timings``."""
    phases = {}
    for phase in PHASES:
        if phase not in fields:
            continue
        values = [getattr(t, phase) for t in timings
                  if phase != "gpu_seconds" or t.HasField("gpu_seconds")]
        if values:
            phases[phase.replace("_seconds", "_p50_us")] = gpu_bench.percentile(values, 50) * 1e6
    return phases


def measure(target, n, warmup):
    client = gpuflow.connect(target)
    session = client.session(label="latency_phases")
    x_host = np.linspace(0, 1, N_ELEMENTS, dtype=np.float32)
    session.upload(x_host, name="x")
    g, out = chain_graph("x")
    request = service_pb2.ExecuteRequest(session_id=session.id, graph=g.proto)
    request.outputs.add(node=out.id, return_inline=True)
    stub = client.stub
    keep = service_pb2.KeepAliveRequest(session_id=session.id)
    replies = []

    def raw_execute():
        replies.append(stub.Execute(request))

    request_bytes = request.SerializeToString()
    bytes_channel = grpc.insecure_channel(target)
    execute_bytes = bytes_channel.unary_unary(
        "/gpuflow.v1.GpuFlow/Execute", request_serializer=None,
        response_deserializer=service_pb2.ExecuteResponse.FromString)
    bytes_replies = []
    result = {
        "keepalive_raw": latency(lambda: stub.KeepAlive(keep), n, warmup),
        "execute_raw": latency(raw_execute, n, warmup),
        "execute_raw_bytes": latency(lambda: bytes_replies.append(execute_bytes(request_bytes)),
                                     n, warmup),
        "execute_session": latency(lambda: session.execute(g, [out]), n, warmup),
    }
    bytes_channel.close()
    timings = [r.timings for r in replies[warmup:]]
    fields = {f.name for f in service_pb2.Timings.DESCRIPTOR.fields}
    prepared_replies = []
    if hasattr(service_pb2, "PrepareGraphRequest"):
        info = stub.PrepareGraph(service_pb2.PrepareGraphRequest(
            session_id=session.id, graph=g.proto, output_nodes=[out.id]))
        by_handle = service_pb2.ExecuteRequest(session_id=session.id,
                                               prepared_graph=info.handle)
        by_handle.outputs.add(node=out.id, return_inline=True)
        result["execute_raw_prepared"] = latency(
            lambda: prepared_replies.append(stub.Execute(by_handle)), n, warmup)
    x = session.array("x")
    result["remote_array_get"] = latency(lambda: chain_expression(x).get(), n, warmup)
    built = chain_expression(x)
    result["remote_array_get_prebuilt"] = latency(built.get, n, warmup)
    if hasattr(gpuflow, "fuse"):
        fused = gpuflow.fuse(chain_expression)
        result["fused_get"] = latency(lambda: fused(x).get(), n, warmup)
    result["server_phases"] = phases_of(timings, fields)
    if prepared_replies:
        result["server_phases_prepared"] = phases_of(
            [r.timings for r in prepared_replies[warmup:]], fields)
        result["get_minus_raw_us"] = (result["remote_array_get"]["p50_us"]
                                      - result["execute_raw"]["p50_us"])
    result["plan_cache_hits"] = sum(t.plan_cache_hit for t in timings)
    if "request_cache_hit" in fields:
        result["request_cache_hits"] = sum(t.request_cache_hit for t in timings)
    result["execute_raw_minus_keepalive_us"] = (result["execute_raw"]["p50_us"]
                                                - result["keepalive_raw"]["p50_us"])
    result["execute_raw_bytes_minus_keepalive_us"] = (result["execute_raw_bytes"]["p50_us"]
                                                      - result["keepalive_raw"]["p50_us"])
    result["server_total_bytes_p50_us"] = gpu_bench.percentile(
        [r.timings.total_seconds for r in bytes_replies[warmup:]], 50) * 1e6
    got = np.frombuffer(replies[-1].outputs[0].value.data, dtype=np.float32)
    want = chain_expression(x_host.astype(np.float32))
    answers = [got, np.frombuffer(bytes_replies[-1].outputs[0].value.data, dtype=np.float32),
               chain_expression(x).get(), built.get()]
    if prepared_replies:
        answers.append(np.frombuffer(prepared_replies[-1].outputs[0].value.data, dtype=np.float32))
    if hasattr(gpuflow, "fuse"):
        answers.append(fused(x).get())
    result["answer_ok"] = all(bool(np.allclose(a, want, rtol=1e-5)) for a in answers)
    session.close()
    client.close()
    return result


def main():
    global N_ELEMENTS
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", help="gpuflowd to start (else --target)")
    parser.add_argument("--target")
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--elements", type=int, default=4096,
                        help="elements of the resident float32 array")
    parser.add_argument("--out")
    parser.add_argument("--server-args", default="", help="more gpuflowd flags")
    args = parser.parse_args()
    N_ELEMENTS = args.elements
    service_bench.run_standalone(args, lambda target: measure(target, args.n, args.warmup), args.server_args.split())


if __name__ == "__main__":
    main()
