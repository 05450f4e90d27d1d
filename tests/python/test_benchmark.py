"""gpuflow.benchmark: the Benchmark RPC behind cupyx.profiler.benchmark's
call form and printed form."""

import time

import numpy as np
import pytest

import gpuflow as gf
from conftest import BACKEND


def norms(a):
    return gf.sqrt(gf.sum(a ** 2, axis=-1))


def test_result_prints_exactly_like_cupyx():
    r = gf.BenchmarkResult("softplus", [40e-6, 50e-6], [180e-6, 184e-6], devices=(0,))
    assert str(r) == (
        "softplus            :    CPU:   45.000 us   +/- 5.000 (min:   40.000 / max:   50.000) us"
        "     GPU-0:  182.000 us   +/- 2.000 (min:  180.000 / max:  184.000) us"
    )
    assert r.to_str() == (
        "softplus            :    CPU:   45.000 us   +/- 5.000 (min:   40.000 / max:   50.000) us"
    )
    assert r.gpu_times.shape == (1, 2) and r.cpu_times.shape == (2,)


def test_result_without_gpu_times_or_with_one_repeat():
    cpu_only = gf.BenchmarkResult("norms", [1e-3, 3e-3, 2e-3])
    assert str(cpu_only) == (
        "norms               :    CPU: 2000.000 us   +/-816.497 (min: 1000.000 / max: 3000.000) us"
    )
    assert cpu_only.gpu_times.shape[0] == 0
    assert str(gf.BenchmarkResult("f", [1.5e-6])) == "f                   :    CPU:    1.500 us"
    long_name = "a_rather_long_benchmark_name"
    assert str(gf.BenchmarkResult(long_name, [1e-6])).startswith(long_name + ":    CPU:")


def test_benchmark_times_a_function_on_the_server(session):
    a = session.asarray(np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32))
    r = gf.benchmark(norms, (a,), n_repeat=50, n_warmup=2)
    assert r.name == "norms"
    assert 1 <= r.cpu_times.size <= 50 and (r.cpu_times > 0).all()
    has_gpu = BACKEND == "cuda"
    assert r.gpu_times.shape[0] == (1 if has_gpu else 0) and r.devices == ((0,) if has_gpu else ())
    text = str(r)
    assert text.startswith("norms               :    CPU:") and ("GPU-0:" in text) == has_gpu
    assert r.first_run.compile_seconds >= 0  # the first run's Timings (compilation, steps)
    # The function only built a graph: the array API is unchanged afterwards.
    np.testing.assert_allclose(norms(a).get(), np.sqrt((a.get() ** 2).sum(-1)), rtol=1e-5)


def test_benchmark_takes_kwargs_names_and_several_outputs(session):
    x = session.asarray(np.arange(1000, dtype=np.float64))

    def stats(x, scale=1):
        y = x * scale
        return y.mean(), {"max": y.max(), "sum": [y.sum()]}

    r = gf.benchmark(stats, (x,), {"scale": 2}, n_repeat=5, n_warmup=0, name="stats x2")
    assert r.name == "stats x2" and 1 <= r.cpu_times.size <= 5
    r = gf.benchmark(lambda: gf.zeros(10, session=session) + 1, n_repeat=3)
    assert r.name == "<lambda>"


def test_benchmark_stops_after_max_duration(session):
    x = session.asarray(np.ones((256, 256), np.float32))
    start = time.monotonic()
    r = gf.benchmark(lambda x: x @ x, (x,), n_repeat=100_000, n_warmup=1, max_duration=0.3)
    # 100k repeats would take minutes; the bound leaves a busy machine room.
    assert time.monotonic() - start < 15
    assert 1 <= r.cpu_times.size < 10_000_000


def test_benchmark_misuse(session, client):
    x = session.asarray(np.ones(4))
    with pytest.raises(ValueError, match="`args` should be of tuple type"):
        gf.benchmark(norms, [x])
    with pytest.raises(ValueError, match="`n_repeat` should be a positive integer"):
        gf.benchmark(norms, (x,), n_repeat=0)
    with pytest.raises(ValueError, match="`func` should be a callable"):
        gf.benchmark(42)
    with pytest.raises(ValueError, match="max_duration"):
        gf.benchmark(norms, (x,), max_duration=-1)
    with pytest.raises(TypeError, match="must return RemoteArrays"):
        gf.benchmark(lambda: np.ones(3))
    with pytest.raises(ValueError, match="computed nothing"):
        gf.benchmark(lambda x: x, (x,))
    with client.session() as other:
        y = other.asarray(np.ones(4))
    with pytest.raises(gf.SessionClosedError):
        gf.benchmark(norms, (y,))


def test_benchmark_reply_names_the_device(session):
    """BenchmarkResponse.device: the server's device index; -1 on the CPU backend."""
    from gpuflow.v1 import service_pb2

    session.upload(np.arange(16, dtype=np.float32), name="bx")
    g = gf.Graph()
    out = g.add(g.array("bx"), 1)
    request = service_pb2.BenchmarkRequest(session_id=session.id, graph=g.proto,
                                           output_nodes=[out.id], n_warmup=0, n_repeat=2)
    reply = session._stub.Benchmark(request)
    assert reply.device == (0 if BACKEND == "cuda" else -1)
    assert len(reply.cpu_seconds) == 2
