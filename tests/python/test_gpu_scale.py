"""Scale on the CUDA backend: arrays over 2^31 elements (64-bit indexing in
every generated kernel family) and many sessions running at once, each on
its own stream. Both run on the CPU backend too (smaller where noted), so
the checks themselves are exercised in CI.
"""

import concurrent.futures

import numpy as np
import pytest

import gpuflow
from conftest import BACKEND

CUDA = BACKEND == "cuda"
BIG = (1 << 31) + 77 if CUDA else (1 << 20) + 77


@pytest.fixture(scope="module")
def big_server(request):
    from conftest import Server

    srv = Server("--max_array_bytes=16GiB", "--max_session_memory_limit=64GiB",
                 "--default_session_memory_limit=48GiB")
    yield srv
    assert srv.stop() == 0, srv.log()


def test_arrays_over_two_to_the_31_elements(big_server):
    with gpuflow.connect(big_server.target) as client, client.session() as session:
        g = gpuflow.Graph()
        ones = g.full(np.uint8(1), shape=[BIG])                  # device fill
        twos = g.add(ones, np.uint8(1))                          # elementwise, 64-bit index
        total = g.sum(twos)                                      # whole-array reduction
        tail = g.slice(twos, starts=[BIG - 3], stops=[BIG])      # layout copy near the end
        outputs = [total, tail]
        if CUDA:
            marked = g.elementwise_kernel(
                twos, in_params="T x", out_params="T y",
                operation="y = (i == _ind.size() - 2) ? 9 : x", name="mark_second_last")
            outputs.append(g.argmax(marked))
        values = session.execute(g, outputs=outputs)
        assert int(values[0]) == 2 * BIG
        np.testing.assert_array_equal(values[1], np.full(3, 2, np.uint8))
        if CUDA:
            assert int(values[2]) == BIG - 2


def test_many_sessions_at_once(client):
    n_sessions = 16

    def work(k):
        with client.session(label=f"scale-{k}") as s:
            x = (np.arange(1 << 16, dtype=np.float32) + k).reshape(256, 256)
            s.upload(x, name="x")
            for _ in range(5):
                g = gpuflow.Graph()
                a = g.array("x")
                y = g.sum(g.mul(a, a), axes=[1])
                (got,) = s.execute(g, outputs=[y])
                np.testing.assert_allclose(got, (x.astype(np.float64) ** 2).sum(axis=1),
                                           rtol=1e-5)
            return k

    with concurrent.futures.ThreadPoolExecutor(n_sessions) as pool:
        assert sorted(pool.map(work, range(n_sessions))) == list(range(n_sessions))
