"""`kvcli gen` validates its options (moved from test_hostile_inputs.py): an option that would
write a trace the replay rejects is one line `error: option --x: ...`, exit code 2, and no file."""

from __future__ import annotations

import orjson
import pytest
from test_hostile_inputs import refused, runner

from kvcli.app import app


@pytest.mark.parametrize("args, option, words", [
    (["multiturn", "--think-time-s", "-5"], "--think-time-s", "finite number >= 0"),
    (["multiturn", "--think-time-s", "nan"], "--think-time-s", "finite number >= 0"),
    (["multiturn", "--think-time-s", "inf"], "--think-time-s", "finite number >= 0"),
    (["multiturn", "--system-tokens", "-10"], "--system-tokens", ">= 0, got -10"),
    (["shared-prefix", "--system-tokens", "-10"], "--system-tokens", ">= 0, got -10"),
    (["multiturn", "--output-tokens", "0"], "--output-tokens", ">= 1, got 0"),
    (["shared-prefix", "--output-tokens", "-3"], "--output-tokens", ">= 1"),
    (["multiturn", "--rate", "0"], "--rate", "finite number > 0"),
    (["multiturn", "--rate", "-1"], "--rate", "finite number > 0"),
    (["multiturn", "--rate", "nan"], "--rate", "finite number > 0"),
    (["shared-prefix", "--rate", "inf"], "--rate", "finite number > 0"),
    (["shared-prefix", "--rate", "0"], "--rate", "finite number > 0"),
    (["multiturn", "--turns", "10000000"], "--turns", "is more than the limit of 10,000,000"),
    (["multiturn", "--conversations", "100000000"], "--conversations", "at most 10,000,000"),
    (["shared-prefix", "--groups", "100000", "--prompts-per-group", "1000"], "--groups",
     "is more than the limit of 10,000,000"),
    (["shared-prefix", "--system-tokens", "20000000"], "--system-tokens", "at most"),
    (["multiturn", "--user-tokens", "5000000"], "--turns", "last prompt"),
])
def test_gen_options(tmp_path, args, option, words):
    out = tmp_path / "t.jsonl"
    refused(["gen", *args, "-o", str(out)], option, words)
    assert not out.exists()


def test_gen_think_time_zero_replays():
    res = runner.invoke(app, ["gen", "multiturn", "--conversations", "3", "--think-time-s", "0"])
    assert res.exit_code == 0, res.output
    recs = [orjson.loads(x) for x in res.stdout.splitlines()]
    assert recs and all(r["timestamp"] >= 0 for r in recs)
