"""scripts/check_status_access.py: flags unchecked absl::StatusOr reads.

Runs the script on small C++ snippets (one bad, one good) and on the real
tree (engine/ server/ clients/cpp), which must be clean.
"""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_status_access.py"

BAD = """\
#include "absl/status/statusor.h"
absl::StatusOr<int> Make();
int Deref() {
  absl::StatusOr<int> x = Make();
  return *x;
}
int Arrow() {
  const absl::StatusOr<std::vector<int>>& y(Make());
  const size_t n = y->size();
  if (!y.ok()) return 0;
  return static_cast<int>(n);
}
int Value() {
  absl::StatusOr<int> z = Make();
  if (!z.ok()) return 0;
  return z.value();
}
int Die() { return Make().ValueOrDie(); }
int Call() { return 2 * *Make(); }
int Auto() {
  auto w = Make();
  return *w + 1;
}
"""

GOOD = """\
#include "absl/status/statusor.h"
absl::StatusOr<int> Make();
int Checked() {
  absl::StatusOr<int> x = Make();
  if (!x.ok()) return -1;
  const char* text = "*x and x.value() in a string";  // *x in a comment
  return *x * 2;
}
absl::Status Forwarded() {
  absl::StatusOr<int> y = Make();
  if (!y.ok()) return y.status();
  return *y > 0 ? absl::OkStatus() : absl::InvalidArgumentError("y");
}
int Silenced() {
  absl::StatusOr<int> z = Make();
  return *z;  // status-checked: Make cannot fail in this test
}
int Multiply(int a, int b) { return a * b; }
int Optional(std::optional<int> v) { return v.value_or(0); }
"""


def run(*paths):
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, paths)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def test_flags_every_unchecked_access(tmp_path):
    bad = tmp_path / "bad.cc"
    bad.write_text(BAD)
    result = run(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = {int(line.split(":")[1]) for line in result.stdout.splitlines()}
    # *x, y->, z.value(), ValueOrDie, *Make(...), *w: each reported at its line.
    assert lines == {5, 9, 16, 18, 19, 22}, result.stdout
    for line in result.stdout.splitlines():
        assert line.startswith(f"{bad}:"), line


def test_accepts_checked_accesses(tmp_path):
    (tmp_path / "good.cc").write_text(GOOD)
    result = run(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "check_status_access: no unchecked StatusOr access"


def test_real_tree_is_clean():
    result = run()
    assert result.returncode == 0, result.stdout + result.stderr
