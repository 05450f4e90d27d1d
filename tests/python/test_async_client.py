"""Asynchronous calls of the Python client (Session.execute_async,
RemoteArray.get_async, gpuflow.evaluate_async) through the real server:
futures in flight give what the synchronous calls give, fail with the same
gpuflow errors, work with concurrent.futures, and leave no temporaries
behind whether they succeed, fail or are cancelled."""

import concurrent.futures as cf
import gc
import re
import threading
import time

import numpy as np
import pytest

import gpuflow as gf
from conftest import ROOT

TIMEOUT = 60


def names(session):
    return [info.name for info in session.list()]


def wait_for(predicate, timeout=10):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def slow(session, n=700, rounds=3):
    """A RemoteArray that takes the CPU backend a while (chained matmuls)."""
    a = session.asarray(np.full((n, n), 1.0 / n, dtype=np.float32))
    y = a
    for _ in range(rounds):
        y = y @ a
    return y


def test_eight_futures_in_flight_match_sync_and_numpy(session):
    rng = np.random.default_rng(7)
    x_np = rng.uniform(-3, 3, size=(37, 129)).astype(np.float32)
    x = session.asarray(x_np)
    exprs = [
        (x * i + 1, x_np * i + 1) for i in range(6)
    ] + [
        (gf.sqrt((x ** 2).sum(axis=-1)), np.sqrt((x_np ** 2).sum(axis=-1))),
        (x.max(axis=0), x_np.max(axis=0)),
        (x[::-2, 3:7].astype(np.float64), x_np[::-2, 3:7].astype(np.float64)),
        ((x > 0).sum(), (x_np > 0).sum()),
        (x.T @ x, x_np.T.astype(np.float64) @ x_np),
        (gf.exp(x[0]), np.exp(x_np[0])),
    ]
    futures = [remote.get_async() for remote, _ in exprs]
    assert len(futures) >= 8
    assert all(isinstance(f, cf.Future) and isinstance(f, gf.Future) for f in futures)
    for (remote, expected), future in zip(exprs, futures):
        value = future.result(timeout=TIMEOUT)
        assert future.done() and future.exception() is None
        sync = remote.get()
        assert value.dtype == sync.dtype == remote.dtype and value.shape == sync.shape
        np.testing.assert_array_equal(value, sync)
        np.testing.assert_allclose(value, expected, rtol=1e-4, atol=1e-3)


def test_evaluate_async_matches_evaluate(make_server):
    # A 1 KiB inline limit: the large result goes through a temporary array,
    # and the plain session array is downloaded.
    srv = make_server("--max_inline_bytes=1KiB")
    with gf.connect(srv.target) as c, c.session() as s:
        big = np.arange(10_000, dtype=np.float64)
        x = s.asarray(big)
        y = x * 2 + 1
        s.upload(np.arange(5, dtype=np.int32), name="kept")
        kept = s.array("kept")
        baseline = names(s)
        future = gf.evaluate_async(y, y[:3], x.sum(), kept, y, profile=True)
        result = future.result(timeout=TIMEOUT)
        assert isinstance(result, gf.ExecuteResult) and len(result) == 5
        assert result.timings is not None and len(result.timings.steps) > 0
        sync = gf.evaluate(y, y[:3], x.sum(), kept, y)
        for got, want in zip(result, sync):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(result[0], big * 2 + 1)
        np.testing.assert_array_equal(result[3], np.arange(5))
        assert result[4] is not result[0]  # a repeat is its own copy, as in evaluate
        assert names(s) == baseline  # the temporary result was deleted
        # Lists work as in evaluate; no arrays is an empty result at once.
        np.testing.assert_array_equal(gf.evaluate_async([y[:2]]).result(TIMEOUT)[0], [1, 3])
        empty = gf.evaluate_async()
        assert empty.done() and empty.result() == [] and empty.result().timings is None


