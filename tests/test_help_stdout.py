"""`--help` and `--version` write stdout outside `output.run`: a reader that left is exit 0 and
a full disk one line and exit 1, as for every command (`kvcli --version | true` ended in a
BrokenPipeError traceback, `--help > /dev/full` in 60 lines of one, and `--help` into a closed
pipe in a silent exit 1: Rich's own console's answer)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from test_hostile_outputs import ROOT, full_node, kvcli, one_error

ARGS = [["--version"], ["--help"], ["gen", "--help"], ["replay", "-h"]]


@pytest.mark.parametrize("args, code", [*((a, 0) for a in ARGS),
                                         ([], 2), (["events"], 2)])   # (no command: usage)
def test_a_reader_that_left_is_exit_0(args, code):
    read, write = os.pipe()
    os.close(read)                          # every write is EPIPE, whatever the timing
    try:
        res = subprocess.run([sys.executable, "-m", "kvcli", *args], cwd=ROOT, stdout=write,
                             stderr=subprocess.PIPE, timeout=120, check=False)
    finally:
        os.close(write)
    assert (res.returncode, res.stderr.strip()) == (code, b"")    # (no command: a blank line)


@pytest.mark.parametrize("args", ARGS)
def test_a_full_disk_is_one_line_exit_1(tmp_path, args):
    with open(full_node(tmp_path), "wb") as full:
        res = kvcli(*args, stdout=full)
    assert one_error(res, 1) == "error: cannot write stdout: No space left on device"


def test_columns_out_of_range_are_clamped():
    # COLUMNS=0 drew `--help` as nothing (exit 0), COLUMNS=100000 as 14 MB of padding, and
    # COLUMNS=1 cut every table cell on a terminal to one character (77.66% shown as "7")
    from kvcli.output_terminal import clamp_columns

    env = {"COLUMNS": "0", "TERMINAL_WIDTH": "100000"}
    clamp_columns(env)
    assert env == {"COLUMNS": "40", "TERMINAL_WIDTH": "1000"}
    env = {"COLUMNS": " 120 ", "LINES": "1"}
    clamp_columns(env)
    assert env == {"COLUMNS": "120", "LINES": "1"}
    for columns, most in (("0", 40), ("100000", 1000)):
        res = subprocess.run([sys.executable, "-m", "kvcli", "replay", "--help"], cwd=ROOT,
                             env={**os.environ, "COLUMNS": columns}, capture_output=True,
                             timeout=120, check=False)
        lines = res.stdout.decode().splitlines()
        assert res.returncode == 0 and "--num-blocks" in res.stdout.decode()
        assert max(map(len, lines)) == most


def test_a_terminal_narrower_than_40_columns_is_drawn_40_wide():
    import io

    from rich.console import Console

    from kvcli.output import Table
    from kvcli.output_terminal import render_table

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=1, color_system=None)
    render_table(Table("t", ("metric", "value"), [("hit rate", "77.66%")]), console)
    assert "77.66%" in out.getvalue() and console.width == 40
