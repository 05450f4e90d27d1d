#!/usr/bin/python3
"""Finds absl::StatusOr values read without a status check.

Run from the repository root (CI runs it through `make check-status-access`,
which `make check-format` and so `make test` include):

    /usr/bin/python3 scripts/check_status_access.py [PATH ...]

PATHs (files or directories) default to engine/ server/ clients/cpp. Every
C++ file under them (.h .cc .cu .cuh) is scanned, comments and string
literals blanked first, for:

  (a) any `.value()` call: the codebase style is `*x` after `if (!x.ok())`
      (or an ASSIGN_OR_RETURN macro), and `.value()` on an error aborts;
  (b) `ValueOrDie`;
  (c) a declaration `StatusOr<...> name = ...;` (or `name(...)`, `name{...}`)
      followed, in the same block, by a use `*name`, `name->` or
      `name.value()` with no `name.ok()` or `name.status()` between the
      declaration and the first use.

(c) is a heuristic on the text, not a compiler: a use that is safe for a
reason it cannot see is silenced with a comment on the use's line (or the
declaration's) saying why:

    Shape s = *shape;  // status-checked: Create cannot fail for a 0-d shape

Prints `path:line: message` for each finding; exits 1 when there are any,
0 otherwise. Standard library only.
"""

import os
import re
import sys

DEFAULT_ROOTS = ("engine", "server", "clients/cpp")
EXTENSIONS = (".h", ".cc", ".cu", ".cuh")
SILENCE = "status-checked:"

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def blank_comments_and_strings(text):
    """`text` with comments and string/char literal contents replaced by
    spaces; newlines (so line numbers) and length are kept."""
    out = list(text)
    i = 0
    n = len(text)

    def blank(start, end):
        for k in range(start, end):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            end = text.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            blank(i, end)
            i = end
        elif c == '"':
            # Raw string: R"delim( ... )delim" (with an optional u8/u/U/L prefix).
            m = re.search(r"(?:u8|u|U|L)?R$", text[max(0, i - 3) : i])
            if m and (i - len(m.group(0)) == 0 or not re.match(r"[A-Za-z0-9_]", text[i - len(m.group(0)) - 1])):
                open_paren = text.find("(", i)
                delim = text[i + 1 : open_paren] if open_paren >= 0 else ""
                close = text.find(")" + delim + '"', open_paren + 1) if open_paren >= 0 else -1
                end = n if close < 0 else close + len(delim) + 2
                blank(i + 1, end - 1)
                i = end
                continue
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, min(j, n))
            i = j + 1
        elif c == "'":
            # A digit separator (1'000'000) is not a character literal.
            if i > 0 and re.match(r"[0-9A-Fa-f]", text[i - 1]) and i + 1 < n and re.match(r"[0-9A-Fa-f]", text[i + 1]):
                prev = re.search(r"[A-Za-z0-9_']*$", text[:i]).group(0)
                if prev[:1].isdigit():
                    i += 1
                    continue
            j = i + 1
            while j < n and text[j] != "'" and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, min(j, n))
            i = j + 1
        else:
            i += 1
    return "".join(out)


def skip_template_args(code, pos):
    """Index just past the `<...>` starting at code[pos] == '<', or -1."""
    depth = 0
    paren = 0
    for k in range(pos, len(code)):
        ch = code[k]
        if ch == "(":
            paren += 1
        elif ch == ")":
            paren -= 1
        elif paren == 0 and ch == "<":
            depth += 1
        elif paren == 0 and ch == ">":
            depth -= 1
            if depth == 0:
                return k + 1
        elif ch in ";{}":
            return -1
    return -1


DECL_START = re.compile(r"\bStatusOr\s*<")
DECL_NAME = re.compile(r"\s*(?:const\s*)?&{0,2}\s*(" + IDENT + r")\s*(=(?!=)|\(|\{)")


def block_end(code, pos):
    """Index of the `}` that closes the block containing code[pos] (or the
    end of the file)."""
    depth = 0
    for k in range(pos, len(code)):
        ch = code[k]
        if ch == "{":
            depth += 1
        elif ch == "}":
            if depth == 0:
                return k
            depth -= 1
    return len(code)


def line_of(code, pos):
    return code.count("\n", 0, pos) + 1


KEYWORDS_BEFORE_UNARY = {"return", "co_return", "co_yield", "throw", "case", "else", "do", "sizeof"}


def is_unary_star(code, pos):
    """Whether the `*` at code[pos] is a dereference (not a multiplication
    or part of a declarator such as `T* x`)."""
    k = pos - 1
    while k >= 0 and code[k] in " \t\n":
        k -= 1
    if k < 0:
        return True
    ch = code[k]
    if ch in ")]":
        return False
    if re.match(r"[A-Za-z0-9_]", ch):
        word = re.search(r"[A-Za-z0-9_]*$", code[: k + 1]).group(0)
        return word in KEYWORDS_BEFORE_UNARY
    if ch == ">":  # the declarator of `T<U>* p`, or `a->b * c`
        return False
    return True


FUNC_DECL = re.compile(r"\bStatusOr\s*<")


def statusor_function_names(text):
    """Names of functions declared in `text` to return a StatusOr."""
    code = blank_comments_and_strings(text)
    names = set()
    for m in FUNC_DECL.finditer(code):
        after = skip_template_args(code, m.end() - 1)
        if after < 0:
            continue
        f = re.match(r"\s*(?:" + IDENT + r"::)*(" + IDENT + r")\s*\(", code[after:])
        if f and f.group(1) not in ("operator",):
            names.add(f.group(1))
    return names