def test_execute_async_matches_execute(session):
    session.upload(np.arange(12, dtype=np.float32).reshape(3, 4), name="x")
    g = gf.Graph()
    x = g.array("x")
    y = g.add(g.mul(x, 2.0), 1.0)
    s = g.sum(x, axes=[1])
    futures = [session.execute_async(g, [y, s]) for _ in range(8)]
    stored = session.execute_async(g, {"y_stored": y})
    sync = session.execute(g, [y, s])
    for f in futures:
        got = f.result(timeout=TIMEOUT)
        assert isinstance(got, gf.ExecuteResult) and got.timings.total_seconds > 0
        assert len(got) == 2
        np.testing.assert_array_equal(got[0], sync[0])
        np.testing.assert_array_equal(got[1], sync[1])
    np.testing.assert_array_equal(sync[0], np.arange(12, dtype=np.float32).reshape(3, 4) * 2 + 1)
    (info,) = stored.result(timeout=TIMEOUT)
    assert info == session.info("y_stored") and info.shape == (3, 4)
    # A node of another graph is refused at the call, as execute refuses it.
    with pytest.raises(ValueError, match="not a node of this graph"):
        session.execute_async(gf.Graph(), [y])


def test_server_errors_raise_the_sync_error_type_from_result(client):
    with client.session(memory_limit=4096) as s:
        missing = gf.Graph()
        missing_out = [missing.add(missing.array("no_such_array"), 1.0)]
        over = gf.Graph()
        over_out = {"y": over.full(0.0, shape=[1000])}  # 8000 bytes over a 4096-byte quota
        too_big = gf.zeros(1000, session=s) + 1
        cases = [
            (lambda: s.execute(missing, missing_out), lambda: s.execute_async(missing, missing_out),
             gf.NotFoundError),
            (lambda: s.execute(over, over_out), lambda: s.execute_async(over, over_out),
             gf.ResourceExhaustedError),
            (too_big.get, too_big.get_async, gf.ResourceExhaustedError),
            (lambda: gf.evaluate(too_big), lambda: gf.evaluate_async(too_big),
             gf.ResourceExhaustedError),
        ]
        for call, call_async, cls in cases:
            future = call_async()
            with pytest.raises(cls) as async_error:
                future.result(timeout=TIMEOUT)
            with pytest.raises(cls) as sync_error:
                call()
            assert type(async_error.value) is type(sync_error.value)
            assert future.exception() is async_error.value and future.done()
            assert async_error.value.code == sync_error.value.code == cls.code
            assert async_error.value.details == sync_error.value.details != ""
        # The session is fine afterwards and holds nothing.
        assert s.list() == [] and s.memory_used == 0
        again = gf.arange(3, session=s).get_async()
        np.testing.assert_array_equal(again.result(TIMEOUT), [0, 1, 2])


def test_done_callbacks_fire_and_may_make_calls(make_server):
    srv = make_server("--max_inline_bytes=1KiB")
    with gf.connect(srv.target) as c, c.session() as s:
        x = s.asarray(np.arange(4096, dtype=np.float64))
        fired = []
        all_fired = threading.Event()

        def callback(future):
            # A large result is a download (a streaming call): this must not
            # run on gRPC's own callback thread, where it would wait for itself.
            fired.append((future.result()[0], (x * 3).get()[-1], threading.current_thread()))
            if len(fired) == 8:
                all_fired.set()

        futures = [(x + i).get_async() for i in range(8)]
        for f in futures:
            f.add_done_callback(callback)
        assert all_fired.wait(TIMEOUT)
        assert sorted(first for first, _, _ in fired) == list(range(8))
        assert all(last == 4095 * 3 for _, last, _ in fired)
        # On a future already done the callback runs at once, in this thread.
        here = []
        futures[0].add_done_callback(lambda f: here.append(threading.current_thread()))
        assert here == [threading.current_thread()]


