"""`kvcli.help_layout`: every command's `--help` shows every option's whole name (and its
negative) at 80 and 120 columns, and says each default once."""

from __future__ import annotations

import re

import pytest
import typer.main
from rich.text import Text
from typer.testing import CliRunner

from kvcli.app import app
from kvcli.help_layout import _choices, options_table


def _commands(cmd, path=()):
    """(path, click command) for every command and subcommand."""
    yield path, cmd
    for name, sub in getattr(cmd, "commands", {}).items():
        yield from _commands(sub, (*path, name))


COMMANDS = [(p, c) for p, c in _commands(typer.main.get_command(app)) if p]


def _names(cmd) -> list[str]:
    return [o for p in cmd.params for o in (*p.opts, *getattr(p, "secondary_opts", ()))
            if o.startswith("--")]


def test_every_command_is_seen():
    paths = {" ".join(p) for p, _ in COMMANDS}
    assert {"replay", "cluster", "sweep", "stats", "curve", "gen", "clock explain",
            "events listen"} <= paths
    replay = dict(COMMANDS)[("replay",)]
    assert {"--prefix-cache-retention-interval", "--no-scheduler-reserve-full-isl",
            "--offload-sync-load-budget-bytes"} <= set(_names(replay))


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("path,cmd", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_option_names_whole(path, cmd, columns):
    res = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": str(columns)})
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert max(len(x) for x in lines) <= columns
    # each name stands whole in one line's first cell (a cut one ends in "…")
    cells = {name for x in lines if (m := re.match(r"│ (?:[* ]  )?(--[\w,-]+)", x))
             for name in m.group(1).split(",")}      # aliases: "--tensor-parallel-size,--tp"
    assert set(_names(cmd)) - {"--help"} <= cells, sorted(set(_names(cmd)) - cells)
    assert not any(re.match(r"│ (?:[* ]  )?--[\w-]*…", x) for x in lines)
    assert "(default: None)" not in res.output
    # one style for defaults, typer's: "[default: X]" ("(default: X)" was half the options')
    assert "(default" not in " ".join(x.strip("│ ") for x in res.output.splitlines())


def test_flag_and_negative_share_a_cell():
    res = CliRunner().invoke(app, ["replay", "--help"], env={"COLUMNS": "80"})
    lines = res.output.splitlines()
    at = next(i for i, x in enumerate(lines) if "│ --enable-prefix-caching " in x)
    assert lines[at + 1].startswith("│ --no-enable-prefix-caching ")


def test_router_opt_metavar_whole_at_120():
    # "[ROUTER.]KEY=VALUE" was wider than the type column and folded as "KEY=VAL" / "UE"
    res = CliRunner().invoke(app, ["cluster", "--help"], env={"COLUMNS": "120"})
    row = next(x for x in res.output.splitlines() if "│ --router-opt " in x)
    assert " KEY=VALUE " in row


def test_aliases_one_a_line():
    # vLLM's spellings beside kvcli's, each whole on a line of its own
    res = CliRunner().invoke(app, ["replay", "--help"], env={"COLUMNS": "80"})
    lines = res.output.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("│ --num-blocks "))
    assert lines[at + 1].startswith("│ --num-gpu-blocks-override ")


def test_long_choices_break_after_a_bar():
    kind = Text("<auto|bfloat16|float16|fp8|fp8_e4m3|fp8_e5m2>", style="bold")
    out = _choices(kind)
    assert out.plain.split("\n") == ["<auto|bfloat16|", "float16|fp8|", "fp8_e4m3|",
                                     "fp8_e5m2>"]
    assert all(s.style == "bold" for s in out.spans) and out.spans
    assert _choices(Text("<engine|cache>")).plain == "<engine|cache>"     # short: as it was
    assert _choices(Text("<averyveryverylongname>")).plain == "<averyveryverylongname>"


def test_tables_with_their_own_columns_pass_through():
    t = options_table()()
    for _ in range(6):
        t.add_column()
    t.add_row(*"abcdef")
    assert len(t.columns) == 6 and t.row_count == 1


@pytest.mark.parametrize("path,words", [
    (["clock", "explain"], ["NAME=[N*]Q[@K][c][:D]"]),
    (["gen"], ["[default: 4 / 0.5]", "[default: 1024 / 512]", "[default: 128 / 150 / 1000]"]),
    (["events", "listen"], ['{"gap": [first, last]}']),
    (["sweep"], ["[options], [grid]"]),
])
def test_square_brackets_shown_as_written(path, words):
    # rich's markup took these for style tags and dropped them; twice: escaping is idempotent
    for _ in range(2):
        res = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "250"})
        flat = " ".join(x.strip("│ ") for x in res.output.splitlines())
        for w in words:
            assert w in flat, w
        assert "\\[" not in res.output


def test_descriptions_reflowed_to_the_width():
    res = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "160"})
    assert ("the whole LRU curve in one pass, its ceiling and knees, and other eviction "
            "policies") in res.output
    res = CliRunner().invoke(app, ["replay", "--help"], env={"COLUMNS": "160"})
    assert "(JSONL, .gz, -) and Azure CSV. See docs/replay.md for the modes" in res.output
