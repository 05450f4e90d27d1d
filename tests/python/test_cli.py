"""The gpuflow CLI binary end to end: NumPy writes the .npy files it uploads
and reads the ones it downloads, for every dtype, against the real server.

The binary is build/bin/gpuflow, or gpuflow beside $GPUFLOW_SERVER_BIN.
"""

import json
import os
import pathlib
import re
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

NUMPY_DTYPES = [
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64,
]
SHAPES = [(), (0,), (7,), (3, 0, 2), (2, 3), (1023,)]


def cli_binary():
    server = os.environ.get("GPUFLOW_SERVER_BIN")
    path = (
        pathlib.Path(server).resolve().with_name("gpuflow") if server else ROOT / "build" / "bin" / "gpuflow"
    )
    if not path.exists():
        pytest.fail(f"the gpuflow CLI is not at {path}: build it first (make build)")
    return str(path)


@pytest.fixture
def cli(server, tmp_path):
    """Runs `gpuflow ARGS` with GPUFLOW_TARGET pointing at the test server;
    returns the CompletedProcess."""

    def run(*args, session=None, check=True, env=None):
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFLOW_")}
        full_env["GPUFLOW_TARGET"] = server.target
        if session:
            full_env["GPUFLOW_SESSION"] = session
        full_env.update(env or {})
        proc = subprocess.run(
            [cli_binary(), *map(str, args)], capture_output=True, text=True, env=full_env,
            cwd=tmp_path, timeout=60,
        )
        if check:
            assert proc.returncode == 0, f"gpuflow {args}: {proc.returncode}\n{proc.stdout}{proc.stderr}"
        return proc

    return run


@pytest.fixture
def cli_session(cli):
    session_id = cli("session", "create", "--label=test_cli").stdout.strip()
    assert len(session_id) == 32
    yield session_id
    cli("session", "close", session_id, check=False)


def random_array(dtype, shape, rng):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    bits = rng.integers(0, 256, size=int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8)
    return bits.view(dtype).reshape(shape)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=lambda d: np.dtype(d).name)
def test_numpy_files_round_trip_bit_exact(cli, cli_session, tmp_path, dtype):
    rng = np.random.default_rng(11)
    for i, shape in enumerate(SHAPES):
        a = random_array(dtype, shape, rng)
        np.save(tmp_path / f"in{i}.npy", a)
        out = cli("upload", f"in{i}.npy", "--name", f"a{i}", session=cli_session).stdout
        assert out.startswith(f"a{i}: {np.dtype(dtype).name}[")
        cli("download", f"a{i}", "-o", f"out{i}.npy", session=cli_session)
        b = np.load(tmp_path / f"out{i}.npy")
        assert b.dtype == a.dtype and b.shape == a.shape
        assert b.tobytes() == a.tobytes()
        # What the CLI writes is byte for byte what np.save writes.
        assert (tmp_path / f"out{i}.npy").read_bytes() == (tmp_path / f"in{i}.npy").read_bytes()


def test_bfloat16_is_stored_as_v2_words(cli, cli_session, tmp_path):
    words = np.array([0x3F80, 0xC000, 0x7FC0], dtype=np.uint16)  # 1.0, -2.0, NaN
    np.save(tmp_path / "w.npy", words)
    assert "b: bfloat16[3]" in cli("upload", "w.npy", "--name=b", "--dtype=bfloat16",
                                   session=cli_session).stdout
    cli("download", "b", "-o", "b.npy", session=cli_session)
    b = np.load(tmp_path / "b.npy")
    assert b.dtype == np.dtype("V2")
    assert np.array_equal(b.view(np.uint16), words)
    # The '<V2' file uploads back as bfloat16.
    assert "c: bfloat16[3]" in cli("upload", "b.npy", "--name=c", session=cli_session).stdout


