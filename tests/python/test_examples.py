"""The Python examples (clients/python/examples/) run against a test server.

On the CPU backend the examples that need CUDA must say so and exit 0; with
GPUFLOW_TEST_BACKEND=cuda they must compute the right numbers.
"""

import os
import re
import subprocess
import sys

from conftest import BACKEND, ROOT

EXAMPLES = ROOT / "clients" / "python" / "examples"
CUDA = BACKEND == "cuda"


def run_example(name, target, *args):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "clients" / "python"))
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--target", target, *args],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith(f"server: {BACKEND} (") or "PyTorch is not installed" in proc.stdout
    return proc.stdout


def number_after(text, label):
    m = re.search(re.escape(label) + r"\s*([-+0-9.e]+)", text)
    assert m, f"no {label!r} in:\n{text}"
    return float(m.group(1))


def test_every_example_is_tested():
    tested = {"softplus_torch.py", "benchmark_norms.py", "raw_vector_add.py", "fused_vs_numpy.py",
              "jit_vector_add.py"}
    assert {p.name for p in EXAMPLES.glob("*.py")} == tested


def test_softplus_torch(server):
    out = run_example("softplus_torch.py", server.target)
    if CUDA:
        m = re.search(r"max \|error\| vs \S+: ([0-9.e+-]+)", out)
        assert m and float(m.group(1)) < 1e-4, out
    else:
        assert "softplus_torch.py needs the CUDA backend; this server runs on 'cpu'" in out


def test_benchmark_norms(server):
    out = run_example("benchmark_norms.py", server.target, "--rows", "257", "--cols", "129",
                      "--n_repeat", "20")
    line = next(l for l in out.splitlines() if l.startswith("norms "))
    assert line.startswith("norms               :    CPU:") and ("GPU-0:" in line) == CUDA
    assert number_after(out, "max relative error vs numpy (float64):") < 1e-5


def test_raw_vector_add(raw_kernel_server):
    out = run_example("raw_vector_add.py", raw_kernel_server.target, "--n", "100003")
    if CUDA:
        assert "vec_add of 100003 float32 values: matches numpy" in out
    else:
        assert "raw_vector_add.py needs the CUDA backend; this server runs on 'cpu'" in out


def test_raw_vector_add_without_permission(server):
    out = run_example("raw_vector_add.py", server.target, "--n", "1000")
    assert "raw_vector_add.py needs a server started with --allow_raw_kernels" in out


def test_jit_vector_add(raw_kernel_server):
    out = run_example("jit_vector_add.py", raw_kernel_server.target, "--n", "100003")
    if CUDA:
        assert "jit vec_add of 100003 float32 values: matches numpy" in out
    else:
        assert 'extern "C" __global__ void vec_add(' in out
        assert "jit_vector_add.py needs the CUDA backend; this server runs on 'cpu'" in out


def test_jit_vector_add_without_permission(server):
    out = run_example("jit_vector_add.py", server.target, "--n", "1000")
    assert "jit_vector_add.py needs a server started with --allow_raw_kernels" in out


def test_fused_vs_numpy(server):
    out = run_example("fused_vs_numpy.py", server.target, "--size", "301", "--n_repeat", "5")
    assert re.search(r"the server ran 1 step\(s\): fused elementwise \[", out), out
    assert number_after(out, "max |gpuflow - numpy| =") < 1e-5
    assert "fused on gpuflow    :    CPU:" in out and "numpy on this host  :    CPU:" in out