def scan_text(path, text, statusor_functions=frozenset()):
    """Findings (line, message) for one file's text."""
    code = blank_comments_and_strings(text)
    lines = text.split("\n")
    findings = []

    def silenced(line):
        return 0 < line <= len(lines) and SILENCE in lines[line - 1]

    for m in re.finditer(r"\.\s*value\s*\(\s*\)", code):
        line = line_of(code, m.start())
        # A protobuf (or optional) field read under its presence check,
        # `x.has_value()` on this line or the three before, is not a StatusOr.
        obj = re.search(r"(" + IDENT + r")\s*$", code[: m.start()])
        if obj and re.search(
            r"\b" + re.escape(obj.group(1)) + r"\s*\.\s*has_value\s*\(",
            "\n".join(lines[max(0, line - 4) : line]),
        ):
            continue
        if not silenced(line):
            findings.append((line, "`.value()` call: check `.ok()` and use `*x` (or ASSIGN_OR_RETURN)"))
    for m in re.finditer(r"\bValueOrDie\b", code):
        line = line_of(code, m.start())
        if not silenced(line):
            findings.append((line, "`ValueOrDie`: check `.ok()` and use `*x`"))

    decls = []  # (name, start of the declaration, end of its name)
    for m in DECL_START.finditer(code):
        after = skip_template_args(code, m.end() - 1)
        if after < 0:
            continue
        d = DECL_NAME.match(code, after)
        if d:
            decls.append((d.group(1), m.start(), d.end()))
    if statusor_functions:
        names = "|".join(sorted(map(re.escape, statusor_functions)))
        auto_decl = re.compile(
            r"\bauto\s*&{0,2}\s*(" + IDENT + r")\s*=\s*(?:(?:" + IDENT + r")?::)*(?:" + names + r")\s*\("
        )
        for m in auto_decl.finditer(code):
            decls.append((m.group(1), m.start(), m.end(1)))
    for name, start, name_end in decls:
        decl_line = line_of(code, start)
        # The scope: from the declaration to the end of its block.
        end = block_end(code, name_end)
        body = code[name_end:end]
        d_end = name_end
        check = re.compile(r"\b" + name + r"\s*\.\s*(?:ok|status)\s*\(")
        use = re.compile(
            r"\*\s*(?:std::move\s*\(\s*)?" + name + r"\b(?!\s*\()"
            r"|(?<![A-Za-z0-9_.>:])" + name + r"\s*(?:->|\.\s*value\s*\(\s*\))"
        )
        first_check = check.search(body)
        first_use = None
        for u in use.finditer(body):
            if u.group(0).startswith("*") and not is_unary_star(code, d_end + u.start()):
                continue
            first_use = u
            break
        if first_use is None:
            continue
        if first_check is not None and first_check.start() < first_use.start():
            continue
        use_line = line_of(code, d_end + first_use.start())
        if silenced(use_line) or silenced(decl_line):
            continue
        findings.append(
            (
                use_line,
                f"StatusOr '{name}' (declared line {decl_line}) is read before "
                f"`{name}.ok()` or `{name}.status()` is checked",
            )
        )

    # (d) `*F(...)` where F is declared (in the scanned files) to return a
    # StatusOr: a dereference of a call result that nobody checked.
    if statusor_functions:
        names = "|".join(sorted(map(re.escape, statusor_functions)))
        call = re.compile(r"\*\s*(?:(?:" + IDENT + r")?::)*(" + names + r")\s*(?:<[^;(]*>)?\s*\(")
        for m in call.finditer(code):
            if not is_unary_star(code, m.start()):
                continue
            line = line_of(code, m.start())
            if not silenced(line):
                findings.append(
                    (line, f"`*{m.group(1)}(...)` dereferences a StatusOr without checking it")
                )
    return sorted(set(findings))


INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def visible_functions(path, texts, declared, by_include):
    """StatusOr-returning function names declared in `path` or in the
    scanned headers it includes (transitively, by repository-root path)."""
    names = set()
    seen = set()
    stack = [path]
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        names |= declared.get(p, set())
        for inc in INCLUDE.findall(texts.get(p, "")):
            if inc in by_include:
                stack.append(by_include[inc])
    return names


def iter_files(roots):
    for root in roots:
        if os.path.isfile(root):
            yield root
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith(EXTENSIONS):
                    yield os.path.join(dirpath, f)


def main(argv):
    roots = argv[1:] or [r for r in DEFAULT_ROOTS if os.path.exists(r)]
    texts = {}
    for path in iter_files(roots):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                texts[path] = f.read()
        except OSError as e:
            print(f"{path}: cannot read: {e}", file=sys.stderr)
            return 2
    declared = {path: statusor_function_names(text) for path, text in texts.items()}
    by_include = {}  # "engine/ir/shape.h" -> its path as scanned
    for path in texts:
        rel = os.path.relpath(path).replace(os.sep, "/")
        by_include[rel] = path
    count = 0
    for path, text in texts.items():
        functions = visible_functions(path, texts, declared, by_include)
        for line, message in scan_text(path, text, functions):
            print(f"{path}:{line}: {message}")
            count += 1
    if count:
        print(f"check_status_access: {count} finding(s)", file=sys.stderr)
        return 1
    print("check_status_access: no unchecked StatusOr access")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
