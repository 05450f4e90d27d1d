#!/usr/bin/env python3
"""Compares two directories of CUDA launch logs (GPUFLOW_LAUNCH_LOG,
engine/cuda/launch_log.h) written by two builds over the same requests.

    compare_launch_logs.py BEFORE_DIR AFTER_DIR

Kernel launches (K) and other work (N) are compared as multisets: how often
each exact line occurs, whatever the order (tests run in parallel). Sources
(S: a kernel's name and its module's digest) are compared as sets, since a
cached kernel is not asked for again. Prints the lines whose counts differ and
exits 1 if any do, 0 if the two logs issue the same work."""

import collections
import pathlib
import sys


def read(directory):
    counts = collections.Counter()
    sources = set()
    files = sorted(pathlib.Path(directory).glob("launches-*.log"))
    for path in files:
        for line in path.read_text().splitlines():
            if line.startswith("S "):
                sources.add(line)
            elif line:
                counts[line] += 1
    return files, counts, sources


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    before_files, before, before_sources = read(argv[1])
    after_files, after, after_sources = read(argv[2])
    if not before_files or not after_files:
        print(f"no launches-*.log in {argv[1] if not before_files else argv[2]}", file=sys.stderr)
        return 2
    differ = 0
    for line in sorted(set(before) | set(after)):
        if before[line] != after[line]:
            differ += 1
            if differ <= 50:
                print(f"{before[line]:6d} -> {after[line]:6d}  {line[:300]}")
    only = sorted(before_sources ^ after_sources)
    for line in only[:50]:
        side = "before only" if line in before_sources else "after only "
        print(f"{side}  {line}")
    print(f"launches and work: {sum(before.values())} lines before, {sum(after.values())} after,"
          f" {len(before)} distinct; {differ} differ")
    print(f"sources: {len(before_sources)} before, {len(after_sources)} after; {len(only)} differ")
    return 1 if differ or only else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
