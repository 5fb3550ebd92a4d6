"""The user docs do not lie about the command line: every option a documented `kvcli` command
names exists for that subcommand, every option named alone in prose exists in some command (or
in the benchmark script the span runs), every file a documented command reads is in the repo
(or is written by an earlier command of the same page, or is a capitalised placeholder), and
the cheap examples print what the docs show (tests/doc_commands.py finds and parses them)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from doc_commands import (
    DOCS,
    ROOT,
    all_commands,
    all_options,
    doc_commands,
    is_placeholder,
    parse,
    produced,
    script_options,
)
from typer.testing import CliRunner

from kvcli.app import app

# Options named alone in prose that are not kvcli's, each with whose they are.
FOREIGN = {
    "--enable-mfu-metrics": "vllm serve's flag (docs/clock.md)",
    "--replica-config": "a feature docs/cluster.md lists as not in this version",
    "--runs": "benchmarks/offload_speed.py, named in the sentence before (docs/offload.md)",
    "--x-y": "the shape of an option error message",
    "--option": "the shape of an option error message",
    "--no-": "the table's abbreviation of --no-offload-prompt-only",
    "--head": "`ray start`'s option",
    "--port": "`ray start`'s option",
    "-n": "`ulimit -n`, the shell's open-file limit (docs/cluster.md)",
    "--num-cpus": "`ray start`'s option",
    "--address": "`ray start`'s option",
    "--node-ip-address": "`ray start`'s option",
    "-f": "/usr/bin/time -f %M",
    "-end": "a tuple's negated member, not an option",
    "--kv-cache-memory-bytes": "vllm serve's flag kvcli does not take (docs/replay.md)",
    "--max-num-active-seqs": "vllm serve's flag kvcli does not take (docs/replay.md)",
    "--max-num-partial-prefills": "not a vLLM 0.33 flag (docs/replay.md)",
    "--allow-deprecated-quantization": "vllm serve's flag kvcli does not take (docs/config.md)",
    "--kv-sharing-fast-prefill": "vllm serve's flag kvcli does not take (docs/config.md)",
    "--disable-chunked-mm-input": "vllm serve's flag vLLM forces for Gemma 3, PaliGemma and "
                                  "Gemma 4 vision (docs/config.md, docs/architecture.md)",
}


def test_the_parser_finds_the_docs_commands():
    cmds = all_commands()
    assert len(cmds) > 150
    assert {d for d in DOCS if any(c.block for c in doc_commands(d))} >= {
        "README.md", "docs/replay.md", "docs/clock.md", "docs/cluster.md", "docs/curve.md",
        "docs/live.md", "docs/offload.md", "docs/stats.md", "docs/sweep.md"}
    first = next(c for c in doc_commands("README.md") if c.block)
    assert (first.path, first.options, first.inputs) == (
        ["kvcli", "replay"], ["--block-size", "--num-blocks"], ["traces/multiturn-chat.jsonl"])
    explain = next(c for c in cmds if c.path == ["kvcli", "clock", "explain"] and c.block)
    assert "--case" in explain.options


def test_a_typo_in_an_option_is_caught():
    assert parse("x.md", 1, "kvcli replay T --num-block 5 --json", True).unknown == ["--num-block"]
    assert parse("x.md", 1, "kvcli clock explain --gpus h100-sxm", True).unknown == ["--gpus"]
    # An option of another subcommand is not an option of this one.
    assert parse("x.md", 1, "kvcli config llama-3.1-8b --events e.jsonl", True).unknown == [
        "--events"]


def test_every_documented_option_exists_for_its_subcommand():
    bad = [f"{' '.join(c.path)} has no {', '.join(c.unknown)}: {c.where()}"
           for c in all_commands() if c.unknown]
    assert not bad, "\n".join(bad)


def _prose_spans(doc: str):
    text = re.sub(r"^ *```.*?^ *```", lambda m: "\n" * m.group().count("\n"),
                  (ROOT / doc).read_text(), flags=re.DOTALL | re.MULTILINE)
    for m in re.finditer(r"`([^`]+)`", text):
        yield text.count("\n", 0, m.start()) + 1, " ".join(m.group(1).split())


def test_every_option_named_in_prose_exists():
    known = all_options()
    bad = []
    for doc in DOCS:
        for line, span in _prose_spans(doc):
            if span.startswith("kvcli "):
                continue                     # checked against its own subcommand above
            script = re.match(r"(?:python )?([\w./-]*\.py)\b", span)
            declared = script_options(script.group(1)) if script else None
            for o in re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", span):
                ok = o in declared if declared is not None else (o in known or o in FOREIGN)
                if not ok:
                    bad.append(f"{doc}:{line}: {o} in `{span}`")
    assert not bad, "\n".join(bad)


def test_every_file_a_documented_command_reads_is_there():
    bad = []
    for doc in DOCS:
        made = produced(doc)
        for c in doc_commands(doc):
            for f in c.inputs:
                if "/" in f:
                    ok = (ROOT / f).exists()
                else:
                    ok = is_placeholder(f) or (ROOT / f).exists() or any(
                        n <= c.line and name == f for n, name in made)
                if not ok:
                    bad.append(f"{f}: {c.where()}")
    assert not bad, "\n".join(bad)


# The cheap examples (about a second each on the shipped files), run as shown: (page, the command
# as the page shows it, terminal width). Their excerpt is the lines after a `$ ` command line up
# to the next one, or the code block after a command shown in prose.
EXCERPTS = [
    ("README.md", "kvcli replay traces/multiturn-chat.jsonl --block-size 16 --num-blocks 2048", 80),
    ("README.md", "kvcli stats traces/multiturn-chat.jsonl --block-size 16 --num-blocks 2048", 80),
    ("README.md", ("kvcli curve traces/multiturn-chat.jsonl --policies lru,optimal "
                  "--capacities 512,1024,2048,4096"), 80),
    ("README.md", "kvcli config llama-3.1-8b --gpu-memory-gib 80", 80),
    ("README.md", "kvcli script traces/tiny.ops.jsonl", 80),
    # (--calls records the stack's calls: the compiled build cannot)
    pytest.param("README.md", "kvcli script traces/four-paths.ops.jsonl --calls --calls-depth 3",
                 100, marks=pytest.mark.pure_python),
    ("docs/events.md", ("kvcli replay tests/data/sched_cases/b_preemption.trace.jsonl --arrivals "
                       "step --no-async-scheduling --events -"), 80),
]
VARIES = ("wall time (s)",)       # the one number a run cannot repeat


def excerpt(doc: str, command: str) -> list[str]:
    lines = (ROOT / doc).read_text().splitlines()
    at = next((i for i, ln in enumerate(lines) if command in " ".join(ln.split())), None)
    assert at is not None, f"{doc} no longer shows `{command}`: update EXCERPTS"
    if lines[at].startswith("$ "):
        end = at + 1
        while end < len(lines) and not lines[end].startswith(("$ ", "```")):
            end += 1
        body = lines[at + 1:end]
    else:
        start = next(i for i in range(at, len(lines)) if lines[i].startswith("```"))
        end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
        body = lines[start + 1:end]
    return [ln.rstrip() for ln in body if ln.strip() and ln.strip() != "..."]


def shown_line(line: str) -> re.Pattern[str]:
    """A shown line as a pattern: `...` (an elision) stands for anything."""
    return re.compile(".*".join(re.escape(part) for part in line.split("...")))


@pytest.mark.parametrize(("doc", "command", "width"), EXCERPTS,
                         ids=[getattr(c, "values", c)[1] for c in EXCERPTS])
def test_documented_output_is_what_the_command_prints(doc, command, width, monkeypatch):
    monkeypatch.chdir(ROOT)                        # the docs' paths are the repo's
    shown = excerpt(doc, command)
    assert shown, f"{doc}: no output shown after {command}"
    res = CliRunner().invoke(app, shlex.split(command)[1:], env={"COLUMNS": str(width)})
    assert res.exit_code == 0, res.output[-2000:]
    printed = [ln.rstrip() for ln in res.output.splitlines()]
    missing = [ln for ln in shown if not any(v in ln for v in VARIES)
               and not any(shown_line(ln).fullmatch(p) for p in printed)]
    assert not missing, f"{doc}: `{command}` no longer prints:\n" + "\n".join(missing)


@pytest.mark.pure_python          # --calls records the stack's calls: the compiled build cannot
def test_the_walkthrough_trees_are_the_scripts_output(monkeypatch):
    monkeypatch.chdir(ROOT)
    printed: set[str] = set()
    for script in ("traces/decode-paths.ops.jsonl", "traces/four-paths.ops.jsonl"):
        res = CliRunner().invoke(app, ["script", script, "--calls"], env={"COLUMNS": "100"})
        assert res.exit_code == 0, res.output[-2000:]
        printed.update(ln.rstrip() for ln in res.output.splitlines())
    text = Path(ROOT / "docs/walkthrough.md").read_text()
    blocks = re.findall(r"^```\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    shown = [ln.rstrip() for b in blocks for ln in b.splitlines() if ln.strip()]
    assert len(shown) > 50
    assert not [ln for ln in shown if ln not in printed]


@pytest.mark.pure_python          # --calls records the stack's calls: the compiled build cannot
def test_the_readmes_call_tree_is_whole(monkeypatch):
    # the line-by-line check above passed a tree that left out two calls (remove_skipped_blocks,
    # which vLLM makes on every allocation): the README's block must be printed as it stands
    monkeypatch.chdir(ROOT)
    res = CliRunner().invoke(app, ["script", "traces/four-paths.ops.jsonl", "--calls",
                                   "--calls-depth", "3"], env={"COLUMNS": "100"})
    assert res.exit_code == 0, res.output[-2000:]
    text = (ROOT / "README.md").read_text()
    block = re.search(r"^```\n(op new b:.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    assert block is not None and block.group(1) in res.output
