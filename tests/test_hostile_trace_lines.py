"""Trace lines a hostile hunt found to break a command (after test_hostile_inputs.py and
test_hostile_limits.py): each is one line `error: FILE:LINE: field 'x': ...`, exit code 2, in
every command that reads a trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_hostile_options import refused, runner

from kvcli.app import app

REQ = {"prompt_token_ids": [1, 2, 3, 4, 5], "output_length": 3}


def _trace(tmp_path: Path, *lines: dict) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


# -- an arrival_step past 2^63 raised OverflowError (a traceback) in the trace survey's int64
# -- array; one of 2^63 - 1 in `kvcli stats`' step columns; now bounded at 2^53 where it enters

@pytest.mark.parametrize("step, shown", [(10**20, "100,000,000,000,000,000,000"),
                                         (2**63 - 1, "9,223,372,036,854,775,807"),
                                         (2**53 + 1, "9,007,199,254,740,993")])
@pytest.mark.parametrize("command", ["replay", "stats", "curve", "cluster"])
def test_arrival_step_is_bounded(tmp_path, command, step, shown):
    path = _trace(tmp_path, REQ, dict(REQ, arrival_step=step))
    refused([command, str(path)], f"error: {path}:2: field 'arrival_step': is {shown}, past "
            "the limit of 2^53 = 9,007,199,254,740,992 steps")


def test_arrival_step_at_the_bound_replays(tmp_path):
    path = _trace(tmp_path, REQ, dict(REQ, arrival_step=2**53))
    for command in ("stats", "replay"):
        res = runner.invoke(app, [command, str(path), "--arrivals", "step", "--json"])
        assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["steps"] >= 2**53        # replay's
