"""scripts/check_layout.py: the layering of engine/ and the file-size bound
of engine/ and server/. Runs it on small trees that break each rule and on
the real tree, which must hold."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_layout.py"


def run(root):
    return subprocess.run([sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True)


def tree(tmp_path, files):
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "server").mkdir(exist_ok=True)
    return tmp_path


GOOD = {
    "engine/ir/graph.h": '#include "absl/status/status.h"\n#include "engine/ir/dtype.h"\n',
    "engine/host/host_kernels.cc": '#include "engine/host/host_kernels.h"\n#include "engine/ir/shape.h"\n',
    "engine/cuda/run_host.cc": '#include "engine/cuda/step_runner.h"\n#include "engine/host/host_kernels.h"\n'
                               '#include "engine/backend.h"\n#include <cuda_runtime_api.h>\n',
    "engine/cpu/cpu_backend.cc": '#include "engine/backend.h"\n#include "engine/host/host_kernels.h"\n',
    "engine/backend.h": '#include "engine/plan/plan.h"\n',
    "server/main.cc": '#include "engine/cuda/cuda_backend.h"\n#include "engine/cpu/cpu_backend.h"\n',
}


def test_the_real_tree_holds():
    r = run(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_tree_that_keeps_the_rules_passes(tmp_path):
    r = run(tree(tmp_path, GOOD))
    assert r.returncode == 0, r.stdout + r.stderr


def test_cuda_including_cpu_fails(tmp_path):
    files = dict(GOOD)
    files["engine/cuda/run_host.cc"] += '#include "engine/cpu/cpu_backend.h"\n'
    r = run(tree(tmp_path, files))
    assert r.returncode == 1
    assert "engine/cuda/run_host.cc:5: engine/cuda must not include engine/cpu/cpu_backend.h" in r.stdout


def test_cpu_including_cuda_fails(tmp_path):
    files = dict(GOOD)
    files["engine/cpu/cpu_backend.cc"] += '#include "engine/cuda/codegen.h"\n'
    r = run(tree(tmp_path, files))
    assert r.returncode == 1 and "engine/cpu must not include engine/cuda/codegen.h" in r.stdout


def test_a_lower_module_including_a_higher_one_fails(tmp_path):
    files = dict(GOOD)
    files["engine/ir/graph.h"] += '#include "engine/plan/plan.h"\n'
    files["engine/host/host_kernels.cc"] += '#include "engine/backend.h"\n'
    files["engine/backend.h"] += '#include "server/logging.h"\n'
    r = run(tree(tmp_path, files))
    assert r.returncode == 1
    assert "engine/ir must not include engine/plan/plan.h" in r.stdout
    assert "engine/host must not include engine/backend.h" in r.stdout
    assert "engine/backend must not include server/logging.h" in r.stdout


def test_a_file_over_900_lines_fails(tmp_path):
    files = dict(GOOD)
    files["server/big.cc"] = "int x;\n" * 901
    files["engine/cuda/ok.cc"] = "int y;\n" * 900
    r = run(tree(tmp_path, files))
    assert r.returncode == 1
    assert "server/big.cc:901: 901 lines" in r.stdout
    assert "ok.cc" not in r.stdout
