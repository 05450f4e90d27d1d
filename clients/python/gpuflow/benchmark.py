"""gpuflow.benchmark: cupyx.profiler.benchmark, timed on the server.

    def norms(a):
        return gpuflow.sqrt(gpuflow.sum(a ** 2, axis=-1))

    print(gpuflow.benchmark(norms, (a,), n_repeat=100))
    # norms               :    CPU:  123.456 us   +/- 4.321 (min:  118.000 / max:  140.250) us
    #     GPU-0:   98.765 us   +/- 0.912 (min:   97.600 / max:  101.344) us   (one line)

``func`` is called once, here, on the given RemoteArrays; the graph it
builds is sent in one Benchmark request and the server runs it
``n_warmup + n_repeat`` times (stopping after ``max_duration``), timing each
repeat on the host (CPU) and, on the CUDA backend, with CUDA events (GPU).
The network is not in the figures. The printed form is CuPy's.
"""

import math

import numpy as np

from gpuflow import client as _client
from gpuflow.remote_array import RemoteArray, _build_graph, session_of
from gpuflow.v1 import service_pb2


class BenchmarkResult:
    """What :func:`benchmark` measured, shaped like cupyx's
    ``_PerfCaseResult``: ``cpu_times`` (seconds, one per repeat),
    ``gpu_times`` (shape ``(len(devices), n_repeat)``; no rows on the CPU
    backend), ``devices``, and ``first_run`` (the server's ``Timings`` of the
    first run: validation, planning, compilation)."""

    def __init__(self, name, cpu_times, gpu_times=(), devices=(), first_run=None):
        self.name = name
        self.cpu_times = np.asarray(cpu_times, dtype=np.float64)
        gpu = np.asarray(gpu_times, dtype=np.float64)
        self.gpu_times = gpu.reshape(len(devices), -1) if len(devices) else np.empty((0, 0))
        self.devices = tuple(devices)
        self.first_run = first_run

    @staticmethod
    def _to_str_per_item(device_name, t):
        t_us = np.asarray(t) * 1e6
        if t_us.size == 0:
            return f"    {device_name}: no timed runs"
        s = "    {}:{:9.03f} us".format(device_name, t_us.mean())
        if t_us.size > 1:
            s += "   +/-{:6.03f} (min:{:9.03f} / max:{:9.03f}) us".format(
                t_us.std(), t_us.min(), t_us.max()
            )
        return s

    def to_str(self, show_gpu=False):
        results = [self._to_str_per_item("CPU", self.cpu_times)]
        if show_gpu:
            for i, d in enumerate(self.devices):
                results.append(self._to_str_per_item(f"GPU-{d}", self.gpu_times[i]))
        return "{:<20s}:{}".format(self.name, " ".join(results))

    def __str__(self):
        return self.to_str(show_gpu=True)

    def __repr__(self):
        return f"<BenchmarkResult {self.name!r}: {self.cpu_times.size} repeats>"


def _outputs(value):
    if isinstance(value, RemoteArray):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            out.extend(_outputs(v))
        return out
    raise TypeError(
        "benchmark: func must return RemoteArrays (the graph it builds is what the server "
        f"times), got {type(value).__name__}"
    )


def benchmark(func, args=(), kwargs=None, n_repeat=10000, *, name=None, n_warmup=10,
              max_duration=math.inf, devices=None, allow_tf32=False):
    """Times ``func(*args, **kwargs)`` on the server, as
    cupyx.profiler.benchmark does locally. ``max_duration`` (seconds;
    infinite: the server's default, 10 s, and at most its
    --max_benchmark_duration) bounds the timed repeats. ``devices`` is
    accepted for CuPy compatibility: the server times its one device.
    Returns a :class:`BenchmarkResult`."""
    kwargs = {} if kwargs is None else kwargs
    if name is None:
        name = getattr(func, "__name__", "graph")
    if not callable(func):
        raise ValueError("`func` should be a callable object.")
    if not isinstance(args, tuple):
        raise ValueError("`args` should be of tuple type.")
    if not isinstance(kwargs, dict):
        raise ValueError("`kwargs` should be of dict type.")
    if not isinstance(n_repeat, int) or n_repeat < 1:
        raise ValueError("`n_repeat` should be a positive integer.")
    if not isinstance(name, str):
        raise ValueError("`name` should be a string.")
    if not isinstance(n_warmup, int) or n_warmup < 0:
        raise ValueError("`n_warmup` should be a non-negative integer.")
    if not np.isreal(max_duration) or max_duration <= 0:
        raise ValueError("`max_duration` should be given in seconds")
    outputs = _outputs(func(*args, **kwargs))
    ops = [a._expr for a in outputs if a._expr.op is not None]
    if not ops:
        raise ValueError(
            "benchmark: func computed nothing (it returned session arrays unchanged)"
        )
    session = session_of(outputs)
    session._delete_released()
    graph, nodes = _build_graph(ops)
    request = service_pb2.BenchmarkRequest(
        session_id=session.id,
        graph=graph.proto,
        output_nodes=list(dict.fromkeys(nodes[id(e)].id for e in ops)),
        n_warmup=n_warmup,
        n_repeat=n_repeat,
        allow_tf32=allow_tf32,
        name=name,
    )
    if math.isfinite(max_duration):
        request.max_duration.FromNanoseconds(int(max_duration * 1e9))
    reply = _client._rpc(session._stub.Benchmark, request)
    gpu = list(reply.gpu_seconds)
    return BenchmarkResult(
        reply.name or name,
        list(reply.cpu_seconds),
        gpu,
        devices=(reply.device,) if gpu else (),
        first_run=reply.first_run,
    )