def test_as_completed_and_wait(session):
    x = session.asarray(np.arange(100, dtype=np.int64))
    futures = {(x * i).sum().get_async(): i for i in range(10)}
    seen = set()
    for future in cf.as_completed(futures, timeout=TIMEOUT):
        i = futures[future]
        assert future.result() == 4950 * i
        seen.add(i)
    assert seen == set(range(10))
    more = [(x + i).get_async() for i in range(8)]
    done, not_done = cf.wait(more, timeout=TIMEOUT)
    assert not not_done and len(done) == 8
    assert [f.result()[0] for f in more] == list(range(8))


def test_cancel_does_not_break_the_session(session):
    baseline = names(session)
    y = slow(session)
    futures = [(y + i).sum().get_async() for i in range(4)]
    assert futures[-1].cancel()
    assert futures[-1].cancelled() and futures[-1].done()
    with pytest.raises(cf.CancelledError):
        futures[-1].result(timeout=TIMEOUT)
    with pytest.raises(cf.CancelledError):
        futures[-1].exception()
    assert futures[-1].cancel()  # again: still cancelled
    expected = futures[0].result(timeout=TIMEOUT)
    for f in futures[1:-1]:
        f.result(timeout=TIMEOUT)
    # A done future cannot be cancelled.
    assert not futures[0].cancel() and not futures[0].cancelled()
    assert futures[0].result() == expected
    # The session answers as before, async and sync.
    np.testing.assert_allclose(y.sum().get_async().result(TIMEOUT), y.sum().get(), rtol=1e-5)
    del y, futures
    gc.collect()
    z = session.asarray(np.zeros(1))  # an array call: the released uploads go first
    assert wait_for(lambda: (gc.collect(), session._delete_released(),
                             names(session))[-1] == sorted(baseline + [z._expr.array_name]))


def test_cancelled_temporary_results_are_deleted(make_server):
    srv = make_server("--max_inline_bytes=1KiB")
    with gf.connect(srv.target) as c, c.session() as s:
        y = slow(s, n=400)
        baseline = names(s)
        used = s.memory_used
        futures = [(y + i).get_async() for i in range(4)]  # each 640 KB: a temporary
        assert all(f.cancel() for f in futures)
        # They run to their end on the server; their temporaries go then.
        assert wait_for(lambda: names(s) == baseline and s.memory_used == used), names(s)
        time.sleep(1.0)  # well past their end (0.1 s or so each)
        assert names(s) == baseline
        np.testing.assert_allclose((y + 1).get_async().result(TIMEOUT), y.get() + 1, rtol=1e-6)


def test_temporaries_are_released_as_in_sync_calls(make_server):
    srv = make_server("--max_inline_bytes=1KiB")
    with gf.connect(srv.target) as c, c.session(memory_limit=1 << 20) as s:
        s.upload(np.zeros(3), name="keep")
        baseline, used = names(s), s.memory_used
        rng = np.random.default_rng(3)
        hosts = [rng.uniform(size=2000) for _ in range(8)]
        # Uploads (asarray) and large results (temporaries); the RemoteArrays
        # are dropped while their futures are still in flight.
        futures = [(s.asarray(h) * 2).get_async() for h in hosts]
        gc.collect()
        for h, f in zip(hosts, futures):
            np.testing.assert_array_equal(f.result(timeout=TIMEOUT), h * 2)
        # A failed future (its result, over the session's quota, was to be
        # a temporary) leaves nothing either.
        ints = s.asarray(np.arange(2000, dtype=np.int64))
        failing = gf.broadcast_to(ints, (100, 2000)) + 1  # 1.6 MB
        with pytest.raises(gf.ResourceExhaustedError) as sync_error:
            failing.get()
        with pytest.raises(gf.ResourceExhaustedError) as async_error:
            failing.get_async().result(timeout=TIMEOUT)
        # The same message, but for the temporary's name.
        assert (re.sub(r"_tmp\.\d+", "_tmp", async_error.value.details)
                == re.sub(r"_tmp\.\d+", "_tmp", sync_error.value.details))
        del futures, failing, ints, sync_error, async_error  # (tracebacks hold the arrays)
        gc.collect()
        z = s.asarray(np.zeros(1))  # deletes the released uploads first, as any array call
        assert names(s) == sorted(baseline + [z._expr.array_name])
        assert s.memory_used == used + s.info(z._expr.array_name).nbytes


