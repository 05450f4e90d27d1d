"""scripts/compare_launch_logs.py: the check that two builds issue the same
GPU work (engine/cuda/launch_log.h). Runs it on small logs that agree and on
logs that differ in a launch word, a launch count, a note or a source."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "compare_launch_logs.py"

LOG = [
    "S gf_elementwise 0123456789abcdef 2048",
    "K gf_elementwise grid=1,1,1 block=256,1,1 shared=0 words=P,P,1024,1024",
    "K gf_elementwise grid=1,1,1 block=256,1,1 shared=0 words=P,P,1024,1024",
    "N cublas float32 m=4 n=4 k=4 batch=1,1,1 tf32=0",
]


def compare(tmp_path, before, after):
    for name, lines in (("before", before), ("after", after)):
        d = tmp_path / name
        d.mkdir()
        # Two processes' logs, split anyhow: only the union counts.
        half = len(lines) // 2
        (d / "launches-1.log").write_text("\n".join(lines[:half]) + "\n")
        (d / "launches-2.log").write_text("\n".join(lines[half:]) + "\n")
    return subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "before"),
                           str(tmp_path / "after")], capture_output=True, text=True)


def test_the_same_work_in_another_order_and_split_compares_equal(tmp_path):
    r = compare(tmp_path, LOG, list(reversed(LOG)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 differ" in r.stdout


def test_a_source_asked_for_twice_still_compares_equal(tmp_path):
    r = compare(tmp_path, LOG, LOG + [LOG[0]])
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_changed_launch_word_is_reported(tmp_path):
    changed = LOG[:2] + [LOG[2].replace("1024,1024", "1024,2048")] + LOG[3:]
    r = compare(tmp_path, LOG, changed)
    assert r.returncode == 1
    assert "words=P,P,1024,2048" in r.stdout


def test_a_missing_launch_is_reported(tmp_path):
    r = compare(tmp_path, LOG, LOG[:2] + LOG[3:])
    assert r.returncode == 1
    assert "     2 ->      1" in r.stdout


def test_a_changed_note_or_source_is_reported(tmp_path):
    r = compare(tmp_path, LOG, [LOG[0].replace("0123", "4567")] + LOG[1:])
    assert r.returncode == 1
    assert "before only" in r.stdout and "after only" in r.stdout


def test_an_empty_side_is_an_error_not_a_pass(tmp_path):
    (tmp_path / "before").mkdir()
    (tmp_path / "after").mkdir()
    (tmp_path / "after" / "launches-1.log").write_text(LOG[1] + "\n")
    r = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "before"),
                        str(tmp_path / "after")], capture_output=True, text=True)
    assert r.returncode == 2
