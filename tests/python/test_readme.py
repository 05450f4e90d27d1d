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
