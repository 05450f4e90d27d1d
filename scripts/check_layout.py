#!/usr/bin/env python3
"""Checks the source tree's layering and file sizes (engine/cuda/README.md,
docs/ops.md; issue 21), so a new include or a growing file cannot quietly
undo the module split:

  * each module of engine/ includes only the modules below it:
      ir <- plan <- backend.h <- cpu, cuda;  ir <- host <- cpu, cuda
    (engine/cpu and engine/cuda never include each other, and nothing in
    engine/ includes server/ or clients/);
  * no C++ file in engine/ or server/ has more than 900 lines.

    check_layout.py [ROOT]     (default: the repository of this script)

Prints each violation as PATH:LINE: message and exits 1 if there is any."""

import pathlib
import re
import sys

MAX_LINES = 900

# A module of engine/ (its folder, or a file directly in engine/) and the
# modules its files may include besides its own.
ALLOWED = {
    "engine/ir": set(),
    "engine/plan": {"engine/ir"},
    "engine/host": {"engine/ir"},
    "engine/backend": {"engine/ir", "engine/plan"},
    "engine/cpu": {"engine/ir", "engine/plan", "engine/backend", "engine/host"},
    "engine/cuda": {"engine/ir", "engine/plan", "engine/backend", "engine/host"},
    "engine/cuda_unavailable": {"engine/backend", "engine/cuda"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = ("*.cc", "*.h")


def module_of(path):
    """The module of a path relative to the root ("engine/cuda/x.cc" ->
    "engine/cuda", "engine/backend.h" -> "engine/backend"), or None."""
    parts = pathlib.PurePosixPath(path).parts
    if len(parts) < 2 or parts[0] not in ("engine", "server", "clients", "proto"):
        return parts[0] if parts else None
    if parts[0] != "engine":
        return parts[0]
    if len(parts) == 2:
        return "engine/" + pathlib.PurePosixPath(parts[1]).stem
    return "engine/" + parts[1]


def check(root):
    problems = []
    for top in ("engine", "server"):
        for pattern in SOURCES:
            for path in sorted((root / top).rglob(pattern)):
                rel = path.relative_to(root).as_posix()
                lines = path.read_text(errors="replace").splitlines()
                if len(lines) > MAX_LINES:
                    problems.append(f"{rel}:{MAX_LINES + 1}: {len(lines)} lines, more than "
                                    f"{MAX_LINES}: split it by what it owns")
                mine = module_of(rel)
                if top != "engine" or mine not in ALLOWED:
                    continue
                for number, line in enumerate(lines, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    theirs = module_of(m.group(1))
                    if theirs is None or "/" not in m.group(1):
                        continue  # a header of this folder or a library's
                    if theirs == mine or not (theirs.startswith("engine/") or
                                              theirs in ("server", "clients")):
                        continue  # its own module, or absl/, grpcpp/, ...
                    if theirs not in ALLOWED[mine]:
                        problems.append(f"{rel}:{number}: {mine} must not include "
                                        f"{m.group(1)} ({theirs}); it may include "
                                        f"{', '.join(sorted(ALLOWED[mine])) or 'only itself'}")
    return problems


def main(argv):
    root = pathlib.Path(argv[1]) if len(argv) > 1 else pathlib.Path(__file__).resolve().parents[1]
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"check_layout: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print("check_layout: layering and file sizes of engine/ and server/ hold")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
