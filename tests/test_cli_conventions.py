"""CLI conventions (issue 11, item 5): --version, -h everywhere, tables never cropped when
piped, one precision per column in the stats tables, one spelling and one default per option."""

from __future__ import annotations

import json
import platform
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

ROOT = Path(__file__).resolve().parents[1]
SMALL = ROOT / "traces" / "shared-prefix.jsonl"
COMMANDS = ("script", "replay", "stats", "curve", "config", "gen", "bench", "sweep")
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_version_names_kvcli_vllm_and_python():
    res = invoke("--version")
    assert res.exit_code == 0
    line = res.stdout.strip()
    assert len(line.splitlines()) == 1
    assert line.startswith("kvcli ") and "vLLM 0.33.0 modelled" in line
    assert f"Python {platform.python_version()}" in line


@pytest.mark.parametrize("cmd", [(), *((c,) for c in COMMANDS)])
def test_dash_h_is_help_everywhere(cmd):
    short, long = invoke(*cmd, "-h"), invoke(*cmd, "--help")
    assert short.exit_code == 0 and long.exit_code == 0
    assert short.stdout == long.stdout and "Usage:" in short.stdout


def test_tables_are_not_cropped_when_stdout_is_not_a_terminal():
    res = invoke("config", "--list")                # CliRunner's stdout is not a terminal
    assert res.exit_code == 0
    assert "…" not in res.stdout
    assert "llama-3.1-8b" in res.stdout and "meta-llama/Llama-3.1-8B" in res.stdout
    text = invoke("config", "llama-3.1-8b", "--gpu-memory-gib", "80").stdout
    assert "…" not in text
    assert any(line.startswith("available KV memory = ") and line.endswith("GiB)")
               for line in text.splitlines())      # a long line, not wrapped at 80


_NUM = re.compile(r"^-?\d{1,3}(,\d{3})*(\.\d)?$")


def test_stats_tables_use_separators_and_one_precision_per_column():
    res = invoke("stats", SMALL, "--num-blocks", "300")
    assert res.exit_code == 0, res.output
    tables = {}
    title = None
    for line in res.stdout.splitlines():
        if not line.startswith(("│", "┃", "┏", "┡", "└")) and line.strip():
            title = line.split(" (")[0].split(":")[0].strip()
        elif line.startswith("│") and title:
            tables.setdefault(title, []).append([c.strip() for c in line.split("│")[2:-1]])
    for name in ("Memory", "Per request", "Block residency"):
        rows = tables[name]
        assert rows, name
        for col in zip(*rows):
            cells = [c for c in col if c]
            assert all(_NUM.match(c) for c in cells), (name, cells)
            assert len({"." in c for c in cells}) <= 1, (name, cells)   # one precision
    mem = tables["Memory"]
    assert all("." in r[1] and "." in r[2] for r in mem)   # the means: one decimal


def test_config_takes_vllms_prefix_caching_flag():
    on = invoke("config", "llama-3.1-8b", "--gpu-memory-gib", "80", "--enable-prefix-caching",
                "--json")
    off = invoke("config", "llama-3.1-8b", "--gpu-memory-gib", "80", "--no-enable-prefix-caching",
                 "--json")
    assert on.exit_code == 0 and off.exit_code == 0, on.output + off.output
    assert invoke("config", "llama-3.1-8b", "--no-prefix-caching").exit_code == 2


def test_config_and_replay_share_the_max_num_batched_tokens_default():
    cfg = json.loads(invoke("config", "llama-3.1-8b", "--gpu-memory-gib", "80", "--json").stdout)
    rep = json.loads(invoke("replay", SMALL, "--json").stdout)
    assert cfg["max_num_batched_tokens"] == rep["config"]["max_num_batched_tokens"] == 2048
    import typer.main

    params = typer.main.get_command(app).commands["config"].params
    opt = next(p for p in params if "--max-num-batched-tokens" in p.opts)
    # unset by default (vLLM's start-up rules may change it, as for a replay: sched_limits);
    # the help says the value it starts from
    assert opt.default is None and "vLLM 0.33's SchedulerConfig default" in opt.help \
        and opt.help.endswith("[default: 2048]")


def test_stats_on_an_event_file_reports_its_bytes_to_the_progress_bar(tmp_path):
    from kvcli.commands.stats import _counted
    from kvcore.sources import close_source, open_source, source_size

    def _size(path: str) -> int | None:
        _, stream = open_source(path)
        try:
            return source_size(path, stream)
        finally:
            close_source(stream)

    lines = [b"x" * 1000 + b"\n"] * 3000
    seen: list[int] = []
    assert list(_counted(iter(lines), seen.append, every=1 << 20)) == lines
    assert sum(seen) == 3_003_000 and len(seen) == 3       # two full MiB, then the rest
    p = tmp_path / "ev.jsonl"
    p.write_bytes(b"".join(lines))
    assert _size(str(p)) == 3_003_000
    assert source_size("-", None) is None                  # type: ignore[arg-type]
    import gzip

    g = tmp_path / "ev.jsonl.gz"
    g.write_bytes(gzip.compress(b"".join(lines)))
    assert _size(str(g)) is None


