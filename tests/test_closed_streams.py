"""Standard streams the shell closed (`>&-`, `<&-`, `2>&-`): Python sets them to None, and every
command ended in an AttributeError's traceback (`'NoneType' object has no attribute 'flush'`,
`... 'fileno'`, `... 'buffer'`). Now a closed stdout is a write that fails (one line, exit 1,
as a full disk), a closed stdin read by `-` an input that cannot be read (exit 2), and a
closed stderr silences the messages (they went to stdout with `print(file=None)`)."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest
from test_hostile_outputs import ROOT, SMALL, one_error


def kvcli_closed(args: list[str], redirect: str, tmp_path=None) -> subprocess.CompletedProcess:
    line = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "kvcli", *args])
    return subprocess.run(f"{line} {redirect}", shell=True, cwd=tmp_path or ROOT,
                          capture_output=True, timeout=120, check=False)


@pytest.mark.parametrize("args", [
    ["replay", str(SMALL), "--mode", "cache"], ["replay", str(SMALL), "--mode", "cache", "--json"],
    ["curve", str(SMALL)],
    ["clock", "gpus"], ["--version"], ["replay", "--help"], ["cluster", "--list-routers"],
    # (script --calls ended in an OSError traceback, --list-routers in OutputFailed's)
    ["script", str(ROOT / "traces" / "four-paths.ops.jsonl"), "--calls"]])
def test_a_closed_stdout_is_one_line_exit_1(args):
    res = kvcli_closed(args, ">&-")
    assert one_error(res, 1) == "error: cannot write stdout: standard output is closed"


def test_a_closed_stdout_is_no_error_where_nothing_goes_there(tmp_path):
    res = kvcli_closed(["gen", "shared-prefix", "-o", "g.jsonl"], ">&-", tmp_path)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "g.jsonl").stat().st_size > 0


@pytest.mark.parametrize("args", [
    ["replay", "-"], ["stats", "-"], ["curve", "-"], ["script", "-"], ["sweep", "report", "-"],
    ["replay", str(SMALL), "--model-config", "-"]])
def test_a_closed_stdin_is_one_line_exit_2(args):
    res = kvcli_closed(args, "<&-")
    assert one_error(res, 2) == ("error: <stdin>: cannot read: [Errno 9] standard input is "
                                 "closed")


def test_a_closed_stderr_keeps_the_messages_off_stdout():
    res = kvcli_closed(["replay", "no-such.jsonl"], "2>&-")
    assert (res.returncode, res.stdout) == (2, b"")
    res = kvcli_closed(["replay", str(SMALL), "--json"], "2>&-")
    assert res.returncode == 0 and res.stdout.startswith(b"{")
