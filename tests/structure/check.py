#!/usr/bin/env python3
"""The code's shape, checked: folders are layers and includes point down only, and the entry
points named below stay short. docs/architecture.md draws the layers.

Usage: check.py SOURCE_DIR layers|functions
"""
import os
import re
import sys

# Each folder's layer; a file may include its own folder, any lower layer, and nothing else
# (folders on one layer are siblings and do not include each other). The longest matching
# prefix decides. tests/, benchmarks/ and fuzz/ sit above everything and are not checked.
LAYERS = [
    ("core", 0),          # errors, config parsing, hashing, Merkle trees, HDF5, files
    ("record", 1),        # what a run commits to and leaves behind: config, witness log
    ("trainer/data", 2),  # corpora, tokenizers, shards, manifest, schedule
    ("trainer/model", 2),
    ("trainer/optim", 2),
    ("trainer/dist", 2),
    ("trainer", 3),       # the step, layouts, checkpoints, the training loop
    ("query", 4),         # is a document in a run: answers and proofs
    ("verify", 5),        # replay, certificates; asks query about held-out documents
    ("board", 6),         # the leaderboard
    ("apps/wit", 7),      # the command line
]
CHECKED = [folder for folder, _ in LAYERS]

# Files whose functions stay under MAX_FUNCTION_LINES lines: a long entry point is a sequence of
# named stages, each a function.
SHORT_FUNCTIONS = ["verify", "trainer/train_loop.cpp", "apps/wit"]
MAX_FUNCTION_LINES = 120

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path):
    best = None
    for folder, rank in LAYERS:
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(best[0]):
                best = (folder, rank)
    return best


def sources(src, roots):
    for root in roots:
        full = os.path.join(src, root)
        if os.path.isfile(full):
            yield root
            continue
        for dirpath, _, names in os.walk(full):
            for n in sorted(names):
                if n.endswith((".h", ".cpp", ".cu")):
                    yield os.path.relpath(os.path.join(dirpath, n), src)


def check_layers(src):
    problems, edges = [], 0
    for rel in sources(src, CHECKED):
        mine = layer_of(rel)
        with open(os.path.join(src, rel), encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = m.group(1)
                theirs = layer_of(target)
                if theirs is None or theirs[0] == mine[0]:
                    continue
                edges += 1
                if theirs[1] > mine[1]:
                    problems.append(f"{rel}:{lineno}: includes {target}, from {theirs[0]} "
                                    f"(layer {theirs[1]}), above {mine[0]} (layer {mine[1]})")
                elif theirs[1] == mine[1]:
                    problems.append(f"{rel}:{lineno}: includes {target}: {theirs[0]} and "
                                    f"{mine[0]} are siblings on layer {mine[1]}")
    for p in problems:
        print(f"FAIL: {p}")
    print(f"{edges} includes across folders, {len(problems)} against the layers")
    return not problems


def strip_code(line, in_comment):
    """The line without string and character literals and comments; whether a /* */ comment
    is still open at its end."""
    out, i = [], 0
    while i < len(line):
        if in_comment:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out), True
            i, in_comment = end + 2, False
            continue
        c = line[i]
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            in_comment, i = True, i + 2
            continue
        if line.startswith('R"(', i):
            end = line.find(')"', i + 3)
            i = len(line) if end < 0 else end + 2
            continue
        if c in "\"'":
            j = i + 1
            while j < len(line) and line[j] != c:
                j += 2 if line[j] == "\\" else 1
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out), in_comment


def functions(path):
    """(name, first line, length) of each function defined at namespace scope (its first line at
    column 0, as the code is formatted)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    found, start, depth, opened, head, in_comment = [], None, 0, False, "", False
    for i, raw in enumerate(lines):
        code, in_comment = strip_code(raw, in_comment)
        if start is None:
            if not raw or not (raw[0].isalpha() or raw[0] in "_~"):
                continue
            if re.match(r"(namespace|extern|using|typedef)\b", raw) or raw.startswith("#"):
                continue
            start, depth, opened, head = i, 0, False, ""
        for c in code:
            if c == "{":
                depth, opened = depth + 1, True
            elif c == "}":
                depth -= 1
            elif not opened:
                head += c
            if opened and depth == 0:
                break
        if not opened and code.rstrip().endswith(";"):
            start = None  # a declaration
        elif opened and depth == 0:
            if "(" in head and not re.match(r"\s*(struct|class|enum|union)\b", lines[start]):
                name = re.findall(r"([\w:~]+)\s*\(", head)
                found.append((name[0] if name else "?", start + 1, i - start + 1))
            start = None
    return found


def check_functions(src):
    problems, count, longest = [], 0, (0, "")
    for rel in sources(src, SHORT_FUNCTIONS):
        if not rel.endswith((".cpp", ".cu")):
            continue
        for name, line, length in functions(os.path.join(src, rel)):
            count += 1
            if length > longest[0]:
                longest = (length, f"{rel}:{line} {name}")
            if length > MAX_FUNCTION_LINES:
                problems.append(f"{rel}:{line}: {name} is {length} lines (at most "
                                f"{MAX_FUNCTION_LINES}: split it into named stages)")
    for p in problems:
        print(f"FAIL: {p}")
    print(f"{count} functions; the longest: {longest[1]}, {longest[0]} lines")
    return count > 0 and not problems


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("layers", "functions"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    src, what = sys.argv[1], sys.argv[2]
    ok = check_layers(src) if what == "layers" else check_functions(src)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
