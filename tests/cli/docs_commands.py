"""Every `wit` command the README and docs/ show, checked against the wit that is built: its
subcommand exists and each option it gives is one that subcommand takes (from `wit SUB --help`).
A command line in a ```sh block counts when it starts with wit, build/apps/wit/wit, $wit or
mpirun ... wit; continuation lines are joined and comments dropped.

Usage: docs_commands.py WIT_BINARY SOURCE_DIR
Prints one line per command checked and exits 1 naming each file and line that is wrong.
"""
import glob, os, re, shlex, subprocess, sys

wit, src = sys.argv[1], sys.argv[2]
files = [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md")))
helps = {}


def options_of(path):
    """The options `wit PATH --help` lists, and its subcommands."""
    key = tuple(path)
    if key not in helps:
        out = subprocess.run([wit, *path, "--help"], capture_output=True, text=True).stdout
        opts = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", out))
        subs = set()
        section = out.split("Subcommands:", 1)[1] if "Subcommands:" in out else ""
        for line in section.splitlines():
            m = re.match(r"\s+([a-z][\w-]*)\s", line)
            if m:
                subs.add(m.group(1))
        helps[key] = (opts | {"-h", "--help"}, subs)
    return helps[key]


def commands(file):
    """(line number, tokens after `wit`) of each wit command in the file's sh blocks."""
    in_sh, pending, start = False, "", 0
    for n, line in enumerate(open(file), 1):
        if line.startswith("```"):
            in_sh = line.strip() == "```sh" and not in_sh
            pending = ""
            continue
        if not in_sh:
            continue
        text = line.rstrip("\n")
        if not pending:
            start = n
        pending += " " + text.rstrip("\\")
        if text.endswith("\\"):
            continue
        cmd, pending = pending, ""
        try:
            tokens = shlex.split(cmd, comments=True)
        except ValueError:
            continue
        for i, t in enumerate(tokens):
            if t in ("wit", "build/apps/wit/wit", "$wit") or t.endswith("/bin/wit"):
                if i == 0 or tokens[0] == "mpirun":
                    yield start, tokens[i + 1:]
                break


bad = checked = 0
for file in files:
    for n, args in commands(file):
        where = f"{os.path.relpath(file, src)}:{n}"
        path, rest = [], list(args)
        _, subs = options_of(path)
        while rest and rest[0] in subs:
            path.append(rest.pop(0))
            _, subs = options_of(path)
        if not path:
            print(f"{where}: wit {' '.join(args)}: no subcommand wit knows")
            bad += 1
            continue
        opts, _ = options_of(path)
        unknown = [t.split("=")[0] for t in rest
                   if t.startswith("-") and t != "-" and not re.match(r"^-\d", t) and t.split("=")[0] not in opts]
        checked += 1
        if unknown:
            print(f"{where}: wit {' '.join(path)}: {', '.join(unknown)} not among its options")
            bad += 1
print(f"docs commands: {checked} wit commands checked in {len(files)} files, {bad} wrong")
sys.exit(1 if bad else 0)