def test_big_endian_files_are_swapped(cli, cli_session, tmp_path):
    a = np.arange(5, dtype=">f8") / 3
    np.save(tmp_path / "be.npy", a)
    cli("upload", "be.npy", "--name=be", session=cli_session)
    cli("download", "be", "-o", "le.npy", session=cli_session)
    b = np.load(tmp_path / "le.npy")
    assert b.dtype == np.dtype("<f8")
    assert np.array_equal(a, b)


def test_fortran_order_and_unsupported_dtypes_are_clear_errors(cli, cli_session, tmp_path):
    np.save(tmp_path / "f.npy", np.asfortranarray(np.ones((2, 3), np.float32)))
    proc = cli("upload", "f.npy", session=cli_session, check=False)
    assert proc.returncode == 1
    assert "INVALID_ARGUMENT" in proc.stderr and "Fortran order" in proc.stderr
    np.save(tmp_path / "c.npy", np.ones(3, np.clongdouble))
    proc = cli("upload", "c.npy", session=cli_session, check=False)
    assert proc.returncode == 1
    assert "'<c32' has no gpuflow dtype" in proc.stderr


def test_run_matches_numpy_and_saves_outputs(cli, cli_session, tmp_path):
    x = np.linspace(-2, 2, 9, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    cli("upload", "x.npy", session=cli_session)
    graph = {
        "graph": {"nodes": [
            {"id": "sq", "op": "mul", "inputs": [{"array": "x"}, {"array": "x"}]},
            {"id": "p1", "op": "add", "inputs": [{"node": "sq"}, {"scalar": {"intValue": 1}}]},
            {"id": "y", "op": "sqrt", "inputs": [{"node": "p1"}]},
            {"id": "s", "op": "softmax", "inputs": [{"node": "y"}], "attrs": {"axis": {"intValue": -1}}},
        ]},
        "outputs": [{"node": "y", "returnInline": True}, {"node": "s", "storeAs": "soft"}],
    }
    (tmp_path / "g.json").write_text(json.dumps(graph))
    out = cli("run", "g.json", "-o", "y=y.npy", "-o", "soft=soft.npy", session=cli_session).stdout
    lines = out.splitlines()
    assert lines[0] == "y: float32[9]"
    expected = np.sqrt(x * x + 1)
    assert np.array_equal(np.array(json.loads(lines[1]), dtype=np.float32), expected)
    assert lines[2] == "s: stored as soft: float32[9] (36 B)"
    assert np.array_equal(np.load(tmp_path / "y.npy"), expected)
    soft = np.load(tmp_path / "soft.npy")
    np.testing.assert_allclose(soft, np.exp(expected) / np.exp(expected).sum(), rtol=1e-6)
    listing = cli("ls", session=cli_session).stdout
    assert "soft: float32[9] (36 B)" in listing


def test_bench_and_info(cli, tmp_path):
    graph = {
        "graph": {"nodes": [{"id": "r", "op": "arange", "attrs": {"stop": {"intValue": 100}}}]},
        "outputs": [{"node": "r", "returnInline": True}],
    }
    (tmp_path / "r.json").write_text(json.dumps(graph))
    out = cli("bench", "r.json", "--repeat=5", "--warmup=1").stdout
    assert out.startswith("r                   :    CPU:")
    info = cli("info").stdout
    assert "backend:" in info and "float64" in info


def test_errors_exit_1_with_the_code_and_usage_exits_2(cli, tmp_path):
    proc = cli("ls", check=False)
    assert proc.returncode == 1
    assert "FAILED_PRECONDITION" in proc.stderr and "gpuflow session create" in proc.stderr
    proc = cli("ls", session="0" * 32, check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith("gpuflow ls: NOT_FOUND: ")
    proc = cli("info", "--connect-timeout=200ms", env={"GPUFLOW_TARGET": "127.0.0.1:1"}, check=False)
    assert proc.returncode == 1
    assert "UNAVAILABLE" in proc.stderr and "127.0.0.1:1" in proc.stderr
    proc = cli("upload", check=False)
    assert proc.returncode == 2
    assert "usage: gpuflow upload" in proc.stderr
    (tmp_path / "bad.json").write_text('{"graph": {"nodes": [\n  {"id": "a", "op": "neg",}]}}')
    proc = cli("run", "bad.json", check=False)
    assert proc.returncode == 1
    assert "INVALID_ARGUMENT: bad.json:2:27: expected a quoted member name" in proc.stderr


def test_readme_shell_example_runs(cli, server, tmp_path):
    """The README's shell example, with docs/graph_json.md's first graph as
    graph.json, runs as typed."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Use it from the shell"):]
    script = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    graph = re.search(r"```json\n(.*?)```", (ROOT / "docs" / "graph_json.md").read_text(), re.S)
    (tmp_path / "graph.json").write_text(graph.group(1))
    x = np.linspace(-2, 2, 5, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFLOW_")}
    env["GPUFLOW_TARGET"] = server.target
    proc = subprocess.run(
        ["bash", "-euc", script.replace("build/bin/gpuflow", cli_binary())],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "y: float32[5]\n[2.236068, 1.4142135, 1.0, 1.4142135, 2.236068]\n" in proc.stdout
    assert np.array_equal(np.load(tmp_path / "y.npy"), np.sqrt(x * x + 1))
    assert "graph               :    CPU:" in proc.stdout
    assert "closed " in proc.stdout


def test_pool_targets_place_sessions_and_find_them_again(cli, make_server, tmp_path):
    """--target takes a pool (docs/scale-out.md): `session create` places
    each session on the least-loaded worker, and later commands naming it
    find the worker that holds it."""
    workers = [make_server(), make_server()]
    pool = {"GPUFLOW_TARGET": ",".join(w.target for w in workers)}
    ids = [cli("session", "create", env=pool).stdout.strip() for _ in range(2)]
    worker_of = {}
    for i, session_id in enumerate(ids):
        info = cli("session", "info", session=session_id, env=pool).stdout
        worker_of[session_id] = re.search(r"^worker:    (\S+)$", info, re.M).group(1)
        a = np.arange(7, dtype=np.float32) * i
        np.save(tmp_path / f"a{i}.npy", a)
        cli("upload", f"a{i}.npy", "--name=a", session=session_id, env=pool)
        cli("download", "a", "-o", f"b{i}.npy", session=session_id, env=pool)
        assert np.array_equal(np.load(tmp_path / f"b{i}.npy"), a)
        assert "a: float32[7]" in cli("ls", session=session_id, env=pool).stdout
    assert sorted(worker_of.values()) == sorted(w.target for w in workers)
    # The worker that does not hold a session answers NOT_FOUND for it.
    for session_id, endpoint in worker_of.items():
        other = next(w.target for w in workers if w.target != endpoint)
        proc = cli("ls", session=session_id, env={"GPUFLOW_TARGET": other}, check=False)
        assert proc.returncode == 1 and "NOT_FOUND" in proc.stderr
    proc = cli("ls", session="0" * 32, env=pool, check=False)
    assert proc.returncode == 1
    assert f"NOT_FOUND: no worker of {pool['GPUFLOW_TARGET']} holds session" in proc.stderr
    for session_id in ids:
        assert cli("session", "close", session_id, env=pool).stdout.startswith(f"closed {session_id}")


def test_dns_pool_targets(cli, make_server):
    worker = make_server()
    target = f"dns:///localhost:{worker.port}"
    assert "backend:" in cli("info", f"--target={target}").stdout
    session_id = cli("session", "create", f"--target={target}").stdout.strip()
    info = cli("session", "info", f"--target={target}", session=session_id).stdout
    assert re.search(rf"^worker:    \S+:{worker.port}$", info, re.M)
    cli("session", "close", session_id, f"--target={target}")
    proc = cli("info", "--target=dns:///localhost", check=False)
    assert proc.returncode == 1 and "INVALID_ARGUMENT: a dns:/// target needs host:port" in proc.stderr
