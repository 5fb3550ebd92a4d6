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
