"""Every gpuflowd flag is documented in docs/server.md's table, and the
table names no flag the server lacks: a flag added without docs, or docs
left behind by a removed one, fails here."""

import os
import re

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def server_flags():
    flags = re.findall(r"ABSL_FLAG\(\s*[\w:<>, ]+?,\s*(\w+)\s*,", read("server/main.cc"))
    assert len(flags) > 40, "the flag pattern no longer matches server/main.cc"
    return set(flags)


def documented_flags():
    return set(re.findall(r"^\| `--(\w+)` \|", read("docs/server.md"), re.MULTILINE))


def test_every_flag_is_documented():
    assert sorted(server_flags() - documented_flags()) == []


def test_no_documented_flag_is_missing_from_the_server():
    assert sorted(documented_flags() - server_flags()) == []