@pytest.mark.parametrize("args, says", [
    (["bench", "--n", "0"], ("error: option --n: Input should be greater than or equal to 1 "
                            "(kvcli bench -h for help)")),
    # typer's "Invalid value for 'kind': Value error, 'foo' is not one of ..." in kvcli's words
    (["gen", "foo"], ("error: argument KIND: 'foo' is not one of 'shared-prefix', 'multiturn', "
                      "'b2b' (kvcli gen -h for help)")),
    # (both spellings, as typer names them: the one typed stays in the line)
    (["replay", "x.jsonl", "--num-gpu-blocks-override", "x"],
     ("error: option --num-blocks / --num-gpu-blocks-override: Input should be a valid integer, "
      "unable to parse string as an integer (kvcli replay -h for help)")),
    (["replay", "x.jsonl", "--json=3"],
     "error: option --json: takes no value (kvcli replay -h for help)"),
    (["replay", "x.jsonl", "extra"],
     "error: unexpected extra argument(s): extra (kvcli replay -h for help)"),
    # (the group reports a missing value: it said "kvcli -h" and "Option '--gpu' requires...")
    (["clock", "explain", "--gpu"],
     "error: option --gpu: needs a value (kvcli clock explain -h for help)"),
    (["replay", "x.jsonl", "--arrivals"],
     "error: option --arrivals: needs a value (kvcli replay -h for help)"),
    (["replay"], "error: argument TRACE: missing (kvcli replay -h for help)"),
    # (an unset shell variable: it said "error: : no such file")
    (["replay", ""], "error: an empty path: give a file, or - for stdin"),
    (["stats", ""], "error: an empty path: give a file, or - for stdin"),
    (["replay", "x.jsonl", "--no-such-flag"], "error: option --no-such-flag: no such option"),
    # (the parser's ranking counts the shared "--": it said "(similar: --gpu)")
    (["replay", "x.jsonl", "--bogus"],
     "error: option --bogus: no such option (kvcli replay -h for help)"),
    (["replay", "x.jsonl", "--num-block", "3"],
     "error: option --num-block: no such option (similar: --num-blocks) (kvcli replay -h"),
    # (typer's was four lines: "Missing argument 'kind'. Choose from:" and a line a choice)
    (["gen"], ("error: argument KIND: missing; choose from shared-prefix, multiturn, b2b "
               "(kvcli gen -h for help)")),
    (["clock", "explain"], "error: option --case: missing (kvcli clock explain -h for help)"),
    (["sweep", "report"], "error: argument SPEC: usage: kvcli sweep report RESULTS.jsonl"),
    (["nosuch"], "error: no such command: nosuch (kvcli -h for help)"),
    (["script", "x.jsonl", "--calls", "--calls-depth", "0"],
     "error: option --calls-depth: must be >= 1, got 0"),
])
def test_a_bad_option_is_one_line_exit_2(args, says):
    """The installed command (not the test runner's invoke): typer's usage errors come as one
    line like every other input error, no usage box, no traceback."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", "from kvcli.app import main; main()", *args],
                          capture_output=True, text=True, check=False, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(says), proc.stderr
    assert proc.stdout == ""


def test_the_help_hint_names_the_command_under_python_m():
    """`python -m kvcli replay` said '(kvcli -m kvcli replay -h for help)'."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "kvcli", "replay"], capture_output=True,
                          text=True, check=False, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr == "error: argument TRACE: missing (kvcli replay -h for help)\n"


@pytest.mark.parametrize("args", [["clock", "gpus"], ["replay", SMALL, "--mode", "cache"],
                                  ["replay", SMALL, "--mode", "cache", "--json"]])
def test_a_reader_that_left_is_exit_0(args):
    """`kvcli ... | head -1`: a table's reader gone made Rich exit 1 without a word (the JSON
    path already exited 0). The pipe's reader is closed before kvcli writes a byte."""
    import os
    import subprocess
    import sys

    r, w = os.pipe()
    os.close(r)
    try:
        res = subprocess.run([sys.executable, "-m", "kvcli", *map(str, args)], cwd=ROOT,
                             stdout=w, stderr=subprocess.PIPE, timeout=120, check=False)
    finally:
        os.close(w)
    assert res.returncode == 0, res.stderr.decode()
    assert b"Traceback" not in res.stderr
