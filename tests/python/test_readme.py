"""The README's Python example runs as typed (against a test server)."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_readme_example_runs(server, capsys):
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert blocks, "README has no python example"
    code = blocks[0]
    assert len(code.strip().splitlines()) <= 12
    assert '"localhost:50051"' in code
    exec(compile(code.replace("localhost:50051", server.target), "README.md", "exec"), {})
    out = capsys.readouterr().out
    from conftest import BACKEND

    assert BACKEND in out and "ArrayInfo(name='x', dtype=float32, shape=(1000000,))" in out


def test_readme_graph_example_runs(server, capsys):
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert len(blocks) >= 2, "README has no graph example"
    code = blocks[1]
    exec(compile(code.replace("localhost:50051", server.target), "README.md", "exec"), {})
    out = capsys.readouterr().out
    # (1000, 512), then three softmax rows that sum to 1, then a positive time.
    assert out.startswith("(1000, 512) [")
    sums = [float(v) for v in out[out.index("[") + 1 : out.index("]")].split()]
    assert len(sums) == 3 and all(abs(v - 1) < 1e-5 for v in sums)
    assert float(out.split("]")[1]) > 0


def test_readme_array_example_runs(server, capsys):
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert len(blocks) >= 3, "README has no CuPy-style example"
    code = blocks[2]
    exec(compile(code.replace("localhost:50051", server.target), "README.md", "exec"), {})
    out = capsys.readouterr().out
    # (1000,) and three row norms, then the benchmark line in CuPy's format.
    assert out.startswith("(1000,) [")
    norms = [float(v) for v in out[out.index("[") + 1 : out.index("]")].split()]
    assert len(norms) == 3 and all(8 < v < 18 for v in norms)
    assert "<lambda>            :    CPU:" in out