def test_futures_from_several_threads_on_one_session(session):
    x_np = np.arange(1000, dtype=np.float32)
    x = session.asarray(x_np)
    errors = []

    def worker(k):
        try:
            futures = [(x * k + i).get_async() for i in range(8)]
            for i, f in enumerate(futures):
                np.testing.assert_array_equal(f.result(timeout=TIMEOUT), x_np * k + i)
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)


def test_get_async_fills_out(session):
    x = session.asarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    out = np.empty((2, 3), dtype=np.float64)
    got = (x * 2).get_async(out=out).result(timeout=TIMEOUT)
    assert got is out
    np.testing.assert_array_equal(out, [[0, 2, 4], [6, 8, 10]])
    with pytest.raises(ValueError, match="out has shape"):
        x.get_async(out=np.empty(3))
    with pytest.raises(ValueError, match="C-contiguous"):
        x.get_async(order="F")


def test_closing_the_client_ends_futures_in_flight(make_server):
    c = gf.connect(make_server().target)
    s = c.session()
    y = slow(s)
    futures = [(y + i).sum().get_async() for i in range(4)]
    c.close()
    done, not_done = cf.wait(futures, timeout=TIMEOUT)
    assert not not_done
    for f in futures:
        err = f.exception()
        assert err is None or isinstance(err, gf.CancelledError), err


def test_closed_session_raises_at_the_call(client):
    s = client.session()
    x = s.asarray(np.ones(3))
    s.close()
    with pytest.raises(gf.SessionClosedError):
        x.get_async()
    with pytest.raises(gf.SessionClosedError):
        gf.evaluate_async(x)


def test_closing_a_session_waits_for_its_calls_in_flight(server):
    x = np.random.default_rng(3).random((300, 300))
    with gf.connect(server.target) as client:
        s = client.session()
        a = s.asarray(x)
        futures = [(a @ a + k).sum().get_async() for k in range(6)]
        s.upload(x, name="x")
        g = gf.Graph()
        futures.append(s.execute_async(g, [g.sum(g.array("x"))]))
        s.close()  # as leaving a `with` block does
        assert all(f.done() for f in futures)
        for k, f in enumerate(futures[:-1]):
            assert float(f.result()) == pytest.approx((x @ x + k).sum())
        assert float(futures[-1].result()[0]) == pytest.approx(x.sum())
        with pytest.raises(gf.SessionClosedError):
            a.get()


def test_a_callback_may_close_its_session(server):
    with gf.connect(server.target) as client:
        s = client.session()
        a = s.asarray(np.arange(8.0))
        closed = cf.Future()

        def close_then(f):
            s.close()  # on a client thread: does not wait for itself
            closed.set_result(f.result())

        a.sum().get_async().add_done_callback(close_then)
        assert float(closed.result(timeout=30)) == 28.0
        assert s.closed


def test_the_docs_example_runs(server, capsys):
    text = (ROOT / "docs" / "python.md").read_text()
    section = text[text.index("## Asynchronous calls"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert '"localhost:50051"' in code
    exec(compile(code.replace("localhost:50051", server.target), "docs/python.md", "exec"), {})
    out = []

    def printed_extremes():  # the callback may still be on its way
        out.extend(capsys.readouterr().out.splitlines())
        return any(line.startswith("max, min:") for line in out)

    assert wait_for(printed_extremes)
    std, mean = sorted(float(v) for v in out if not v.startswith("max, min:"))
    assert 0.27 < std < 0.31 and 0.48 < mean < 0.52
    (extremes,) = [line for line in out if line.startswith("max, min:")]
    high, low = (float(v) for v in extremes.split()[2:])
    assert 0.99 < high <= 1 and 0 <= low < 0.01
