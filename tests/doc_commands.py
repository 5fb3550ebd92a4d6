"""The `kvcli` command lines the user docs (README.md, docs/*.md) show, found and parsed against
the Typer app: which subcommand each runs, which options it names, which files it reads. A
user copies these lines; tests/test_docs_commands.py checks them."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import typer.main

from kvcli.app import app

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")))

# Options whose value is a file the command reads (the rest write, or take no file).
INPUT_OPTIONS = frozenset({"--trace", "--calibration", "--model-config"})
FILE_SUFFIX = re.compile(r"\.(jsonl|json|gz|toml|csv|prom)$")


@dataclass
class DocCommand:
    doc: str
    line: int
    text: str
    block: bool                  # shown in a code block (as a user would paste it), not in prose
    path: list[str] = field(default_factory=list)        # ["kvcli", "clock", "explain"]
    options: list[str] = field(default_factory=list)     # option names as written
    unknown: list[str] = field(default_factory=list)     # option names the subcommand lacks
    inputs: list[str] = field(default_factory=list)      # files it reads (args, INPUT_OPTIONS)
    outputs: list[str] = field(default_factory=list)     # values of the other options

    def where(self) -> str:
        return f"{self.doc}:{self.line}: {self.text}"


@cache
def _root() -> Any:
    return typer.main.get_command(app)


def _tokens(text: str) -> list[str]:
    # A synopsis's optional parts ([--tp 2]) and alternatives (engine|cache, escaped \| in a
    # table) are still option names and values.
    text = re.sub(r"[\[\]]", " ", text.replace("\\|", "|"))
    try:
        return shlex.split(text)
    except ValueError:                  # an unbalanced quote in prose
        return text.split()


def parse(doc: str, line: int, text: str, block: bool) -> DocCommand:
    """The command's subcommand, its option names (unknown ones apart) and its file values."""
    c = DocCommand(doc, line, text, block)
    toks = _tokens(text)
    cmd = _root()
    c.path = ["kvcli"]
    i = 1
    while hasattr(cmd, "commands") and i < len(toks) and toks[i] in cmd.commands:
        cmd = cmd.commands[toks[i]]
        c.path.append(toks[i])
        i += 1
    params = {o: p for p in cmd.params for o in (*p.opts, *p.secondary_opts) if o[0] == "-"}
    while i < len(toks):
        t = toks[i]
        i += 1
        if t == "..." or t == "-":
            continue
        if t.startswith("-") and not re.match(r"-\d", t):
            name, eq, value = t.partition("=")
            c.options.append(name)
            p = params.get(name)
            if p is None:
                if name not in ("-h", "--help"):
                    c.unknown.append(name)
                continue
            if getattr(p, "is_flag", False) or getattr(p, "count", False):
                continue
            if not eq and i < len(toks):
                value = toks[i]
                i += 1
            (c.inputs if name in INPUT_OPTIONS else c.outputs).append(value)
        else:
            c.inputs.append(t)
    c.inputs = [t for t in c.inputs if _is_file(t)]
    return c


def _is_file(token: str) -> bool:
    return "://" not in token and "=" not in token and bool(FILE_SUFFIX.search(token))


def _command_part(text: str) -> str:
    """`$ kvcli ...`, `driver$  RAY_AUTH_MODE=token kvcli ...`, `COLUMNS=100 kvcli ...`: the
    command itself, whitespace folded."""
    text = " ".join(text.split())
    text = re.sub(r"^[\w-]*\$ ", "", text)
    return re.sub(r"^([A-Z_]+=\S+ )+", "", text)


def _blocks(lines: list[str]) -> list[tuple[int, str]]:
    """(line number, command) for each command line of a code block (fenced, or indented by
    four spaces): `$ ` dropped, `\\` continuations and a synopsis's indented `[...]` lines
    joined, a trailing `# comment` dropped, `a && b` split."""
    found: list[tuple[int, str]] = []
    fenced = False
    i = 0
    while i < len(lines):
        raw = lines[i]
        i += 1
        if raw.lstrip().startswith("```"):
            fenced = not fenced
            continue
        s = _command_part(raw)
        if not (fenced or raw.startswith("    ")) or not s.startswith("kvcli "):
            continue
        start = i
        while i < len(lines) and (s.endswith("\\") or lines[i].strip().startswith("[")):
            s = s.removesuffix("\\").rstrip() + " " + lines[i].strip()
            i += 1
        s = re.sub(r"\s+#\s.*$", "", s)
        found += [(start, part.strip()) for part in s.split("&&")]
    return found


def _spans(lines: list[str]) -> list[tuple[int, str]]:
    """(line number, span) for each inline code span that starts `kvcli ` (a span may wrap)."""
    found: list[tuple[int, str]] = []
    text = "\n".join(lines)
    text = re.sub(r"^ *```.*?^ *```", lambda m: "\n" * m.group().count("\n"), text,
                  flags=re.DOTALL | re.MULTILINE)
    for m in re.finditer(r"`([^`]+)`", text):
        span = _command_part(m.group(1))
        if span.startswith("kvcli "):
            for part in span.split("&&"):
                found.append((text.count("\n", 0, m.start()) + 1, part.strip()))
    return found


@cache
def doc_commands(doc: str) -> tuple[DocCommand, ...]:
    lines = (ROOT / doc).read_text().splitlines()
    cmds = [parse(doc, n, t, True) for n, t in _blocks(lines)]
    cmds += [parse(doc, n, t, False) for n, t in _spans(lines)]
    return tuple(sorted(cmds, key=lambda c: c.line))


def all_commands() -> list[DocCommand]:
    return [c for d in DOCS for c in doc_commands(d)]


def all_options() -> frozenset[str]:
    """Every option name of every kvcli command."""
    names: set[str] = set()
    todo = [_root()]
    while todo:
        cmd = todo.pop()
        names.update(o for p in cmd.params for o in (*p.opts, *p.secondary_opts) if o[0] == "-")
        todo += list(getattr(cmd, "commands", {}).values())
    return frozenset(names | {"-h", "--help"})


def produced(doc: str) -> list[tuple[int, str]]:
    """(line, file name) for each file the doc's commands write: the values of kvcli's output
    options (`-o`, `--events`, ...) and a shell redirect's target (`... > conv2000.jsonl`)."""
    found = [(c.line, Path(v).name) for c in doc_commands(doc) for v in c.outputs]
    for n, line in enumerate((ROOT / doc).read_text().splitlines(), 1):
        found += [(n, m) for m in re.findall(r"\s>\s*(\S+)", line)]
    return found


def is_placeholder(name: str) -> bool:
    """`R.jsonl`, `SPEC.toml`, `RESULTS.jsonl`: a name in capitals stands for the user's file."""
    stem = name.split(".")[0]
    return stem.isupper()


@cache
def script_options(script: str) -> frozenset[str] | None:
    """The options a Python script of the repo names as string literals (argparse's, or those
    it looks for in sys.argv); None when no such script is found. A bare name is looked up
    anywhere in the repo (`make_cases.py` lives in tests/data/sched_fresh/)."""
    path = ROOT / script
    if not path.exists():
        found = [p for p in ROOT.rglob(Path(script).name) if ".venv" not in p.parts]
        if len(found) != 1:
            return None
        path = found[0]
    return frozenset(re.findall(r"[\"'](--?[\w-]+)[\"']", path.read_text()))
