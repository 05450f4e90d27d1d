"""Service-only figures of gpuflowd, each beside its floor measured in the
same run against bench/grpc_echo_server (a bare gRPC callback server):

- latency: a tiny Execute on resident arrays (and KeepAlive, gpuflow's
  cheapest call) against the echo service's unary ping-pong, p50/p99;
- throughput: requests/s with 1, 4 and 16 concurrent clients, each client
  a process (Python's GIL would otherwise be the limit), both services;
- transfers: upload and download of 1 MiB, 64 MiB and 1 GiB in 1 MiB
  chunks, through bench/transfer_bench (C++ client, gpuflow against echo)
  and through the Python client (gpuflow against an echo client written
  the same way).

The echo client speaks bench/echo.proto: with stubs generated at run time
when grpc_tools is here, else through gRPC's generic calls with the
(one-field) messages encoded by hand. Used by bench/run_gpu.py; a benchmark,
not a test.
"""

import json
import multiprocessing
import os
import re
import socket
import subprocess
import sys
import time

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)

import gpu_bench  # noqa: E402 - also puts clients/python on sys.path
import gpuflow  # noqa: E402
import grpc  # noqa: E402

percentile = gpu_bench.percentile
MiB = 1 << 20
_OPTIONS = [("grpc.max_receive_message_length", 64 << 20), ("grpc.max_send_message_length", 64 << 20)]

# --------------------------------------------------------------- echo client


def _varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(buf, pos):
    shift = result = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _field1(msg):
    """Field 1 of a message with one field: the bytes (length-delimited) or
    the integer (varint); None when absent."""
    buf = memoryview(msg)
    pos = 0
    while pos < len(buf):
        tag, pos = _read_varint(buf, pos)
        wire = tag & 7
        if wire == 0:
            value, pos = _read_varint(buf, pos)
        elif wire == 2:
            length, pos = _read_varint(buf, pos)
            value, pos = buf[pos : pos + length], pos + length
        else:
            raise ValueError(f"unexpected wire type {wire}")
        if tag >> 3 == 1:
            return value
    return None


def _generated_echo_module(gen_dir, generate):
    """(echo_pb2, echo_pb2_grpc) from bench/echo.proto, generated into gen_dir
    by grpc_tools (generate=True; once, in the parent) or imported from
    there (client processes); None when that fails."""
    try:
        if generate:
            from grpc_tools import protoc

            os.makedirs(gen_dir, exist_ok=True)
            rc = protoc.main(["protoc", f"-I{BENCH}", f"--python_out={gen_dir}",
                              f"--grpc_python_out={gen_dir}", os.path.join(BENCH, "echo.proto")])
            if rc != 0:
                return None
        if gen_dir not in sys.path:
            sys.path.insert(0, gen_dir)
        import echo_pb2
        import echo_pb2_grpc

        return echo_pb2, echo_pb2_grpc
    except Exception:  # noqa: BLE001 - the generic path needs nothing
        return None


class EchoClient:
    """bench/echo.proto's Echo service: ping, upload, download."""

    def __init__(self, target, gen_dir=None, generate=True, timeout=20):
        """gen_dir: where grpc_tools writes (generate) or wrote the stubs;
        None: generic calls. self.gen_dir is None unless stubs are used."""
        self.channel = grpc.insecure_channel(target, options=_OPTIONS)
        grpc.channel_ready_future(self.channel).result(timeout=timeout)
        modules = _generated_echo_module(gen_dir, generate) if gen_dir else None
        self.gen_dir = gen_dir if modules is not None else None
        if modules is not None:
            self.pb = modules[0]
            self.stub = modules[1].EchoStub(self.channel)
            self.mode = "grpc_tools stubs"
        else:
            self.pb = None
            prefix = "/gpuflow.bench.Echo/"
            self.echo = self.channel.unary_unary(prefix + "Echo")
            self.upload_call = self.channel.stream_unary(prefix + "Upload")
            self.download_call = self.channel.unary_stream(prefix + "Download")
            self.mode = "generic calls, hand-encoded messages"

    def ping_fn(self, payload):
        if self.pb is not None:
            request = self.pb.Ping(payload=payload)

            def ping():
                reply = self.stub.Echo(request)
                assert len(reply.payload) == len(payload)
        else:
            request = b"\x0a" + _varint(len(payload)) + payload if payload else b""

            def ping():
                reply = self.echo(request)
                assert len(reply) == len(request)
        return ping

    def upload(self, data, chunk_bytes):
        """Sends data (a bytes-like object) in chunks; returns the bytes the server counted."""
        view = memoryview(data).cast("B")
        if self.pb is not None:
            chunks = (self.pb.Chunk(data=bytes(view[o : o + chunk_bytes]))
                      for o in range(0, len(view), chunk_bytes))
            return self.stub.Upload(chunks).bytes

        def chunks():
            for o in range(0, len(view), chunk_bytes):
                piece = view[o : o + chunk_bytes]
                yield b"\x0a" + _varint(len(piece)) + bytes(piece)

        return _field1(self.upload_call(chunks())) or 0

    def download(self, nbytes, chunk_bytes):
        """Receives nbytes into a fresh buffer, as the gpuflow client does."""
        out = np.empty(nbytes, dtype=np.uint8)
        offset = 0
        if self.pb is not None:
            stream = self.stub.Download(self.pb.DownloadRequest(bytes=nbytes, chunk_bytes=chunk_bytes))
            for message in stream:
                chunk = message.data
                out[offset : offset + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
                offset += len(chunk)
        else:
            request = b"\x08" + _varint(nbytes) + b"\x10" + _varint(chunk_bytes)
            for message in self.download_call(request):
                chunk = _field1(message)
                out[offset : offset + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
                offset += len(chunk)
        if offset != nbytes:
            raise RuntimeError(f"echo download: {offset} of {nbytes} bytes")
        return out

    def close(self):
        self.channel.close()


# ------------------------------------------------------------------- latency


def tiny_execute(session):
    """A graph on a resident 16-element array whose output stays in the session."""
    session.upload(np.arange(16, dtype=np.float32), name="tiny")
    g = gpuflow.Graph()
    outputs = {"tiny_out": g.add(g.array("tiny"), 1.0)}

    def call():
        return session.execute(g, outputs=outputs)

    return call


def timed_calls(fn, n, warmup=0):
    """Seconds of each of n calls of fn, after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times


def summary(times):
    """p50, p99 and mean in µs of call times in seconds, and their count."""
    return {"p50_us": percentile(times, 50) * 1e6, "p99_us": percentile(times, 99) * 1e6,
            "mean_us": sum(times) / len(times) * 1e6, "n": len(times)}


def latency(call, n, warmup=50):
    return summary(timed_calls(call, n, warmup))


def measure_latency(session, echo, n):
    ping = echo.ping_fn(b"x" * 64)
    execute = tiny_execute(session)
    server = []

    def execute_recorded():
        server.append(execute().timings.total_seconds)

    out = {
        "echo_unary_64B": latency(ping, n),
        "gpuflow_keepalive": latency(session.keep_alive, n),
        "gpuflow_tiny_execute": latency(execute_recorded, n),
    }
    out["gpuflow_tiny_execute"]["server_total_p50_us"] = percentile(server[-n:], 50) * 1e6
    out["ratio_p50_tiny_execute_vs_echo"] = (out["gpuflow_tiny_execute"]["p50_us"]
                                             / out["echo_unary_64B"]["p50_us"])
    return out


# ---------------------------------------------------------------- throughput


def _client_process(kind, target, duration, index, ready, start, results, gen_dir=None):
    """One concurrent client: connect, warm up, wait for the start, then
    call in a loop for `duration` seconds."""
    try:
        if kind == "echo":
            client = EchoClient(target, gen_dir, generate=False)
            call = client.ping_fn(b"x" * 64)
        else:
            client = gpuflow.connect(target, timeout=20)
            session = client.session(label=f"concurrency-{index}")
            call = tiny_execute(session)
        for _ in range(20):
            call()
        ready.put(("ready", index, None))
    except Exception as e:  # noqa: BLE001
        ready.put(("error", index, repr(e)[:300]))
        return
    if not start.wait(120):
        return
    times = []
    t_start = time.perf_counter()
    t_end = t_start + duration
    while True:
        t = time.perf_counter()
        call()
        now = time.perf_counter()
        times.append(now - t)
        if now >= t_end:
            break
    elapsed = time.perf_counter() - t_start
    step = max(1, len(times) // 20000)
    results.put({"index": index, "count": len(times), "elapsed": elapsed, "times": times[::step]})
    try:
        if kind != "echo":
            session.close()
        client.close()
    except Exception:  # noqa: BLE001
        pass


def concurrent_round(kind, target, clients, duration, gen_dir=None):
    """Requests/s of `clients` processes calling for `duration` seconds."""
    ctx = multiprocessing.get_context("spawn")
    ready, results, start = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_client_process, daemon=True,
                         args=(kind, target, duration, i, ready, start, results, gen_dir))
             for i in range(clients)]
    for p in procs:
        p.start()
    errors = []
    try:
        for _ in range(clients):
            state, index, error = ready.get(timeout=120)
            if state == "error":
                errors.append(error)
        if errors:
            raise RuntimeError(f"{len(errors)} of {clients} clients failed: {errors[0]}")
        start.set()
        got = [results.get(timeout=duration + 120) for _ in range(clients)]
    finally:
        start.set()
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
    times = [t for r in got for t in r["times"]]
    return {"clients": clients, "requests_per_s": sum(r["count"] / r["elapsed"] for r in got),
            "requests": sum(r["count"] for r in got), "p50_us": percentile(times, 50) * 1e6,
            "p99_us": percentile(times, 99) * 1e6}


def measure_concurrency(gpuflow_target, echo_target, counts, duration, gen_dir=None, log=print):
    out = {"duration_s": duration, "cpu_cores": os.cpu_count(), "rounds": []}
    for n in counts:
        row = {"clients": n}
        for kind, target in (("echo", echo_target), ("gpuflow", gpuflow_target)):
            try:
                row[kind] = concurrent_round(kind, target, n, duration, gen_dir)
            except Exception as e:  # noqa: BLE001
                row[kind] = {"error": gpu_bench.short_error(e)}
        if "requests_per_s" in row["echo"] and "requests_per_s" in row["gpuflow"]:
            row["ratio"] = row["gpuflow"]["requests_per_s"] / row["echo"]["requests_per_s"]
        log(f"  {n} client(s): echo {row['echo'].get('requests_per_s', row['echo'])}, "
            f"gpuflow {row['gpuflow'].get('requests_per_s', row['gpuflow'])} req/s")
        out["rounds"].append(row)
    return out


# ----------------------------------------------------------------- transfers

_TABLE_ROW = re.compile(r"^\|\s*(upload|download) .*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|")


def cpp_transfers(transfer_bench, gpuflow_target, echo_target, sizes, chunk_bytes=MiB, env=None,
                  log=print):
    """bench/transfer_bench (C++ client) per size: GB/s of gpuflow and echo."""
    rows = []
    for size, repeats in sizes:
        row = {"bytes": size, "repeats": repeats}
        cmd = [transfer_bench, f"--gpuflow={gpuflow_target}", f"--echo={echo_target}",
               f"--bytes={size}", f"--chunk_bytes={chunk_bytes}", f"--repeats={repeats}"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
            for line in done.stdout.splitlines():
                m = _TABLE_ROW.match(line)
                if m:
                    row[m.group(1)] = {"gpuflow_gbps": float(m.group(2)), "echo_gbps": float(m.group(3)),
                                       "ratio": float(m.group(2)) / float(m.group(3))}
            if done.returncode != 0 or "upload" not in row:
                row["error"] = f"exit {done.returncode}: {(done.stderr or done.stdout)[-400:]}"
        except Exception as e:  # noqa: BLE001
            row["error"] = gpu_bench.short_error(e)
        log(f"  transfer_bench {size} B: {row}")
        rows.append(row)
    return {"chunk_bytes": chunk_bytes, "client": "C++ (bench/transfer_bench)", "sizes": rows}


def _median_gbps(nbytes, fn, repeats, warmup):
    return nbytes / percentile(timed_calls(fn, repeats, warmup), 50) / 1e9


def python_transfers(session, echo, sizes, chunk_bytes=MiB, log=print):
    """The Python client's upload/download against the echo client's."""
    rows = []
    for size, repeats, warmup in sizes:
        row = {"bytes": size, "repeats": repeats}
        try:
            host = np.arange(size // 4, dtype=np.float32)
            up = _median_gbps(size, lambda: session.upload(host, name="xfer", chunk_bytes=chunk_bytes,
                                                           transport="grpc"),
                              repeats, warmup)
            got = [None]  # only the last download is kept
            down = _median_gbps(size, lambda: got.__setitem__(0, session.download(
                "xfer", chunk_bytes=chunk_bytes, transport="grpc")), repeats, warmup)
            if not np.array_equal(got[0], host):
                raise AssertionError("downloaded array differs from the uploaded one")
            got[0] = None
            session.delete("xfer")
            raw = host.view(np.uint8)
            counted = []
            echo_up = _median_gbps(size, lambda: counted.append(echo.upload(raw, chunk_bytes)),
                                   repeats, warmup)
            if counted[-1] != size:
                raise AssertionError(f"echo server counted {counted[-1]} of {size} bytes")
            echo_down = _median_gbps(size, lambda: echo.download(size, chunk_bytes), repeats, warmup)
            row["upload"] = {"gpuflow_gbps": up, "echo_gbps": echo_up, "ratio": up / echo_up}
            row["download"] = {"gpuflow_gbps": down, "echo_gbps": echo_down, "ratio": down / echo_down}
        except Exception as e:  # noqa: BLE001
            row["error"] = gpu_bench.short_error(e)
        log(f"  python client {size} B: {row}")
        rows.append(row)
    return {"chunk_bytes": chunk_bytes, "client": "Python (gpuflow client / echo client)", "sizes": rows}


def shm_transfers(session, sizes, log=print):
    """Same-host transfers (issue 16) beside gRPC and the host's memory
    speed: the Python client's upload/download through gRPC, through shared
    memory as ``transport="shm"`` does it (copying through the session's
    staging region), and from/to a region the data already lives in (what a
    client writing its data there directly gets); the floor is one numpy
    copy of the same bytes on this host."""
    from multiprocessing import shared_memory
    import secrets

    rows = []
    for size, repeats, warmup in sizes:
        row = {"bytes": size, "repeats": repeats}
        shm = None
        try:
            host = np.arange(size // 4, dtype=np.float32)
            scratch = np.empty_like(host)
            row["memcpy_gbps"] = _median_gbps(size, lambda: np.copyto(scratch, host), repeats, warmup)
            for transport in ("grpc", "shm"):
                got = [None]
                row[f"{transport}_upload_gbps"] = _median_gbps(
                    size, lambda: session.upload(host, name="xfer", transport=transport), repeats, warmup)
                row[f"{transport}_download_gbps"] = _median_gbps(
                    size, lambda: got.__setitem__(0, session.download("xfer", transport=transport)),
                    repeats, warmup)
                if not np.array_equal(got[0], host):
                    raise AssertionError(f"{transport}: downloaded array differs from the uploaded one")
            shm = shared_memory.SharedMemory(name=f"gpuflow_bench_{secrets.token_hex(8)}", create=True,
                                             size=2 * size)
            view = np.ndarray((2 * size,), dtype=np.uint8, buffer=shm.buf)
            view[:size] = host.view(np.uint8)
            session.register_shared_memory("bench", shm.name, 2 * size)
            row["region_upload_gbps"] = _median_gbps(size, lambda: session.upload_from_shared_memory(
                "xfer", "bench", 0, np.float32, host.shape), repeats, warmup)
            row["region_download_gbps"] = _median_gbps(
                size, lambda: session.download_to_shared_memory("xfer", "bench", size), repeats, warmup)
            if not np.array_equal(view[size:].view(np.float32), host):
                raise AssertionError("region: downloaded bytes differ from the uploaded ones")
            session.unregister_shared_memory("bench")
            session.delete("xfer")
        except Exception as e:  # noqa: BLE001
            row["error"] = gpu_bench.short_error(e)
        finally:
            if shm is not None:
                del view
                shm.close()
                shm.unlink()
        log(f"  shared memory {size} B: {row}")
        rows.append(row)
    return {"client": "Python", "sizes": rows}


def ipc_transfers(session, sizes, log=print):
    """Device-to-device transfers by CUDA IPC (issue 16, item 2) between
    PyTorch tensors of this process and the session, beside one
    ``torch`` device copy of the same bytes (the floor): ``gf.asarray`` of a
    tensor and ``gf.to_torch(x, device="cuda")`` (each registering the
    tensor's allocation for the one call), and uploads and downloads from and
    to a registered tensor (the data already in place). Needs the server's
    --allow_cuda_ipc and PyTorch on the server's GPU; reports why not
    otherwise."""
    try:
        import torch
    except ImportError:
        return {"skipped": "no PyTorch"}
    if not torch.cuda.is_available():
        return {"skipped": "no CUDA device for PyTorch"}
    if not session.client.limits.allow_cuda_ipc:
        return {"skipped": "the server runs without --allow_cuda_ipc"}

    def timed(fn):
        def run():
            fn()
            torch.cuda.synchronize()
        return run

    rows = []
    for size, repeats, warmup in sizes:
        row = {"bytes": size, "repeats": repeats}
        try:
            t = torch.arange(size // 4, dtype=torch.float32, device="cuda")
            copy = torch.empty_like(t)
            row["d2d_gbps"] = _median_gbps(size, timed(lambda: copy.copy_(t)), repeats, warmup)
            held = [None]
            row["asarray_gbps"] = _median_gbps(
                size, lambda: held.__setitem__(0, gpuflow.asarray(t, session=session)), repeats,
                warmup)
            x = held[0]
            got = [None]
            row["to_torch_gbps"] = _median_gbps(
                size, lambda: got.__setitem__(0, gpuflow.to_torch(x, device="cuda")), repeats,
                warmup)
            if not torch.equal(got[0], t):
                raise AssertionError("to_torch: the tensor differs from the uploaded one")
            both = torch.empty(2 * (size // 4), dtype=torch.float32, device="cuda")
            both[: size // 4] = t
            torch.cuda.synchronize()
            offset = session.register_cuda_memory("bench_ipc", both)
            start = time.perf_counter()
            session.unregister_shared_memory("bench_ipc")
            offset = session.register_cuda_memory("bench_ipc", both)
            row["register_us"] = (time.perf_counter() - start) * 1e6
            row["region_upload_gbps"] = _median_gbps(size, lambda: session.upload_from_shared_memory(
                "xfer_ipc", "bench_ipc", offset, np.float32, (size // 4,)), repeats, warmup)
            row["region_download_gbps"] = _median_gbps(
                size, lambda: session.download_to_shared_memory("xfer_ipc", "bench_ipc",
                                                                offset + size), repeats, warmup)
            if not torch.equal(both[size // 4:], t):
                raise AssertionError("region: downloaded bytes differ from the uploaded ones")
            session.unregister_shared_memory("bench_ipc")
            session.delete("xfer_ipc")
            del x, held, got
        except Exception as e:  # noqa: BLE001
            row["error"] = gpu_bench.short_error(e)
        log(f"  CUDA IPC {size} B: {row}")
        rows.append(row)
    return {"client": "Python (PyTorch tensors)", "sizes": rows}


def run_standalone(args, measure, server_args=()):
    """What a standalone benchmark's main() does: starts ``args.server``
    (gpuflowd, on a free loopback port with ``args.backend``) unless
    ``args.target`` names a running one, calls ``measure(target)`` once the
    server answers (a minute at most), stops the server, and prints the
    result as JSON (also to ``args.out`` when given)."""
    proc = None
    target = args.target
    if args.server:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        target = f"127.0.0.1:{port}"
        proc = subprocess.Popen([args.server, "--address=127.0.0.1", f"--port={port}",
                                 f"--backend={args.backend}", "--metrics_port=0", *server_args],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while True:
            try:
                result = measure(target)
                break
            except gpuflow.UnavailableError:
                if time.time() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    result["backend"] = args.backend
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return result


def default_plan(small):
    """Sizes, counts and durations; small: a quick try on a small machine."""
    if small:
        return {"latency_n": 300, "concurrency": (1, 4, 16), "duration": 0.5,
                "cpp_sizes": [(MiB, 10), (8 * MiB, 3), (32 * MiB, 2)],
                "py_sizes": [(MiB, 5, 1), (8 * MiB, 2, 1), (32 * MiB, 1, 0)],
                "shm_sizes": [(MiB, 5, 1), (32 * MiB, 2, 1)],
                "ipc_sizes": [(MiB, 5, 1), (32 * MiB, 2, 1)]}
    return {"latency_n": 2000, "concurrency": (1, 4, 16), "duration": 2.0,
            "cpp_sizes": [(MiB, 50), (64 * MiB, 7), (1 << 30, 3)],
            "py_sizes": [(MiB, 20, 3), (64 * MiB, 5, 1), (1 << 30, 2, 0)],
            "shm_sizes": [(64 * MiB, 5, 1), (1 << 30, 3, 1)],
            "ipc_sizes": [(64 * MiB, 10, 2), (1 << 30, 5, 1)]}



# ------------------------------------------------------- asynchronous client


def measure_async(session, n, in_flight=8, warmup=50, rounds=3):
    """Requests/s of one Python client running the tiny Execute of
    `tiny_execute` (16 elements in, the result stored) n times: one call at
    a time (`Session.execute`), and with `in_flight` requests outstanding
    (`Session.execute_async`, a new one sent as the oldest answers). The two
    alternate `rounds` times and each reports its median, so a load that
    comes and goes does not favour one. Each of the `in_flight` slots
    stores under its own name, so no two requests in flight write the same
    array."""
    session.upload(np.arange(16, dtype=np.float32), name="tiny")
    g = gpuflow.Graph()
    y = g.add(g.array("tiny"), 1.0)
    slots = [{f"tiny_out_{k}": y} for k in range(in_flight)]

    def sync_rate(count):
        t = time.perf_counter()
        for i in range(count):
            session.execute(g, outputs=slots[i % in_flight])
        return count / (time.perf_counter() - t)

    def async_rate(count):
        window = []
        t = time.perf_counter()
        for i in range(count):
            if len(window) == in_flight:
                window.pop(0).result()
            window.append(session.execute_async(g, outputs=slots[i % in_flight]))
        for f in window:
            f.result()
        return count / (time.perf_counter() - t)

    sync_rate(warmup)
    async_rate(warmup)
    sync, in_flight_rates = [], []
    for _ in range(rounds):
        sync.append(sync_rate(n))
        in_flight_rates.append(async_rate(n))
    for slot in slots:
        session.delete(next(iter(slot)))
    sync_rps, async_rps = percentile(sync, 50), percentile(in_flight_rates, 50)
    return {"n": n, "in_flight": in_flight, "rounds": rounds, "sync_rps": sync_rps,
            "async_rps": async_rps, "ratio": async_rps / sync_rps}
